package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/mcpp/mcpp-chat/internal/config"
	"github.com/mcpp/mcpp-chat/internal/store"
)

// budgetService is a Service for the reader of a seeded conversation: two
// parties in two channels, count unread rows and count live items, texts
// of size bytes. Past 64 MB of text only every n-th text is padded (100,000
// texts of 64 KiB would be 6.5 GB); the rest stay a line long.
func budgetService(t testing.TB, count, size int) (*Service, store.SeedReport) {
	t.Helper()
	parties := []store.Identity{{Name: "reader", Workspace: "/srv/reader"}, {Name: "peer", Workspace: "/srv/peer"}}
	db, err := store.Open(context.Background(), filepath.Join(t.TempDir(), "chat.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	every := max(1, count*size/(64<<20))
	report, err := db.Seed(context.Background(), store.SeedSpec{
		Parties: parties, Channels: 2, Seats: 2, LiveItems: count, Unread: count,
		TextBytes: size, TextEvery: every,
	})
	if err != nil {
		t.Fatal(err)
	}
	manifest, err := LoadManifest()
	if err != nil {
		t.Fatal(err)
	}
	return &Service{DB: db, Config: config.Defaults(), Manifest: manifest, Me: parties[0]}, report
}

func TestEveryAnswerFitsTheBudget(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("seeds databases of up to 100,000 rows and calls every tool on each (a minute or two); run without -short")
	}
	for _, count := range []int{10, 1000, 100000} {
		for _, size := range []int{10, 2048, 65536} {
			t.Run(fmt.Sprintf("%d×%d", count, size), func(t *testing.T) {
				s, report := budgetService(t, count, size)
				ch := report.ReaderChannels[0]
				for _, c := range []struct{ tool, args string }{
					{"chat_read", `{"channel":"` + ch + `","peek":true}`},
					{"chat_read", `{"channel":"` + ch + `","peek":true,"limit":500}`},
					{"chat_read", `{"channel":"` + ch + `","archived":true,"limit":500}`},
					{"chat_inbox", `{}`},
					{"chat_whoami", `{}`},
					{"chat_wait", `{"seconds":1}`},
					{"chat_channel_list", `{"all":true}`},
					{"chat_read", `{"channel":"` + ch + `"}`},
					{"chat_search", `{"query":"lorem ipsum","limit":50}`},
				} {
					if c.tool == "chat_search" && count*size > 1000*2048 {
						continue // indexing 128 MB of text takes minutes: TestLongHitsFit has the 64 KiB texts
					}
					res, err := s.Call(context.Background(), c.tool, json.RawMessage(c.args))
					if err != nil {
						t.Fatalf("%s %s: %v", c.tool, c.args, err)
					}
					if got, budget := answerSize(res.Display, res.JSON), s.budget(); got > budget {
						t.Errorf("%s %s: %d characters, over the budget of %d", c.tool, c.args, got, budget)
					}
				}
			})
		}
	}
}

// pair is two parties on one fresh database, seated in channel c1.
type pair struct {
	t          *testing.T
	writer     *Service
	reader     *Service
	budgetUsed int // the largest answer seen
}

func newPair(t *testing.T) *pair {
	t.Helper()
	db, err := store.Open(context.Background(), filepath.Join(t.TempDir(), "chat.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return newPairOn(t, db)
}

// newPairOn is newPair on a store of the caller's.
func newPairOn(t *testing.T, db *store.DB) *pair {
	t.Helper()
	manifest, err := LoadManifest()
	if err != nil {
		t.Fatal(err)
	}
	svc := func(name string) *Service {
		return &Service{DB: db, Config: config.Defaults(), Manifest: manifest, Me: store.Identity{Name: name, Workspace: "/srv/" + name}}
	}
	p := &pair{t: t, writer: svc("writer"), reader: svc("reader")}
	p.call(p.reader, "chat_whoami", map[string]any{}, nil)
	p.call(p.writer, "chat_channel_new", map[string]any{"name": "c1", "parties": []string{"reader"}}, nil)
	return p
}

// call runs a tool, checks that its answer fits the budget, and decodes
// the result JSON into into.
func (p *pair) call(s *Service, tool string, args map[string]any, into any) Result {
	p.t.Helper()
	raw, _ := json.Marshal(args)
	res, err := s.Call(context.Background(), tool, raw)
	if err != nil {
		p.t.Fatalf("%s %.200s: %.300v", tool, raw, err)
	}
	size := answerSize(res.Display, res.JSON)
	if size > s.budget() {
		p.t.Fatalf("%s %.200s: %d characters, over the budget of %d", tool, raw, size, s.budget())
	}
	p.budgetUsed = max(p.budgetUsed, size)
	if into != nil {
		if err := json.Unmarshal(res.JSON, into); err != nil {
			p.t.Fatalf("%s: %v", tool, err)
		}
	}
	return res
}

func (p *pair) say(text string) int64 {
	var r struct{ Seq int64 }
	p.call(p.writer, "chat_say", map[string]any{"text": text, "channel": "c1"}, &r)
	return r.Seq
}

// readReply is the part of chat_read's JSON the tests look at.
type readReply struct {
	Cut      string
	Cursor   int64
	FromSeq  int64 `json:"from_seq"`
	More     int
	Messages []struct {
		Seq  int64
		Body string
		Part *bodyPart
	}
	Next map[string]map[string]any
}

func (p *pair) read(args map[string]any) (readReply, Result) {
	var r readReply
	res := p.call(p.reader, "chat_read", args, &r)
	return r, res
}

func (p *pair) unread() int {
	var in struct {
		UnreadTotal int `json:"unread_total"`
	}
	p.call(p.reader, "chat_inbox", map[string]any{}, &in)
	return in.UnreadTotal
}

// body is the text of the i-th test message, size bytes long, with
// characters that cost more than one in the JSON now and then.
func body(i, size int) string {
	head := fmt.Sprintf("message %d: ", i)
	const mix = "plain words, \"quotes\", a tab\there, é and 漢字 and 🙂, a line\nbreak; "
	b := []byte(head)
	for len(b) < size {
		b = append(b, mix...)
	}
	return strings.ToValidUTF8(string(b[:size]), "")
}

// Reading a channel of 500 messages of 1 KB page by page, following what
// each answer says, delivers every message exactly once and whole — and
// the messages of 60 KB among them in parts that join up exactly.
func TestReadingPageByPageDeliversEveryMessageOnce(t *testing.T) {
	t.Parallel()
	p := newPair(t)
	want := map[int64]string{}
	n := 500
	if testing.Short() {
		n = 200 // still many pages and two long messages; the writes are the time
	}
	for i := 1; i <= n; i++ {
		size := 1024
		if i%97 == 0 {
			size = 60 << 10
		}
		text := body(i, size)
		want[p.say(text)] = strings.TrimSpace(text)
	}
	got := map[int64]string{}
	args := map[string]any{"channel": "c1"}
	for calls := 0; ; calls++ {
		if calls > 400 {
			t.Fatal("still reading after 400 calls")
		}
		r, _ := p.read(args)
		for _, m := range r.Messages {
			offset := 0
			if m.Part != nil {
				offset = m.Part.Offset
			}
			if have := utf8.RuneCountInString(got[m.Seq]); have != offset {
				t.Fatalf("#%d: a part starting at character %d after %d characters were delivered", m.Seq, offset, have)
			}
			got[m.Seq] += m.Body
		}
		next, ok := r.Next["chat_read"]
		if !ok {
			if r.More != 0 || r.Cut != "" {
				t.Fatalf("answer with more %d and cut %q names no next call", r.More, r.Cut)
			}
			break
		}
		args = next
	}
	if len(got) != len(want) {
		t.Fatalf("delivered %d messages, want %d", len(got), len(want))
	}
	for seq, text := range want {
		if got[seq] != text {
			t.Fatalf("#%d delivered as %d bytes, want %d bytes", seq, len(got[seq]), len(text))
		}
	}
	if n := p.unread(); n != 0 {
		t.Errorf("after reading everything, %d unread", n)
	}
	t.Logf("largest answer: %d characters", p.budgetUsed)
}

// A cut page moves the cursor to its last message and no further: the
// next read starts at the first message left out, and the unread count
// keeps everything not delivered.
func TestCursorStopsAtTheLastMessageDelivered(t *testing.T) {
	t.Parallel()
	p := newPair(t)
	for i := 1; i <= 60; i++ {
		p.say(body(i, 500))
	}
	r, res := p.read(map[string]any{"channel": "c1"})
	n := int64(len(r.Messages))
	if r.Cut == "" || n == 0 || n >= 50 {
		t.Fatalf("60 messages of 500 characters: want a cut page, got %d messages, cut %q", n, r.Cut)
	}
	if r.Cursor != n || r.Messages[n-1].Seq != n {
		t.Fatalf("cursor at #%d after delivering #1–#%d", r.Cursor, r.Messages[n-1].Seq)
	}
	if got := p.unread(); got != 60-int(n) {
		t.Errorf("unread = %d after a page of %d of 60, want %d", got, n, 60-n)
	}
	first, _, _ := strings.Cut(res.Display, "\n")
	if !strings.Contains(first, cutNote) || !strings.Contains(r.Cut, cutNote) {
		t.Errorf("a cut page must say so first in the display and in the JSON: %q / %q", first, r.Cut)
	}
	if strings.Contains(res.Display, strings.TrimSpace(body(1, 500))) {
		t.Error("a cut page's display repeats a whole body the JSON carries")
	}
	r2, _ := p.read(map[string]any{"channel": "c1"})
	if len(r2.Messages) == 0 || r2.Messages[0].Seq != n+1 {
		t.Fatalf("the read after the cut starts at %v, want #%d", r2.Messages, n+1)
	}
}

// A message longer than one answer comes in parts; the cursor stays before
// it until the last part, and the answer names the call for the next one.
func TestLongMessageComesInParts(t *testing.T) {
	t.Parallel()
	p := newPair(t)
	// Control characters and é cost six each in the JSON: 288,000 in all.
	long := "start" + strings.Repeat("\x01\x02é", 16000) + "end"
	seq := p.say(long)
	p.say("after")
	var joined string
	args := map[string]any{"channel": "c1"}
	for parts := 1; ; parts++ {
		r, _ := p.read(args)
		if len(r.Messages) == 0 {
			t.Fatal("a read in the middle of a long message returned nothing")
		}
		m := r.Messages[0]
		joined += m.Body
		if m.Part == nil || m.Part.Offset+m.Part.Length < m.Part.Total {
			if r.Cursor >= seq {
				t.Fatalf("cursor at #%d before the last part of #%d", r.Cursor, seq)
			}
			if p.unread() != 2 {
				t.Fatalf("unread = %d in the middle of a long message, want 2", p.unread())
			}
			args = r.Next["chat_read"]
			if args == nil {
				t.Fatalf("part %d names no next call: %q", parts, r.Cut)
			}
			continue
		}
		if parts < 9 {
			t.Errorf("%d parts, want at least 9 for 288,000 characters of JSON", parts)
		}
		if r.Cursor != seq+1 || len(r.Messages) != 2 {
			t.Errorf("the last part: cursor #%d with %d messages, want #%d and the message after it", r.Cursor, len(r.Messages), seq+1)
		}
		break
	}
	if joined != long {
		t.Fatalf("parts joined to %d bytes, want %d", len(joined), len(long))
	}
}

// since beyond the newest row reads nothing and moves nothing; since past
// unread rows moves nothing either; since behind the cursor re-reads.
func TestSinceNeverMovesTheCursorOverUnseenRows(t *testing.T) {
	t.Parallel()
	p := newPair(t)
	for i := 1; i <= 10; i++ {
		p.say(fmt.Sprintf("m%d", i))
	}
	r, _ := p.read(map[string]any{"channel": "c1", "since": 1000000})
	if len(r.Messages) != 0 || r.Cursor != 0 {
		t.Fatalf("since 1000000: %d messages, cursor #%d; want none and #0", len(r.Messages), r.Cursor)
	}
	if p.unread() != 10 {
		t.Fatalf("unread = %d after a read beyond the newest row, want 10", p.unread())
	}
	r, _ = p.read(map[string]any{"channel": "c1", "since": 8})
	if len(r.Messages) != 2 || r.Cursor != 0 || p.unread() != 10 {
		t.Fatalf("since 8 with the cursor at 0: %d messages, cursor #%d, unread %d; want 2, #0, 10", len(r.Messages), r.Cursor, p.unread())
	}
	r, _ = p.read(map[string]any{"channel": "c1", "limit": 5})
	if r.Cursor != 5 {
		t.Fatalf("limit 5 from #0: cursor #%d", r.Cursor)
	}
	r, _ = p.read(map[string]any{"channel": "c1", "since": 3})
	if r.Cursor != 10 || p.unread() != 0 {
		t.Fatalf("since 3 with the cursor at 5: cursor #%d, unread %d; want #10, 0", r.Cursor, p.unread())
	}
	p.say("m11")
	if r, _ = p.read(map[string]any{"channel": "c1"}); len(r.Messages) != 1 || r.Messages[0].Seq != 11 {
		t.Fatalf("a new message after the since reads: got %+v", r.Messages)
	}
}

// peek and archived reads page too, and never move the cursor.
func TestPeekPagesWithoutMovingTheCursor(t *testing.T) {
	t.Parallel()
	p := newPair(t)
	for i := 1; i <= 100; i++ {
		p.say(body(i, 800))
	}
	seen := 0
	args := map[string]any{"channel": "c1", "peek": true}
	for {
		r, _ := p.read(args)
		seen += len(r.Messages)
		if r.Cursor != 0 && r.Cursor != r.FromSeq {
			t.Fatalf("peek reports cursor #%d", r.Cursor)
		}
		if args = r.Next["chat_read"]; args == nil {
			break
		}
		if args["peek"] != true {
			t.Fatalf("next call of a peek read drops peek: %v", args)
		}
	}
	if seen != 100 || p.unread() != 100 {
		t.Fatalf("peek pages saw %d of 100, unread %d", seen, p.unread())
	}
}

// inboxReply is the part of the inbox's JSON the tests look at.
type inboxReply struct {
	Cut         string
	WaitingOnMe []struct {
		Channel string
		Seq     int64
	} `json:"waiting_on_me"`
	WaitingOnPeer []struct {
		Channel string
		Seq     int64
	} `json:"waiting_on_peer"`
	Next map[string]map[string]any
}

// An inbox too long for one answer says so, lists what waits on you first,
// and its skip pages show every item exactly once, in the inbox's order.
func TestInboxPagesShowEveryItemOnce(t *testing.T) {
	t.Parallel()
	s, _ := budgetService(t, 300, 2048)
	full, err := s.DB.Inbox(context.Background(), s.Me)
	if err != nil {
		t.Fatal(err)
	}
	var want, got []string
	for _, w := range full.WaitingOnMe {
		want = append(want, fmt.Sprintf("me %s#%d", w.Channel, w.Seq))
	}
	for _, w := range full.WaitingOnPeer {
		want = append(want, fmt.Sprintf("peer %s#%d", w.Channel, w.Seq))
	}
	args := `{}`
	for pages := 1; ; pages++ {
		res, err := s.Call(context.Background(), "chat_inbox", json.RawMessage(args))
		if err != nil {
			t.Fatal(err)
		}
		if size := answerSize(res.Display, res.JSON); size > s.budget() {
			t.Fatalf("page %d: %d characters", pages, size)
		}
		var r inboxReply
		if err := json.Unmarshal(res.JSON, &r); err != nil {
			t.Fatal(err)
		}
		if pages == 1 && (r.Cut == "" || !strings.HasPrefix(res.Display, "**"+cutNote)) {
			t.Fatalf("a cut inbox must say so first: cut %q, display %.80q", r.Cut, res.Display)
		}
		if pages == 1 && len(r.WaitingOnMe) == 0 {
			t.Fatal("the first page shows nothing of what waits on you")
		}
		for _, w := range r.WaitingOnMe {
			got = append(got, fmt.Sprintf("me %s#%d", w.Channel, w.Seq))
		}
		for _, w := range r.WaitingOnPeer {
			got = append(got, fmt.Sprintf("peer %s#%d", w.Channel, w.Seq))
		}
		next, ok := r.Next["chat_inbox"]
		if !ok {
			t.Logf("%d items in %d pages", len(got), pages)
			break
		}
		if pages > 100 {
			t.Fatal("more than 100 pages")
		}
		data, _ := json.Marshal(next)
		args = string(data)
	}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("pages showed %d items, want the inbox's %d in order", len(got), len(want))
	}
}

// Known parties and channels page the same way, long abouts shortened.
func TestWhoamiAndChannelListPage(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("registers 150 parties with 6 KB abouts (seconds); run without -short")
	}
	p := newPair(t)
	about := strings.Repeat("a long description of this repository ", 160) // 6 KB
	for i := range 150 {
		s := &Service{DB: p.reader.DB, Config: p.reader.Config, Manifest: p.reader.Manifest,
			Me: store.Identity{Name: fmt.Sprintf("party-%03d", i), Workspace: fmt.Sprintf("/srv/party-%03d", i)}}
		p.call(s, "chat_whoami", map[string]any{"about": about}, nil)
		p.call(s, "chat_channel_new", map[string]any{"name": fmt.Sprintf("ch-%03d", i), "about": about}, nil)
	}
	for _, c := range []struct {
		tool, list string
		want       int
	}{{"chat_whoami", "known_parties", 152}, {"chat_channel_list", "channels", 151}} {
		seen := map[string]bool{}
		args := map[string]any{"all": true}
		if c.tool == "chat_whoami" {
			args = map[string]any{}
		}
		for pages := 1; pages < 100; pages++ {
			var r map[string]any
			p.call(p.reader, c.tool, args, &r)
			for _, e := range r[c.list].([]any) {
				name := e.(map[string]any)["name"]
				if name == nil {
					name = e.(map[string]any)["channel"]
				}
				if seen[name.(string)] {
					t.Fatalf("%s shows %s twice", c.tool, name)
				}
				seen[name.(string)] = true
			}
			next, _ := r["next"].(map[string]any)
			if next[c.tool] == nil {
				break
			}
			args = next[c.tool].(map[string]any)
		}
		if len(seen) != c.want {
			t.Errorf("%s pages showed %d, want %d", c.tool, len(seen), c.want)
		}
	}
}

// Answers that echo one long text (a 64 KiB title after an ask, a 64 KiB
// body after an ack, an argument echoed in an error) are cut to fit too.
func TestAnswersThatEchoLongTextsFit(t *testing.T) {
	t.Parallel()
	p := newPair(t)
	title := strings.Repeat("é", 32000) // 64,000 bytes, 192,000 characters of JSON
	var ask struct{ Slug string }
	res := p.call(p.writer, "chat_ask", map[string]any{"title": title, "body": title, "channel": "c1"}, &ask)
	if !strings.Contains(string(res.JSON), cutNote) {
		t.Error("a cut ask answer does not say so")
	}
	p.call(p.reader, "chat_ack", map[string]any{"item": ask.Slug}, nil)
	p.call(p.writer, "chat_resolve", map[string]any{"item": ask.Slug, "note": title}, nil)
	p.call(p.reader, "chat_channel_join", map[string]any{"name": "c1"}, nil)
	_, err := p.reader.Call(context.Background(), "chat_ack", json.RawMessage(`{"item":"`+strings.Repeat("x", 60000)+`"}`))
	if err == nil || len(err.Error()) > maxErrorChars+100 {
		t.Fatalf("an error echoing a 60,000-character argument: %d characters", len(fmt.Sprint(err)))
	}
}

// A list's entries, measured one by one, add up to the list as json.dumps
// writes it: the fill's arithmetic is exact.
func TestElementSizesAddUpToTheList(t *testing.T) {
	t.Parallel()
	list := []any{
		map[string]any{"title": "a [b] {c}, \"d\": é 漢 🙂", "n": 1, "list": []string{"x", "y,z"}},
		"plain, string",
		[]int{1, 2, 3},
		map[string]any{},
	}
	data, err := encodeJSON(list)
	if err != nil {
		t.Fatal(err)
	}
	sizes := elementSizes(data)
	sum := 0
	for _, n := range sizes {
		sum += n
	}
	if len(sizes) != len(list) || sum != jsonSize(data) {
		t.Fatalf("%d elements summing to %d; want %d summing to %d", len(sizes), sum, len(list), jsonSize(data))
	}
}

// An inbox asked for again on an unchanged database is the answer it got
// before (not cut and rendered again); after a write it is the new one.
func TestRepeatedInboxAnswersTheNewState(t *testing.T) {
	t.Parallel()
	p := newPair(t)
	for i := 1; i <= 3; i++ {
		p.say("news")
		remembered := false
		for end := time.Now().Add(10 * time.Second); !remembered && time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
			var in struct {
				UnreadTotal int `json:"unread_total"`
			}
			p.call(p.reader, "chat_inbox", map[string]any{}, &in)
			if in.UnreadTotal != i {
				t.Fatalf("inbox after %d says: unread %d", i, in.UnreadTotal)
			}
			last := p.reader.last.Load()
			remembered = last != nil && strings.HasPrefix(last.key, "chat_inbox")
		}
		if !remembered {
			t.Fatal("the inbox of a settled database was never remembered")
		}
		var again struct {
			UnreadTotal int `json:"unread_total"`
		}
		p.call(p.reader, "chat_inbox", map[string]any{}, &again) // answered from what was remembered
		if again.UnreadTotal != i {
			t.Fatalf("the remembered inbox says unread %d, want %d", again.UnreadTotal, i)
		}
	}
}

// Searching for a word in 200 long messages, page after page as each
// answer says, finds every one exactly once, each answer within the budget
// and the cut ones saying so.
func TestSearchPagesShowEveryHitOnce(t *testing.T) {
	t.Parallel()
	p := newPair(t)
	for i := range 200 {
		p.say("needle " + body(i, 2048))
	}
	seen := map[int64]bool{}
	args := map[string]any{"query": "needle", "limit": 50}
	cuts := 0
	for calls := 0; ; calls++ {
		if calls > 20 {
			t.Fatal("the pages never end")
		}
		var r struct {
			Cut   string
			Total int
			More  int
			Hits  []struct{ Seq int64 }
			Next  map[string]map[string]any
		}
		res := p.call(p.reader, "chat_search", args, &r)
		if r.Total != 200 || len(r.Hits) == 0 {
			t.Fatalf("page %d: total %d, %d hits", calls, r.Total, len(r.Hits))
		}
		if r.Cut != "" {
			cuts++
			if !strings.HasPrefix(res.Display, "**"+cutNote) {
				t.Fatalf("a cut answer's display does not start with the cut line: %.100s", res.Display)
			}
		}
		for _, h := range r.Hits {
			if seen[h.Seq] {
				t.Fatalf("#%d on two pages", h.Seq)
			}
			seen[h.Seq] = true
		}
		next, ok := r.Next["chat_search"]
		if r.More == 0 {
			if ok {
				t.Fatalf("nothing more, yet a next call: %v", next)
			}
			break
		}
		if !ok {
			t.Fatalf("%d more but no next call", r.More)
		}
		args = next
	}
	if len(seen) != 200 || cuts == 0 {
		t.Fatalf("saw %d of 200 hits, %d answers cut (want some: 50 hits of 2 KB do not fit)", len(seen), cuts)
	}
}

// Hits in messages whose titles and bodies are 64 KiB long, some of one
// word, still fit one answer.
func TestLongHitsFit(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("indexes 60 texts of 32 to 64 KiB (seconds); run without -short")
	}
	p := newPair(t)
	long := strings.Repeat("needle ", 65536/7)
	word := "needle" + strings.Repeat("x", 32000)
	for i := range 30 {
		p.call(p.writer, "chat_ask", map[string]any{"title": long, "body": long, "channel": "c1", "slug": fmt.Sprintf("s%d", i)}, nil)
		p.say(word + " needle " + word)
	}
	var r struct {
		Hits []struct{ Snippet string }
		More int
	}
	p.call(p.reader, "chat_search", map[string]any{"query": "needle*", "limit": 50}, &r)
	if len(r.Hits) < 10 || len(r.Hits)+r.More != 60 {
		t.Fatalf("%d hits, %d more: want most of 60 in one answer", len(r.Hits), r.More)
	}
	for _, h := range r.Hits {
		if n := utf8.RuneCountInString(h.Snippet); n > snippetChars {
			t.Fatalf("a snippet of %d characters", n)
		}
	}
}

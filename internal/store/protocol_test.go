package store

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/mcpp/mcpp-chat/internal/pgtest"

	"github.com/mcpp/mcpp-chat/internal/store/postgres"
)

// Every rule of docs/protocol.md, one test each, on a fresh database.

var (
	gw   = Identity{Name: "mesh-gw", Workspace: "/srv/mesh-gw"}
	dash = Identity{Name: "node-dash", Workspace: "/srv/node-dash"}
	fw   = Identity{Name: "fw-core", Workspace: "/srv/fw-core"}
)

// bothEngines runs body on SQLite and on PostgreSQL: one protocol, one
// suite, whatever stores it.
func bothEngines(t *testing.T, body func(t *testing.T)) {
	t.Run("sqlite", body)
	t.Run("postgres", body)
}

// onPostgres reports a test run by bothEngines on PostgreSQL.
func onPostgres(t *testing.T) bool {
	return strings.Contains(t.Name()+"/", "/postgres/")
}

func openTest(t *testing.T) *DB {
	t.Helper()
	return openTestWith(t, Options{})
}

func openTestWith(t *testing.T, o Options) *DB {
	t.Helper()
	open := func() (*DB, error) { return OpenWith(context.Background(), filepath.Join(t.TempDir(), "chat.db"), o) }
	if onPostgres(t) {
		open = func() (*DB, error) { return OpenPostgres(context.Background(), pgtest.URL(t), o) }
	}
	db, err := open()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// secondHandle opens the store db holds again, as another process would.
func secondHandle(t *testing.T, db *DB) *DB {
	t.Helper()
	open := func() (*DB, error) { return Open(context.Background(), db.Path()) }
	if isPostgres(db) { // a test store's URL has no password: path is the URL
		open = func() (*DB, error) { return OpenPostgres(context.Background(), db.Path(), Options{}) }
	}
	other, err := open()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { other.Close() })
	return other
}

// world seats mesh-gw and node-dash in gw--dash (and registers fw-core).
func world(t *testing.T) *DB {
	t.Helper()
	return worldWith(t, Options{})
}

func worldWith(t *testing.T, o Options) *DB {
	t.Helper()
	db := openTestWith(t, o)
	ctx := context.Background()
	for _, id := range []Identity{gw, dash, fw} {
		must(t)(db.Register(ctx, id))
	}
	must(t)(db.ChannelNew(ctx, gw, "gw--dash", "gateway <-> dashboard", []string{"node-dash"}))
	return db
}

func must(t *testing.T) func(any, error) {
	return func(_ any, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
}

// refused asserts a user error whose sentence contains want.
func refused(t *testing.T, err error, want string) {
	t.Helper()
	var ue *UserError
	if !errors.As(err, &ue) {
		t.Fatalf("want a user error containing %q, got %v", want, err)
	}
	if !strings.Contains(err.Error(), want) {
		t.Fatalf("error %q does not say %q", err, want)
	}
}

func readAll(t *testing.T, db *DB, id Identity, channel string) ReadResult {
	t.Helper()
	zero := int64(0)
	r, err := db.Read(context.Background(), id, ReadArgs{Channel: channel, Limit: 500, Since: &zero, Peek: true})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func kinds(r ReadResult) []string {
	var out []string
	for _, m := range r.Messages {
		out = append(out, m.Kind+":"+m.Body)
	}
	return out
}

func TestChannelNameRule(t *testing.T) {
	t.Parallel()
	for raw, want := range map[string]string{"gw--dash": "gw--dash", "  GW--Dash ": "gw--dash", "a": "a", "v1.2_x~y": "v1.2_x~y"} {
		got, err := ChannelName(raw)
		if err != nil || got != want {
			t.Errorf("ChannelName(%q) = %q, %v; want %q", raw, got, err, want)
		}
	}
	for _, raw := range []string{"", "has space", "-lead", "../etc", "ÄBC", strings.Repeat("a", 65), "a/b"} {
		if _, err := ChannelName(raw); err == nil {
			t.Errorf("ChannelName(%q) accepted", raw)
		}
	}
}

// The hand-written check is the protocol's regular expression, exactly.
func TestChannelNameMatchesTheProtocolsRegexp(t *testing.T) {
	t.Parallel()
	rule := regexp.MustCompile(`^[a-z0-9][a-z0-9._~-]{0,63}$`)
	alphabet := []byte("az09._~-A /é\x00")
	rng := rand.New(rand.NewPCG(1, 2))
	cases := []string{strings.Repeat("a", 64), strings.Repeat("a", 65), ".a", "_a", "~a", "a.", "9"}
	for range 20000 {
		b := make([]byte, rng.IntN(67))
		for i := range b {
			b[i] = alphabet[rng.IntN(len(alphabet))]
		}
		cases = append(cases, string(b))
	}
	for _, c := range cases {
		if got, want := validChannelName(c), rule.MatchString(c); got != want {
			t.Fatalf("validChannelName(%q) = %v, the rule says %v", c, got, want)
		}
	}
}

func TestChannelNewSeatsWithoutEvents(t *testing.T) {
	t.Parallel()
	bothEngines(t, func(t *testing.T) {
		db := world(t)
		ctx := context.Background()
		info, err := db.ChannelNew(ctx, dash, "all-hands", "", []string{"fw-core", "mesh-gw"})
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(info.Parties, []string{"fw-core", "mesh-gw", "node-dash"}) || info.About != nil || info.LiveItems != 0 {
			t.Fatalf("channel_new = %+v", info)
		}
		if r := readAll(t, db, dash, "all-hands"); len(r.Messages) != 0 {
			t.Fatalf("channel_new posted %v", kinds(r))
		}
		_, err = db.ChannelNew(ctx, fw, "all-hands", "", nil)
		refused(t, err, "chat_channel_join")
		_, err = db.ChannelNew(ctx, fw, "fw-only", "", []string{"nobody"})
		refused(t, err, "no party named 'nobody'")
	})
}

func TestJoinLeaveEventsAndSeat(t *testing.T) {
	t.Parallel()
	bothEngines(t, func(t *testing.T) {
		db := world(t)
		ctx := context.Background()
		_, err := db.Say(ctx, fw, SayArgs{Text: "hi", Channel: "gw--dash"})
		refused(t, err, "join it with chat_channel_join")
		must(t)(db.ChannelJoin(ctx, fw, "gw--dash"))
		must(t)(db.ChannelJoin(ctx, fw, "gw--dash")) // already seated: no second event
		must(t)(db.Say(ctx, fw, SayArgs{Text: "hi", Channel: "gw--dash"}))
		left, err := db.ChannelLeave(ctx, fw, "gw--dash")
		if err != nil || !left.Left {
			t.Fatalf("leave = %+v %v", left, err)
		}
		_, err = db.ChannelLeave(ctx, fw, "gw--dash")
		refused(t, err, "not in 'gw--dash'")
		must(t)(db.ChannelJoin(ctx, fw, "gw--dash")) // re-seat clears left_at
		want := []string{"event:fw-core joined the channel", "say:hi", "event:fw-core left the channel (existing item obligations remain)", "event:fw-core joined the channel"}
		if got := kinds(readAll(t, db, gw, "gw--dash")); !reflect.DeepEqual(got, want) {
			t.Fatalf("events = %q, want %q", got, want)
		}
		_, err = db.ChannelJoin(ctx, fw, "nope")
		refused(t, err, "no channel named 'nope'")
	})
}

func TestChannelChoice(t *testing.T) {
	t.Parallel()
	bothEngines(t, func(t *testing.T) {
		db := world(t)
		ctx := context.Background()
		_, err := db.Say(ctx, fw, SayArgs{Text: "x"})
		refused(t, err, "not in any channel") // the Python edition's words, which clients match on
		r, err := db.Say(ctx, gw, SayArgs{Text: "only channel"})
		if err != nil || r.Channel != "gw--dash" {
			t.Fatalf("single channel: %+v %v", r, err)
		}
		must(t)(db.ChannelNew(ctx, gw, "second", "", []string{"node-dash"}))
		_, err = db.Say(ctx, gw, SayArgs{Text: "which?"})
		refused(t, err, "pass channel=<one of: gw--dash, second>")
		r, err = db.Say(ctx, gw, SayArgs{Text: "default", DefaultChannel: "second"})
		if err != nil || r.Channel != "second" {
			t.Fatalf("default channel: %+v %v", r, err)
		}
		_, err = db.Say(ctx, gw, SayArgs{Text: "x", DefaultChannel: "elsewhere"})
		refused(t, err, "several channels")
		_, err = db.Say(ctx, gw, SayArgs{Text: "x", Channel: "missing"})
		refused(t, err, "no channel named 'missing'")
	})
}

func TestSlugDerivationAndCollisions(t *testing.T) {
	t.Parallel()
	bothEngines(t, func(t *testing.T) {
		for in, want := range map[string]string{
			"Is the chunk header enum closed?": "is-the-chunk-header-enum-closed",
			"  --Hello,   World!--  ":          "hello-world",
			"":                                 "item",
			"???":                              "item",
			"What baud does the bench UART use? Please": "what-baud-does-the-bench-uart-use-please",
			strings.Repeat("ab ", 30):                   "ab-ab-ab-ab-ab-ab-ab-ab-ab-ab-ab-ab-ab-a",
			"Ünïcode title":                             "n-code-title",
		} {
			if got := Slugify(in); got != want {
				t.Errorf("Slugify(%q) = %q, want %q", in, got, want)
			}
		}
		if got := Slugify(strings.Repeat("x", 39) + " y"); got != strings.Repeat("x", 39) {
			t.Errorf("a cut that ends in - is trimmed again: %q", got)
		}
		db := world(t)
		ctx := context.Background()
		var slugs []string
		for _, a := range []AskArgs{{Title: "Chunk API", Body: "b"}, {Title: "chunk api!", Body: "b"}, {Title: "other", Body: "b", Slug: "chunk-api"}} {
			r, err := db.Ask(ctx, gw, a)
			if err != nil {
				t.Fatal(err)
			}
			slugs = append(slugs, r.Slug)
		}
		if want := []string{"chunk-api", "chunk-api-2", "chunk-api-3"}; !reflect.DeepEqual(slugs, want) {
			t.Fatalf("slugs = %q, want %q", slugs, want)
		}
	})
}

func TestAskConsumersAndAnnounce(t *testing.T) {
	t.Parallel()
	bothEngines(t, func(t *testing.T) {
		db := world(t)
		ctx := context.Background()
		must(t)(db.ChannelJoin(ctx, fw, "gw--dash"))
		all, err := db.Ask(ctx, gw, AskArgs{Title: "to everyone", Body: "b"})
		if err != nil {
			t.Fatal(err)
		}
		// Every seated party in seating order, as the Python edition lists them.
		if !reflect.DeepEqual(all.Consumers, []string{"mesh-gw", "node-dash", "fw-core"}) || !reflect.DeepEqual(all.AwaitingAckFrom, []string{"node-dash", "fw-core"}) || all.Status != "open" {
			t.Fatalf("every seated party: %+v", all)
		}
		named, err := db.Ask(ctx, gw, AskArgs{Title: "to dash", Body: "b", Consumers: []string{"fw-core", "node-dash"}})
		if err != nil || !reflect.DeepEqual(named.Consumers, []string{"fw-core", "node-dash", "mesh-gw"}) {
			t.Fatalf("named consumers in the order given, then the author: %+v %v", named, err)
		}
		// Item states list them by name, as the Python edition's do.
		named, err = db.Ask(ctx, gw, AskArgs{Title: "to three", Body: "b", Consumers: []string{"node-dash", "fw-core"}})
		if err != nil || !reflect.DeepEqual(named.AwaitingAckFrom, []string{"node-dash", "fw-core"}) {
			t.Fatalf("an ask's own result keeps the order given: %+v %v", named, err)
		}
		st, err := db.Ack(ctx, fw, "to-three", "", "")
		if err != nil || !reflect.DeepEqual(consumerNames(st.Consumers), []string{"fw-core", "mesh-gw", "node-dash"}) ||
			!reflect.DeepEqual(st.AwaitingAckFrom, []string{"node-dash"}) || !reflect.DeepEqual(st.AwaitingPruneOKFrom, []string{"fw-core", "mesh-gw", "node-dash"}) {
			t.Fatalf("an item's state lists its consumers by name: %+v %v", st, err)
		}
		_, err = db.Ask(ctx, gw, AskArgs{Title: "t", Body: "b", Consumers: []string{"node-dash~2"}})
		refused(t, err, "does not sit in 'gw--dash'")
		// Naming only yourself where others sit: say so, and who sits there.
		_, err = db.Ask(ctx, gw, AskArgs{Title: "t", Body: "b", Consumers: []string{"mesh-gw"}})
		refused(t, err, "consumers names only you")
		refused(t, err, "(node-dash, fw-core)")
		ann, err := db.Ask(ctx, gw, AskArgs{Title: "freeze", Body: "No merges Friday.", Announce: true})
		if err != nil || ann.Status != "done" || len(ann.AwaitingAckFrom) != 0 {
			t.Fatalf("announce (done, so nobody acks it): %+v %v", ann, err)
		}
		st, err = db.PruneOK(ctx, gw, "freeze", "")
		if err != nil || *st.ArchivedNow {
			t.Fatalf("an announce still needs everyone's prune-ok: %+v %v", st, err)
		}
		in, _ := db.Inbox(ctx, dash)
		if !hasNeed(in, "freeze", NeedPruneOK) {
			t.Fatalf("announce does not ask node-dash for prune-ok: %+v", in.WaitingOnMe)
		}
		// The author's own consumer row is acked at once.
		msgs := readAll(t, db, gw, "gw--dash").Messages
		for _, c := range msgs[0].Consumers {
			if c.Party == "mesh-gw" && !c.Acked {
				t.Fatal("the author's consumer row is not acked")
			}
		}
	})
}

func hasNeed(in Inbox, slug string, need Need) bool {
	for _, w := range in.WaitingOnMe {
		if w.Item == slug && w.Needs == need {
			return true
		}
	}
	return false
}

func TestItemAddresses(t *testing.T) {
	t.Parallel()
	bothEngines(t, func(t *testing.T) {
		db := world(t)
		ctx := context.Background()
		must(t)(db.Say(ctx, gw, SayArgs{Text: "chatter"}))
		must(t)(db.Ask(ctx, gw, AskArgs{Title: "chunk api", Body: "b"}))
		for _, addr := range []string{"chunk-api", "2", "#2", "gw--dash:2", "gw--dash:chunk-api", "GW--DASH:#2", " chunk-api "} {
			st, err := db.Ack(ctx, dash, addr, "", "")
			if err != nil || st.Slug != "chunk-api" {
				t.Errorf("address %q: %+v %v", addr, st, err)
			}
		}
		_, err := db.Ack(ctx, dash, "1", "", "")
		refused(t, err, "is a say, not an item")
		_, err = db.Ack(ctx, dash, "nope", "", "")
		refused(t, err, "no item \"nope\"")
		_, err = db.Ack(ctx, dash, "gw--dash:99", "", "")
		refused(t, err, "no message")
		_, err = db.Ack(ctx, dash, "#x", "", "")
		refused(t, err, "not an address")
		must(t)(db.ChannelNew(ctx, dash, "other", "", []string{"mesh-gw"}))
		must(t)(db.Ask(ctx, dash, AskArgs{Title: "chunk api", Body: "b", Channel: "other"}))
		_, err = db.Ack(ctx, gw, "chunk-api", "", "")
		refused(t, err, "gw--dash:chunk-api, other:chunk-api")
	})
}

func TestSayMovesOwnCursorAndReplyTo(t *testing.T) {
	t.Parallel()
	bothEngines(t, func(t *testing.T) {
		db := world(t)
		ctx := context.Background()
		r, err := db.Say(ctx, gw, SayArgs{Text: "  padded  \n", Ref: "src/gw.c:120"})
		if err != nil {
			t.Fatal(err)
		}
		if r.Kind != "say" || !reflect.DeepEqual(r.To, []string{"node-dash"}) {
			t.Fatalf("say = %+v", r)
		}
		msgs := readAll(t, db, gw, "").Messages
		if msgs[0].Body != "padded" || msgs[0].Ref != "src/gw.c:120" {
			t.Fatalf("say stored %+v", msgs[0])
		}
		peek, _ := db.Read(ctx, gw, ReadArgs{Limit: 50, Peek: true})
		if peek.Cursor != 1 {
			t.Fatalf("the author's cursor is %d, want it on its own say (1)", peek.Cursor)
		}
		rr, err := db.Say(ctx, dash, SayArgs{Text: "re", ReplyTo: "#1"})
		if err != nil || rr.Kind != "reply" || rr.Re != "#1" || *rr.AutoAcked {
			t.Fatalf("say with reply_to = %+v %v", rr, err)
		}
		rr2, err := db.Reply(ctx, gw, "2", "reply to a reply", "")
		if err != nil || rr2.Re != "#2" {
			t.Fatalf("reply to a reply = %+v %v", rr2, err)
		}
	})
}

// A post must never mark a peer's unread words as read.
func TestOwnPostDoesNotSkipPeerMessages(t *testing.T) {
	t.Parallel()
	bothEngines(t, func(t *testing.T) {
		db := world(t)
		ctx := context.Background()
		must(t)(db.Say(ctx, dash, SayArgs{Text: "from dash"}))
		must(t)(db.Say(ctx, gw, SayArgs{Text: "from gw"}))
		in, _ := db.Inbox(ctx, gw)
		if in.UnreadTotal != 1 {
			t.Fatalf("node-dash's message was skipped by mesh-gw's own post: unread %d", in.UnreadTotal)
		}
	})
}

func TestReplyAutoAck(t *testing.T) {
	t.Parallel()
	bothEngines(t, func(t *testing.T) {
		db := world(t)
		ctx := context.Background()
		must(t)(db.Ask(ctx, gw, AskArgs{Title: "chunk api", Body: "b"}))
		r, err := db.Reply(ctx, dash, "chunk-api", "answer", "")
		if err != nil || !r.AutoAcked || r.Re != "chunk-api" {
			t.Fatalf("reply = %+v %v", r, err)
		}
		msgs := readAll(t, db, gw, "").Messages
		if msgs[0].Status != "ack" || !msgs[0].Consumers[1].Acked {
			t.Fatalf("reply did not ack: %+v", msgs[0])
		}
		if got := kinds(readAll(t, db, gw, "")); len(got) != 2 {
			t.Fatalf("an auto-ack posts no event: %q", got)
		}
		r, _ = db.Reply(ctx, dash, "chunk-api", "more", "")
		if r.AutoAcked {
			t.Fatal("second reply auto-acked again")
		}
		r, _ = db.Reply(ctx, gw, "chunk-api", "thanks", "")
		if r.AutoAcked {
			t.Fatal("the author's reply auto-acked")
		}
	})
}

func TestAckRules(t *testing.T) {
	t.Parallel()
	bothEngines(t, func(t *testing.T) {
		db := world(t)
		ctx := context.Background()
		must(t)(db.Ask(ctx, gw, AskArgs{Title: "baud", Body: "b"}))
		_, err := db.Ack(ctx, fw, "gw--dash:baud", "", "")
		refused(t, err, "not a consumer")
		st, err := db.Ack(ctx, dash, "baud", "checking, ETA 10m", "")
		if err != nil || st.Status != "ack" || len(st.AwaitingAckFrom) != 0 || !reflect.DeepEqual(st.AwaitingPruneOKFrom, []string{"mesh-gw", "node-dash"}) {
			t.Fatalf("ack = %+v %v", st, err)
		}
		st, _ = db.Ack(ctx, dash, "baud", "", "")
		if !st.Unchanged {
			t.Fatal("a second ack changed something")
		}
		want := []string{"ask:b", "event:[baud] acked by node-dash", "reply:checking, ETA 10m"}
		if got := kinds(readAll(t, db, gw, "")); !reflect.DeepEqual(got, want) {
			t.Fatalf("ack wrote %q, want %q", got, want)
		}
	})
}

func TestResolveGates(t *testing.T) {
	t.Parallel()
	bothEngines(t, func(t *testing.T) {
		db := world(t)
		ctx := context.Background()
		must(t)(db.ChannelJoin(ctx, fw, "gw--dash"))
		must(t)(db.Ask(ctx, gw, AskArgs{Title: "q", Body: "b", Consumers: []string{"node-dash"}}))
		_, err := db.Resolve(ctx, fw, "q", "", true, "")
		refused(t, err, "only the raiser (mesh-gw)")
		_, err = db.Resolve(ctx, dash, "q", "", true, "")
		refused(t, err, "you have not acked [q] — ack it first")
		must(t)(db.Ack(ctx, dash, "q", "", ""))
		_, err = db.Resolve(ctx, dash, "q", "", false, "")
		refused(t, err, "answered=true")
		st, err := db.Resolve(ctx, dash, "q", "done on my side", true, "")
		if err != nil || st.Status != "done" {
			t.Fatalf("answerer resolve: %+v %v", st, err)
		}
		again, err := db.Resolve(ctx, gw, "q", "ignored", false, "")
		if err != nil || !again.Unchanged || again.Status != "done" {
			t.Fatalf("resolving a done item must return it unchanged: %+v %v", again, err)
		}
		got := kinds(readAll(t, db, gw, ""))
		if got[len(got)-2] != "event:[q] resolved by node-dash (answerer)" || got[len(got)-1] != "reply:done on my side" {
			t.Fatalf("resolve wrote %q", got)
		}
		// The raiser resolves at any time, even before anyone acked.
		must(t)(db.Ask(ctx, gw, AskArgs{Title: "r", Body: "b"}))
		st, err = db.Resolve(ctx, gw, "r", "", false, "")
		if err != nil || st.Status != "done" {
			t.Fatalf("raiser resolve: %+v %v", st, err)
		}
		if got := kinds(readAll(t, db, gw, "")); got[len(got)-1] != "event:[r] resolved by mesh-gw (raiser)" {
			t.Fatalf("raiser resolve wrote %q", got)
		}
	})
}

func TestPruneOKSelfOnlyAndSweep(t *testing.T) {
	t.Parallel()
	bothEngines(t, func(t *testing.T) {
		db := world(t)
		ctx := context.Background()
		must(t)(db.Ask(ctx, gw, AskArgs{Title: "chunk api", Body: "b"}))
		must(t)(db.Reply(ctx, dash, "chunk-api", "answer", ""))
		_, err := db.PruneOK(ctx, fw, "gw--dash:chunk-api", "")
		refused(t, err, "not a consumer")
		st, err := db.PruneOK(ctx, gw, "chunk-api", "")
		if err != nil || *st.ArchivedNow || !reflect.DeepEqual(st.AwaitingPruneOKFrom, []string{"node-dash"}) {
			t.Fatalf("prune-ok adds only the caller's: %+v %v", st, err)
		}
		st, _ = db.PruneOK(ctx, dash, "chunk-api", "")
		if *st.ArchivedNow {
			t.Fatal("archived before it was done")
		}
		must(t)(db.Resolve(ctx, gw, "chunk-api", "", false, ""))
		// Done with unanimous prune-ok: the next read sweeps it.
		r, err := db.Read(ctx, dash, ReadArgs{Limit: 50})
		if err != nil || !reflect.DeepEqual(r.ArchivedByThisRead, []string{"chunk-api"}) {
			t.Fatalf("read sweep = %+v %v", r.ArchivedByThisRead, err)
		}
		live := kinds(readAll(t, db, gw, ""))
		want := []string{"event:[chunk-api] resolved by mesh-gw (raiser)", "event:[chunk-api] archived (done + unanimous prune-ok)"}
		if !reflect.DeepEqual(live, want) {
			t.Fatalf("live after archive = %q, want %q", live, want)
		}
		zero := int64(0)
		arch, _ := db.Read(ctx, gw, ReadArgs{Limit: 50, Since: &zero, Archived: true})
		if got := kinds(arch); !reflect.DeepEqual(got, []string{"ask:b", "reply:answer"}) {
			t.Fatalf("archived = %q", got)
		}
		// A retry of an ack or a prune-ok after a lost answer gets the state,
		// as from the Python edition; a note, a reply or a resolve is refused.
		for _, retry := range []func() (ItemState, error){
			func() (ItemState, error) { return db.Ack(ctx, dash, "chunk-api", "", "") },
			func() (ItemState, error) { return db.PruneOK(ctx, dash, "chunk-api", "") },
		} {
			st, err := retry()
			if err != nil || st.Archived == nil || !*st.Archived || st.Status != "done" || !st.Unchanged {
				t.Fatalf("a retry on an archived item: %+v %v", st, err)
			}
		}
		_, err = db.Ack(ctx, dash, "chunk-api", "late note", "")
		refused(t, err, "is archived")
		_, err = db.Resolve(ctx, gw, "chunk-api", "", false, "")
		refused(t, err, "is archived")
		_, err = db.Reply(ctx, dash, "chunk-api", "more", "")
		refused(t, err, "is archived")
	})
}

func TestPruneOKArchivesAtOnce(t *testing.T) {
	t.Parallel()
	bothEngines(t, func(t *testing.T) {
		db := world(t)
		ctx := context.Background()
		must(t)(db.Ask(ctx, gw, AskArgs{Title: "x", Body: "b", Announce: true}))
		must(t)(db.PruneOK(ctx, gw, "x", ""))
		st, err := db.PruneOK(ctx, dash, "x", "")
		if err != nil || !*st.ArchivedNow || st.Archived == nil || !*st.Archived {
			t.Fatalf("last prune-ok did not archive: %+v %v", st, err)
		}
	})
}

func TestReadCursorLimitMorePeek(t *testing.T) {
	t.Parallel()
	bothEngines(t, func(t *testing.T) {
		db := world(t)
		ctx := context.Background()
		for i := 0; i < 5; i++ {
			must(t)(db.Say(ctx, gw, SayArgs{Text: "m"}))
		}
		r, err := db.Read(ctx, dash, ReadArgs{Limit: 2})
		if err != nil || len(r.Messages) != 2 || r.More != 3 || r.Cursor != 2 || r.FromSeq != 0 {
			t.Fatalf("first page = from %d cursor %d more %d n %d %v", r.FromSeq, r.Cursor, r.More, len(r.Messages), err)
		}
		p, _ := db.Read(ctx, dash, ReadArgs{Limit: 50, Peek: true})
		if p.FromSeq != 2 || p.Cursor != 2 || len(p.Messages) != 3 {
			t.Fatalf("peek = from %d cursor %d n %d", p.FromSeq, p.Cursor, len(p.Messages))
		}
		if again, _ := db.Read(ctx, dash, ReadArgs{Limit: 50, Peek: true}); again.FromSeq != 2 {
			t.Fatal("peek moved the cursor")
		}
		zero := int64(0)
		back, _ := db.Read(ctx, dash, ReadArgs{Limit: 1, Since: &zero})
		if back.Cursor != 2 {
			t.Fatalf("reading from since=0 moved the cursor backwards to %d", back.Cursor)
		}
		if p, _ := db.Read(ctx, dash, ReadArgs{Limit: 50, Peek: true}); p.FromSeq != 2 {
			t.Fatalf("cursor moved backwards to %d", p.FromSeq)
		}
		rest, _ := db.Read(ctx, dash, ReadArgs{Limit: 50})
		if rest.Cursor != 5 || rest.More != 0 {
			t.Fatalf("rest = cursor %d more %d", rest.Cursor, rest.More)
		}
		in, _ := db.Inbox(ctx, dash)
		if in.UnreadTotal != 0 {
			t.Fatalf("unread after reading everything: %d", in.UnreadTotal)
		}
	})
}

func TestUnreadExcludesOwnAndArchived(t *testing.T) {
	t.Parallel()
	bothEngines(t, func(t *testing.T) {
		db := world(t)
		ctx := context.Background()
		must(t)(db.Say(ctx, gw, SayArgs{Text: "mine"}))
		in, _ := db.Inbox(ctx, gw)
		if in.UnreadTotal != 0 {
			t.Fatalf("own message counted unread: %d", in.UnreadTotal)
		}
		in, _ = db.Inbox(ctx, dash)
		if in.UnreadTotal != 1 || in.Channels[0].Unread != 1 {
			t.Fatalf("peer's say not unread: %+v", in)
		}
	})
}

func TestInboxWaitingLists(t *testing.T) {
	t.Parallel()
	bothEngines(t, func(t *testing.T) {
		db := world(t)
		ctx := context.Background()
		must(t)(db.Ask(ctx, dash, AskArgs{Title: "uptime stall", Body: "b"}))
		must(t)(db.Ask(ctx, gw, AskArgs{Title: "baud", Body: "b"}))
		must(t)(db.Ack(ctx, dash, "baud", "", ""))
		gwIn, _ := db.Inbox(ctx, gw)
		if !hasNeed(gwIn, "uptime-stall", NeedAck) || !hasNeed(gwIn, "baud", NeedResolve) {
			t.Fatalf("mesh-gw waiting_on_me = %+v", gwIn.WaitingOnMe)
		}
		dashIn, _ := db.Inbox(ctx, dash)
		if len(dashIn.WaitingOnMe) != 0 || len(dashIn.WaitingOnPeer) != 2 {
			t.Fatalf("node-dash inbox = %+v", dashIn)
		}
		for _, w := range dashIn.WaitingOnPeer {
			if !reflect.DeepEqual(w.WaitingOn, []string{"mesh-gw"}) {
				t.Fatalf("%s waits on %v, want mesh-gw", w.Item, w.WaitingOn)
			}
		}
	})
}

// Leaving keeps obligations: the item still waits on you and you can ack it.
func TestLeaveKeepsObligations(t *testing.T) {
	t.Parallel()
	bothEngines(t, func(t *testing.T) {
		db := world(t)
		ctx := context.Background()
		must(t)(db.Ask(ctx, gw, AskArgs{Title: "q", Body: "b"}))
		must(t)(db.ChannelLeave(ctx, dash, "gw--dash"))
		in, _ := db.Inbox(ctx, dash)
		if !hasNeed(in, "q", NeedAck) {
			t.Fatalf("after leaving, the item no longer waits on node-dash: %+v", in.WaitingOnMe)
		}
		if _, err := db.Ack(ctx, dash, "gw--dash:q", "", ""); err != nil {
			t.Fatalf("ack after leaving: %v", err)
		}
		_, err := db.Reply(ctx, dash, "gw--dash:q", "text", "")
		refused(t, err, "join it with chat_channel_join")
	})
}

// A seated party sees every live item of the channel; once it leaves, it
// sees only those it consumes.
func TestLeavingDropsItemsYouDoNotConsume(t *testing.T) {
	t.Parallel()
	bothEngines(t, func(t *testing.T) {
		db := world(t)
		ctx := context.Background()
		must(t)(db.ChannelJoin(ctx, fw, "gw--dash"))
		must(t)(db.Ask(ctx, gw, AskArgs{Title: "for dash", Body: "b", Consumers: []string{"node-dash"}}))
		must(t)(db.Ask(ctx, gw, AskArgs{Title: "for all", Body: "b"}))
		seen := func() []string {
			in, err := db.Inbox(ctx, fw)
			if err != nil {
				t.Fatal(err)
			}
			var items []string
			for _, w := range in.WaitingOnMe {
				items = append(items, w.Item)
			}
			for _, w := range in.WaitingOnPeer {
				items = append(items, w.Item)
			}
			slices.Sort(items)
			return items
		}
		if got := seen(); !slices.Equal(got, []string{"for-all", "for-dash"}) {
			t.Fatalf("seated: fw-core sees %v", got)
		}
		must(t)(db.ChannelLeave(ctx, fw, "gw--dash"))
		if got := seen(); !slices.Equal(got, []string{"for-all"}) {
			t.Fatalf("after leaving: fw-core sees %v, want only the item it consumes", got)
		}
	})
}

func TestSameBasenameGetsSuffixAndKeepsName(t *testing.T) {
	t.Parallel()
	bothEngines(t, func(t *testing.T) {
		db := openTest(t)
		ctx := context.Background()
		a, _ := db.Register(ctx, Identity{Name: "node-dash", Workspace: "/srv/node-dash"})
		b, _ := db.Register(ctx, Identity{Name: "node-dash", Workspace: "/opt/other/node-dash"})
		c, _ := db.Register(ctx, Identity{Name: "node-dash", Workspace: "/tmp/x/node-dash"})
		again, _ := db.Register(ctx, Identity{Name: "renamed", Workspace: "/opt/other/node-dash"})
		if a != "node-dash" || b != "node-dash~2" || c != "node-dash~3" || again != "node-dash~2" {
			t.Fatalf("names = %q %q %q %q", a, b, c, again)
		}
	})
}

func TestNewerSchemaRefusedUnwritten(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "chat.db")
	db, err := Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rawSQL(db).Exec(`UPDATE schema_version SET version = 99`); err != nil {
		t.Fatal(err)
	}
	db.Close()
	before := fileDigest(t, path)
	_, err = Open(context.Background(), path)
	if err == nil || !strings.Contains(err.Error(), "upgrade mcpp-chat") {
		t.Fatalf("a newer schema opened: %v", err)
	}
	if fileDigest(t, path) != before {
		t.Fatal("the refused database was written")
	}
}

func fileDigest(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("%x", sha256.Sum256(data))
}

// Fit decides how many messages the answer carries whole: the cursor moves
// over those only, and more counts the rest.
func TestReadMovesTheCursorOverWhatFitOnly(t *testing.T) {
	t.Parallel()
	bothEngines(t, func(t *testing.T) {
		db := world(t)
		ctx := context.Background()
		for range 5 {
			must(t)(db.Say(ctx, gw, SayArgs{Text: "m"}))
		}
		r, err := db.Read(ctx, dash, ReadArgs{Limit: 50, Fit: func(r ReadResult) int { return 2 }})
		if err != nil || len(r.Messages) != 2 || r.Cursor != 2 || r.More != 3 {
			t.Fatalf("fit 2 of 5: %d messages, cursor %d, more %d, %v", len(r.Messages), r.Cursor, r.More, err)
		}
		r, _ = db.Read(ctx, dash, ReadArgs{Limit: 50, Fit: func(r ReadResult) int { return 0 }})
		if len(r.Messages) != 0 || r.Cursor != 2 || r.More != 3 {
			t.Fatalf("fit none: %d messages, cursor %d, more %d", len(r.Messages), r.Cursor, r.More)
		}
	})
}

// A since ahead of the cursor moves it only when nothing unread lies
// between: beyond the newest row, or past unread rows, it stays.
func TestSinceAheadOfTheCursor(t *testing.T) {
	t.Parallel()
	bothEngines(t, func(t *testing.T) {
		db := world(t)
		ctx := context.Background()
		for range 4 {
			must(t)(db.Say(ctx, gw, SayArgs{Text: "peer"}))
		}
		must(t)(db.Say(ctx, dash, SayArgs{Text: "own"}))
		must(t)(db.Say(ctx, gw, SayArgs{Text: "peer"}))
		since := func(n int64) *int64 { return &n }
		if r, _ := db.Read(ctx, dash, ReadArgs{Limit: 50, Since: since(1000000)}); r.Cursor != 0 || len(r.Messages) != 0 {
			t.Fatalf("since beyond the newest row: cursor %d", r.Cursor)
		}
		if r, _ := db.Read(ctx, dash, ReadArgs{Limit: 50, Since: since(2)}); r.Cursor != 0 || len(r.Messages) != 4 {
			t.Fatalf("since 2 over unread #1–#2: cursor %d, %d messages", r.Cursor, len(r.Messages))
		}
		if r, _ := db.Read(ctx, dash, ReadArgs{Limit: 4}); r.Cursor != 4 {
			t.Fatalf("plain read: cursor %d", r.Cursor)
		}
		// Only dash's own #5 lies between the cursor (#4) and since 5.
		if r, _ := db.Read(ctx, dash, ReadArgs{Limit: 50, Since: since(5)}); r.Cursor != 6 {
			t.Fatalf("since 5 over only your own row: cursor %d, want 6", r.Cursor)
		}
	})
}

// A cursor past the newest row (a read with a far since put one there in
// earlier versions; the Python edition still can) would hide every row
// written below it: the next post brings it back first.
func TestPostBringsBackACursorPastTheNewestRow(t *testing.T) {
	t.Parallel()
	bothEngines(t, func(t *testing.T) {
		db := world(t)
		ctx := context.Background()
		must(t)(db.Say(ctx, gw, SayArgs{Text: "one"}))
		if _, err := db.Read(ctx, dash, ReadArgs{Limit: 50}); err != nil {
			t.Fatal(err)
		}
		if _, err := execRaw(t, db, `UPDATE cursors SET last_seq = 1000000 WHERE party_id = (SELECT id FROM parties WHERE name = 'node-dash')`); err != nil {
			t.Fatal(err)
		}
		must(t)(db.Say(ctx, gw, SayArgs{Text: "two"}))
		in, _ := db.Inbox(ctx, dash)
		if in.UnreadTotal != 1 {
			t.Fatalf("unread after a post below a runaway cursor = %d, want 1", in.UnreadTotal)
		}
		if r, _ := db.Read(ctx, dash, ReadArgs{Limit: 50}); len(r.Messages) != 1 || r.Messages[0].Body != "two" || r.Cursor != 2 {
			t.Fatalf("read after the post: %+v", r)
		}
	})
}

// Deliberately unlike the Python edition (docs/protocol.md): a bare slug
// that names one item across your channels resolves, in whichever channel.
func TestBareSlugResolvesAcrossChannels(t *testing.T) {
	t.Parallel()
	bothEngines(t, func(t *testing.T) {
		db := world(t)
		ctx := context.Background()
		must(t)(db.ChannelNew(ctx, dash, "other", "", []string{"mesh-gw"}))
		must(t)(db.Ask(ctx, gw, AskArgs{Title: "only here", Body: "b", Channel: "other"}))
		st, err := db.Ack(ctx, dash, "only-here", "", "")
		if err != nil || st.Channel != "other" {
			t.Fatalf("a unique slug from a party in two channels: %+v %v", st, err)
		}
	})
}

// Deliberately unlike the Python edition: an archived read without since
// starts at 0, so it shows archived threads you had read before.
func TestArchivedReadStartsAtZero(t *testing.T) {
	t.Parallel()
	bothEngines(t, func(t *testing.T) {
		db := world(t)
		ctx := context.Background()
		must(t)(db.Ask(ctx, gw, AskArgs{Title: "q", Body: "b", Announce: true}))
		must(t)(db.Read(ctx, gw, ReadArgs{Limit: 50}))
		must(t)(db.Read(ctx, dash, ReadArgs{Limit: 50}))
		must(t)(db.PruneOK(ctx, gw, "q", ""))
		must(t)(db.PruneOK(ctx, dash, "q", ""))
		r, err := db.Read(ctx, dash, ReadArgs{Limit: 50, Archived: true})
		if err != nil || r.FromSeq != 0 || len(r.Messages) != 1 || r.Messages[0].Slug != "q" {
			t.Fatalf("archived read without since: from #%d, %d messages, %v", r.FromSeq, len(r.Messages), err)
		}
	})
}

// An all-digit slug would make "c:1" mean two things (seq 1 and the item
// [1]), so none is created: digits get an item- prefix.
func TestDigitSlugsAreNeverCreated(t *testing.T) {
	t.Parallel()
	bothEngines(t, func(t *testing.T) {
		for in, want := range map[string]string{
			"1": "item-1", "#3": "item-3", "2024": "item-2024", " 42 ": "item-42",
			strings.Repeat("9", 50): "item-" + strings.Repeat("9", 35),
			"2024 roadmap":          "2024-roadmap",
		} {
			if got := Slugify(in); got != want {
				t.Errorf("Slugify(%q) = %q, want %q", in, got, want)
			}
		}
		db := world(t)
		ctx := context.Background()
		must(t)(db.Ask(ctx, gw, AskArgs{Title: "drop table", Body: "b"}))
		for _, a := range []AskArgs{{Title: "1", Body: "b"}, {Title: "t", Body: "b", Slug: "#1"}} {
			r, err := db.Ask(ctx, gw, a)
			if err != nil || regexp.MustCompile(`^#?[0-9]+$`).MatchString(r.Slug) {
				t.Fatalf("ask %+v got slug %q (%v)", a, r.Slug, err)
			}
		}
		// "1" is seq 1 and nothing else.
		st, err := db.Ack(ctx, dash, "gw--dash:1", "", "")
		if err != nil || st.Slug != "drop-table" {
			t.Fatalf("gw--dash:1: %+v %v", st, err)
		}
	})
}

// A database written by the Python edition may hold a slug of digits. It
// stays addressable, and an address that names it and another message is
// refused as ambiguous instead of acting on either.
func TestLegacyDigitSlugs(t *testing.T) {
	t.Parallel()
	bothEngines(t, func(t *testing.T) {
		db := world(t)
		ctx := context.Background()
		must(t)(db.Ask(ctx, gw, AskArgs{Title: "drop table", Body: "b"}))                   // seq 1
		legacy := must2[AskResult](t)(db.Ask(ctx, gw, AskArgs{Title: "legacy", Body: "b"})) // seq 2
		lonely := must2[AskResult](t)(db.Ask(ctx, gw, AskArgs{Title: "lonely", Body: "b"})) // seq 3
		for slug, old := range map[string]string{"1": "legacy", "9": "lonely"} {
			if _, err := execRaw(t, db, `UPDATE messages SET slug = ? WHERE slug = ?`, slug, old); err != nil {
				t.Fatal(err)
			}
		}
		digest := tableDigest(t, db)
		for _, addr := range []string{"1", "gw--dash:1", "GW--DASH: 1"} {
			_, err := db.Ack(ctx, dash, addr, "", "")
			refused(t, err, "ambiguous")
			refused(t, err, "gw--dash:#1 for [drop-table], or gw--dash:#2 for [1]")
		}
		if tableDigest(t, db) != digest {
			t.Fatal("an ambiguous address changed the database")
		}
		for addr, want := range map[string]int64{"#1": 1, "gw--dash:#1": 1, "gw--dash:#2": legacy.Seq, "9": lonely.Seq, "gw--dash:9": lonely.Seq, "#3": lonely.Seq} {
			st, err := db.Ack(ctx, dash, addr, "", "")
			if err != nil || st.Seq != want {
				t.Errorf("address %q: seq %d (%v), want %d", addr, st.Seq, err, want)
			}
		}
		// In several channels, bare digits have no channel for the seq.
		must(t)(db.ChannelNew(ctx, dash, "other", "", []string{"mesh-gw"}))
		_, err := db.Ack(ctx, dash, "9", "", "")
		refused(t, err, "gw--dash:#3 for [9], or <channel>:#9")
	})
}

func must2[T any](t *testing.T) func(T, error) T {
	return func(v T, err error) T {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
}

// execRaw runs a statement (SQLite's dialect) outside the protocol, to
// put the store in a state an older edition could leave.
func execRaw(t testing.TB, db *DB, query string, args ...any) (sql.Result, error) {
	t.Helper()
	if isPostgres(db) {
		query = postgres.Rewrite(query)
	}
	return rawSQL(db).Exec(query, args...)
}

// tableDigest hashes every row of the tables a call may change.
func tableDigest(t *testing.T, db *DB) string {
	t.Helper()
	h := sha256.New()
	for _, table := range []string{"parties", "channels", "channel_parties", "messages", "item_consumers", "cursors"} {
		rows, err := rawSQL(db).Query(`SELECT * FROM ` + table + ` ORDER BY 1, 2`)
		if err != nil {
			t.Fatal(err)
		}
		cols, _ := rows.Columns()
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		for rows.Next() {
			if err := rows.Scan(ptrs...); err != nil {
				t.Fatal(err)
			}
			fmt.Fprintf(h, "%s %v\n", table, vals)
		}
		rows.Close()
	}
	return fmt.Sprintf("%x", h.Sum(nil))
}

// A database deleted or replaced under a running process: SQLite would go
// on writing to the file the process holds, and the process would confirm
// writes that are lost when it exits. Every write is refused instead.
func TestWritesRefusedWhenTheFileIsGone(t *testing.T) {
	t.Parallel()
	for _, how := range []string{"deleted", "replaced"} {
		t.Run(how, func(t *testing.T) {
			db := world(t)
			ctx := context.Background()
			must(t)(db.Say(ctx, gw, SayArgs{Text: "before"}))
			switch how {
			case "deleted":
				for _, f := range []string{"", "-wal", "-shm"} {
					os.Remove(db.Path() + f)
				}
			case "replaced": // a backup moved into place, say
				other := openTest(t)
				if err := os.Rename(other.Path(), db.Path()); err != nil {
					t.Fatal(err)
				}
			}
			_, err := db.Say(ctx, gw, SayArgs{Text: "after"})
			var se *StorageError
			if !errors.As(err, &se) || !strings.Contains(err.Error(), "was deleted or replaced while this session had it open — nothing was written") {
				t.Fatalf("a write after the file was %s: %v", how, err)
			}
			_, err = db.Ask(ctx, gw, AskArgs{Title: "t", Body: "b"})
			if !errors.As(err, &se) {
				t.Fatalf("an ask after the file was %s: %v", how, err)
			}
		})
	}
}

func consumerNames(cs []Consumer) []string {
	var out []string
	for _, c := range cs {
		out = append(out, c.Party)
	}
	return out
}

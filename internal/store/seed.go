package store

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"
)

// SeedSpec describes a synthetic conversation for benchmarks: a settled
// history that grows, and a present (live items, unread tail) that does
// not, so that two seeds differing only in History show what history costs.
type SeedSpec struct {
	// Parties are the repositories, in order. Parties[0] is the reader:
	// the Unread tail is written for it and it never reads it.
	Parties []Identity
	// Channels are named ch-00, ch-01, ...
	Channels int
	// Seats is the number of parties per channel (at least 2): channel c
	// seats parties c, c+1, c+3, c+6, ... modulo len(Parties).
	Seats int
	// History is the number of settled rows: chatter, replies, events and
	// archived items with their replies, all read by every party.
	History int
	// LiveItems is the number of live asks: two in five open, two in five
	// acked, one in five done and waiting on one consumer's prune-ok.
	LiveItems int
	// Unread is the number of rows peers write after the reader's cursor,
	// spread over the reader's channels.
	Unread int
	// TextBytes, when set, pads the titles and bodies of the live items and
	// the unread rows to this many bytes (a long answer's worth of text);
	// with TextEvery > 1 only every TextEvery-th of them.
	TextBytes, TextEvery int
}

// BenchSpec is the conversation the benchmarks use: 20 channels, 10
// parties, 3 seats per channel, 1,000 live items, 100 rows unread for the
// reader, and a settled history of the given size.
func BenchSpec(parties []Identity, history int) SeedSpec {
	return SeedSpec{Parties: parties, Channels: 20, Seats: 3, History: history, LiveItems: 1000, Unread: 100}
}

// SeedReport says what a seed wrote.
type SeedReport struct {
	Messages int // rows in messages
	Archived int // rows with is_archived = 1
	Unread   int // the reader's unread count over all its channels
	// ReaderChannels are the channels Parties[0] sits in, by name.
	ReaderChannels []string
}

// seedChannel is a channel being filled.
type seedChannel struct {
	id      int64
	name    string
	seats   []int // indexes into the party list
	seq     int64
	lastSay int64 // id of the channel's newest say, for replies
}

// seeder writes a seed inside one transaction.
type seeder struct {
	t       *tx
	spec    SeedSpec
	parties []party
	chans   []*seedChannel
	clock   time.Time
	insert  *sql.Stmt
	consume *sql.Stmt
	report  SeedReport
}

// Seed fills an empty database with spec's conversation in one
// transaction, with the rows the tools would have written: per-channel
// seqs without gaps, consumers with their ack and prune-ok stamps, the
// events acks, resolves and archiving post, and cursors. It is for
// benchmarks; a database that already has parties is refused.
func (d *DB) Seed(ctx context.Context, spec SeedSpec) (SeedReport, error) {
	if len(spec.Parties) < 2 || spec.Seats < 2 || spec.Channels < 1 {
		return SeedReport{}, fmt.Errorf("a seed needs at least 2 parties, 2 seats per channel and 1 channel — got %d, %d and %d", len(spec.Parties), spec.Seats, spec.Channels)
	}
	var report SeedReport
	err := d.update(ctx, func(t *tx) error {
		var n int
		if err := t.row(`SELECT count(*) FROM parties`).Scan(&n); err != nil {
			return err
		}
		if n > 0 {
			return fmt.Errorf("seed only an empty database: %s already has %d parties", d.Path(), n)
		}
		s := &seeder{t: t, spec: spec, clock: time.Now().UTC().Add(-30 * 24 * time.Hour)}
		if err := s.run(); err != nil {
			return err
		}
		report = s.report
		return nil
	})
	return report, err
}

func (s *seeder) run() error {
	var err error
	if s.insert, err = s.t.et.Prepare(`INSERT INTO messages
		(channel_id, seq, kind, parent_id, slug, title, body, ref, author_id, status, is_archived, created_at, updated_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, NULL, ?, ?, ?, ?, ?)`); err != nil {
		return err
	}
	defer s.insert.Close()
	if s.consume, err = s.t.et.Prepare(`INSERT INTO item_consumers (message_id, party_id, acked_at, prune_ok_at) VALUES (?, ?, ?, ?)`); err != nil {
		return err
	}
	defer s.consume.Close()
	steps := []func() error{s.makeParties, s.makeChannels, s.history, s.liveItems, s.cursors, s.unreadTail}
	for _, step := range steps {
		if err := step(); err != nil {
			return err
		}
	}
	return nil
}

// pad makes the i-th padded text TextBytes long: text, then filler words.
func (s *seeder) pad(i int, text string) string {
	n := s.spec.TextBytes
	if n == 0 || (s.spec.TextEvery > 1 && i%s.spec.TextEvery != 0) {
		return text
	}
	if len(text) >= n {
		return strings.ToValidUTF8(text[:n], "")
	}
	const filler = " lorem ipsum dolor sit amet,"
	return text + strings.Repeat(filler, (n-len(text))/len(filler)+1)[:n-len(text)]
}

// tick advances the seed's clock and returns the time in the stored format.
func (s *seeder) tick() string {
	s.clock = s.clock.Add(time.Second)
	return s.clock.Format("2006-01-02T15:04:05.000000") + "+00:00"
}

func (s *seeder) makeParties() error {
	at := s.tick()
	for _, id := range s.spec.Parties {
		res, err := s.t.exec(`INSERT INTO parties (name, workspace_path, os_user, about, first_seen, last_seen) VALUES (?, ?, ?, NULL, ?, ?)`,
			id.Name, id.Workspace, nullable(id.OSUser), at, at)
		if err != nil {
			return err
		}
		pid, err := res.LastInsertId()
		if err != nil {
			return err
		}
		s.parties = append(s.parties, party{id: pid, name: id.Name})
	}
	return nil
}

// seatsOf picks channel c's parties: c, c+1, c+3, c+6, ... (modulo the
// number of parties) without repeats, then any others in order.
func (s *seeder) seatsOf(c int) []int {
	n := len(s.parties)
	want := min(s.spec.Seats, n)
	var out []int
	for k, off := 0, 0; k < 2*n && len(out) < want; k, off = k+1, off+k+1 {
		if p := (c + off) % n; !containsInt(out, p) {
			out = append(out, p)
		}
	}
	for p := 0; len(out) < want; p++ {
		if !containsInt(out, p) {
			out = append(out, p)
		}
	}
	return out
}

// others is list without x.
func others(list []int, x int) []int {
	var out []int
	for _, v := range list {
		if v != x {
			out = append(out, v)
		}
	}
	return out
}

func containsInt(list []int, x int) bool {
	for _, v := range list {
		if v == x {
			return true
		}
	}
	return false
}

func (s *seeder) makeChannels() error {
	for c := 0; c < s.spec.Channels; c++ {
		ch := &seedChannel{name: fmt.Sprintf("ch-%02d", c), seats: s.seatsOf(c)}
		at := s.tick()
		res, err := s.t.exec(`INSERT INTO channels (name, about, created_by, created_at) VALUES (?, ?, ?, ?)`,
			ch.name, "benchmark channel "+ch.name, s.parties[ch.seats[0]].id, at)
		if err != nil {
			return err
		}
		if ch.id, err = res.LastInsertId(); err != nil {
			return err
		}
		for _, p := range ch.seats {
			if _, err := s.t.exec(`INSERT INTO channel_parties (channel_id, party_id, joined_at) VALUES (?, ?, ?)`, ch.id, s.parties[p].id, at); err != nil {
				return err
			}
		}
		if containsInt(ch.seats, 0) {
			s.report.ReaderChannels = append(s.report.ReaderChannels, ch.name)
		}
		s.chans = append(s.chans, ch)
	}
	return nil
}

// seedRow is one message to write.
type seedRow struct {
	kind, body, slug, title, status string
	parent                          int64
	author                          int // index into the party list
	archived                        bool
}

func (s *seeder) write(ch *seedChannel, r seedRow) (int64, error) {
	ch.seq++
	status := r.status
	if status == "" {
		status = "none"
	}
	var parent any
	if r.parent != 0 {
		parent = r.parent
	}
	at := s.tick()
	res, err := s.insert.ExecContext(s.t.ctx, ch.id, ch.seq, r.kind, parent, nullable(r.slug), nullable(r.title), r.body,
		s.parties[r.author].id, status, r.archived, at, at)
	if err != nil {
		return 0, err
	}
	s.report.Messages++
	if r.archived {
		s.report.Archived++
	}
	id, err := res.LastInsertId()
	if r.kind == "say" {
		ch.lastSay = id
	}
	return id, err
}

// history writes settled rows round-robin over the channels in a cycle of
// ten: chatter, a reply, and an item raised, answered, acked, resolved and
// archived (the ask and its reply archived, the events live).
func (s *seeder) history() error {
	cycle := make([]int, len(s.chans)) // position in each channel's cycle
	var item = make([]int64, len(s.chans))
	var itemSlug = make([]string, len(s.chans))
	for i := 0; i < s.spec.History; i++ {
		c := i % len(s.chans)
		ch := s.chans[c]
		pos := cycle[c] % 10
		cycle[c]++
		author := ch.seats[(cycle[c]/10+pos)%len(ch.seats)]
		name := s.parties[author].name
		var err error
		switch pos {
		case 0, 1, 3, 9:
			_, err = s.write(ch, seedRow{kind: "say", author: author, body: fmt.Sprintf("%s: status %d — the build is green, moving on to the next step of the migration", name, i)})
		case 2:
			_, err = s.write(ch, seedRow{kind: "reply", author: author, parent: ch.lastSay, body: fmt.Sprintf("%s: noted (%d), I will pick it up after the current change", name, i)})
		case 4:
			itemSlug[c] = fmt.Sprintf("h-%d", i)
			item[c], err = s.write(ch, seedRow{kind: "ask", author: author, slug: itemSlug[c], title: fmt.Sprintf("Settled question %d", i),
				body: fmt.Sprintf("Which version of the wire format should %s speak after the upgrade? (%d)", name, i), status: "done", archived: true})
			if err == nil {
				err = s.consumers(ch, item[c], author, len(ch.seats), len(ch.seats), -1)
			}
		case 5:
			_, err = s.write(ch, seedRow{kind: "reply", author: author, parent: item[c], archived: true, body: fmt.Sprintf("%s: version 2, from the next release on (%d)", name, i)})
		case 6:
			_, err = s.write(ch, seedRow{kind: "event", author: author, body: fmt.Sprintf("[%s] acked by %s", itemSlug[c], name)})
		case 7:
			_, err = s.write(ch, seedRow{kind: "event", author: author, body: fmt.Sprintf("[%s] resolved by %s (raiser)", itemSlug[c], name)})
		case 8:
			_, err = s.write(ch, seedRow{kind: "event", author: author, body: fmt.Sprintf("[%s] archived (done + unanimous prune-ok)", itemSlug[c])})
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// consumers seats every party of the channel as a consumer of item: the
// author acked at once, the first acked more acked, and all but one
// (skipPrune, or -1 for none) pruned when pruned > 0.
func (s *seeder) consumers(ch *seedChannel, item int64, author, acked, pruned, skipPrune int) error {
	at := s.tick()
	n := 0
	for _, p := range ch.seats {
		var ack, prune any
		if p == author || n < acked {
			ack = at
		}
		if p != author {
			n++
		}
		if pruned > 0 && p != skipPrune {
			prune = at
		}
		if _, err := s.consume.ExecContext(s.t.ctx, item, s.parties[p].id, ack, prune); err != nil {
			return err
		}
	}
	return nil
}

// liveItems writes the live asks round-robin over the channels, with the
// events the tools post when a consumer acks and the raiser resolves.
func (s *seeder) liveItems() error {
	for j := 0; j < s.spec.LiveItems; j++ {
		ch := s.chans[j%len(s.chans)]
		author := ch.seats[(j/len(s.chans))%len(ch.seats)]
		slug := fmt.Sprintf("item-%d", j+1)
		status := [...]string{"open", "open", "ack", "ack", "done"}[j%5]
		id, err := s.write(ch, seedRow{kind: "ask", author: author, slug: slug, status: status,
			title: s.pad(j, fmt.Sprintf("Open question %d for %s", j, ch.name)),
			body:  s.pad(j, fmt.Sprintf("Does the change in %s break the contract the peers rely on? Please check and answer (%d).", ch.name, j))})
		if err != nil {
			return err
		}
		switch status {
		case "open":
			err = s.consumers(ch, id, author, 0, 0, -1)
		case "ack":
			err = s.consumers(ch, id, author, len(ch.seats), 0, -1)
		case "done":
			// Everyone but one consumer (never the raiser) gave prune-ok,
			// so the sweep leaves it live.
			skip := ch.seats[(j/5)%len(ch.seats)]
			if skip == author {
				skip = ch.seats[((j/5)+1)%len(ch.seats)]
			}
			err = s.consumers(ch, id, author, len(ch.seats), 1, skip)
		}
		if err != nil {
			return err
		}
		if status == "open" {
			continue
		}
		for _, p := range ch.seats {
			if p == author {
				continue
			}
			if _, err := s.write(ch, seedRow{kind: "event", author: p, body: fmt.Sprintf("[%s] acked by %s", slug, s.parties[p].name)}); err != nil {
				return err
			}
		}
		if status == "done" {
			if _, err := s.write(ch, seedRow{kind: "event", author: author, body: fmt.Sprintf("[%s] resolved by %s (raiser)", slug, s.parties[author].name)}); err != nil {
				return err
			}
		}
	}
	return nil
}

// cursors puts every party's cursor at the end of each channel it sits in:
// everything so far is read.
func (s *seeder) cursors() error {
	at := s.tick()
	for _, ch := range s.chans {
		for _, p := range ch.seats {
			if _, err := s.t.exec(`INSERT INTO cursors (channel_id, party_id, last_seq, updated_at) VALUES (?, ?, ?, ?)`,
				ch.id, s.parties[p].id, ch.seq, at); err != nil {
				return err
			}
		}
	}
	return nil
}

// unreadTail has the reader's peers chat in the reader's channels after its
// cursor (every fifth row a reply); each author's cursor follows its post.
func (s *seeder) unreadTail() error {
	var mine []*seedChannel
	for _, ch := range s.chans {
		if containsInt(ch.seats, 0) {
			mine = append(mine, ch)
		}
	}
	if len(mine) == 0 {
		return nil
	}
	for i := 0; i < s.spec.Unread; i++ {
		ch := mine[i%len(mine)]
		peers := others(ch.seats, 0)
		author := peers[(i/len(mine))%len(peers)]
		r := seedRow{kind: "say", author: author, body: s.pad(i, fmt.Sprintf("%s: new finding %d — the endpoint now returns paged results, please adapt", s.parties[author].name, i))}
		if i%5 == 4 && ch.lastSay != 0 {
			r = seedRow{kind: "reply", author: author, parent: ch.lastSay, body: s.pad(i, fmt.Sprintf("%s: and the page size is 100 (%d)", s.parties[author].name, i))}
		}
		if _, err := s.write(ch, r); err != nil {
			return err
		}
	}
	at := s.tick()
	for _, ch := range mine {
		if _, err := s.t.exec(`UPDATE cursors SET last_seq = ?, updated_at = ? WHERE channel_id = ? AND party_id <> ?`,
			ch.seq, at, ch.id, s.parties[0].id); err != nil {
			return err
		}
	}
	s.report.Unread = s.spec.Unread
	return nil
}

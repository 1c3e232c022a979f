package store

import (
	"context"
	"regexp"
	"strings"
	"testing"
	"time"
)

// ladderScan matches a plan line that walks the whole of a due-time table.
var ladderScan = regexp.MustCompile(`\bSCAN (item_due|item_stages)\b`)

// The ladder's statements reach its tables through an index: arming the
// clock and choosing what is due read idx_item_due_next from its start,
// and nothing scans item_due or item_stages, which hold a row per item
// ever given a due time.
func TestLadderQueriesUseAnIndex(t *testing.T) {
	start := time.Now().UTC().Add(-time.Hour)
	clock := newFakeClock(start)
	db := openTestWith(t, Options{Clock: clock.now})
	ctx := context.Background()
	report, err := db.Seed(ctx, smallSeed)
	if err != nil {
		t.Fatal(err)
	}
	reader := smallSeed.Parties[0]
	ch := report.ReaderChannels[0]
	var seated []string
	for _, p := range readAll(t, db, reader, ch).Parties {
		if p != reader.Name {
			seated = append(seated, p)
		}
	}
	peer := Identity{Name: seated[0]}
	must(t)(db.Ask(ctx, reader, AskArgs{Channel: ch, Title: "Due soon", Body: "b", Slug: "due-soon", Due: "10m", Consumers: seated[:1]}))
	must(t)(db.Ask(ctx, reader, AskArgs{Channel: ch, Title: "Due later", Body: "b", Slug: "due-later", Due: "2h"}))
	clock.advance(30 * time.Minute)
	zero := int64(0)
	steps := []func() error{
		func() error { _, _, err := db.NextDue(ctx); return err },
		func() error { _, err := db.Advance(ctx, ladder); return err },
		func() error { _, err := db.Inbox(ctx, reader); return err },
		func() error {
			_, err := db.Read(ctx, reader, ReadArgs{Channel: ch, Limit: 50, Since: &zero, Peek: true})
			return err
		},
		func() error {
			_, err := db.SetDue(ctx, reader, DueArgs{Item: ch + ":due-later", Due: "3h"})
			return err
		},
		func() error {
			_, err := db.Reassign(ctx, reader, ReassignArgs{Item: ch + ":due-soon", Consumer: peer.Name, To: seated[1]})
			return err
		},
		func() error { _, err := db.SetDue(ctx, reader, DueArgs{Item: ch + ":due-later"}); return err },
		func() error { _, _, err := db.NextDue(ctx); return err },
	}
	for i, step := range steps {
		if err := step(); err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
	}
	if _, err := db.Inbox(ctx, reader); err != nil { // prepares the last call's statements
		t.Fatal(err)
	}
	uses := map[string]string{
		"SELECT next_at FROM item_due WHERE next_at IS NOT NULL ORDER BY next_at LIMIT 1":                         "idx_item_due_next",
		"SELECT message_id FROM item_due WHERE next_at IS NOT NULL AND next_at <= ? ORDER BY next_at, message_id": "idx_item_due_next",
	}
	found := map[string]bool{}
	for _, q := range db.cachedQueries() {
		if !strings.Contains(q, "item_due") && !strings.Contains(q, "item_stages") {
			continue
		}
		plan := explain(t, db, q)
		if ladderScan.MatchString(plan) || fullScan.MatchString(plan) {
			t.Errorf("a ladder statement scans a growing table:\n%s\nplan:\n%s", strings.TrimSpace(q), plan)
		}
		for text, index := range uses {
			if strings.Contains(q, text) {
				found[text] = true
				if !strings.Contains(plan, index) {
					t.Errorf("does not use %s:\n%s\nplan:\n%s", index, q, plan)
				}
			}
		}
	}
	for text := range uses {
		if !found[text] {
			t.Errorf("no call ran %q", text)
		}
	}
}

package web

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcpp/mcpp-chat/internal/store"
)

// The page shows an item's due time, OVERDUE and by how much once it
// passed with an ack owed, and what the ladder recorded.
func TestPageShowsDueTimesAndTheLadder(t *testing.T) {
	ctx := context.Background()
	past := time.Now().Add(-2 * time.Hour)
	db, err := store.OpenWith(ctx, filepath.Join(t.TempDir(), "chat.db"), store.Options{Clock: func() time.Time { return past }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	fill(t, db)
	for _, a := range []store.AskArgs{
		{Channel: "gw--dash", Slug: "tls", Title: "Can we move to TLS 1.3?", Body: "b", Due: "30m"},
		{Channel: "gw--dash", Slug: "later", Title: "Next quarter", Body: "b", Due: "366d"},
	} {
		if _, err := db.Ask(ctx, gw, a); err != nil {
			t.Fatal(err)
		}
	}
	later, err := store.Open(ctx, db.Path()) // now, 1h30m after the due time
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { later.Close() })
	if _, err := later.Advance(ctx, store.Ladder{RaiserAfter: 15 * time.Minute, PersonAfter: time.Hour}); err != nil {
		t.Fatal(err)
	}
	ts, _ := serve(t, db.Path(), nil)
	_, page := get(t, ts.URL+"/c/gw--dash")
	for _, want := range []string{
		`<span class="due overdue">OVERDUE by 1h30m (due `,
		`) · not acked by node-dash</span>`,
		`<span class="due">due `,
		`overdue: not acked by node-dash (1h30m late: no chat process was running)</li>`,
		`raiser mesh-gw woken to decide (1h15m late: no chat process was running)</li>`,
		`a person told (not acked by node-dash) (30m late: no chat process was running)</li>`,
	} {
		if !strings.Contains(page, want) {
			t.Errorf("the page lacks %s", want)
		}
	}
	if t.Failed() {
		t.Logf("page:\n%s", page)
	}
}

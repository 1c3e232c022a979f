package store

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// ladderOpenItems is how many open items hold a due time in the ladder's
// benchmark conversation.
const ladderOpenItems = 10_000

// BenchmarkLadder is what the escalation ladder's clock costs with 10,000
// open items holding due times, at 10k, 100k and (with
// MCPP_CHAT_BENCH_1M=1: seeding it takes minutes) 1M messages of history:
//
//	MCPP_CHAT_BENCH_1M=1 go test ./internal/store -run '^$' -bench Ladder -benchtime 200x -timeout 60m
//
// arm: NextDue, the one query a clock runs to arm its timer (and again at
// each change it hears of); advance-1 and advance-10: Advance with one and
// ten items due now, which fires their overdue stage and re-arms; ask and
// ask-with-due: chat_ask without and with a due time. Each reports its p50.
func BenchmarkLadder(b *testing.B) {
	ctx := context.Background()
	dir := b.TempDir()
	sizes := []int{10_000, 100_000}
	if os.Getenv("MCPP_CHAT_BENCH_1M") == "1" {
		sizes = append(sizes, 1_000_000)
	}
	for _, n := range sizes {
		name := fmt.Sprintf("%dk", n/1000)
		if n >= 1_000_000 {
			name = fmt.Sprintf("%dM", n/1_000_000)
		}
		var db *DB
		var due []int64 // the items with a due time, in the order they fall due here
		var reader Identity
		var channel string
		outer := b
		open := func(b *testing.B) {
			if db == nil {
				db, due, reader, channel = ladderTemplate(b, dir, n)
				outer.Cleanup(func() { db.Close() }) // every run at this size uses it
			}
		}
		b.Run("arm/"+name, func(b *testing.B) {
			open(b)
			var took []time.Duration
			for b.Loop() {
				start := time.Now()
				if _, ok, err := db.NextDue(ctx); err != nil || !ok {
					b.Fatalf("NextDue: %v, %v", ok, err)
				}
				took = append(took, time.Since(start))
			}
			reportP50(b, took)
		})
		for _, batch := range []int{1, 10} {
			b.Run(fmt.Sprintf("advance-%d/%s", batch, name), func(b *testing.B) {
				open(b)
				var took []time.Duration
				for b.Loop() {
					b.StopTimer()
					if len(due) < batch {
						b.Fatal("the benchmark ran out of items to fall due: give it fewer runs")
					}
					now := Timestamp(time.Now().Add(-time.Second))
					for _, id := range due[:batch] {
						if _, err := rawSQL(db).Exec(`UPDATE item_due SET next_at = ? WHERE message_id = ?`, now, id); err != nil {
							b.Fatal(err)
						}
					}
					due = due[batch:]
					b.StartTimer()
					start := time.Now()
					fired, err := db.Advance(ctx, Ladder{RaiserAfter: time.Hour, PersonAfter: 2 * time.Hour})
					took = append(took, time.Since(start))
					if err != nil || len(fired) != batch {
						b.Fatalf("fired %d stages (%v), want %d", len(fired), err, batch)
					}
				}
				reportP50(b, took)
			})
		}
		for _, with := range []string{"", "1h"} {
			label := "ask"
			if with != "" {
				label = "ask-with-due"
			}
			b.Run(label+"/"+name, func(b *testing.B) {
				open(b)
				var took []time.Duration
				i := 0
				for b.Loop() {
					i++
					start := time.Now()
					if _, err := db.Ask(ctx, reader, AskArgs{Channel: channel, Title: fmt.Sprintf("bench %s %d", label, i), Body: "b", Due: with}); err != nil {
						b.Fatal(err)
					}
					took = append(took, time.Since(start))
				}
				reportP50(b, took)
			})
		}
	}
}

// ladderTemplate seeds the benchmark conversation with history rows and
// 25,000 live items (10,000 of them open), gives every open item a due
// time between one and 10,000 hours ahead, and opens it (the caller
// closes it); it returns the
// items in an order to make them fall due, and a reader and its channel.
func ladderTemplate(b *testing.B, dir string, history int) (*DB, []int64, Identity, string) {
	b.Helper()
	ctx := context.Background()
	path := filepath.Join(dir, fmt.Sprintf("ladder-%d.db", history))
	db, err := Open(ctx, path)
	if err != nil {
		b.Fatal(err)
	}
	spec := BenchSpec(seedParties(10), history)
	spec.LiveItems = ladderOpenItems * 5 / 2 // two in five are open
	report, err := db.Seed(ctx, spec)
	if err != nil {
		b.Fatal(err)
	}
	rows, err := rawSQL(db).Query(`SELECT id FROM messages WHERE kind = 'ask' AND status = 'open' AND is_archived = 0 ORDER BY id`)
	if err != nil {
		b.Fatal(err)
	}
	var ids []int64
	for rows.Next() {
		var id int64
		rows.Scan(&id)
		ids = append(ids, id)
	}
	rows.Close()
	if len(ids) != ladderOpenItems {
		b.Fatalf("%d open items, want %d", len(ids), ladderOpenItems)
	}
	tx, err := rawSQL(db).Begin()
	if err != nil {
		b.Fatal(err)
	}
	now := time.Now()
	for i, id := range ids {
		at := Timestamp(now.Add(time.Duration(i+1) * time.Hour))
		if _, err := tx.Exec(`INSERT INTO item_due (message_id, due_at, stage, next_at, set_at) VALUES (?, ?, 'due', ?, ?)`, id, at, at, Timestamp(now)); err != nil {
			b.Fatal(err)
		}
	}
	if err := tx.Commit(); err != nil {
		b.Fatal(err)
	}
	if _, err := rawSQL(db).Exec(`PRAGMA wal_checkpoint(TRUNCATE)`); err != nil {
		b.Fatal(err)
	}
	return db, ids, spec.Parties[0], report.ReaderChannels[0]
}

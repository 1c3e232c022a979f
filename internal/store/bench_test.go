package store

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"
)

// The store's side of every call, in process (no MCP, no JSON): run with
//   go test -run '^$' -bench . ./internal/store/
// The whole-process and MCP round-trip figures come from go run ./tests/bench.

// seedTemplate writes the benchmark conversation with the given history
// into dir once; copies of it are what each benchmark opens (seeding
// 100,000 rows takes seconds, copying the file milliseconds).
func seedTemplate(b *testing.B, dir string, history int) string {
	b.Helper()
	path := filepath.Join(dir, fmt.Sprintf("history-%d.db", history))
	db, err := Open(context.Background(), path)
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Seed(context.Background(), BenchSpec(seedParties(10), history)); err != nil {
		b.Fatal(err)
	}
	if _, err := rawSQL(db).Exec(`PRAGMA wal_checkpoint(TRUNCATE)`); err != nil {
		b.Fatal(err)
	}
	return path
}

// seededCopy opens a fresh copy of a template.
func seededCopy(b *testing.B, template string) *DB {
	b.Helper()
	dst := filepath.Join(b.TempDir(), "chat.db")
	copyFile(b, template, dst)
	db, err := Open(context.Background(), dst)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { db.Close() })
	return db
}

func copyFile(b *testing.B, src, dst string) {
	in, err := os.Open(src)
	if err != nil {
		b.Fatal(err)
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		b.Fatal(err)
	}
	if err := out.Close(); err != nil {
		b.Fatal(err)
	}
}

func BenchmarkStore(b *testing.B) {
	ctx := context.Background()
	reader := seedParties(10)[0]
	dir := b.TempDir()
	for _, history := range []int{1000, 100000} {
		size := fmt.Sprintf("%dk", history/1000)
		template := ""
		calls := map[string]func(db *DB, i int) error{
			"say": func(db *DB, i int) error {
				_, err := db.Say(ctx, reader, SayArgs{Channel: "ch-00", Text: fmt.Sprintf("benchmark %d", i)})
				return err
			},
			"read": func(db *DB, i int) error {
				_, err := db.Read(ctx, reader, ReadArgs{Channel: "ch-00", Limit: 50, Peek: true})
				return err
			},
			"inbox": func(db *DB, i int) error {
				_, err := db.Inbox(ctx, reader)
				return err
			},
			"whoami": func(db *DB, i int) error {
				_, err := db.Whoami(ctx, reader, "")
				return err
			},
			"channel_list": func(db *DB, i int) error {
				_, err := db.ChannelList(ctx, reader, false)
				return err
			},
		}
		for _, name := range []string{"say", "read", "inbox", "whoami", "channel_list"} {
			b.Run(size+"/"+name, func(b *testing.B) {
				if template == "" {
					template = seedTemplate(b, dir, history)
				}
				db := seededCopy(b, template)
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					if err := calls[name](db, i); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// BenchmarkInboxAfterAPeersWrite is the inbox a session reads right after
// another process wrote: the answer memo cannot help, the store reads (the
// reader sees 30 live items). Only the inbox is timed.
func BenchmarkInboxAfterAPeersWrite(b *testing.B) {
	ctx := context.Background()
	path := filepath.Join(b.TempDir(), "chat.db")
	db, err := Open(ctx, path)
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	parties := seedParties(10)
	spec := BenchSpec(parties, 1000)
	spec.LiveItems = 100
	report, err := db.Seed(ctx, spec)
	if err != nil {
		b.Fatal(err)
	}
	peer, err := Open(ctx, path) // another process, as far as SQLite knows
	if err != nil {
		b.Fatal(err)
	}
	defer peer.Close()
	writer := parties[1]
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		if _, err := peer.Say(ctx, writer, SayArgs{Channel: report.ReaderChannels[0], Text: "news"}); err != nil {
			writer = parties[(i+2)%len(parties)] // one that sits there
			continue
		}
		b.StartTimer()
		if _, err := db.Inbox(ctx, parties[0]); err != nil {
			b.Fatal(err)
		}
	}
}

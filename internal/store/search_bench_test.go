package store

import (
	"context"
	"fmt"
	"os"
	"slices"
	"testing"
	"time"
)

// BenchmarkSearch is a person's search (the read-only handle, every
// channel) on the benchmark conversation with 100,000 settled messages:
//
//	go test ./internal/store -run '^$' -bench 'Search/(one-hit|tenth|four-tenths|after-a-write)' -benchtime 200x
//	go test ./internal/store -run '^$' -bench Search/index -benchtime 5x
//
// (two commands: each index run rebuilds the whole index, seconds apiece).
// index: the first search, which indexes the whole history (a copy of the
// database without an index each time); the others search an index that
// is up to date, for a word in one message, in about one in ten (the
// settled questions) and in four in ten (the chatter), and after a
// peer's write (the new row indexed first). Each reports its p50.
func BenchmarkSearch(b *testing.B) {
	ctx := context.Background()
	template := seedTemplate(b, b.TempDir(), 100_000)
	b.Run("index/100k", func(b *testing.B) {
		var took []time.Duration
		for b.Loop() {
			b.StopTimer()
			db := seededCopy(b, template)
			r, err := OpenReadOnly(ctx, db.Path())
			if err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
			start := time.Now()
			if _, err := r.Search(ctx, SearchArgs{Query: "wire"}); err != nil {
				b.Fatal(err)
			}
			took = append(took, time.Since(start))
			b.StopTimer()
			r.Close()
			os.Remove(db.Path() + SearchIndexSuffix)
			b.StartTimer()
		}
		reportP50(b, took)
	})
	db := seededCopy(b, template)
	r, err := OpenReadOnly(ctx, db.Path())
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close()
	if _, err := r.Search(ctx, SearchArgs{Query: "warm"}); err != nil {
		b.Fatal(err)
	}
	for _, q := range []struct{ name, query string }{
		{"one-hit", `"status 50000"`},
		{"tenth", "wire format"},
		{"four-tenths", "migration"},
	} {
		b.Run(fmt.Sprintf("%s/100k", q.name), func(b *testing.B) {
			var took []time.Duration
			for b.Loop() {
				start := time.Now()
				res, err := r.Search(ctx, SearchArgs{Query: q.query})
				took = append(took, time.Since(start))
				if err != nil || res.Total == 0 {
					b.Fatalf("%s: %v, %d hits", q.query, err, res.Total)
				}
			}
			reportP50(b, took)
		})
	}
	reader := seedParties(10)[0]
	b.Run("after-a-write/100k", func(b *testing.B) {
		var took []time.Duration
		i := 0
		for b.Loop() {
			b.StopTimer()
			i++
			if _, err := db.Say(ctx, reader, SayArgs{Channel: "ch-00", Text: fmt.Sprintf("pelican %d", i)}); err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
			start := time.Now()
			res, err := r.Search(ctx, SearchArgs{Query: fmt.Sprintf(`"pelican %d"`, i)})
			took = append(took, time.Since(start))
			if err != nil || res.Total != 1 {
				b.Fatalf("pelican %d: %v, %d hits", i, err, res.Total)
			}
		}
		reportP50(b, took)
	})
}

// reportP50 adds the median of the runs to the benchmark's line.
func reportP50(b *testing.B, took []time.Duration) {
	if len(took) == 0 {
		return
	}
	slices.Sort(took)
	b.ReportMetric(float64(took[len(took)/2].Microseconds())/1000, "p50-ms")
}

package web

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/mcpp/mcpp-chat/internal/store"
)

// BenchmarkFirstLoad is what opening the page costs on the benchmark
// conversation with 100,000 settled messages (20 channels, 1,000 live
// items): GET / and its redirect to the first channel's page (its newest
// rows, threads, item states, every channel's unread counts per party and
// the presence), then the style and the script:
//
//	go test ./internal/web -run '^$' -bench FirstLoad -benchtime 200x
//
// It reports the p50 of the whole load.
func BenchmarkFirstLoad(b *testing.B) {
	ctx := context.Background()
	path := filepath.Join(b.TempDir(), "chat.db")
	db, err := store.Open(ctx, path)
	if err != nil {
		b.Fatal(err)
	}
	parties := make([]store.Identity, 10)
	for i := range parties {
		name := fmt.Sprintf("party-%02d", i)
		parties[i] = store.Identity{Name: name, Workspace: "/srv/" + name}
	}
	if _, err := db.Seed(ctx, store.BenchSpec(parties, 100_000)); err != nil {
		b.Fatal(err)
	}
	db.Close()
	ts, _ := serveBench(b, path)
	load := func() int {
		n := 0
		for _, u := range []string{"/", "/static/app.css", "/static/app.js"} {
			res, err := http.Get(ts + u)
			if err != nil {
				b.Fatal(err)
			}
			body, _ := io.ReadAll(res.Body)
			res.Body.Close()
			if res.StatusCode != http.StatusOK {
				b.Fatalf("GET %s = %d\n%s", u, res.StatusCode, body)
			}
			n += len(body)
		}
		return n
	}
	size := load()
	var took []time.Duration
	for b.Loop() {
		start := time.Now()
		load()
		took = append(took, time.Since(start))
	}
	slices.Sort(took)
	b.ReportMetric(float64(took[len(took)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(size)/1024, "KiB")
}

func serveBench(b *testing.B, db string) (string, *Server) {
	ctx, cancel := context.WithCancel(context.Background())
	b.Cleanup(cancel)
	r, err := store.OpenReadOnly(ctx, db)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { r.Close() })
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	s, err := New(r, Options{Listen: ln.Addr().String()})
	if err != nil {
		b.Fatal(err)
	}
	srv := &http.Server{Handler: s.Handler()}
	go srv.Serve(ln)
	b.Cleanup(func() { srv.Close() })
	return "http://" + ln.Addr().String(), s
}

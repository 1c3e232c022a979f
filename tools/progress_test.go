package tools

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpp/mcpp-chat/internal/config"
)

// A wait whose client asked for progress says every chat.wait_progress_ms
// how long it has waited, and stops saying so when the wait ends.
func TestWaitProgressEveryInterval(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		s := &Service{Config: config.Defaults()}
		// The progress is told on keepAlive's goroutine, ordered with the
		// check by the bubble's clock, which the race detector does not
		// see: a lock tells it.
		var mu sync.Mutex
		var told []string
		ctx := context.WithValue(context.Background(), progressKey{}, progressFunc(func(_ context.Context, done, total float64, msg string) {
			mu.Lock()
			defer mu.Unlock()
			told = append(told, fmt.Sprintf("%v/%v %s", done, total, msg))
		}))
		start := time.Now()
		stop := s.keepAlive(ctx, start, 12)
		time.Sleep(12 * time.Second)
		stop()
		time.Sleep(time.Minute)
		mu.Lock()
		got := told
		mu.Unlock()
		want := []string{"5/12 waiting for a peer (5s of 12s)", "10/12 waiting for a peer (10s of 12s)"}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("progress %q, want %q", got, want)
		}
	})
}

// A search that builds its index tells a client that sent a progress
// token how far the build has come, once it has run for
// indexProgressAfter (a parameter here: zero, or an hour), in
// notifications whose last counts every message.
func TestSearchBuildSendsProgress(t *testing.T) {
	for _, c := range []struct {
		name  string
		after time.Duration
		want  bool
	}{{"slow", 0, true}, {"quick", time.Hour, false}} {
		t.Run(c.name, func(t *testing.T) {
			defer func(was time.Duration) { indexProgressAfter = was }(indexProgressAfter)
			indexProgressAfter = c.after
			p := newPair(t)
			for i := range 20 {
				p.say(fmt.Sprintf("osprey %d", i))
			}
			var mu sync.Mutex
			var got []*mcp.ProgressNotificationParams
			cs := connectMCP(t, p.reader, &mcp.ClientOptions{
				ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
					mu.Lock()
					defer mu.Unlock()
					got = append(got, req.Params)
				},
			})
			params := &mcp.CallToolParams{Name: "chat_search", Arguments: map[string]any{"query": "osprey"}}
			params.SetProgressToken("search-1")
			res, err := cs.CallTool(context.Background(), params)
			if err != nil || res.IsError {
				t.Fatalf("chat_search: %v %+v", err, res)
			}
			// A notification is sent before the answer; the client may
			// hand it over after. Closing the session waits for both.
			cs.Close()
			mu.Lock()
			defer mu.Unlock()
			if !c.want {
				if len(got) != 0 {
					t.Fatalf("a build shorter than indexProgressAfter sent %d notifications", len(got))
				}
				return
			}
			if len(got) == 0 {
				t.Fatal("a slow build with a progress token sent no progress notification")
			}
			last := got[len(got)-1]
			if last.ProgressToken != "search-1" || last.Total == 0 || last.Progress != last.Total || !strings.Contains(last.Message, "building the search index") {
				t.Fatalf("last notification %+v", last)
			}
		})
	}
}

// connectMCP serves s over MCP in memory and connects a client with opts.
func connectMCP(t *testing.T, s *Service, opts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	ctx := context.Background()
	st, ct := mcp.NewInMemoryTransports()
	ss, err := NewMCPServer(s, "test", nil).Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ss.Close() })
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, opts).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

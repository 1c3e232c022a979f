package hub

import (
	"io"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// The first answer wakes the waiter whose Next started the watcher, however
// the goroutines interleave. Here the hub answers the first poll in memory
// at once, and more threads than cores let the kernel stop the waiter's
// anywhere, so that the first answer can come while Next runs: when Next
// started the poller before it took its channel, about 3 waiters in 20,000
// slept through that answer (on 2 cores).
func TestWatcherFirstAnswerWakesTheFirstWaiter(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: 20,000 watchers, to catch a race that showed 3 times in 20,000, are a second of two busy cores; it runs in the full tier (make test)")
	}
	// Not parallel: GOMAXPROCS is the whole process's.
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(8))
	const watchers = 20000
	var slept atomic.Int64
	turns := make(chan struct{}, 64)
	var wg sync.WaitGroup
	for range watchers {
		turns <- struct{}{}
		wg.Go(func() {
			defer func() { <-turns }()
			c, err := NewClient("http://hub.invalid", "mcc_x_y", "")
			if err != nil {
				t.Error(err)
				return
			}
			c.HTTP = &http.Client{Transport: answersAtOnce{}}
			w := c.Watch()
			defer w.Close()
			select {
			case <-w.Next():
			case <-time.After(10 * time.Second): // the answer came in microseconds
				slept.Add(1)
			}
		})
	}
	wg.Wait()
	if n := slept.Load(); n > 0 {
		t.Errorf("%d of %d waiters slept through the watcher's first answer", n, watchers)
	}
}

// answersAtOnce is a hub in memory: its first /v1/wait (no ETag yet)
// answers a state at once; a later one waits until the poll ends.
type answersAtOnce struct{}

func (answersAtOnce) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.URL.Query().Get("etag") != "" {
		<-r.Context().Done()
		return nil, r.Context().Err()
	}
	return &http.Response{StatusCode: http.StatusOK, Header: http.Header{"Content-Type": {"application/json"}},
		Body: io.NopCloser(strings.NewReader(`{"etag":"\"e1\"","changed":true}`)), Request: r}, nil
}

package web

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"time"
)

// hub hears of every change from one waiter on the watcher and tells each
// open page. A page that is busy misses nothing: its flag stays set, and a
// burst of changes is one refresh.
type hub struct {
	changes Changes
	// mark names the store's last commit (store.ReadOnly.CommitMark): the
	// watcher wakes many times per commit of a database file, a page is
	// told once. ok false: every wake-up is told.
	mark  func() (mark string, ok bool)
	mu    sync.Mutex
	pages map[chan struct{}]struct{}
}

func newHub(changes Changes, mark func() (string, bool)) *hub {
	return &hub{changes: changes, mark: mark, pages: map[chan struct{}]struct{}{}}
}

// run waits for changes until ctx ends, telling every page of each commit
// once. The next change is taken before the pages are told, so a change
// while they look is one more refresh, never a lost one.
func (h *hub) run(ctx context.Context) error {
	if h.changes == nil {
		<-ctx.Done()
		return ctx.Err()
	}
	next := h.changes.Next()
	last, _ := h.mark()
	for {
		select {
		case <-next:
		case <-ctx.Done():
			return ctx.Err()
		}
		next = h.changes.Next()
		mark, ok := h.mark()
		if ok && mark == last {
			continue // the same commit again: the watcher's look again, a reader's lock
		}
		last = mark
		h.tell()
	}
}

func (h *hub) tell() {
	h.mu.Lock()
	defer h.mu.Unlock()
	for c := range h.pages {
		select {
		case c <- struct{}{}:
		default:
		}
	}
}

func (h *hub) join() chan struct{} {
	c := make(chan struct{}, 1)
	h.mu.Lock()
	h.pages[c] = struct{}{}
	h.mu.Unlock()
	return c
}

func (h *hub) leave(c chan struct{}) {
	h.mu.Lock()
	delete(h.pages, c)
	h.mu.Unlock()
}

// keepAlive is how often an idle stream says it is still there, so that
// nothing between the page and us closes it as idle.
const keepAlive = 25 * time.Second

// events is the page's event stream: "change" after each change, until
// the page goes or the server stops.
func (s *Server) events(w http.ResponseWriter, r *http.Request) {
	flush, ok := w.(http.Flusher)
	if !ok {
		http.Error(w, "this connection cannot stream events", http.StatusInternalServerError)
		return
	}
	c := s.hub.join()
	defer s.hub.leave(c)
	w.Header().Set("Content-Type", "text/event-stream")
	// A page that lost its stream asks again after a second.
	fmt.Fprint(w, "retry: 1000\nevent: ready\ndata: \n\n")
	flush.Flush()
	tick := time.NewTicker(keepAlive)
	defer tick.Stop()
	for {
		select {
		case <-r.Context().Done():
			return
		case <-c:
			fmt.Fprint(w, "event: change\ndata: \n\n")
		case <-tick.C:
			fmt.Fprint(w, ": still here\n\n")
		}
		flush.Flush()
	}
}

package hub

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib"

	"github.com/mcpp/mcpp-chat/internal/config"
	"github.com/mcpp/mcpp-chat/internal/listen"
	"github.com/mcpp/mcpp-chat/internal/pgtest"
	"github.com/mcpp/mcpp-chat/internal/store"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// startTeamHub starts a hub on a fresh PostgreSQL database, told of
// changes by a listener, as hub serve runs on a team store.
func startTeamHub(t *testing.T) *testHub {
	t.Helper()
	url := pgtest.URL(t)
	return startTeamHubOn(t, url, url, store.Options{})
}

// startTeamHubOn is startTeamHub on the database at url, whose writes
// (and token checks) go through writeURL with o.
func startTeamHubOn(t *testing.T, url, writeURL string, o store.Options) *testHub {
	t.Helper()
	ctx, h := newTeamHub(t, url, writeURL, o)
	h.srv = httptest.NewServer(h.s.Handler(ctx))
	t.Cleanup(h.srv.Close)
	return h
}

// startLimitedTeamHub is startTeamHub served as hub serve serves it,
// within lim.
func startLimitedTeamHub(t *testing.T, lim Limits) *testHub {
	t.Helper()
	url := pgtest.URL(t)
	ctx, h := newTeamHub(t, url, url, store.Options{})
	serveLimited(t, ctx, h, lim)
	return h
}

// newTeamHub makes a hub's server (not yet served) on the database at
// url, as startTeamHubOn describes.
func newTeamHub(t *testing.T, url, writeURL string, o store.Options) (context.Context, *testHub) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	db, err := store.OpenPostgres(ctx, writeURL, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	read, err := store.OpenReadOnlyPostgres(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { read.Close() })
	changes := listen.New(url)
	t.Cleanup(func() { changes.Close() })
	h := hubOn(t, ctx, db, read, config.Defaults(), changes)
	h.s.MaxWait = 30 * time.Second
	return ctx, h
}

// askedChanges are a team store's listener that says each time a wait
// asks to be woken at its keys (nextFor): from then on a commit that
// concerns those keys wakes it.
type askedChanges struct {
	*listen.Listener
	asked chan struct{}
}

func (c askedChanges) NextOf(keys []int64) (<-chan struct{}, func()) {
	next, stop := c.Listener.NextOf(keys)
	select {
	case c.asked <- struct{}{}:
	default:
	}
	return next, stop
}

// On a team store a party's waits and summaries are read again only at
// the commits that concern it: twenty says in a channel alpha is not in
// make the hub read what alpha sees not once, and a say in alpha's
// channel wakes alpha's wait at once.
func TestTeamWaitReadsOnlyForItsOwnChannels(t *testing.T) {
	t.Parallel()
	url := pgtest.URL(t)
	hubCtx, h := newTeamHub(t, url, url, store.Options{})
	asked := make(chan struct{}, 1)
	h.s.Changes = askedChanges{h.s.Changes.(*listen.Listener), asked}
	h.srv = httptest.NewServer(h.s.Handler(hubCtx))
	t.Cleanup(h.srv.Close)
	ctx := context.Background()
	alpha := h.client(t, h.issue("alpha", time.Hour, "alpha"), "")
	gamma := h.client(t, h.issue("gamma", time.Hour, "gamma"), "")
	delta := h.client(t, h.issue("delta", time.Hour, "delta"), "")
	call(t, alpha, "chat_whoami", `{}`)
	call(t, delta, "chat_whoami", `{}`)
	call(t, gamma, "chat_channel_new", `{"name":"gamma--delta","parties":["delta"]}`)
	call(t, alpha, "chat_channel_new", `{"name":"alpha--delta","parties":["delta"]}`)
	tag, err := alpha.Wait(ctx, "", time.Second) // no tag yet: answered at once
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := alpha.Pending(ctx, tag, 3); err != nil {
		t.Fatal(err)
	}

	select {
	case <-asked: // the wait above asked too
	default:
	}
	woke := make(chan string, 1)
	go func() {
		moved, err := alpha.Wait(ctx, tag, 25*time.Second)
		if err != nil {
			t.Error(err)
		}
		woke <- moved
	}()
	select {
	case <-asked: // the wait is in: a say from now on that concerns alpha wakes it
	case <-time.After(20 * time.Second):
		t.Fatal("alpha's wait never asked to be woken")
	}
	before := h.s.seenReads.Load()
	for range 20 {
		call(t, gamma, "chat_say", `{"channel":"gamma--delta","text":"between gamma and delta"}`)
	}
	if _, _, err := alpha.Pending(ctx, tag, 3); err != nil {
		t.Fatal(err)
	}
	if n := h.s.seenReads.Load() - before; n != 0 {
		t.Fatalf("twenty says in a channel alpha is not in made the hub read what alpha sees %d times", n)
	}
	select {
	case <-woke:
		t.Fatal("alpha's wait ended at says in a channel alpha is not in")
	default:
	}
	call(t, delta, "chat_say", `{"channel":"alpha--delta","text":"to alpha"}`)
	select {
	case moved := <-woke:
		if moved == tag {
			t.Fatalf("alpha's wait ended with its tag where it was")
		}
	case <-time.After(20 * time.Second):
		t.Fatal("alpha's wait was not woken by a say in its channel")
	}
}

// Token checks go through the store's bounded pool: two thousand
// requests with made-up tokens, two hundred at a time, are each refused
// as unknown (401, never "cannot reach its store"), the hub never holds
// more of the store's connections than its pool allows, and a member's
// calls are answered all the while.
func TestMadeUpTokensNeverExhaustTheStore(t *testing.T) {
	t.Parallel()
	const poolCap, requests, atOnce = 4, 2000, 200
	url := pgtest.URL(t)
	// The pool's connections are told apart from the read handle's and
	// the listener's by their application name.
	h := startTeamHubOn(t, url, withParam(url, "application_name", "hubpool"), store.Options{MaxConns: poolCap})
	alpha := h.client(t, h.issue("alpha", time.Hour, "alpha"), "")
	call(t, alpha, "chat_whoami", `{}`)

	watch, err := sql.Open("pgx", url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { watch.Close() })
	var peak atomic.Int64
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() { // the connections of the hub's pool
		defer close(sampled)
		for {
			var n int64
			if err := watch.QueryRow(`SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND application_name = 'hubpool'`).Scan(&n); err == nil && n > peak.Load() {
				peak.Store(n)
			}
			select {
			case <-stop:
				return
			case <-time.After(5 * time.Millisecond):
			}
		}
	}()

	client := &http.Client{Timeout: time.Minute, Transport: &http.Transport{MaxConnsPerHost: atOnce, MaxIdleConnsPerHost: atOnce}}
	codes := make(chan int, requests)
	turns := make(chan struct{}, atOnce)
	var wg sync.WaitGroup
	for i := range requests {
		wg.Add(1)
		turns <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-turns }()
			req, _ := http.NewRequest("POST", h.srv.URL+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
			req.Header.Set("Authorization", fmt.Sprintf("Bearer mcc_%012x_%s", i, strings.Repeat("x", 43)))
			req.Header.Set("Content-Type", "application/json")
			res, err := client.Do(req)
			if err != nil {
				codes <- 0
				return
			}
			io.Copy(io.Discard, res.Body)
			res.Body.Close()
			codes <- res.StatusCode
		}()
		if i%100 == 0 {
			call(t, alpha, "chat_inbox", `{}`)
		}
	}
	wg.Wait()
	close(stop)
	<-sampled
	close(codes)
	counts := map[int]int{}
	for c := range codes {
		counts[c]++
	}
	if counts[http.StatusUnauthorized] != requests {
		t.Errorf("made-up tokens were answered %v, want all %d refused with 401", counts, requests)
	}
	switch n := peak.Load(); {
	case n == 0:
		t.Error("no connection of the hub's pool was seen: the count does not find them")
	case n > poolCap:
		t.Errorf("the hub held %d of the store's connections at once, over its pool of %d", n, poolCap)
	}
}

func withParam(url, key, value string) string {
	sep := "?"
	if strings.Contains(url, "?") {
		sep = "&"
	}
	return url + sep + key + "=" + value
}

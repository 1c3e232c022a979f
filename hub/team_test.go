package hub

import (
	"context"
	"net/http/httptest"
	"os"
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
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	db, err := store.OpenPostgres(ctx, url, store.Options{})
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
	h.srv = httptest.NewServer(h.s.Handler(ctx))
	t.Cleanup(h.srv.Close)
	return h
}

// On a team store a party's waits and summaries are read again only at
// the commits that concern it: twenty says in a channel alpha is not in
// make the hub read what alpha sees not once, and a say in alpha's
// channel wakes alpha's wait at once.
func TestTeamWaitReadsOnlyForItsOwnChannels(t *testing.T) {
	h := startTeamHub(t)
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

	woke := make(chan string, 1)
	go func() {
		moved, err := alpha.Wait(ctx, tag, 25*time.Second)
		if err != nil {
			t.Error(err)
		}
		woke <- moved
	}()
	time.Sleep(200 * time.Millisecond) // the wait is in, as far as ordering goes
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

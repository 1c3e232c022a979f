package main

import (
	"cmp"
	"context"
	"errors"
	"log/slog"
	"os"
	"slices"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpp/mcpp-chat/hook"
	"github.com/mcpp/mcpp-chat/internal/codexwake"
	"github.com/mcpp/mcpp-chat/internal/config"
	"github.com/mcpp/mcpp-chat/internal/listen"
	"github.com/mcpp/mcpp-chat/internal/store"
	"github.com/mcpp/mcpp-chat/internal/wake"

	"github.com/mcpp/mcpp-chat/internal/turns"
)

// A serve that Codex started rings the party's idle Codex sessions when a
// peer waits on it (internal/codexwake): it watches the store as chat_wait
// does — on a member machine, the hub's state its own serve keeps in the
// hook's cache — and looks at every change.

// doorbell is a running Codex doorbell.
type doorbell struct {
	bell *codexwake.Doorbell
	poke chan struct{}
	done chan struct{}
	// ring is what the current look rings for; Look calls Rang within
	// it, on run's goroutine.
	ring  hook.Ring
	limit int    // attention.wakes_per_10m
	dir   string // the hook's state folder
}

// readTools are the calls that show the party what waits on it: one from
// a thread means that thread's session has read, and its ring is no
// longer outstanding.
var readTools = []string{"chat_inbox", "chat_read", "chat_wait"}

// startDoorbell starts the doorbell when Codex started this serve; nil
// when it did not, or where the doorbell cannot run.
func startDoorbell(ctx context.Context, in install, log *slog.Logger) *doorbell {
	if !codexwake.Supported {
		return nil
	}
	self, ok := codexwake.Self()
	if !ok {
		return nil
	}
	c, ok := codexwake.FindClient(os.Getpid())
	if !ok || c.Kind == codexwake.KindOther {
		return nil
	}
	// The hook keeps its state where its environment says, and it runs
	// with Codex's: Codex gives this server only a few variables.
	dir := hook.StateDir(c.Getenv)
	if dir == "" {
		return nil
	}
	src, err := pendingSource(ctx, in)
	if err != nil {
		log.Warn("the Codex doorbell cannot watch the chat; idle Codex sessions are not woken", "err", err)
		return nil
	}
	partyOf := func(dir string) string {
		p, err := config.Identify(dir, in.cfg.Identity.GitRoot)
		if err != nil {
			return ""
		}
		return p.Root
	}
	env := os.Environ()
	// Where this server's posts look for their turn (sessionTurn).
	turnClient, _ := turns.ClientOf(os.Getpid())
	d := &doorbell{poke: make(chan struct{}, 1), done: make(chan struct{})}
	d.limit, d.dir = in.cfg.Attention.WakesPer10m, dir
	d.bell = &codexwake.Doorbell{
		Dir: dir, Client: c, Party: in.party.Root, Self: self, Log: log,
		Ring: func(ctx context.Context, t codexwake.Thread, text string) error {
			// The Codex process this serve runs under is the thread's:
			// its binary and folder, as this serve sees them, not as a
			// file says.
			t.Exe, t.CodexHome = c.Exe, cmp.Or(c.CodexHome, t.CodexHome)
			return codexwake.Queue(ctx, t, text, env)
		},
		Interfaces: func() int { return codexwake.Interfaces(c, in.party.Root, partyOf) },
		// As the idle wake does, the ring counts as reported to the
		// session's Stop hook, which then does not block for it too; and
		// as any wake, it counts for the per-sender limit and begins a
		// turn of the chain of the posts it rings for.
		Rang: func(ctx context.Context, t codexwake.Thread, keys, prior []string) {
			if err := hook.MarkRung(ctx, dir, t.ID, in.party.Root, keys); err != nil {
				log.Warn("the Codex doorbell could not note its ring for the Stop hook", "thread", t.ID, "err", err)
			}
			if err := d.ring.Rang(ctx, dir, in.party.Root, turnClient, t.ID, prior); err != nil {
				log.Warn("the Codex doorbell could not note its ring's chain and senders", "thread", t.ID, "err", err)
			}
		},
		Alive: codexwake.Alive,
		Now:   time.Now,
	}
	if err := d.bell.Register(ctx); err != nil {
		log.Warn("the Codex doorbell cannot keep its record; idle Codex sessions are not woken", "err", err)
		src.close()
		return nil
	}
	go d.run(ctx, src)
	return d
}

// run looks at what waits on the party at each change, and when a look
// asks to look again (a refused ring's retry, a recheck), until ctx ends.
func (d *doorbell) run(ctx context.Context, src source) {
	defer close(d.done)
	defer src.close()
	for {
		changed := src.changes.Next() // before the look: a change during it is not missed
		var again time.Duration
		p, err := src.pending(ctx)
		if err == nil {
			now := time.Now()
			d.ring = hook.PlanRing(d.dir, d.bell.Party, p, d.limit, now)
			again = d.bell.Look(ctx, codexwake.Waiting{Keys: d.ring.Keys, Line: d.ring.Line})
			if !d.ring.Retry.IsZero() {
				// A key held by the per-sender limit rings once its
				// sender may wake the party again, with no new change.
				if held := max(d.ring.Retry.Sub(now), time.Millisecond); again == 0 || held < again {
					again = held
				}
			}
		}
		var retry <-chan time.Time
		if again > 0 {
			retry = time.After(again)
		}
		select {
		case <-changed:
		case <-retry:
		case <-d.poke:
		case <-ctx.Done():
			return
		}
	}
}

// stop ends the doorbell (its ctx has ended) and takes this server out of
// the record.
func (d *doorbell) stop() {
	if d == nil {
		return
	}
	<-d.done
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	d.bell.Unregister(ctx)
}

// notesReads is the MCP middleware that tells the doorbell which thread's
// session read: Codex names the thread in every tool call's _meta.
func (d *doorbell) notesReads() mcp.Middleware {
	return func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			res, err := next(ctx, method, req)
			call, ok := req.(*mcp.CallToolRequest)
			if ok && err == nil && method == "tools/call" && slices.Contains(readTools, call.Params.Name) {
				if id := codexThread(call.Params.Meta); id != "" {
					d.bell.Read(ctx, id)
					select {
					case d.poke <- struct{}{}:
					default:
					}
				}
			}
			return res, err
		}
	}
}

// codexThread is the thread a Codex tool call names in its _meta.
func codexThread(meta mcp.Meta) string {
	turn, _ := meta["x-codex-turn-metadata"].(map[string]any)
	id, _ := turn["thread_id"].(string)
	return id
}

// source is how the doorbell reads what waits on the party, and what
// tells it the chat changed.
type source struct {
	pending func(context.Context) (store.Pending, error)
	changes watcher
	close   func()
}

// pendingSource is the database and its files, a team store and its
// notifications, or on a member machine the hook's cache of the hub's
// state, which this serve keeps.
func pendingSource(ctx context.Context, in install) (source, error) {
	if in.onHub() {
		path := hook.HubCachePath(in.paths, in.party.Name)
		w, err := wake.Watch(path, "")
		if err != nil {
			return source{}, err
		}
		return source{changes: w, close: func() { w.Close() }, pending: func(context.Context) (store.Pending, error) {
			c, ok := hook.ReadHubCache(path, time.Now())
			if !ok || c.Party != in.party.Name {
				return store.Pending{}, errors.New("no fresh word from the hub")
			}
			return c.Pending, nil
		}}, nil
	}
	r, err := in.openReadOnly(ctx)
	if err != nil {
		return source{}, err
	}
	r.SetAttention(*attentionOf(in.cfg)) // the hooks' rules: what rings is what wakes
	var w watcher
	if in.onPostgres() {
		w = listen.New(in.paths.Store)
	} else if w, err = wake.Watch(in.paths.DB, in.paths.Tick); err != nil {
		r.Close()
		return source{}, err
	}
	root := in.party.Root
	return source{changes: w, close: func() { w.Close(); r.Close() }, pending: func(ctx context.Context) (store.Pending, error) {
		ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		return r.Pending(ctx, root, hook.NewestShown)
	}}, nil
}

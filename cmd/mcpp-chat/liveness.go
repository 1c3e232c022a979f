package main

import (
	"context"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/mcpp/mcpp-chat/internal/config"
	"github.com/mcpp/mcpp-chat/internal/store"
	"github.com/mcpp/mcpp-chat/internal/wake"
)

// tickWriter rewrites the tick file after each committed call. A tick that
// cannot be written never fails the call (the message is stored; only
// watchers lose a hint), so it is reported once on stderr and then ignored.
func tickWriter(path string) func(store.Change) {
	var once sync.Once
	return func(c store.Change) {
		if err := wake.WriteTick(path, c); err != nil {
			once.Do(func() {
				fmt.Fprintf(os.Stderr, "mcpp-chat: %v — watchers will only notice changes by polling; fix the folder's permissions or set chat.tick_file: \"\"\n", err)
			})
		}
	}
}

// waitForChanges is the service's Changed: the first chat_wait starts a
// watcher on the database's folder, shared by every later wait (each gets
// its own subscription) and closed when ctx ends.
func waitForChanges(ctx context.Context, p config.Paths) func(context.Context) error {
	var once sync.Once
	var changed func(context.Context) error
	return func(wctx context.Context) error {
		once.Do(func() {
			w, err := wake.Watch(p.DB, p.Tick)
			if err != nil {
				return
			}
			context.AfterFunc(ctx, func() { w.Close() })
			changed = w.PerContext()
		})
		if changed == nil {
			return pollOnce(wctx)
		}
		return changed(wctx)
	}
}

// pollOnce is the fallback when no watcher could start.
func pollOnce(ctx context.Context) error {
	t := time.NewTimer(wake.PollEvery)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

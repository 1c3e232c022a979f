package main

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/mcpp/mcpp-chat/hub"
	"github.com/mcpp/mcpp-chat/internal/store"
	"github.com/mcpp/mcpp-chat/internal/told"
	"github.com/mcpp/mcpp-chat/tools"
)

// foldTold has serve record what the hook told this party's sessions:
// the hook journals its tellings once its output reached the client, and
// serve folds them into the store (on a member machine, through the hub)
// as they arrive. It returns a function that stops it.
func foldTold(in install, svc *tools.Service, c *hub.Client, log *slog.Logger) func() {
	record := func(ctx context.Context, list []store.Telling) error {
		_, err := svc.DB.RecordTold(ctx, svc.Me, list)
		return err
	}
	if c != nil {
		record = func(ctx context.Context, list []store.Telling) error {
			_, err := c.Told(ctx, list)
			return err
		}
	}
	dir := told.Dir(in.paths, in.party.Root)
	var warned bool
	fold := func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_, err := told.Fold(dir, time.Now(), func(list []store.Telling) error { return record(ctx, list) })
		if err != nil && !warned {
			log.Warn("could not record what the hook told this session (it is kept and tried again)", "err", err)
		}
		warned = err != nil
	}
	ctx, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { told.Follow(ctx, dir, fold) })
	return func() {
		stop()
		wg.Wait()
	}
}

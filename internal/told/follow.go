package told

import (
	"context"
	"os"
	"time"

	"github.com/fsnotify/fsnotify"
)

// FoldEvery is how often Follow folds the journal when no notification
// said a file arrived (a file system without them).
const FoldEvery = 30 * time.Second

// Follow runs fold when serve starts, whenever a file arrives in the
// journal dir, and every FoldEvery, until ctx ends. It returns once it
// has stopped.
func Follow(ctx context.Context, dir string, fold func()) {
	os.MkdirAll(dir, 0o700) // a watch needs the folder; Append makes it too
	var arrived <-chan fsnotify.Event
	var failed <-chan error
	if w, err := fsnotify.NewWatcher(); err == nil {
		defer w.Close()
		if w.Add(dir) == nil {
			arrived, failed = w.Events, w.Errors
		}
	}
	tick := time.NewTicker(FoldEvery)
	defer tick.Stop()
	fold()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			fold()
		case _, ok := <-failed: // the ticker still folds
			if !ok {
				failed = nil
			}
		case ev, ok := <-arrived:
			if !ok {
				arrived = nil
				continue
			}
			if !ev.Has(fsnotify.Create) && !ev.Has(fsnotify.Rename) {
				continue
			}
			// A file arrives as a rename of a finished one; the
			// notifications of a burst are folded once.
			for drained := false; !drained; {
				select {
				case <-arrived:
				default:
					drained = true
				}
			}
			fold()
		}
	}
}

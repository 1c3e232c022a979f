package engine

import (
	"context"
	"time"
)

// Wait is how every engine waits for a turn, and the one rule of the busy
// timeout: it bounds how long the queue a call waits in may stand still,
// not how long the queue may be. A burst of a few hundred calls takes its
// turns one after another, and the last is as good as the first; a call
// fails only when nothing moved for a whole period.
//
// try waits for the turn at most the time it is given, and reports
// whether it got it; moved is a count that grows whenever a turn of the
// queue passes (a call committed, a connection came back). The first try
// waits first, each later one period, and Wait gives up — got false, no
// error — after a period in which moved stood still; the caller then
// fails with its Busy cause.
func Wait(ctx context.Context, first, period time.Duration, moved func() (int64, error),
	try func(ctx context.Context, wait time.Duration) (bool, error)) (got bool, err error) {
	last, err := moved()
	if err != nil {
		return false, err
	}
	for wait := first; ; wait = period {
		got, err := try(ctx, wait)
		if err != nil || got {
			return got, err
		}
		now, err := moved()
		if err != nil || now == last {
			return false, err
		}
		last = now
	}
}

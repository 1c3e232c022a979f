package engine

import (
	"errors"
	"fmt"
	"time"
)

// DefaultBusyTimeout is how long a call waits for its turn to write before
// it gives up with a retryable error, unless an engine is told otherwise.
const DefaultBusyTimeout = 5 * time.Second

// ErrBusy matches (errors.Is) the error of a call that waited its whole
// busy timeout for its turn to write. The call wrote nothing and can be
// retried. The error's text names the timeout the call had and what it
// waited for.
var ErrBusy error = Busy{Waited: DefaultBusyTimeout}

// What a call that ran out of its busy timeout waited for: the sentence
// names the real cause, since the fix differs (a process of one's own
// that writes a lot, another process, a team store's channel or pool).
type Cause uint8

const (
	OtherProcess Cause = iota // SQLite's lock or the machine's writers' queue
	OwnQueue                  // this process's writer slot
	Channel                   // a team store's lock on one channel
	Rows                      // a team store's row or name another call holds
	Pool                      // a free connection to the team store
	LongReads                 // the share of a team store's connections long reads may hold
)

// Busy is ErrBusy for a call that waited Waited for Cause.
type Busy struct {
	Waited time.Duration
	Cause  Cause
}

func (e Busy) Error() string {
	what := fmt.Sprintf("another process has held its write lock for %v", e.Waited)
	switch e.Cause {
	case OwnQueue:
		what = fmt.Sprintf("this process's own writes have queued ahead of this call for %v", e.Waited)
	case Rows:
		what = fmt.Sprintf("other calls have held what this call writes for %v", e.Waited)
	case Channel:
		what = fmt.Sprintf("other calls have held this channel's write lock for %v", e.Waited)
	case Pool:
		what = fmt.Sprintf("every connection this process may open to the team store was in use for %v", e.Waited)
	case LongReads:
		what = fmt.Sprintf("other searches and long reads have held their share of this process's connections to the team store for %v", e.Waited)
	}
	return "the chat database is busy: " + what + " — nothing was written; retry the call in a few seconds"
}

// Is makes every Busy ErrBusy, whatever time it names.
func (Busy) Is(target error) bool {
	_, ok := target.(Busy)
	return ok
}

// BusyFor is err, if it is a Busy, with the time the call waited: its
// busy timeout, unless it names a wait of its own (the pool's).
func BusyFor(err error, waited time.Duration) error {
	var b Busy
	if !errors.As(err, &b) {
		return Busy{Waited: waited}
	}
	if b.Cause != Pool && b.Cause != LongReads {
		b.Waited = waited
	}
	return b
}

// ErrNoDatabase reports that the database file does not exist (nobody has
// used the chat yet). A read-only handle never creates it.
var ErrNoDatabase = errors.New("no chat database yet — it is created by the first chat tool call")

// UserError is a refusal caused by the call's arguments or the state of the
// conversation. Its message is one sentence that says what to do.
type UserError struct{ msg string }

func (e *UserError) Error() string { return e.msg }

// UserErrorf formats a UserError.
func UserErrorf(format string, args ...any) error {
	return &UserError{msg: fmt.Sprintf(format, args...)}
}

// StorageError is a state of the database file or its disk that stops a
// call and that the user must fix (a full disk, say). Its message is one
// sentence that says what happened and what to do; it wraps the driver's
// error behind it, if any.
type StorageError struct {
	msg string
	err error
}

func (e *StorageError) Error() string { return e.msg }
func (e *StorageError) Unwrap() error { return e.err }

// StorageErrorf formats a StorageError as fmt.Errorf does, %w included.
func StorageErrorf(format string, args ...any) error {
	err := fmt.Errorf(format, args...)
	return &StorageError{msg: err.Error(), err: errors.Unwrap(err)}
}

// NewStorageError is a StorageError that says msg and wraps err, whose own
// text is not for the person.
func NewStorageError(msg string, err error) *StorageError {
	return &StorageError{msg: msg, err: err}
}

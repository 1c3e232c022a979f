package store

import (
	"strings"
	"testing"
)

// ErrBusy tells the agent how long the call waited, so its text follows
// DefaultBusyTimeout instead of repeating the number (a call with another
// timeout names its own: TestBusyErrorNamesTheTimeout).
func TestErrBusyNamesTheBusyTimeout(t *testing.T) {
	t.Parallel()
	if want := "write lock for " + DefaultBusyTimeout.String() + " "; !strings.Contains(ErrBusy.Error(), want) {
		t.Fatalf("ErrBusy = %q, want it to say %q", ErrBusy, want)
	}
}

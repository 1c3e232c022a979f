package store

import (
	"errors"
	"strings"
	"testing"

	"github.com/ncruces/go-sqlite3"
)

// ErrBusy tells the agent how long the call waited, so its text follows
// DefaultBusyTimeout instead of repeating the number (a call with another
// timeout names its own: TestBusyErrorNamesTheTimeout).
func TestErrBusyNamesTheBusyTimeout(t *testing.T) {
	if want := "write lock for " + DefaultBusyTimeout.String() + " "; !strings.Contains(ErrBusy.Error(), want) {
		t.Fatalf("ErrBusy = %q, want it to say %q", ErrBusy, want)
	}
}

// A broken file is the user's to fix, so the tools pass the sentence on
// (a StorageError); the driver's error stays reachable behind it.
func TestStorageErrorsWrapTheDriversError(t *testing.T) {
	err := describe("/srv/chat.db", sqlite3.NOTADB)
	var se *StorageError
	if !errors.As(err, &se) || !errors.Is(err, sqlite3.NOTADB) || !strings.Contains(err.Error(), "move it aside") {
		t.Fatalf("describe(NOTADB) = %#v", err)
	}
}

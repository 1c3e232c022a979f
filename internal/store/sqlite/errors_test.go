package sqlite

import (
	"errors"
	"strings"
	"testing"

	"github.com/ncruces/go-sqlite3"

	"github.com/mcpp/mcpp-chat/internal/store/engine"
)

// A broken file is the user's to fix, so the tools pass the sentence on
// (a StorageError); the driver's error stays reachable behind it.
func TestStorageErrorsWrapTheDriversError(t *testing.T) {
	err := describe("/srv/chat.db", sqlite3.NOTADB)
	var se *engine.StorageError
	if !errors.As(err, &se) || !errors.Is(err, sqlite3.NOTADB) || !strings.Contains(err.Error(), "move it aside") {
		t.Fatalf("describe(NOTADB) = %#v", err)
	}
}

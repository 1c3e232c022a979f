package store

import (
	"database/sql"

	"github.com/mcpp/mcpp-chat/internal/store/postgres"

	"testing"

	"time"
)

// rawSQL is the engine's own handle, for a test that looks under the
// protocol.
func rawSQL(db *DB) *sql.DB { return db.eng.SQL() }

// isPostgres reports a handle on a team store.
func isPostgres(db *DB) bool {
	_, ok := db.eng.(*postgres.Engine)
	return ok
}

// fingerprint waits until the store's state can be named (right after
// a write a file's cannot, by design) and names it.
func fingerprint(t *testing.T, db *DB) string {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		state, ok := db.State()
		switch {
		case ok:
			return state
		case time.Now().After(deadline):
			t.Fatalf("no state of %s in a minute", db.Path())
		}
		time.Sleep(5 * time.Millisecond)
	}
}

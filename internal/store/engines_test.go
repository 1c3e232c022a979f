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

// fingerprint takes the database's fingerprint once the files' times can
// be trusted (right after a write there is none, by design).
func fingerprint(t *testing.T, path string) string {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(5 * time.Millisecond) {
		if fp, ok := Fingerprint(path); ok {
			return fp
		}
		if time.Now().After(deadline) {
			t.Fatalf("no fingerprint for %s", path)
		}
	}
}

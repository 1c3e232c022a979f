package postgres

import (
	"database/sql"
	"errors"

	"github.com/mcpp/mcpp-chat/internal/store/engine"
)

// connClosed reports the error of a connection the driver had already
// closed under the call. pgx says only "conn closed" when the line broke
// while it waited for an answer — a server process killed, a network cut,
// which send no goodbye — and the error that closed it is gone by then;
// database/sql says sql.ErrConnDone. This package does not import pgx
// (the hook links no driver), so pgx's error is known by its text.
func connClosed(err error) bool {
	if errors.Is(err, sql.ErrConnDone) {
		return true
	}
	for ; err != nil; err = errors.Unwrap(err) {
		if err.Error() == "conn closed" {
			return true
		}
	}
	return false
}

// describeCommit is describe for a commit that failed. A transaction that
// wrote and lost its connection at the commit may have committed before
// the line broke: the call is not told that nothing was written, nor run
// again, but told to look before it retries.
func (e *Engine) describeCommit(err error, wrote bool) error {
	if wrote && lostConnection(err) {
		return engine.StorageErrorf("the connection to the PostgreSQL store %s broke while the call committed (%w) — it may or may not have landed: look with chat_read or chat_inbox before you retry it", e.where, scrub(err))
	}
	return e.Describe(err)
}

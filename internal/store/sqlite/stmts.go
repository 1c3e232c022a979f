package sqlite

import (
	"context"
	"database/sql"
	"sync"

	"github.com/ncruces/go-sqlite3"

	"sort"
)

// stablePlans turns on SQLite's query planner stability guarantee for a
// new connection: a statement's plan no longer depends on the values bound
// to it. Without it, SQLite compares a statement's parameters with the
// constants of the partial indexes' WHERE clauses and then re-prepares the
// statement at every run — which undoes the statement cache. Every query
// here that needs a partial index names its constants in the SQL text.
func stablePlans(c *sqlite3.Conn) error {
	_, err := c.Config(sqlite3.DBCONFIG_ENABLE_QPSG, true)
	return err
}

// stmtCache keeps every query a long-lived handle runs prepared: parsing
// and planning a statement costs more than running most of them, and a
// server runs the same few dozen statements for its whole life. The
// statements are few and fixed (all SQL is constant text in the protocol and this package),
// so the cache never needs evicting.
//
// A query is prepared between calls, never inside one: preparing on the
// handle needs a connection, and inside a transaction the only idle one
// may be the transaction's own. So a query's first run goes unprepared and
// is noted; prepare (called before the next transaction begins) prepares
// the noted ones on the idle connection, and later runs reuse them.
type stmtCache struct {
	db      *sql.DB
	mu      sync.Mutex
	m       map[string]*sql.Stmt
	pending map[string]bool
}

func newStmtCache(db *sql.DB) *stmtCache {
	return &stmtCache{db: db, m: map[string]*sql.Stmt{}, pending: map[string]bool{}}
}

// in returns query prepared for use inside sqlTx, or nil when it is not
// prepared yet (or the cache is nil: a one-shot handle); the caller then
// runs the text directly. A nil sqlTx asks for the statement on the
// handle itself.
func (c *stmtCache) in(ctx context.Context, sqlTx *sql.Tx, query string) *sql.Stmt {
	if c == nil {
		return nil
	}
	c.mu.Lock()
	st, ok := c.m[query]
	if !ok {
		c.pending[query] = true
	}
	c.mu.Unlock()
	if !ok || sqlTx == nil {
		return st
	}
	return sqlTx.StmtContext(ctx, st)
}

// prepare prepares the queries noted since the last call. It must run
// outside any transaction of this handle. A query that fails to prepare is
// dropped: run as text, it reports its error where it is used.
func (c *stmtCache) prepare(ctx context.Context) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for query := range c.pending {
		delete(c.pending, query)
		if st, err := c.db.PrepareContext(ctx, query); err == nil {
			c.m[query] = st
		}
	}
}

// close releases every prepared statement.
func (c *stmtCache) close() {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for q, st := range c.m {
		st.Close()
		delete(c.m, q)
	}
}

// Statements are the queries the handle keeps prepared: every one its
// calls ran (tests check each one's plan).
func (e *Engine) Statements() []string {
	e.stmts.mu.Lock()
	defer e.stmts.mu.Unlock()
	out := make([]string, 0, len(e.stmts.m))
	for q := range e.stmts.m {
		out = append(out, q)
	}
	sort.Strings(out)
	return out
}

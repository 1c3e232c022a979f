// Package engine is the port between the chat protocol (package store)
// and the databases it runs on (packages sqlite and postgres): what an
// engine must do, and nothing of the chat's rules. The protocol runs every
// call as one transaction through Engine.Run, in SQL written in SQLite's
// dialect, and says where a call must take its turn (Tx's turn methods);
// each engine decides how. Engines import this package and never the
// protocol; the protocol names an engine only in the one file that opens
// them (store/open.go).
package engine

import (
	"context"
	"database/sql"
	"time"
)

// Kind is how a call's transaction takes its turn.
type Kind uint8

const (
	// Read only reads: it takes no writer's turn and no lock, and a
	// statement in it that writes fails (a search, the hook, the page).
	Read Kind = iota
	// View reads, and may write what only moves forward (a cursor,
	// last_seen). SQLite reads without its write lock and, when the
	// upgrade to a writer is refused, runs the call again as an Update.
	View
	// Update writes: SQLite's writers' queue and BEGIN IMMEDIATE, a team
	// store's shared lock with its channel locks taken as the call finds
	// the channels.
	Update
	// Exclusive runs alone against every call of every process (the
	// person's commands, migrate's copy).
	Exclusive
)

// Engine runs the protocol's transactions on one database.
type Engine interface {
	// Run runs fn in one transaction of kind k and commits it, waiting
	// for its turn by the busy timeout's patience (Wait). fn may run more
	// than once, each time in a fresh transaction, so it assigns its
	// outputs rather than appending to them. The Change fn returns is
	// what the commit announces; Run returns it once committed. An error
	// of fn's is returned as it is: the caller describes the driver's
	// errors (Describe).
	Run(ctx context.Context, k Kind, fn func(Tx) (*Change, error)) (*Change, error)
	// State names the committed state of the whole store: it moves with
	// every commit that wrote. ok is false when it cannot tell.
	State() (state string, ok bool)
	// Version is the store's schema version, 0 for an empty store.
	Version(ctx context.Context) (int, error)
	// Describe turns a driver's error into one a person can act on; any
	// other error is returned as it is.
	Describe(err error) error
	// Where names the store for messages: its file, or its URL without
	// a password.
	Where() string
	// SQL is the engine's handle, for tests and migrate's copy; the
	// protocol never uses it.
	SQL() *sql.DB
	Close() error
}

// Tx is one transaction as the protocol sees it. Statements are written
// in SQLite's dialect; an engine that speaks another rewrites them. The
// turn methods say where a writing call must hold a channel or a name;
// an engine whose writing calls run alone (SQLite) does nothing there.
type Tx interface {
	Exec(query string, args ...any) (sql.Result, error)
	Query(query string, args ...any) (*sql.Rows, error)
	Row(query string, args ...any) *sql.Row
	// Insert runs an INSERT … RETURNING id and stores the new row's id.
	Insert(id *int64, query string, args ...any) error
	// Prepare prepares a statement the transaction runs many times (the
	// demo's and the benchmarks' seeding).
	Prepare(query string) (*sql.Stmt, error)
	// Wrote reports that a statement that writes ran.
	Wrote() bool

	// LockChannel takes channel id's turn for the rest of a writing
	// call. fresh says the call did not hold it yet: what it read of the
	// channel before may have changed.
	LockChannel(id int64) (fresh bool, err error)
	// TryLockChannel takes channel id's turn if nobody holds it, never
	// waiting (the sweep, in channels other than the call's own).
	// recheck says that what the call read of the channel before the
	// turn may have changed since.
	TryLockChannel(id int64) (got, recheck bool, err error)
	// LockName takes the turn of a name not made yet (a channel's, a new
	// party's), once per name within a transaction. fresh says it was
	// not held before: another call may have made the name meanwhile.
	LockName(space Space, name string) (fresh bool, err error)
	// Clock marks what the commit changes for the waiters: a channel's
	// id, or minus a party's id (a cursor, last_seen).
	Clock(key int64)
	// Wake names a key whose waiters the commit concerns although it
	// changes nothing of theirs (a party seated in a channel).
	Wake(key int64)
	// SeenParty writes a party's last_seen, unless another call is
	// writing it right now.
	SeenParty(id int64, now string) error
}

// Space is what a name LockName takes belongs to.
type Space uint8

const (
	ChannelName Space = iota + 1
	NewParty
	// Claims is a kind of claim (the name is the kind): a claim is
	// granted only after every other claim of its kind is seen.
	Claims
)

// Change describes the newest row a committed call touched: what the tick
// file and watchers report.
type Change struct {
	Channel string
	Seq     int64
	Author  string
	// CommittedAt is the call's time (as Now writes it): the tick names
	// the time of the write, not of the tick's own delayed write.
	CommittedAt string
}

// Who names a party to an engine that tells parties apart (a team
// store's clocks): by name on a team hub, else by its folder.
type Who struct {
	Name      string
	Workspace string
	Team      bool
}

// Key is the column a party is found by, and its value.
func (w Who) Key() (column, value string) {
	if w.Team {
		return "name", w.Name
	}
	return "workspace_path", w.Workspace
}

// Party is a party's row as a state's look found it: a read call then
// need not find it again.
type Party struct {
	ID       int64
	Name     string
	LastSeen string
}

// Optional capabilities, asked for with a type assertion.

// CheapState is an engine whose State costs no round trip (a few stats of
// a file), so that the memos may ask it before and after every call.
type CheapState interface {
	CheapState()
}

// Turns is an engine whose calls take turns for a bounded pool of
// connections (a team store).
type Turns interface {
	// HoldTurn has the rest of ctx's call hold one turn, so that it
	// queues once however many transactions it runs; release gives it
	// back.
	HoldTurn(ctx context.Context) (held context.Context, release func(), err error)
	// LongRead has the rest of ctx's call run as a read that may take
	// long (a search, a page of arrivals), within the bounded share of
	// the turns such reads may hold, party's share included.
	LongRead(ctx context.Context, party string) (held context.Context, done func(), err error)
}

// PartyStates is an engine that names what one party sees, so that a
// party's answers are kept while only other channels change.
type PartyStates interface {
	PartyState(ctx context.Context, who Who) (state string, p Party, ok bool)
}

// Announcer is an engine that announces each commit to the waiters it
// concerns: the keys (Tx.Clock, Tx.Wake) of what a party sees.
type Announcer interface {
	WaitKeys(ctx context.Context, who Who) ([]int64, error)
}

// Searcher is an engine that searches the chat's text itself.
type Searcher interface {
	Search(ctx context.Context, q Query) (Ranked, error)
}

// Query is a full-text search as an engine runs it.
type Query struct {
	// Text is what the person typed (package fulltext reads it).
	Text string
	// Scope is the channels to look in; nil looks in all.
	Scope []int64
	// Archived nil finds live and archived messages; true only archived,
	// false only live ones.
	Archived *bool
	// Limit and Skip choose the page, best first.
	Limit, Skip int
	// Progress, if set, is told how far bringing an index up to date has
	// come, at most once each ProgressAfter (see store.SearchArgs).
	Progress      func(Progress)
	ProgressAfter time.Duration
}

// Progress says how far bringing a search index up to date has come.
type Progress struct {
	Done, Total int64
}

// Ranked is a page of a search: each hit's message id and passage, best
// first, and how many hits there are in all.
type Ranked struct {
	Total int
	Hits  []Hit
}

// Hit is a message a search found and its matching passage.
type Hit struct {
	ID      int64
	Snippet string
}

// PathClaimMarks is a transaction that keeps, beside its store, until
// when a claim on a path may be live, for the hook to let an edit pass
// without opening the store while none can be (a database file's
// <db>.claims). The protocol marks it before the commit that makes such a
// claim live or longer, so that a reader never finds it lower than a
// committed claim's expiry.
type PathClaimMarks interface {
	MarkPathClaims(until string) error
}

// Backups is an engine that keeps copies of its database.
type Backups interface {
	// DailyBackup has the engine copy the database into dir once a day,
	// after a commit, keeping retainDays copies; onError hears a failed
	// one.
	DailyBackup(dir string, retainDays int, onError func(error))
	Backup(ctx context.Context, dir string, retainDays int, now time.Time) (path string, made bool, err error)
}

// TokenStore is an engine that keeps the hub's tokens beside the chat,
// outside the chat's versioned schema (the Python edition's too): on
// PostgreSQL in a table of the store, on SQLite in a file of its own
// beside the database.
type TokenStore interface {
	// TokenDB is the handle the tokens live in, the rewrite of their
	// statements (written in SQLite's dialect) into the engine's, and
	// what to call when done with them.
	TokenDB(ctx context.Context) (db *sql.DB, rewrite func(string) string, release func() error, err error)
}

// Now is the current time in the format both editions write:
// 2026-11-29T18:09:27.662912+00:00.
func Now() string {
	return Timestamp(time.Now())
}

// Timestamp is t in the format both editions write.
func Timestamp(t time.Time) string {
	return t.UTC().Format("2006-01-02T15:04:05.000000") + "+00:00"
}

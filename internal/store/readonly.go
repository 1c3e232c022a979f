package store

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// ReadOnlyBusyTimeout is how long a read-only handle waits for a lock. A
// WAL reader never waits for a writer, only for rare exclusive holders
// (recovery, a locking_mode=exclusive connection); the hook must answer
// within a second, so it gives up early and says nothing.
const ReadOnlyBusyTimeout = 250 * time.Millisecond

// ErrNoDatabase reports that the database file does not exist (nobody has
// used the chat yet). A read-only handle never creates it.
var ErrNoDatabase = errors.New("no chat database yet — it is created by the first chat tool call")

// ErrUnknownParty reports a folder whose party has never used the chat. A
// read-only handle never creates a party.
var ErrUnknownParty = errors.New("this folder is not a chat party yet — any chat tool call from it makes it one")

// errSnapshotMoved reports that the database file changed under an
// immutable read; the read is thrown away and done again.
var errSnapshotMoved = errors.New("the database changed during an immutable read")

// ReadOnly is a handle that can only read: the hook's. It never moves a
// cursor, never acks, never sweeps, never creates a party, and changes no
// byte of the database or its -wal.
//
// A WAL database is read through SQLite's ordinary read-only mode while its
// -wal exists. Without a -wal (no connection is open and the last one
// checkpointed everything into the main file) that mode would create an
// empty -wal and a -shm, so the file is read as immutable instead, and the
// read is kept only if the file did not change while it ran.
type ReadOnly struct {
	path  string
	db    *sql.DB
	stamp *fileStamp // set while reading an immutable snapshot
	// mu makes reads of one handle take turns: a reopen replaces db, and
	// a long-lived handle (the page) reads from several goroutines.
	mu sync.Mutex
	// search is the full-text index beside the database (search.go).
	search searchHolder
	// stmts keeps the queries prepared once the handle searched (nil
	// before): a search runs the same few each time, and a handle that
	// searches lives on (the page), while the hook's reads once each.
	stmts *stmtCache
	// pg is the engine of a team store on PostgreSQL; nil for SQLite.
	pg *postgres
	// shared: db and pg are a DB's (DB.Reader), which closes them.
	shared bool
}

// OpenReadOnly opens the database at path for reading. It fails, without
// creating anything, when the file is missing or is not an SQLite database.
func OpenReadOnly(ctx context.Context, path string) (*ReadOnly, error) {
	path, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("resolve database path: %w", err)
	}
	r := &ReadOnly{path: path}
	if err := r.open(ctx); err != nil {
		return nil, err
	}
	return r, nil
}

// Path is the database file.
func (r *ReadOnly) Path() string { return r.path }

// CommitMark names the store's last commit (see the function of that name)
// for a database file; a team store announces each commit once, so there
// ok is false: every announcement is a change.
func (r *ReadOnly) CommitMark() (mark string, ok bool) {
	if r.pg != nil {
		return "", false
	}
	return CommitMark(r.path)
}

// Close releases the handle.
func (r *ReadOnly) Close() error {
	r.search.close()
	r.stmts.close()
	if r.db == nil || r.shared {
		return nil
	}
	return r.db.Close()
}

func (r *ReadOnly) open(ctx context.Context) error {
	wal, err := walHeader(r.path)
	if err != nil {
		return err
	}
	r.stamp = nil
	immutable := wal && !fileExists(r.path+"-wal")
	if immutable {
		st, err := quietStamp(ctx, r.path)
		if err != nil {
			return err
		}
		r.stamp = &st
	}
	db, err := sql.Open("sqlite3", readOnlyDSN(r.path, immutable))
	if err != nil {
		return fmt.Errorf("open %s: %w", r.path, err)
	}
	db.SetMaxOpenConns(1)
	r.db = db
	return nil
}

func (r *ReadOnly) reopen(ctx context.Context) error {
	if r.stmts != nil {
		r.stmts.close()
		r.stmts = nil
	}
	if r.db != nil {
		r.db.Close()
		r.db = nil
	}
	return r.open(ctx)
}

func readOnlyDSN(path string, immutable bool) string {
	q := url.Values{}
	q.Add("_pragma", fmt.Sprintf("busy_timeout(%d)", ReadOnlyBusyTimeout.Milliseconds()))
	q.Set("mode", "ro")
	if immutable {
		q.Set("immutable", "1")
	}
	return "file:" + (&url.URL{Path: path}).EscapedPath() + "?" + q.Encode()
}

// walHeader reads the file header: an error unless it is an SQLite file,
// and whether it is in WAL mode (read and write versions both 2).
func walHeader(path string) (bool, error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return false, ErrNoDatabase
	}
	if err != nil {
		return false, fmt.Errorf("cannot read the chat database %s: %w", path, err)
	}
	defer f.Close()
	var h [100]byte
	n, err := io.ReadFull(f, h[:])
	if n == 0 {
		// Empty: another process is making the database this moment (an
		// mcpp host's worker starting beside this look), as SQLite takes
		// an empty file for an empty database. No chat yet.
		return false, ErrNoDatabase
	}
	if err != nil || !isSQLite(h[:]) {
		return false, fmt.Errorf("%s is not an SQLite database — move it aside or point MCPP_CHAT_DB at another file", path)
	}
	return h[18] == 2 && h[19] == 2, nil
}

// isSQLite reports whether a file's first bytes are SQLite's header string.
func isSQLite(head []byte) bool {
	return bytes.HasPrefix(head, []byte("SQLite format 3\x00"))
}

func fileExists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}

// fileStamp identifies one version of a file: any write changes the
// modification or change time, a replacement changes the inode.
type fileStamp struct {
	size         int64
	mtime, ctime time.Time
	ino          uint64
}

// changed is the file's last change: the later of its modification and
// change times.
func (a fileStamp) changed() time.Time {
	if a.ctime.After(a.mtime) {
		return a.ctime
	}
	return a.mtime
}

// trusted reports whether the file's last change is far enough before now
// that a later write cannot leave its times unchanged: trustAge, or
// coarseTrustAge on a file system that keeps whole seconds (both times
// without nanoseconds).
func trusted(st fileStamp, now time.Time) bool {
	return now.Sub(st.changed()) >= trustAgeOf(st)
}

func trustAgeOf(st fileStamp) time.Duration {
	if st.mtime.Nanosecond() == 0 && st.ctime.Nanosecond() == 0 {
		return coarseTrustAge
	}
	return trustAge
}

func (a fileStamp) same(b fileStamp) bool {
	return a.size == b.size && a.ino == b.ino && a.mtime.Equal(b.mtime) && a.ctime.Equal(b.ctime)
}

// trustAge is how old the last write must be before a stamp can be
// trusted: file times tick in kernel jiffies (up to 10 ms), so a write in
// the same tick as the previous one could leave the time unchanged.
const trustAge = 30 * time.Millisecond

// coarseTrustAge is trustAge for file systems whose times tick in seconds
// (FAT, HFS+, ext4 with small inodes, some network file systems).
const coarseTrustAge = 2 * time.Second

// quietStamp stamps the file once its last write is older than trustAge,
// so that any later write shows in the stamp.
func quietStamp(ctx context.Context, path string) (fileStamp, error) {
	for {
		st, err := stampOf(path)
		if err != nil {
			return st, err
		}
		now := time.Now()
		if trusted(st, now) {
			return st, nil
		}
		select {
		case <-ctx.Done():
			return st, ctx.Err()
		case <-time.After(trustAgeOf(st) - now.Sub(st.changed())):
		}
	}
}

func stampOf(path string) (fileStamp, error) {
	info, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return fileStamp{}, ErrNoDatabase
	}
	if err != nil {
		return fileStamp{}, fmt.Errorf("cannot read the chat database %s: %w", path, err)
	}
	st := fileStamp{size: info.Size(), mtime: info.ModTime()}
	st.ctime, st.ino = statDetails(info)
	return st, nil
}

// view runs fn in a read-only transaction. An immutable read whose file
// changed meanwhile is done again from a fresh open (by then the writer's
// -wal exists, so the ordinary read-only mode is used). So is a read on a
// handle opened immutable when a -wal has appeared since: a long-lived
// handle (watch) would not see what is committed there.
func (r *ReadOnly) view(ctx context.Context, fn func(*tx) error) error {
	if r.pg != nil {
		return r.pg.readOnly(ctx, r.db, fn)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.stamp != nil && fileExists(r.path+"-wal") {
		if err := r.reopen(ctx); err != nil {
			return err
		}
	}
	for attempt := 1; ; attempt++ {
		err := r.viewOnce(ctx, fn)
		if !errors.Is(err, errSnapshotMoved) || attempt == 3 {
			return err
		}
		if err := r.reopen(ctx); err != nil {
			return err
		}
	}
}

func (r *ReadOnly) viewOnce(ctx context.Context, fn func(*tx) error) error {
	r.stmts.prepare(ctx)
	sqlTx, err := r.db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return r.wrap(err)
	}
	defer sqlTx.Rollback()
	err = fn(&tx{Tx: sqlTx, ctx: ctx, now: Now(), stmts: r.stmts})
	// An immutable read sees pages as they are on disk: if a writer
	// checkpointed meanwhile, its result (or its error: a torn page looks
	// corrupt) is not a snapshot, whatever it is.
	if r.stamp != nil {
		st, serr := stampOf(r.path)
		if serr != nil || !st.same(*r.stamp) {
			return errSnapshotMoved
		}
	}
	if err != nil {
		return r.wrap(err)
	}
	return nil
}

// keepStatements has the handle keep its queries prepared from now on.
func (r *ReadOnly) keepStatements() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.stmts == nil && r.db != nil {
		r.stmts = newStmtCache(r.db)
	}
}

func (r *ReadOnly) wrap(err error) error {
	if errors.Is(err, ErrUnknownParty) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	if isBusy(err) {
		return fmt.Errorf("the chat database %s is locked by another process: %w", r.path, err)
	}
	return describe(r.path, err)
}

// UnreadCountCap is where the read-only handle stops counting a channel's
// unread messages: an exact count walks every unread row, and "over 1000"
// says enough while keeping the hook's cost flat however much is unread.
const UnreadCountCap = 1000

// Pending is what waits on a party, as the hook reports it: per-channel
// unread counts with the newest few unread messages, and the inbox's items.
type Pending struct {
	Party         string
	Workspace     string
	Channels      []ChannelPending
	WaitingOnMe   []WaitingOnMe
	WaitingOnPeer []WaitingOnPeer
	// UnreadByPeers are the party's recent messages a seated peer has not
	// read yet, as chat_inbox lists them.
	UnreadByPeers []Receipt
}

// Unread sums the channels' unread counts; over says a channel had more
// than UnreadCountCap.
func (p Pending) Unread() (n int, over bool) {
	for _, c := range p.Channels {
		n += c.Unread
		over = over || c.Over
	}
	return n, over
}

// ChannelPending is one of the party's channels.
type ChannelPending struct {
	Channel string
	Parties []string
	// Unread counts the live rows after the party's cursor that a peer
	// wrote, up to UnreadCountCap; Over says there are more than that.
	Unread int
	Over   bool
	// NewestTalk is the seq of the newest unread say, ask or reply from a
	// peer; 0 when only events (acks, archives, joins) are unread.
	NewestTalk int64
	// Newest are the newest few unread messages, oldest first.
	Newest []Message
	// ReadByAll is the seq up to which every other seated party has read
	// the channel (the slowest one's cursor): the party's messages up to
	// it are read by all. 0 when nobody else sits there.
	ReadByAll int64
}

// Pending reports what waits on the party rooted at workspace, fetching at
// most newest unread messages per channel. Its cost follows the number of
// channels and live items, not the number of unread messages. An unknown
// root gives ErrUnknownParty.
func (r *ReadOnly) Pending(ctx context.Context, workspace string, newest int) (Pending, error) {
	return r.PendingFor(ctx, Identity{Workspace: workspace}, newest)
}

// PendingFor is Pending for any caller: a team party is found by name.
func (r *ReadOnly) PendingFor(ctx context.Context, id Identity, newest int) (Pending, error) {
	var out Pending
	err := r.view(ctx, func(t *tx) error {
		p, err := t.existingParty(id)
		if err != nil {
			return err
		}
		out, err = t.pending(p, id, newest)
		return err
	})
	return out, err
}

func (t *tx) pending(p party, id Identity, newest int) (Pending, error) {
	out := Pending{Party: p.name, Workspace: id.Workspace, Channels: []ChannelPending{},
		WaitingOnMe: []WaitingOnMe{}, WaitingOnPeer: []WaitingOnPeer{}, UnreadByPeers: []Receipt{}}
	seats, err := t.seats(p.id)
	if err != nil {
		return out, err
	}
	for _, c := range seats {
		cp, err := t.channelPending(c, p.id, newest)
		if err != nil {
			return out, err
		}
		out.Channels = append(out.Channels, cp)
	}
	if err := t.inboxItems(p, &out.WaitingOnMe, &out.WaitingOnPeer); err != nil {
		return out, err
	}
	out.UnreadByPeers, err = t.unreadByPeers(p)
	return out, err
}

// Seen is what a party can see, read at one moment: what waits on it,
// and the newest message it can read (its own included). A hub names a
// party's state by it, so that the name moves at a change that concerns
// the party and at no other.
type Seen struct {
	Pending Pending
	Newest  int64
}

// SeenBy reads what the party id can see, with at most newest unread
// messages per channel. An unknown party gives ErrUnknownParty.
func (r *ReadOnly) SeenBy(ctx context.Context, id Identity, newest int) (Seen, error) {
	var out Seen
	err := r.view(ctx, func(t *tx) error {
		p, err := t.existingParty(id)
		if err != nil {
			return err
		}
		if out.Pending, err = t.pending(p, id, newest); err != nil {
			return err
		}
		out.Newest, err = t.newestReadable(p)
		return err
	})
	return out, err
}

// channelPending counts a channel's unread rows (up to the cap) and loads
// the newest n; every query walks the channel's index from one end.
func (t *tx) channelPending(c channel, partyID int64, n int) (ChannelPending, error) {
	cp := ChannelPending{Channel: c.name, Parties: []string{}, Newest: []Message{}}
	seats, err := t.seatCursors(c.id)
	if err != nil {
		return cp, err
	}
	cp.ReadByAll = -1
	for _, s := range seats {
		cp.Parties = append(cp.Parties, s.name)
		if s.id != partyID && (cp.ReadByAll < 0 || s.cursor < cp.ReadByAll) {
			cp.ReadByAll = s.cursor
		}
	}
	cp.ReadByAll = max(cp.ReadByAll, 0)
	cursor, err := t.cursor(c.id, partyID)
	if err != nil {
		return cp, err
	}
	if err := t.row(`SELECT count(*) FROM (SELECT 1 FROM messages
		WHERE channel_id = ?1 AND is_archived = 0 AND seq > ?3 AND author_id <> ?2 LIMIT ?4) AS unread`,
		c.id, partyID, cursor, UnreadCountCap+1).Scan(&cp.Unread); err != nil {
		return cp, err
	}
	if cp.Unread > UnreadCountCap {
		cp.Unread, cp.Over = UnreadCountCap, true
	}
	if cp.Unread == 0 {
		return cp, nil
	}
	if err := t.row(`SELECT coalesce((SELECT seq FROM messages
		WHERE channel_id = ?1 AND is_archived = 0 AND seq > ?3 AND author_id <> ?2 AND kind <> 'event'
		ORDER BY seq DESC LIMIT 1), 0)`, c.id, partyID, cursor).Scan(&cp.NewestTalk); err != nil {
		return cp, err
	}
	if n <= 0 {
		return cp, nil
	}
	list, err := t.loadMessages(`WHERE m.channel_id = ? AND m.is_archived = 0 AND m.seq > ? AND m.author_id <> ?
		ORDER BY m.seq DESC LIMIT ?`, c.id, cursor, partyID, n)
	if err != nil {
		return cp, err
	}
	for i, j := 0, len(list)-1; i < j; i, j = i+1, j-1 {
		list[i], list[j] = list[j], list[i]
	}
	cp.Newest = list
	return cp, nil
}

// Version reads the database's schema version.
func (r *ReadOnly) Version(ctx context.Context) (int, error) {
	var version int
	err := r.view(ctx, func(t *tx) error {
		var err error
		if r.pg != nil {
			version, err = pgSchemaVersion(ctx, t.Tx, r.path)
			return err
		}
		version, err = inspect(ctx, t, r.path)
		return err
	})
	return version, err
}

// NameFor is the name a root has on the chat or, when known is false, the
// name its first call would give it (see DB.NameFor).
func (r *ReadOnly) NameFor(ctx context.Context, id Identity) (name string, known bool, err error) {
	err = r.view(ctx, func(t *tx) error {
		p, err := t.existingParty(id)
		if errors.Is(err, ErrUnknownParty) {
			name, err = t.freeName(id.Name)
			return err
		}
		name, known = p.name, err == nil
		return err
	})
	return name, known, err
}

// existingParty finds the caller's party without creating it.
func (t *tx) existingParty(id Identity) (party, error) {
	if err := id.check(); err != nil {
		return party{}, err
	}
	p := party{}
	key, by := id.Workspace, "workspace_path"
	if id.Team {
		key, by = id.Name, "name"
	}
	err := t.row(`SELECT id, name, last_seen FROM parties WHERE `+by+` = ?`, key).Scan(&p.id, &p.name, &p.lastSeen)
	if errors.Is(err, sql.ErrNoRows) {
		return p, ErrUnknownParty
	}
	return p, err
}

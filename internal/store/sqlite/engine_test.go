package sqlite

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/mcpp/mcpp-chat/internal/store/engine"
)

// openEngine opens a new chat database in a temporary folder.
func openEngine(t *testing.T, o Options) *Engine {
	t.Helper()
	e, err := Open(context.Background(), filepath.Join(t.TempDir(), "chat.db"), o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return e
}

// addParty is a call that writes: it adds a party of that name, as a
// first tool call from a new folder would.
func addParty(ctx context.Context, e *Engine, name string) error {
	_, err := e.Run(ctx, engine.Update, func(t engine.Tx) (*engine.Change, error) {
		now := engine.Now()
		_, err := t.Exec(`INSERT INTO parties (name, workspace_path, first_seen, last_seen) VALUES (?, ?, ?, ?)`, name, "/srv/"+name, now, now)
		return nil, err
	})
	return err
}

func mustDo(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// peek is a call that reads and writes nothing (chat_read with peek).
func peek(t *testing.T, e *Engine) {
	t.Helper()
	_, err := e.Run(context.Background(), engine.View, func(t engine.Tx) (*engine.Change, error) {
		var n int
		return nil, t.Row(`SELECT count(*) FROM parties`).Scan(&n)
	})
	mustDo(t, err)
}

// look reads the database at path as the hook does: a read-only handle,
// opened and closed.
func look(t *testing.T, path string) {
	t.Helper()
	r, err := OpenReadOnly(context.Background(), path)
	mustDo(t, err)
	defer r.Close()
	_, err = r.Run(context.Background(), engine.Read, func(t engine.Tx) (*engine.Change, error) {
		var n int
		return nil, t.Row(`SELECT count(*) FROM parties`).Scan(&n)
	})
	mustDo(t, err)
}

// peekAndLook is a peek and the hook's look.
func peekAndLook(t *testing.T, e *Engine) {
	t.Helper()
	peek(t, e)
	look(t, e.Where())
}

// seat makes the party mesh-gw and the channel gw--dash it sits in, for
// say to write in.
func seat(t *testing.T, e *Engine) {
	t.Helper()
	_, err := e.Run(context.Background(), engine.Update, func(t engine.Tx) (*engine.Change, error) {
		now := engine.Now()
		if _, err := t.Exec(`INSERT INTO parties (name, workspace_path, first_seen, last_seen) VALUES ('mesh-gw', '/srv/mesh-gw', ?, ?)`, now, now); err != nil {
			return nil, err
		}
		if _, err := t.Exec(`INSERT INTO channels (name, created_by, created_at) VALUES ('gw--dash', 1, ?)`, now); err != nil {
			return nil, err
		}
		_, err := t.Exec(`INSERT INTO channel_parties (channel_id, party_id, joined_at) VALUES (1, 1, ?)`, now)
		return nil, err
	})
	mustDo(t, err)
}

// say writes a message of mesh-gw's in gw--dash with the channel's next
// seq, as chat_say does.
func say(ctx context.Context, e *Engine, text string) error {
	_, err := e.Run(ctx, engine.Update, func(t engine.Tx) (*engine.Change, error) {
		now := engine.Now()
		_, err := t.Exec(`INSERT INTO messages (channel_id, seq, kind, body, author_id, created_at, updated_at)
			VALUES (1, (SELECT coalesce(max(seq), 0) + 1 FROM messages WHERE channel_id = 1), 'say', ?, 1, ?, ?)`, text, now, now)
		return nil, err
	})
	return err
}

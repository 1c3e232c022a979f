package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/mcpp/mcpp-chat/internal/config"
	"github.com/mcpp/mcpp-chat/internal/pgtest"
	"github.com/mcpp/mcpp-chat/internal/store"
)

// holdKey is the advisory lock a test holds to stop a call where it wants.
const holdKey = 4242

// holdCommits makes every commit that stores a message wait, in a
// deferred trigger, for holdKey — a moment at which the call has written
// and is committing — and takes holdKey on a connection of the test's.
func holdCommits(t *testing.T, url string) *pgx.Conn {
	t.Helper()
	ctx := context.Background()
	admin, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { admin.Close(context.Background()) })
	for _, q := range []string{
		fmt.Sprintf(`CREATE FUNCTION hold_commit() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN PERFORM pg_advisory_xact_lock(%d); RETURN NULL; END $$`, holdKey),
		`CREATE CONSTRAINT TRIGGER hold_commit AFTER INSERT ON messages DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION hold_commit()`,
		fmt.Sprintf(`SELECT pg_advisory_lock(%d)`, holdKey),
	} {
		if _, err := admin.Exec(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	return admin
}

// waiting is the server process of the connection that waits for
// holdKey, once one does.
func waiting(t *testing.T, admin *pgx.Conn) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for {
		var pid int
		err := admin.QueryRow(ctx, `SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND objid = $1 AND NOT granted`, holdKey).Scan(&pid)
		if err == nil {
			return pid
		}
		if !errors.Is(err, pgx.ErrNoRows) {
			t.Fatal(err)
		}
		select {
		case <-ctx.Done():
			t.Fatal("no call came to wait for the lock")
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// A team store's connection lost while a call commits — its server
// process terminated by an administrator, or killed — is the store's
// sentence: the call may or may not have landed, so the agent looks
// before it retries. It is never "failed inside the server … nothing was
// written": the commit may have gone through before the line broke.
func TestConnectionLostAtCommitIsTheStoresSentence(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name string
		url  func(t *testing.T) string
		end  func(admin *pgx.Conn, pid int) error
	}{
		{"terminated", func(t *testing.T) string { return pgtest.URL(t) }, func(admin *pgx.Conn, pid int) error {
			_, err := admin.Exec(context.Background(), `SELECT pg_terminate_backend($1)`, pid)
			return err
		}},
		// A killed server process sends no goodbye: the driver finds the
		// line gone and says only "conn closed". Killing one restarts the
		// whole server, so this one is the test's own.
		{"killed", func(t *testing.T) string { return pgtest.Own(t).URL("postgres") }, func(_ *pgx.Conn, pid int) error {
			return syscall.Kill(pid, syscall.SIGKILL)
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx := context.Background()
			url := c.url(t)
			// A busy timeout far beyond the test's steps: the call must wait
			// at its commit until the test ends its connection.
			db, err := store.OpenPostgres(ctx, url, store.Options{BusyTimeout: 5 * time.Minute})
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			manifest, _ := LoadManifest()
			s := &Service{DB: db, Config: config.Defaults(), Manifest: manifest, Me: store.Identity{Name: "gw", Workspace: "/srv/gw"}}
			if _, err := s.Call(ctx, "chat_channel_new", json.RawMessage(`{"name": "c1"}`)); err != nil {
				t.Fatal(err)
			}
			admin := holdCommits(t, url)
			done := make(chan error, 1)
			go func() {
				_, err := s.Call(ctx, "chat_say", json.RawMessage(`{"text": "hello"}`))
				done <- err
			}()
			if err := c.end(admin, waiting(t, admin)); err != nil {
				t.Fatal(err)
			}
			err = <-done
			var se *store.StorageError
			if !errors.As(err, &se) || !strings.Contains(err.Error(), "may or may not have landed: look with chat_read or chat_inbox before you retry it") {
				t.Fatalf("the agent was told %v", err)
			}
		})
	}
}

// A pooled connection whose server process was killed between calls is
// found out by the next call, which runs again on a new connection once
// the server is back — not a failure inside the server.
func TestConnectionKilledBetweenCallsIsRunAgain(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := pgtest.Own(t).URL("postgres")
	db, err := store.OpenPostgres(ctx, url, store.Options{BusyTimeout: 5 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	manifest, _ := LoadManifest()
	s := &Service{DB: db, Config: config.Defaults(), Manifest: manifest, Me: store.Identity{Name: "gw", Workspace: "/srv/gw"}}
	if _, err := s.Call(ctx, "chat_channel_new", json.RawMessage(`{"name": "c1"}`)); err != nil {
		t.Fatal(err)
	}
	admin, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	// The test server commits without waiting for its log (pgtest), so a
	// crash would lose the channel just made: write everything out first.
	var pid int
	_, err = admin.Exec(ctx, `CHECKPOINT`)
	if err == nil {
		err = admin.QueryRow(ctx, `SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND backend_type = 'client backend' AND pid <> pg_backend_pid() LIMIT 1`).Scan(&pid)
	}
	admin.Close(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Call(ctx, "chat_say", json.RawMessage(`{"text": "after the crash", "channel": "c1"}`)); err != nil {
		t.Fatalf("the call after the crash: %v", err)
	}
	var read readReply
	res, err := s.Call(ctx, "chat_read", json.RawMessage(`{"channel": "c1", "since": 0}`))
	if err == nil {
		err = json.Unmarshal(res.JSON, &read)
	}
	if err != nil || len(read.Messages) != 1 || read.Messages[0].Body != "after the crash" {
		t.Fatalf("the channel holds %+v (%v), want the one message", read, err)
	}
}

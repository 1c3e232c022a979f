package store

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcpp/mcpp-chat/internal/pgtest"
)

func TestTokens(t *testing.T) {
	t.Parallel()
	bothEngines(t, func(t *testing.T) {
		ctx := context.Background()
		now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
		db := openTestWith(t, Options{Clock: func() time.Time { return now }})
		toks, err := db.Tokens(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer toks.Close()

		secret, issued, err := toks.Issue(ctx, []string{"node-dash", "mesh-gw"}, "alice-laptop", 24*time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(secret, TokenPrefix+issued.ID+"_") {
			t.Fatalf("token %q does not start with its id %q", secret, issued.ID)
		}
		got, err := toks.Verify(ctx, secret)
		if err != nil || got.ID != issued.ID || strings.Join(got.Parties, ",") != "node-dash,mesh-gw" || got.Label != "alice-laptop" {
			t.Fatalf("Verify = %+v, %v", got, err)
		}
		for _, bad := range []string{"", "mcc_", secret + "x", strings.Replace(secret, issued.ID, "000000000000", 1), strings.TrimPrefix(secret, TokenPrefix)} {
			if _, err := toks.Verify(ctx, bad); !errors.Is(err, ErrTokenUnknown) {
				t.Errorf("Verify(%q) = %v, want ErrTokenUnknown", bad, err)
			}
		}

		now = now.Add(25 * time.Hour)
		if _, err := toks.Verify(ctx, secret); !errors.Is(err, ErrTokenExpired) {
			t.Fatalf("a day later: %v, want ErrTokenExpired", err)
		}
		now = now.Add(-2 * time.Hour)
		if _, err := toks.Revoke(ctx, "alice-laptop"); err != nil {
			t.Fatal(err)
		}
		if _, err := toks.Verify(ctx, secret); !errors.Is(err, ErrTokenRevoked) {
			t.Fatalf("after revoke: %v, want ErrTokenRevoked", err)
		}
		list, err := toks.List(ctx)
		if err != nil || len(list) != 1 || list[0].Revoked.IsZero() {
			t.Fatalf("List = %+v, %v", list, err)
		}
		if _, err := toks.Revoke(ctx, "nobody"); err == nil {
			t.Fatal("revoking an unknown token succeeded")
		}
		if _, _, err := toks.Issue(ctx, nil, "x", time.Hour); err == nil {
			t.Fatal("a token without a party was issued")
		}
	})
}

// The secret is stored only as its hash: not in the database, nor in the
// sidecar file of a SQLite hub.
func TestTokensKeepNoSecret(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := openTest(t)
	toks, err := db.Tokens(ctx)
	if err != nil {
		t.Fatal(err)
	}
	secret, _, err := toks.Issue(ctx, []string{"node-dash"}, "ci", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	toks.Close()
	_, tail, _ := strings.Cut(strings.TrimPrefix(secret, TokenPrefix), "_")
	for _, path := range []string{db.Path(), db.Path() + ".hub"} {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(data), tail) {
			t.Errorf("%s holds the token's secret", path)
		}
	}
	info, err := os.Stat(db.Path() + ".hub")
	if err != nil || info.Mode().Perm() != 0o600 {
		t.Errorf("the token file's mode = %v, %v; want 0600", info.Mode(), err)
	}
}

// Hubs started together each make the token table if it is missing; none
// fails because another made it at the same moment.
func TestTokensTableMadeByHubsStartingTogether(t *testing.T) {
	t.Parallel()
	bothEngines(t, func(t *testing.T) {
		ctx := context.Background()
		path := filepath.Join(t.TempDir(), "chat.db")
		if first, err := Open(ctx, path); err == nil { // the schema, once
			first.Close()
		}
		open := func() (*DB, error) { return Open(ctx, path) }
		if onPostgres(t) {
			url := pgtest.URL(t)
			if first, err := OpenPostgres(ctx, url, Options{}); err == nil {
				first.Close()
			}
			open = func() (*DB, error) { return OpenPostgres(ctx, url, Options{}) }
		}
		errs := make(chan error, 6)
		for range 6 {
			go func() {
				db, err := open()
				if err != nil {
					errs <- err
					return
				}
				defer db.Close()
				toks, err := db.Tokens(ctx)
				if err == nil {
					toks.Close()
				}
				errs <- err
			}()
		}
		for range 6 {
			if err := <-errs; err != nil {
				t.Error(err)
			}
		}
	})
}

// A SQLite hub never opens its token file through a symbolic link, nor
// one that is not a regular file or holds other tables than the tokens':
// linked to chat.db, it made hub_tokens inside the chat. Each refusal is
// a StorageError that names the file and what to do, and the file linked
// to is left as it was.
func TestTokenFileNeverOpensALink(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	refusedTokens := func(t *testing.T, err error, file, why string) {
		t.Helper()
		var se *StorageError
		if !errors.As(err, &se) {
			t.Fatalf("want a refusal naming %s, got %v", file, err)
		}
		for _, want := range []string{file, why, "hub token issue"} {
			if !strings.Contains(err.Error(), want) {
				t.Fatalf("error %q does not say %q", err, want)
			}
		}
	}
	t.Run("to the chat", func(t *testing.T) {
		db := world(t)
		before := chatSchema(t, db)
		if err := os.Symlink(db.Path(), db.Path()+".hub"); err != nil {
			t.Fatal(err)
		}
		_, err := db.Tokens(ctx)
		refusedTokens(t, err, db.Path()+".hub", "symbolic link")
		if after := chatSchema(t, db); after != before {
			t.Fatalf("the chat's schema changed:\n%s\nwas:\n%s", after, before)
		}
	})
	t.Run("to another database", func(t *testing.T) {
		db := world(t)
		elsewhere := t.TempDir()
		other := filepath.Join(elsewhere, "notes.db")
		sqliteFile(t, other, `CREATE TABLE docs (id INTEGER PRIMARY KEY, body TEXT)`)
		before := filesIn(t, elsewhere)
		if err := os.Symlink(other, db.Path()+".hub"); err != nil {
			t.Fatal(err)
		}
		_, err := db.Tokens(ctx)
		refusedTokens(t, err, db.Path()+".hub", "symbolic link")
		if after := filesIn(t, elsewhere); fmt.Sprint(after) != fmt.Sprint(before) {
			t.Fatalf("the other database's folder changed: %v, was %v", after, before)
		}
	})
	t.Run("beside it", func(t *testing.T) {
		db := world(t)
		target := filepath.Join(t.TempDir(), "precious")
		if err := os.WriteFile(target, []byte("not a journal"), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(target, db.Path()+".hub-journal"); err != nil {
			t.Fatal(err)
		}
		_, err := db.Tokens(ctx)
		refusedTokens(t, err, db.Path()+".hub-journal", "symbolic link")
		if data, _ := os.ReadFile(target); string(data) != "not a journal" {
			t.Fatalf("the link's target was written: %q", data)
		}
	})
	t.Run("a folder", func(t *testing.T) {
		db := world(t)
		if err := os.Mkdir(db.Path()+".hub", 0o700); err != nil {
			t.Fatal(err)
		}
		_, err := db.Tokens(ctx)
		refusedTokens(t, err, db.Path()+".hub", "not a regular file")
	})
	t.Run("a database of another kind", func(t *testing.T) {
		db := world(t)
		if err := os.Link(db.Path(), db.Path()+".hub"); err != nil { // the chat itself, by another name
			t.Fatal(err)
		}
		before := chatSchema(t, db)
		_, err := db.Tokens(ctx)
		refusedTokens(t, err, db.Path()+".hub", "not the hub's tokens")
		if after := chatSchema(t, db); after != before {
			t.Fatalf("the chat's schema changed:\n%s\nwas:\n%s", after, before)
		}
	})
}

// A hub that holds requests open learns of a revoke from the stamp, which
// moves at every revoke and at nothing else, and checks a token it holds
// again by its id.
func TestTokenStampMovesAtEveryRevoke(t *testing.T) {
	t.Parallel()
	bothEngines(t, func(t *testing.T) {
		ctx := context.Background()
		db := openTest(t)
		toks, err := db.Tokens(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer toks.Close()
		stamp := func() string {
			t.Helper()
			s, err := toks.Stamp(ctx)
			if err != nil {
				t.Fatal(err)
			}
			return s
		}
		before := stamp()
		secret, a, err := toks.Issue(ctx, []string{"node-dash"}, "a", time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		if _, b, err := toks.Issue(ctx, []string{"mesh-gw"}, "b", time.Hour); err != nil || stamp() != before {
			t.Fatalf("issuing tokens moved the stamp (%v, %s)", err, b.ID)
		}
		if TokenID(secret) != a.ID || TokenID("mcc_x") != "" || TokenID("hello") != "" {
			t.Fatalf("TokenID(%q) = %q, want %q", secret, TokenID(secret), a.ID)
		}
		if _, err := toks.Check(ctx, a.ID); err != nil {
			t.Fatalf("Check of a valid token: %v", err)
		}
		if _, err := toks.Revoke(ctx, "a"); err != nil {
			t.Fatal(err)
		}
		first := stamp()
		if first == before {
			t.Fatal("a revoke left the stamp where it was")
		}
		if _, err := toks.Check(ctx, a.ID); !errors.Is(err, ErrTokenRevoked) {
			t.Fatalf("Check after the revoke: %v", err)
		}
		if _, err := toks.Check(ctx, "000000000000"); !errors.Is(err, ErrTokenUnknown) {
			t.Fatalf("Check of an unknown id: %v", err)
		}
		toks.Revoke(ctx, "a") // again: nothing changes
		if stamp() != first {
			t.Fatal("revoking a revoked token moved the stamp")
		}
		if _, err := toks.Revoke(ctx, "b"); err != nil || stamp() == first {
			t.Fatalf("a second revoke left the stamp where it was (%v)", err)
		}
	})
}

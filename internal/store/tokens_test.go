package store

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcpp/mcpp-chat/internal/pgtest"
)

func TestTokens(t *testing.T) {
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

// A hub that holds requests open learns of a revoke from the stamp, which
// moves at every revoke and at nothing else, and checks a token it holds
// again by its id.
func TestTokenStampMovesAtEveryRevoke(t *testing.T) {
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

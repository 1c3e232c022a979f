package postgres

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcpp/mcpp-chat/internal/pgtest"

	"github.com/mcpp/mcpp-chat/internal/store/engine"
)

// A team store that cannot be reached says why in one sentence with its
// fix — the database is missing, the password or the user is wrong, no
// server answers — on the write path and the read-only one, without the
// driver's text or a password, and at once: retrying mends none of these.
func TestConnectErrorsSayTheCauseAndTheFix(t *testing.T) {
	const password, wrong = "Rt4pass", "Wr0ngPw"
	own := pgtest.PasswordURL(t, password)
	if db, err := Open(context.Background(), own+"&password="+password, Options{}); err != nil {
		t.Fatalf("the right password: %v", err)
	} else {
		db.Close()
	}
	shared := pgtest.URL(t)
	cases := []struct {
		what, url string
		want      []string
	}{
		{"a missing database", strings.Replace(shared, "postgres:///", "postgres:///no_such_chat", 1),
			[]string{`has no database "no_such_chat`, "— create it (createdb no_such_chat"}},
		{"a wrong password", own + "&password=" + wrong,
			[]string{`refused the password of user "r`, "— fix the password in storage.url"}},
		{"a user the server does not know", strings.Replace(shared, "user=postgres", "user=nobody_here", 1),
			[]string{`has no user "nobody_here"`, "— create it (createuser --pwprompt nobody_here)"}},
		{"no server", "postgres:///chat?host=" + filepath.Join(t.TempDir(), "none") + "&user=mcpp&password=" + wrong,
			[]string{"no PostgreSQL server answers at postgres://", "— start it"}},
	}
	for _, c := range cases {
		t.Run(c.what, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			start := time.Now()
			_, err := Open(ctx, c.url, Options{BusyTimeout: 30 * time.Second})
			checkConnectError(t, "Open", err, c.want, wrong)
			if c.what != "no server" && time.Since(start) > 20*time.Second {
				t.Errorf("Open retried for %v what no retry mends", time.Since(start).Round(time.Second))
			}
			_, err = OpenReadOnly(ctx, c.url)
			checkConnectError(t, "OpenReadOnly", err, c.want, wrong)
		})
	}
}

func checkConnectError(t *testing.T, what string, err error, want []string, secret string) {
	t.Helper()
	var storage *engine.StorageError
	if !errors.As(err, &storage) {
		t.Fatalf("%s: %v, want a StorageError", what, err)
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("%s: %q does not say %q", what, err, w)
		}
	}
	for _, raw := range []string{"SQLSTATE", "FATAL", "failed to connect", "dial", secret} {
		if strings.Contains(err.Error(), raw) {
			t.Errorf("%s: %q shows %q", what, err, raw)
		}
	}
}

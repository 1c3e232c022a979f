package main

import (
	"fmt"
	"net"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/mcpp/mcpp-chat/internal/pgtest"
)

// secretPart is in every secret these tests put in a store's or a hub's
// address; shown anywhere, it is a leak.
const secretPart = "Zq7s3cret"

// closedPort is a loopback address nothing listens on.
func closedPort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// withSecrets is a store URL with a password in every place libpq takes
// one: the user information and the password and sslpassword parameters.
// The test server trusts its local connections and ignores them.
func withSecrets(storeURL string) string {
	u := strings.Replace(storeURL, "postgres:///", "postgres://postgres:"+secretPart+"A@/", 1)
	return u + "&password=" + secretPart + "B&sslpassword=" + secretPart + "C"
}

// secretsEnv is an install of its own whose store is url.
func secretsEnv(t *testing.T, url string) map[string]string {
	t.Helper()
	env := isolatedEnv(t)
	env["MCPP_CHAT_STORE"] = url
	return env
}

func assertNoSecret(t *testing.T, what string, code int, outputs ...string) {
	t.Helper()
	all := strings.Join(outputs, "\n")
	if strings.Contains(all, secretPart) {
		t.Errorf("%s (exit %d) shows a secret:\n%s", what, code, all)
	}
}

// A store's password is never printed: not by migrate, doctor, the hub's
// banner, its token commands, nor in the error a tool call gives when the
// store is out of reach — in any of the forms libpq takes one.
func TestStorePasswordsAreNeverShown(t *testing.T) {
	down := fmt.Sprintf("postgres://mcpp:%sA@%s/chat?sslmode=disable&password=%sB&sslpassword=%sC", secretPart, closedPort(t), secretPart, secretPart)
	keyValue := fmt.Sprintf("host=127.0.0.1 port=%s user=mcpp password=%sD dbname=chat", strings.Split(closedPort(t), ":")[1], secretPart)
	lite := isolatedEnv(t)
	if code, out, errs := cli(t, lite, "call", "chat_whoami"); code != exitOK {
		t.Fatalf("whoami: %s%s", out, errs)
	}
	code, out, errs := cli(t, lite, "migrate", "--to", down)
	if code == exitOK || !strings.Contains(errs, "127.0.0.1") {
		t.Errorf("migrate into a store out of reach: exit %d\n%s%s", code, out, errs)
	}
	assertNoSecret(t, "migrate into a store out of reach", code, out, errs)
	for _, c := range []struct {
		what string
		url  string
		args []string
	}{
		{"doctor on a store out of reach", down, []string{"doctor"}},
		{"a call on a store out of reach", down, []string{"call", "chat_say", `{"text": "hello"}`}},
		{"hub token list on a store out of reach", down, []string{"hub", "token", "list"}},
		{"hub serve on a store out of reach", down, []string{"hub", "serve", "--listen", "127.0.0.1:0"}},
		{"doctor on a key=value connection string", keyValue, []string{"doctor"}},
		{"a call on a key=value connection string", keyValue, []string{"call", "chat_whoami"}},
	} {
		env := secretsEnv(t, c.url)
		env["MCPP_CHAT_DB"] = filepath.Join(t.TempDir(), "chat.db")
		code, out, errs := cli(t, env, c.args...)
		if code == exitOK {
			t.Errorf("%s: exit 0\n%s%s", c.what, out, errs)
		}
		assertNoSecret(t, c.what, code, out, errs)
	}

	up := withSecrets(pgtest.URL(t))
	env := secretsEnv(t, up)
	code, out, errs = cli(t, env, "doctor")
	if !strings.Contains(out, "reachable:   yes") {
		t.Errorf("doctor does not reach the store: %s%s", out, errs)
	}
	assertNoSecret(t, "doctor", code, out, errs)

	code, out, errs = cli(t, lite, "migrate", "--to", up)
	if code != exitOK || !strings.Contains(out, "copied ") {
		t.Errorf("migrate: exit %d\n%s%s", code, out, errs)
	}
	assertNoSecret(t, "migrate", code, out, errs)

	code, out, errs = cli(t, env, "hub", "token", "list")
	assertNoSecret(t, "hub token list", code, out, errs)

	banner := hubBanner(t, map[string]string{"HOME": t.TempDir(), "MCPP_CHAT_HOME": t.TempDir(), "MCPP_CHAT_STORE": up})
	if !regexp.MustCompile(`serving postgres://postgres:xxxxx@/.*password=xxxxx.* on http://127\.0\.0\.1:\d+/mcp`).MatchString(banner) {
		t.Errorf("hub serve's banner: %q", banner)
	}
	assertNoSecret(t, "hub serve's banner", 0, banner)
}

// A hub's address with user:password@ in it is never echoed: not by a
// member's calls, doctor, or connect.
func TestHubPasswordsAreNeverShown(t *testing.T) {
	hubURL := "http://alice:" + secretPart + "@" + closedPort(t)
	env := secretsEnv(t, hubURL)
	env["MCPP_CHAT_TOKEN"] = "mcc_000000000000_x"
	for _, args := range [][]string{
		{"call", "chat_whoami"},
		{"doctor"},
		{"connect", hubURL, "--token", "mcc_000000000000_x"},
		{"log"},
	} {
		code, out, errs := cli(t, env, args...)
		if code == exitOK {
			t.Errorf("%v: exit 0\n%s%s", args, out, errs)
		}
		if !strings.Contains(out+errs, "http://alice:xxxxx@127.0.0.1:") {
			t.Errorf("%v does not name the hub:\n%s%s", args, out, errs)
		}
		assertNoSecret(t, strings.Join(args, " "), code, out, errs)
	}
}

// A store given as a key=value connection string — which libpq takes, and
// these commands refuse, since they take a URL — is named in the refusal
// without its password: by hub serve, each hub token command and migrate
// --from, given on the command line or in MCPP_CHAT_STORE.
func TestKeyValueStorePasswordsAreNeverShown(t *testing.T) {
	keyValue := fmt.Sprintf("host=127.0.0.1 port=%s user=mcpp password=%sD dbname=chat", strings.Split(closedPort(t), ":")[1], secretPart)
	for _, c := range []struct {
		what string
		args []string
	}{
		{"hub serve", []string{"hub", "serve", "--listen", "127.0.0.1:0"}},
		{"hub token issue", []string{"hub", "token", "issue", "--party", "node-dash", "--label", "ci", "--new-party"}},
		{"hub token list", []string{"hub", "token", "list"}},
		{"hub token revoke", []string{"hub", "token", "revoke", "ci"}},
	} {
		for _, how := range []string{"MCPP_CHAT_STORE", "--store"} {
			env := isolatedEnv(t)
			args := c.args
			if how == "--store" {
				args = append(slices.Clip(args), "--store", keyValue)
			} else {
				env["MCPP_CHAT_STORE"] = keyValue
			}
			code, out, errs := cli(t, env, args...)
			if code == exitOK || !strings.Contains(errs, "password=xxxxx") {
				t.Errorf("%s, the store in %s: exit %d, and it does not name the store it refuses:\n%s%s", c.what, how, code, out, errs)
			}
			assertNoSecret(t, c.what+", the store in "+how, code, out, errs)
		}
	}
	code, out, errs := cli(t, isolatedEnv(t), "migrate", "--from", keyValue, "--to", "postgres://mcpp@"+closedPort(t)+"/chat")
	if code == exitOK || !strings.Contains(errs, "password=xxxxx") {
		t.Errorf("migrate --from a connection string: exit %d, and it does not name what it refuses:\n%s%s", code, out, errs)
	}
	assertNoSecret(t, "migrate --from a connection string", code, out, errs)
}

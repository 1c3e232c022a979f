package main

import (
	"context"
	"io"
	"net/http"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/mcpp/mcpp-chat/internal/store"
)

// ui --allow-remote answers the names its address and --allow-host give,
// and no other: a page elsewhere whose name is made to resolve to this
// machine (DNS rebinding) gets a one-line 421, not the chat.
func TestUIAnswersOnlyItsHostNames(t *testing.T) {
	home := t.TempDir()
	db := filepath.Join(home, "chat.db")
	chat, err := store.Open(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	chat.Close()
	env := map[string]string{"HOME": home, "MCPP_CHAT_HOME": home, "MCPP_CHAT_DB": db, "MCPP_CHAT_WORKSPACE": home}
	base := startUI(t, env, "--allow-remote", "--listen", "127.0.0.1:0", "--allow-host", "chat.example")
	port := base[strings.LastIndex(base, ":")+1:]
	for host, want := range map[string]int{
		"127.0.0.1:" + port:    http.StatusOK,
		"localhost:" + port:    http.StatusOK,
		"chat.example:" + port: http.StatusOK,
		"chat.example":         http.StatusOK,
		"evil.example:" + port: http.StatusMisdirectedRequest,
		"evil.example":         http.StatusMisdirectedRequest,
	} {
		req, _ := http.NewRequest(http.MethodGet, base+"/", nil)
		req.Host = host
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("Host %s: %d, want %d", host, resp.StatusCode, want)
		}
		if want == http.StatusMisdirectedRequest && (strings.Count(strings.TrimSpace(string(body)), "\n") != 0 || !strings.Contains(string(body), "--allow-host")) {
			t.Errorf("Host %s: the refusal is not one line that says what to do: %q", host, body)
		}
	}
}

// startUI runs ui in-process and returns the address it serves; it stops
// with the test.
func startUI(t *testing.T, env map[string]string, args ...string) string {
	t.Helper()
	line := firstLine(t, env, append([]string{"ui"}, args...))
	m := regexp.MustCompile(`http://(127\.0\.0\.1:\d+)/`).FindStringSubmatch(line)
	if m == nil {
		t.Fatalf("ui said %q", line)
	}
	return "http://" + m[1]
}

package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpp/mcpp-chat/internal/config"
)

// A binary whose checkout moved away starts no new, empty chat: the tools
// refuse, saying where the chat was and how to point at it; doctor says
// the same instead of naming the old folder as the fix.
func TestAMovedCheckoutStartsNoEmptyChat(t *testing.T) {
	dir := t.TempDir()
	old := config.BuildCheckout
	config.BuildCheckout = filepath.Join(dir, "src", "mcpp-chat") // moved away: nothing there
	t.Cleanup(func() { config.BuildCheckout = old })
	repo := filepath.Join(dir, "repo")
	if err := os.Mkdir(repo, 0o755); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"HOME": filepath.Join(dir, "home"), "MCPP_CHAT_WORKSPACE": repo}
	fresh := filepath.Join(dir, "home", ".local", "share", "mcpp-chat", "chat.db")

	code, out, _ := cli(t, env, "call", "chat_whoami")
	var r callReply
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("not one JSON answer (%v): %q", err, out)
	}
	wasThere := filepath.Join(config.BuildCheckout, "chat.db")
	for _, want := range []string{"the chat it used was " + wasThere, "would now start an empty one in " + fresh, "set MCPP_CHAT_HOME to its new folder"} {
		if code != exitError || !strings.Contains(r.Error, want) {
			t.Errorf("exit %d, error %q; want it to say %q", code, r.Error, want)
		}
	}
	if _, err := os.Stat(fresh); !os.IsNotExist(err) {
		t.Errorf("the refused call made %s (%v)", fresh, err)
	}

	_, doc, _ := cli(t, env, "doctor")
	if !strings.Contains(doc, "the chat it used was "+wasThere) || strings.Contains(doc, "MCPP_CHAT_HOME="+config.BuildCheckout) || strings.Contains(doc, "the first chat call creates it") {
		t.Errorf("doctor does not say where the chat was, or sends the person to the old folder:\n%s", doc)
	}

	// Pointed at the moved checkout, the chat works again.
	moved := filepath.Join(dir, "elsewhere", "mcpp-chat")
	env["MCPP_CHAT_HOME"] = moved
	if code, out, _ := cli(t, env, "call", "chat_whoami"); code != exitOK {
		t.Errorf("with MCPP_CHAT_HOME set: exit %d %s", code, out)
	}
}

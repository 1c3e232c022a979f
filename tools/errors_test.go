package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpp/mcpp-chat/internal/config"
	"github.com/mcpp/mcpp-chat/internal/store"
)

// A failure inside the server is no sentence the agent can act on: the
// driver's text goes to the log, in full, and the agent is told what to do.
func TestInternalFailureIsLoggedNotShown(t *testing.T) {
	t.Parallel()
	db, err := store.Open(context.Background(), filepath.Join(t.TempDir(), "chat.db"))
	if err != nil {
		t.Fatal(err)
	}
	manifest, _ := LoadManifest()
	var log bytes.Buffer
	s := &Service{DB: db, Config: config.Defaults(), Manifest: manifest, Me: store.Identity{Name: "gw", Workspace: "/srv/gw"},
		Log: slog.New(slog.NewTextHandler(&log, nil))}
	db.Close() // every query now fails with database/sql's own error
	_, err = s.Call(context.Background(), "chat_whoami", json.RawMessage(`{}`))
	want := "chat_whoami failed inside the server (details in its log); nothing was written; retry once, then tell the user"
	if err == nil || err.Error() != want {
		t.Fatalf("the agent was told %q, want %q", err, want)
	}
	if !strings.Contains(log.String(), "database is closed") || !strings.Contains(log.String(), "tool=chat_whoami") {
		t.Fatalf("the log lacks the failure:\n%s", log.String())
	}
}

// What the agent can act on passes unchanged; a cancellation says so.
func TestErrorsForTheAgentPassUnchanged(t *testing.T) {
	t.Parallel()
	var log bytes.Buffer
	s := &Service{Log: slog.New(slog.NewTextHandler(&log, nil))}
	for _, err := range []error{argErrorf("`item` is empty — pass some text"), store.ErrBusy, fmt.Errorf("ask: %w", store.ErrBusy)} {
		if got := s.explain("chat_ack", err); got != err {
			t.Errorf("%v became %v", err, got)
		}
	}
	got := s.explain("chat_wait", fmt.Errorf("inbox: %w", context.Canceled))
	if !errors.Is(got, context.Canceled) || !strings.HasPrefix(got.Error(), "chat_wait was cancelled before it finished — nothing was written") {
		t.Errorf("a cancellation: %v", got)
	}
	if log.Len() > 0 {
		t.Errorf("logged what the agent was told:\n%s", log.String())
	}
}

package tools

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpp/mcpp-chat/internal/config"
	"github.com/mcpp/mcpp-chat/internal/store"
)

// unsafeRune finds a character that may drive a terminal or reorder what
// it shows: an escape or other control character (but newline and tab),
// or a bidirectional override or isolate.
func unsafeRune(s string) (rune, bool) {
	for _, r := range s {
		switch {
		case r == '\n' || r == '\t':
		case r < 0x20, r == 0x7f, r >= 0x80 && r < 0xa0,
			r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069:
			return r, true
		}
	}
	return 0, false
}

// A peer's folder, name, about and titles, and names echoed in errors, are
// shown without their escapes and direction overrides, in every display
// and every error sentence (the hook already cleaned them).
func TestTextFromOthersIsCleanedEverywhere(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, err := store.Open(ctx, filepath.Join(t.TempDir(), "chat.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	manifest, _ := LoadManifest()
	as := func(name, workspace string) *Service {
		return &Service{DB: db, Config: config.Defaults(), Manifest: manifest, Me: store.Identity{Name: name, Workspace: workspace}}
	}
	const evilText = "innocent \u202egnp.exe\u202c \x1b]0;PWNED\x07\x1b[2J\u2066x\u2069"
	// A name the Python edition (or any process) wrote; folder names are
	// normalised, but folders are shown as they are.
	evil := as("evil\x1b[2J\u202e", "/srv/evil\x1b]0;PWNED\x07\x1b[2J\u202egnp.exe")
	gw := as("mesh-gw", "/srv/mesh-gw")
	var shown []string
	call := func(s *Service, tool, args string) {
		t.Helper()
		res, err := s.Call(ctx, tool, json.RawMessage(args))
		if err != nil {
			shown = append(shown, err.Error())
			return
		}
		shown = append(shown, res.Display)
	}
	call(gw, "chat_whoami", `{}`)
	call(evil, "chat_whoami", mustJSON(t, map[string]any{"about": evilText}))
	call(evil, "chat_channel_new", mustJSON(t, map[string]any{"name": "c", "about": evilText, "parties": []string{"mesh-gw"}}))
	call(evil, "chat_ask", mustJSON(t, map[string]any{"title": evilText, "body": evilText, "ref": evilText}))
	call(evil, "chat_say", mustJSON(t, map[string]any{"text": evilText}))
	for _, tool := range []string{"chat_whoami", "chat_inbox", "chat_channel_list", "chat_read"} {
		call(gw, tool, `{}`)
	}
	call(gw, "chat_ack", `{"item": "innocent-gnp-exe-0-pwned-2j-x"}`)
	// Names and arguments echoed in refusals.
	call(gw, "chat_channel_new", mustJSON(t, map[string]any{"name": "d", "parties": []string{"ghost\x1b[2J\u202e"}}))
	call(gw, "chat_ask", mustJSON(t, map[string]any{"title": "t", "body": "b", "consumers": []string{"ghost\x1b]0;x\x07\u2067"}}))
	call(gw, "chat_say", mustJSON(t, map[string]any{"text": "x", "\x1b[31mtext\u202e": "y"}))
	call(gw, "chat_say", "\x00\x1b[2J not an object")
	call(gw, "no_such_tool\x1b[2J", `{}`)
	for _, s := range shown {
		if r, bad := unsafeRune(s); bad {
			t.Errorf("U+%04X shown in %q", r, s)
		}
	}
	if !strings.Contains(strings.Join(shown, "\n"), "innocent gnp.exe") {
		t.Errorf("the cleaned text is not shown:\n%s", strings.Join(shown, "\n"))
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

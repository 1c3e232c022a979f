package tools

import (
	"strings"
	"testing"

	"github.com/mcpp/mcpp-chat/internal/store"
)

// A sender's displays say when our hook or wake told a peer that has not
// read its message yet, and by which event.
func TestReceiptLinesSayWhoWasTold(t *testing.T) {
	told := map[string]store.Told{"node-dash": {At: "2026-12-02T10:02:31.000000+00:00", Via: "wake"}}
	inbox := unreadByPeerLine(store.Receipt{Channel: "gw--dash", Seq: 5, Kind: "say", Since: "2026-12-02T10:01:00.000000+00:00",
		ReadBy: []string{}, UnreadBy: []string{"fw-core", "node-dash"}, ToldAt: told})
	if want := "not yet read by fw-core, node-dash (told 2026-12-02 10:02 UTC by wake)"; !strings.Contains(inbox, want) {
		t.Errorf("inbox line %q lacks %q", inbox, want)
	}
	read := receiptLine(store.Message{ReadBy: []string{"fw-core"}, UnreadBy: []string{"node-dash"}, ToldTo: told})
	if want := "seen by fw-core · not yet read by node-dash (told 2026-12-02 10:02 UTC by wake)"; !strings.Contains(read, want) {
		t.Errorf("read line %q lacks %q", read, want)
	}
}

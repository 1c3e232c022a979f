package transcript

import (
	"testing"

	"github.com/mcpp/mcpp-chat/internal/store"
)

// log and the page say when our hook or wake told a party that has not
// read a message yet, and by which event.
func TestReceiptSaysWhoWasTold(t *testing.T) {
	m := store.Message{ReadBy: []string{"fw-core"}, UnreadBy: []string{"node-dash"},
		ToldTo: map[string]store.Told{"node-dash": {At: "2026-12-02T10:02:31.000000+00:00", Via: "Stop"}}}
	if got, want := receipt(m), "seen by fw-core · not yet read by node-dash (told 2026-12-02 10:02 UTC by Stop)"; got != want {
		t.Fatalf("receipt = %q, want %q", got, want)
	}
}

package store

import (
	"encoding/json"
	"strings"
	"testing"
)

// The answers carry each need in the Python edition's words, which its
// clients match on; the code decides by the value alone.
func TestNeedsKeepThePythonEditionsWords(t *testing.T) {
	t.Parallel()
	for need, words := range map[Need]string{
		NeedAck:     "your ack (chat_ack) — it is unattended",
		NeedResolve: "your resolve (chat_resolve) once satisfied",
		NeedPruneOK: "your prune-ok (chat_prune_ok)",
	} {
		data, err := json.Marshal(WaitingOnMe{Needs: need})
		if err != nil || !strings.Contains(string(data), `"needs":"`+words+`"`) {
			t.Errorf("%d as JSON: %s %v; want %q", need, data, err, words)
		}
		var back WaitingOnMe
		if err := json.Unmarshal(data, &back); err != nil || back.Needs != need {
			t.Errorf("%s read back as %d, %v", data, back.Needs, err)
		}
	}
	// An item in waiting_on_me always needs something: anything else is a bug
	// that must not reach an answer as an empty need.
	if data, err := json.Marshal(NeedNothing); err == nil {
		t.Errorf("NeedNothing encoded as %s", data)
	}
}

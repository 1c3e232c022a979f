package transcript

import (
	"strings"

	"github.com/mcpp/mcpp-chat/internal/store"
	safe "github.com/mcpp/mcpp-chat/internal/text"
)

// Due is an item's due time as a person reads it: "due 2026-07-30 10:30",
// or "OVERDUE by 25m (due 2026-07-30 10:30) · not acked by node-dash";
// "" for an item without one (docs/protocol.md, Due times and the ladder).
func Due(m store.Message, s Style) string {
	if m.Kind != "ask" || m.Due == "" {
		return ""
	}
	if !m.Overdue() {
		return "due " + s.When(m.Due)
	}
	return "OVERDUE by " + m.OverdueBy + " (due " + s.When(m.Due) + ") · not acked by " + partyList(m.NotAcked)
}

// Ladder is what an item's escalation ladder recorded, one line a stage:
// "2026-07-30 10:30 overdue: not acked by node-dash".
func Ladder(m store.Message, s Style) []string {
	var out []string
	for _, n := range m.Escalation {
		out = append(out, s.When(n.At)+" "+safe.OneLine(n.Words(), 300))
	}
	return out
}

// writeDue writes an item's due time and its ladder's record under its
// state line.
func writeDue(b *strings.Builder, m store.Message, pad string, s Style) {
	if due := Due(m, s); due != "" {
		colour := dim
		if m.Overdue() {
			colour = bold + red
		}
		b.WriteString(pad + s.paint(colour, due) + "\n")
	}
	for _, line := range Ladder(m, s) {
		b.WriteString(pad + s.paint(dim, "⏰ "+line) + "\n")
	}
}

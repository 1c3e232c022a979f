package store

import "fmt"

// Need is what a live item needs from the party looking at it. The hook
// and the tools decide by its value; its words are only for the answer.
type Need uint8

const (
	// NeedNothing: the item waits on a peer, not on you.
	NeedNothing Need = iota
	// NeedAck: you consume the item and have not acked it.
	NeedAck
	// NeedResolve: you raised the item and a consumer acked it; resolve
	// it once you are satisfied.
	NeedResolve
	// NeedPruneOK: the item is done and waits for your prune-ok to be
	// archived.
	NeedPruneOK
	// NeedDecide: you raised the item, its due time passed with an ack
	// owed, and the ladder woke you to decide (due.go): give more time,
	// reassign the ack, or resolve it.
	NeedDecide
)

// needActions name the call each need asks for.
var needActions = [...]string{
	NeedAck:     "your ack (chat_ack)",
	NeedResolve: "your resolve (chat_resolve) once satisfied",
	NeedPruneOK: "your prune-ok (chat_prune_ok)",
	NeedDecide:  "your decision — it is overdue: more time (chat_due), another consumer (chat_reassign) or resolve it (chat_resolve)",
}

// needsOwed name what each need owes, for the person who runs the chat
// (mcpp-chat parties), who calls no tool.
var needsOwed = [...]string{
	NeedAck:     "an ack",
	NeedResolve: "a resolve (it raised the item, and a consumer acked it)",
	NeedPruneOK: "a prune-ok",
	NeedDecide:  "a decision (it raised the item, which is overdue)",
}

// Owed is the need as the person reads it: "an ack".
func (n Need) Owed() string {
	if n == NeedNothing || int(n) >= len(needsOwed) {
		return ""
	}
	return needsOwed[n]
}

// unattended is what the Python edition adds to every ack it asks for,
// whoever else acked already; clients match on the whole sentence.
const unattended = " — it is unattended"

// Urgent reports whether a peer is blocked on you (your ack or prune-ok),
// as opposed to your own item, which you may resolve at leisure.
// An overdue item's raiser the ladder woke must decide now, too.
func (n Need) Urgent() bool { return n == NeedAck || n == NeedPruneOK || n == NeedDecide }

// Action names the call the need asks for: "your ack (chat_ack)".
func (n Need) Action() string {
	if n == NeedNothing || int(n) >= len(needActions) {
		return ""
	}
	return needActions[n]
}

// String is the need in the Python edition's words, as the answers carry
// it: "your ack (chat_ack) — it is unattended".
func (n Need) String() string {
	if n == NeedAck {
		return n.Action() + unattended
	}
	return n.Action()
}

// MarshalText writes the need in the Python edition's words.
func (n Need) MarshalText() ([]byte, error) {
	if n.Action() == "" {
		return nil, fmt.Errorf("no words for need %d", n)
	}
	return []byte(n.String()), nil
}

// UnmarshalText reads a need written by MarshalText (or by the Python
// edition).
func (n *Need) UnmarshalText(text []byte) error {
	for _, v := range []Need{NeedAck, NeedResolve, NeedPruneOK, NeedDecide} {
		if string(text) == v.String() {
			*n = v
			return nil
		}
	}
	return fmt.Errorf("unknown need %q", text)
}

package tools

import (
	"context"
	"fmt"
	"strings"

	"github.com/mcpp/mcpp-chat/internal/store"
)

// chat_due and chat_reassign: the raiser's answers to an overdue item
// (docs/protocol.md, Due times and the ladder).

type dueArgs struct {
	itemArg
	Due string `json:"due"`
	keyArg
}

func due(ctx context.Context, s *Service, a dueArgs) (Result, error) {
	st, err := s.DB.SetDue(ctx, s.Me, store.DueArgs{Item: a.Item, Due: a.Due, DefaultChannel: s.Config.Chat.DefaultChannel})
	if err != nil {
		return Result{}, err
	}
	verb := "Due time set:"
	switch {
	case st.Unchanged:
		verb = "No due time to clear:"
	case strings.TrimSpace(a.Due) == "":
		verb = "Due time cleared:"
	}
	return Result{Display: renderItemState(verb, st), Value: st}, nil
}

type reassignArgs struct {
	itemArg
	Consumer string `json:"consumer"`
	To       string `json:"to"`
	keyArg
}

func (a reassignArgs) check() error {
	if err := a.itemArg.check(); err != nil {
		return err
	}
	if err := text("consumer", a.Consumer); err != nil {
		return err
	}
	return text("to", a.To)
}

func reassign(ctx context.Context, s *Service, a reassignArgs) (Result, error) {
	st, err := s.DB.Reassign(ctx, s.Me, store.ReassignArgs{Item: a.Item, Consumer: a.Consumer, To: a.To, DefaultChannel: s.Config.Chat.DefaultChannel})
	if err != nil {
		return Result{}, err
	}
	return Result{Display: renderItemState(fmt.Sprintf("Reassigned from %s to %s:", strings.TrimSpace(a.Consumer), strings.TrimSpace(a.To)), st), Value: st}, nil
}

// dueLine is what a due time adds to an item's line: " · due 10:00 UTC",
// or " · OVERDUE by 25m (due 10:00 UTC; not acked by node-dash)".
func dueLine(d store.Dues) string {
	if d.Due == "" {
		return ""
	}
	if !d.Overdue() {
		return " · due " + utcMinute(d.Due)
	}
	line := fmt.Sprintf(" · OVERDUE by %s (due %s; not acked by %s", d.OverdueBy, utcMinute(d.Due), names(d.NotAcked))
	switch d.Stage {
	case store.StageRaiser:
		line += "; raiser woken"
	case store.StagePerson:
		line += "; a person was told"
	}
	return line + ")"
}

// dueSentence is an item state's due time on a line of its own.
func dueSentence(d store.Dues) string {
	switch {
	case d.Due == "":
		return ""
	case d.Overdue():
		return "\n" + strings.TrimPrefix(dueLine(d), " · ") + "."
	}
	return fmt.Sprintf("\nDue %s: each consumer must ack by then, or it escalates.", utcMinute(d.Due))
}

// stageLine is one stage of an item's ladder, under the item in a read.
func stageLine(n store.StageNote) string {
	return fmt.Sprintf("  ⏰ %s %s", utcMinute(n.At), OneLine(n.Words(), 300))
}

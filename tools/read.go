package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/mcpp/mcpp-chat/internal/store"
)

func read(ctx context.Context, s *Service, raw json.RawMessage) (Result, error) {
	var a struct {
		Channel  string `json:"channel"`
		Limit    *int   `json:"limit"`
		Since    *int64 `json:"since"`
		Peek     bool   `json:"peek"`
		Archived bool   `json:"archived"`
	}
	if err := decode(raw, &a); err != nil {
		return Result{}, err
	}
	limit := s.Config.Chat.ReadLimit
	if a.Limit != nil {
		limit = *a.Limit
	}
	res, err := s.DB.Read(ctx, s.Me, store.ReadArgs{
		Channel: a.Channel, Limit: limit, Since: a.Since, Peek: a.Peek, Archived: a.Archived,
		DefaultChannel: s.Config.Chat.DefaultChannel,
	})
	if err != nil {
		return Result{}, err
	}
	return Result{Display: renderRead(res, a.Peek, a.Archived), Value: res}, nil
}

func renderRead(r store.ReadResult, peek, archived bool) string {
	var b strings.Builder
	what := "live"
	if archived {
		what = "archived"
	}
	fmt.Fprintf(&b, "**#%s** · %s after #%d · %s · with %s", r.Channel, plural(len(r.Messages), what+" message"), r.FromSeq, cursorNote(r, peek || archived), names(r.Parties))
	for _, slug := range r.ArchivedByThisRead {
		fmt.Fprintf(&b, "\n_[%s] archived by this read (done + unanimous prune-ok)_", slug)
	}
	if len(r.Messages) == 0 {
		b.WriteString("\n\nNothing new.")
	}
	for _, m := range r.Messages {
		b.WriteString("\n\n" + renderMessage(m))
	}
	if r.More > 0 {
		fmt.Fprintf(&b, "\n\n… %d more", r.More)
	}
	return b.String()
}

func cursorNote(r store.ReadResult, kept bool) string {
	if kept {
		return "cursor not moved"
	}
	return fmt.Sprintf("cursor at #%d", r.Cursor)
}

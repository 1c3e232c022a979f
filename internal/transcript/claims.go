package transcript

import (
	"fmt"
	"slices"
	"strings"

	"github.com/mcpp/mcpp-chat/internal/store"
	safe "github.com/mcpp/mcpp-chat/internal/text"
)

// Claims is the line of a channel's heading for the live claims held by
// the parties seated there (store/claims.go): what, who, until when, why.
// "" when they hold none.
func Claims(c store.ChannelView, claims []store.Claim, s Style) string {
	var seated []string
	for _, seat := range c.Seats {
		seated = append(seated, seat.Party)
	}
	var b strings.Builder
	for _, cl := range claims {
		if !slices.Contains(seated, cl.Holder) {
			continue
		}
		line := fmt.Sprintf("%s by %s until %s", safe.OneLine(cl.Resource, 300), safe.OneLine(cl.Holder, 64), s.When(cl.Until))
		if !cl.Exclusive {
			line += " (shared)"
		}
		if cl.Reason != "" {
			line += " — " + safe.OneLine(cl.Reason, 200)
		}
		fmt.Fprintf(&b, "   %s %s\n", s.paint(magenta, "claimed:"), line)
	}
	return b.String()
}

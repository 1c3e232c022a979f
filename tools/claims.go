package tools

import (
	"context"
	"fmt"
	"strings"

	"github.com/mcpp/mcpp-chat/internal/store"
)

// The claims' tools: chat_claim, chat_release, chat_claims, and
// chat_reply's hand_over (internal/store/claims.go has the rules).

type claimArgs struct {
	Resource  string `json:"resource"`
	TTL       string `json:"ttl"`
	Reason    string `json:"reason"`
	Exclusive *bool  `json:"exclusive"`
	Item      string `json:"item"`
	keyArg
}

func (a claimArgs) check() error { return text("resource", a.Resource) }

func claim(ctx context.Context, s *Service, a claimArgs) (Result, error) {
	most := s.Config.ClaimMaxLifetime()
	ttl, err := store.ClaimTTL(a.TTL, most)
	if err != nil {
		return Result{}, err
	}
	res, err := s.DB.Claim(ctx, s.Me, store.ClaimArgs{Resource: a.Resource, TTL: ttl, Reason: a.Reason, Exclusive: a.Exclusive == nil || *a.Exclusive,
		Item: a.Item, MaxLifetime: most, DefaultChannel: s.Config.Chat.DefaultChannel})
	if err != nil {
		return Result{}, err
	}
	return Result{Display: renderClaim(res), Value: res}, nil
}

func renderClaim(r store.ClaimResult) string {
	var b strings.Builder
	if !r.Granted {
		fmt.Fprintf(&b, "Not granted: %s is held by **%s** until %s", r.Resource, r.HeldBy, utcMinute(r.Until))
		if r.HeldResource != r.Resource {
			fmt.Fprintf(&b, " (its claim: %s)", r.HeldResource)
		}
		if r.Reason != "" {
			fmt.Fprintf(&b, " — %q", OneLine(r.Reason, 200))
		}
		fmt.Fprintf(&b, ".\nAsk %s about it (chat_ask, chat_say), or wait: chat_wait answers, and your hooks tell you, when its claim ends.", r.HeldBy)
	} else {
		verb := "Claimed"
		if r.Renewed {
			verb = "Claimed again"
		}
		how := "exclusive"
		if !r.Exclusive {
			how = "shared"
		}
		fmt.Fprintf(&b, "%s %s (%s) until %s", verb, r.Resource, how, utcMinute(r.Until))
		if r.Item != "" {
			fmt.Fprintf(&b, ", serving [%s]", r.Item)
		}
		if r.Reason != "" {
			fmt.Fprintf(&b, " — %q", OneLine(r.Reason, 200))
		}
		b.WriteString(".\nIt renews while you work; chat_release it when you are done.")
	}
	writeClaimNews(&b, r.News)
	return b.String()
}

type releaseArgs struct {
	Resource string `json:"resource"`
	keyArg
}

func (a releaseArgs) check() error { return text("resource", a.Resource) }

func release(ctx context.Context, s *Service, a releaseArgs) (Result, error) {
	res, err := s.DB.Release(ctx, s.Me, a.Resource)
	if err != nil {
		return Result{}, err
	}
	var b strings.Builder
	switch {
	case res.Released && len(res.Waiting) > 0:
		fmt.Fprintf(&b, "Released %s; %s, which waited for it, will be told it is free.", res.Resource, names(res.Waiting))
	case res.Released:
		fmt.Fprintf(&b, "Released %s.", res.Resource)
	default:
		fmt.Fprintf(&b, "Your claim on %s had already ended: %s at %s.", res.Resource, endedHow(res.How, ""), utcMinute(res.Ended))
	}
	writeClaimNews(&b, res.News)
	return Result{Display: b.String(), Value: res}, nil
}

type claimsArgs struct{}

func claims(ctx context.Context, s *Service, _ claimsArgs) (Result, error) {
	l, err := s.DB.Claims(ctx, s.Me)
	if err != nil {
		return Result{}, err
	}
	return Result{Display: renderClaims(l), Value: l}, nil
}

func renderClaims(l store.ClaimList) string {
	var b strings.Builder
	if len(l.Claims) == 0 {
		b.WriteString("Nothing is claimed that you can see.")
	} else {
		fmt.Fprintf(&b, "**Claims you can see** (you are %s)\n", l.Me)
		for _, c := range l.Claims {
			b.WriteString(claimLine(c, l.Me) + "\n")
		}
	}
	writeClaimNews(&b, l.News)
	return strings.TrimRight(b.String(), "\n")
}

// claimLine is one live claim: what, who, until when, why.
func claimLine(c store.Claim, me string) string {
	who := c.Holder
	if who == me {
		who = "you"
	}
	line := fmt.Sprintf("- %s — %s until %s", c.Resource, who, utcMinute(c.Until))
	if !c.Exclusive {
		line += " (shared)"
	}
	if c.Item != "" {
		line += fmt.Sprintf(", serving [%s]", c.Item)
	}
	if c.Reason != "" {
		line += fmt.Sprintf(": %q", OneLine(c.Reason, 200))
	}
	return line
}

// writeClaimNews adds the claims that ended and concern the caller.
func writeClaimNews(b *strings.Builder, news []store.ClaimEnd) {
	if len(news) == 0 {
		return
	}
	b.WriteString("\n\n**Claims that ended**\n")
	for _, n := range news {
		b.WriteString(claimEndLine(n) + "\n")
	}
}

// endedHow says how a claim ended (store.ClaimEnd.How), by whom.
func endedHow(how, by string) string {
	switch {
	case how == "freed":
		return "freed by the person who runs the chat"
	case how == "handed":
		return "handed over"
	case how == "resolved" && by != "":
		return "released when " + by + " resolved its item"
	case how == "released" && by != "":
		return "released by " + by
	}
	return how
}

// claimEndLine says how a claim ended, to its holder or to who waited.
func claimEndLine(n store.ClaimEnd) string {
	how := endedHow(n.How, n.By)
	if n.Yours {
		return fmt.Sprintf("- your claim on %s %s at %s", n.Resource, how, utcMinute(n.At))
	}
	return fmt.Sprintf("- %s's claim on %s, which you were refused, %s at %s — chat_claim it if you still need it", n.Holder, n.Resource, how, utcMinute(n.At))
}

// replyHandingOver is chat_reply with hand_over: the claim passes to the
// party replied to in the reply's own call.
func replyHandingOver(ctx context.Context, s *Service, a replyArgs) (Result, error) {
	res, handed, err := s.DB.ReplyHandingOver(ctx, s.Me, store.ReplyArgs{Item: a.Item, Text: a.Text, To: a.To, DefaultChannel: s.Config.Chat.DefaultChannel},
		a.HandOver, s.Config.ClaimMaxLifetime())
	if err != nil {
		return Result{}, err
	}
	value := struct {
		store.ReplyResult
		HandedOver store.HandOver `json:"handed_over"`
	}{res, handed}
	display := fmt.Sprintf("Replied to %s in #%s as #%d%s, and handed your claim on %s to %s (until %s).",
		res.Re, res.Channel, res.Seq, autoAcked(res.AutoAcked), handed.Resource, handed.To, utcMinute(handed.Until)) + addressing(res.Addressing)
	return Result{Display: display, Value: value}, nil
}

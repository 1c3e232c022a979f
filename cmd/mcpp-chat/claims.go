package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"

	"github.com/mcpp/mcpp-chat/hub"
	"github.com/mcpp/mcpp-chat/internal/store"
	"github.com/mcpp/mcpp-chat/internal/text"

	"errors"

	"net/http"
)

const claimsSynopsis = `claims [list] [--json]
       mcpp-chat claims release --force RESOURCE

For the person who runs the chat, not for agents (agents use chat_claim,
chat_release and chat_claims):
  list     every live claim, whoever holds it: resource, holder, until when, why
  release  end every live claim on RESOURCE, whoever holds it (--force says you
           mean it); its holder is told, and so is every party it was refused to.
           A path is written party/pattern, as list shows it.`

func claimsCmd(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	sub, rest := "list", args
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		sub, rest = args[0], args[1:]
	}
	switch sub {
	case "list":
		return claimsList(ctx, rest, getenv, stdout, stderr)
	case "release":
		return claimsRelease(ctx, rest, getenv, stdout, stderr)
	}
	fmt.Fprintf(stderr, "mcpp-chat claims: unknown subcommand %q — use list or release\n\nUsage: mcpp-chat %s\n", sub, claimsSynopsis)
	return exitUsage
}

func claimsList(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	fs := flags("claims list", claimsSynopsis, stderr)
	asJSON := fs.Bool("json", false, "print the list as JSON")
	if _, code, done := partiesFlags(fs, args, stdout, 0, "no words after list"); done {
		return code
	}
	in, err := locate(getenv, "")
	if err != nil {
		fmt.Fprintf(stderr, "mcpp-chat claims: %v\n", err)
		return exitError
	}
	r, err := in.openReadOnly(ctx)
	if err != nil {
		fmt.Fprintf(stderr, "mcpp-chat claims: %v\n", err)
		return exitError
	}
	defer r.Close()
	list, err := r.AllClaims(ctx)
	if err != nil {
		fmt.Fprintf(stderr, "mcpp-chat claims: %v\n", err)
		return exitError
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		enc.Encode(list)
		return exitOK
	}
	if len(list) == 0 {
		fmt.Fprintln(stdout, "Nothing is claimed.")
		return exitOK
	}
	for _, c := range list {
		fmt.Fprintln(stdout, claimRow(c))
	}
	return exitOK
}

// claimRow is one live claim as the person reads it.
func claimRow(c store.Claim) string {
	line := fmt.Sprintf("%s  %s until %s", text.OneLine(c.Resource, 300), text.OneLine(c.Holder, 80), minuteUTC(c.Until))
	if !c.Exclusive {
		line += " (shared)"
	}
	if c.Item != "" {
		line += " for [" + text.OneLine(c.Item, 120) + "]"
	}
	if c.Reason != "" {
		line += ": " + text.OneLine(c.Reason, 200)
	}
	return line
}

// minuteUTC is a stored time to the minute, in UTC.
func minuteUTC(at string) string {
	t, err := time.Parse(time.RFC3339Nano, at)
	if err != nil {
		return text.OneLine(at, 40)
	}
	return t.UTC().Format("2006-01-02 15:04 UTC")
}

func claimsRelease(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	fs := flags("claims release", claimsSynopsis, stderr)
	force := fs.Bool("force", false, "end the claim, whoever holds it")
	pos, code, done := partiesFlags(fs, args, stdout, 1, "the RESOURCE to free, e.g. path:node-dash/proto/** or env:staging")
	if done {
		return code
	}
	if !*force {
		fmt.Fprintf(stderr, "mcpp-chat claims: releasing ends a claim another party holds — run again with --force if you mean it (its holder is told)\n")
		return exitUsage
	}
	db, _, ok := openExisting(ctx, getenv, stderr)
	if !ok {
		return exitError
	}
	defer db.Close()
	freed, err := db.ForceRelease(ctx, pos[0])
	if err != nil {
		fmt.Fprintf(stderr, "mcpp-chat claims: %v\n", err)
		return exitError
	}
	for _, f := range freed {
		fmt.Fprintf(stdout, "freed %s, held by %s until %s", text.OneLine(f.Resource, 300), text.OneLine(f.Holder, 80), minuteUTC(f.Until))
		if len(f.Waiting) > 0 {
			fmt.Fprintf(stdout, "; %s, which waited for it, will be told it is free", text.OneLine(strings.Join(f.Waiting, ", "), 300))
		}
		fmt.Fprintf(stdout, "; %s is told its claim was freed\n", text.OneLine(f.Holder, 80))
	}
	return exitOK
}

// keepClaims renews the party's claims while serve runs: a session that
// is open keeps what it claimed, up to claims.max_lifetime, as its tool
// calls would (store.DB.RenewClaims; a member's hub does it on its
// store). It renews when the store says (a quarter of the shortest time
// to live, at most a minute on), and a second after a change of the chat
// (changes; nil for none): a claim made or handed to the party since —
// by this session or another — may live only seconds. A renewal that
// fails is logged once and tried again a minute later: the claims then
// last their own time to live. It stops with the returned function.
func keepClaims(ctx context.Context, renew func(context.Context) (time.Duration, error), changes changeFeed, log *slog.Logger) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		failing := false
		for {
			var changed <-chan struct{}
			if changes != nil {
				changed = changes.Next() // before the renewal: a change during it counts
			}
			next, err := renew(ctx)
			switch {
			case ctx.Err() != nil:
				return
			case err != nil:
				if !failing && !errors.Is(err, errHubToldElsewhere) {
					log.Warn("could not renew the party's claims; trying again every minute", "err", err)
				}
				failing, next = true, time.Minute
			default:
				failing = false
			}
			select {
			case <-ctx.Done():
				return
			case <-time.After(max(next, time.Second)):
			case <-changed:
				// A burst of changes is one renewal.
				select {
				case <-ctx.Done():
					return
				case <-time.After(time.Second):
				}
			}
		}
	}()
	return func() {
		cancel()
		<-done
	}
}

// changeFeed says when the chat may have changed (a tools.Service's
// Changes, a member's nudge from its hub).
type changeFeed interface{ Next() <-chan struct{} }

// claimRenewal is how serve renews its party's claims: on the store, or
// through the hub.
func claimRenewal(db *store.DB, me store.Identity, c *hub.Client) func(context.Context) (time.Duration, error) {
	if c != nil {
		return func(ctx context.Context) (time.Duration, error) {
			next, err := c.RenewClaims(ctx)
			return next, hubTrouble(err)
		}
	}
	return func(ctx context.Context) (time.Duration, error) { return db.RenewClaims(ctx, me) }
}

// errHubToldElsewhere marks a renewal that failed because the hub cannot
// be reached or refuses the token: a member's serve says so once already
// (followHub), and a second line for its claims would only repeat it.
var errHubToldElsewhere = errors.New("the hub's trouble, which serve reports")

// hubTrouble is err, marked errHubToldElsewhere when it is the hub's
// trouble (out of reach, or the token refused).
func hubTrouble(err error) error {
	var refused *hub.RefusedError
	if errors.Is(err, hub.ErrUnreachable) || errors.As(err, &refused) && (refused.Status == http.StatusUnauthorized || refused.Status == http.StatusForbidden) {
		return fmt.Errorf("%w: %w", errHubToldElsewhere, err)
	}
	return err
}

// printPartyClaims is doctor's line for the party's claims: those it
// holds, and how many of its peers' it sees (chat_claims lists them).
func printPartyClaims(w io.Writer, l store.ClaimList) {
	var mine []string
	others := 0
	for _, c := range l.Claims {
		if c.Holder != l.Me {
			others++
			continue
		}
		mine = append(mine, fmt.Sprintf("%s until %s", text.OneLine(c.Resource, 300), minuteUTC(c.Until)))
	}
	held := "none held"
	if len(mine) > 0 {
		held = strings.Join(mine, "; ")
	}
	fmt.Fprintf(w, "claims:      %s; %s of its peers' seen (chat_claims lists them; mcpp-chat claims lists all)\n", held, text.Count(others, "claim"))
}

package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/mcpp/mcpp-chat/hook"
	"github.com/mcpp/mcpp-chat/hub"
	"github.com/mcpp/mcpp-chat/internal/text"
)

// doctorHub checks a member machine's line to its hub: the saved settings,
// whether the hub answers, what the token is, whether this folder's party
// is one of its parties, and the hook's cache. It only reads; the hub is
// asked nothing that writes.
func doctorHub(ctx context.Context, stdout io.Writer, in install) bool {
	ok := true
	if info, err := os.Stat(in.paths.Hub); err == nil {
		note := ""
		if info.Mode().Perm()&0o077 != 0 {
			note = fmt.Sprintf(" — warning: mode %o lets others read the token; chmod 600 %s", info.Mode().Perm(), in.paths.Hub)
			ok = false
		}
		fmt.Fprintf(stdout, "hub file:    %s%s\n", in.paths.Hub, note)
	}
	c, err := in.hubClient()
	if err != nil {
		fmt.Fprintf(stdout, "token:       none — %v\n", err)
		return false
	}
	look, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := c.Health(look); err != nil {
		fmt.Fprintf(stdout, "reachable:   no — %s\n", hubUnreachable(c.Where(), in.paths.Hub, err))
		fmt.Fprintf(stdout, "party:       %s (as it would act)\n", text.Clean(in.party.Name))
		return false
	}
	fmt.Fprintf(stdout, "reachable:   yes\n")
	c.Party = ""
	info, err := c.TokenInfo(look)
	if err != nil {
		fmt.Fprintf(stdout, "token:       refused — %v\n", err)
		return false
	}
	now := time.Now()
	left := info.Expires.Sub(now)
	when := "expires " + tokenExpiry(info.Expires, now)
	if left < 7*24*time.Hour {
		when += " — warning: ask the hub's admin for a new one soon"
		ok = false
	}
	fmt.Fprintf(stdout, "token:       %s (%s) for %s; %s\n", info.ID, text.Clean(info.Label), strings.Join(info.Parties, ", "), when)
	if !slices.Contains(info.Parties, in.party.Name) {
		fmt.Fprintf(stdout, "party:       %s — warning: not one of the token's parties, so the hub refuses sessions here; run them in %s's repository, or ask for a token for %s\n",
			text.Clean(in.party.Name), strings.Join(info.Parties, " or "), text.Clean(in.party.Name))
		return false
	}
	fmt.Fprintf(stdout, "party:       %s\n", text.Clean(in.party.Name))
	c.Party = in.party.Name
	if l, err := c.Claims(look); err == nil {
		printPartyClaims(stdout, l)
	}
	if cache, fresh := hook.ReadHubCache(hook.HubCachePath(in.paths, in.party.Name), time.Now()); fresh {
		fmt.Fprintf(stdout, "hook cache:  fresh (kept by serve, pid %d, which heard from the hub %s ago)\n", cache.ServePID, time.Since(cache.CheckedAt).Round(time.Second))
	} else {
		fmt.Fprintf(stdout, "hook cache:  none fresh — no serve of %s here hears the hub now; the hook asks the hub itself (within %v)\n", text.Clean(in.party.Name), hubHookBudget)
	}
	return ok
}

// hubUnreachable is why the hub did not answer, for doctor: the client's
// sentence says to run doctor, which is running.
func hubUnreachable(where, hubFile string, err error) string {
	if !errors.Is(err, hub.ErrUnreachable) {
		return err.Error()
	}
	why := "nothing answers there"
	var op *net.OpError
	if errors.As(err, &op) {
		why = op.Err.Error()
	}
	return fmt.Sprintf("the team hub at %s does not answer (%s) — check that mcpp-chat hub serve runs there, and that this is its address (%s holds it; mcpp-chat connect URL --token TOKEN saves another)", where, why, hubFile)
}

// tokenExpiry is when a token ends, as a person reads it: the day and
// how long until then, and for a token that ends within two days the
// time of day (UTC) too — a 12-hour token's date alone says nothing.
func tokenExpiry(expires, now time.Time) string {
	left := expires.Sub(now)
	switch {
	case left <= 0:
		return expires.UTC().Format("2006-01-02 15:04 UTC") + " (expired)"
	case left < 48*time.Hour:
		return fmt.Sprintf("%s (in %s)", expires.UTC().Format("2006-01-02 15:04 UTC"), hoursMinutes(left))
	}
	return fmt.Sprintf("%s (in %d days)", expires.Format(time.DateOnly), int(left.Hours()/24))
}

// hoursMinutes is a duration under two days: "11h 59min", "40min".
func hoursMinutes(d time.Duration) string {
	d = d.Round(time.Minute)
	if h := int(d.Hours()); h > 0 {
		return fmt.Sprintf("%dh %02dmin", h, int(d.Minutes())%60)
	}
	return fmt.Sprintf("%dmin", int(d.Minutes()))
}

package store

import (
	"strconv"
	"strings"
	"time"
)

// ClaimKinds are the kinds of thing a claim names, as a resource spells
// them: path:<glob> is a place in a repository; the others are names the
// parties share, the same thing for everyone who sees the claim.
var ClaimKinds = []string{"path", "branch", "env", "port", "schema", "name"}

// resource is a claim's resource as written, checked: its kind and its
// pattern. A path's first name may be a party's (its repository is then
// the owner's); the owner is found in the store (claimOwner).
type resource struct {
	kind    string
	pattern string
}

// parseResource checks a resource as a party writes it.
func parseResource(raw string) (resource, error) {
	kind, value, ok := strings.Cut(strings.TrimSpace(raw), ":")
	kind = strings.ToLower(strings.TrimSpace(kind))
	if !ok || !contains(ClaimKinds, kind) {
		return resource{}, userErrorf("resource %q names no kind of thing — write kind:what, where kind is %s (e.g. path:proto/**, env:staging, port:8080)", raw, strings.Join(ClaimKinds, ", "))
	}
	value = strings.TrimSpace(value)
	if kind == "port" {
		n, err := strconv.Atoi(value)
		if err != nil || n < 1 || n > 65535 {
			return resource{}, userErrorf("resource %q is not a port — write port:N with N from 1 to 65535", raw)
		}
		return resource{kind: kind, pattern: strconv.Itoa(n)}, nil
	}
	if kind == "path" && strings.HasPrefix(value, "/") {
		return resource{}, userErrorf("resource %q is an absolute path — write it relative to your repository's root (path:src/gen/**), or as party/glob for another party's repository (path:node-dash/proto/**)", raw)
	}
	pattern, err := checkPattern(value)
	if err != nil {
		return resource{}, userErrorf("resource %q is not a pattern a claim can hold: %v — write names separated by /, with * for any name, ? for one character and ** for any number of folders", raw, err)
	}
	return resource{kind: kind, pattern: pattern}, nil
}

// spell writes a resource: kind:pattern, a path as owner/pattern.
func spell(kind, owner, pattern string) string {
	if kind == "path" {
		return kind + ":" + owner + "/" + pattern
	}
	return kind + ":" + pattern
}

// ClaimTTL reads a claim's time to live as chat_claim takes it: "30m",
// "2h", "1h30m", "90s" (Go's durations, and d for days), from
// MinClaimTTL to most.
func ClaimTTL(raw string, most time.Duration) (time.Duration, error) {
	s := strings.TrimSpace(raw)
	if s == "" {
		return DefaultClaimTTL, nil
	}
	var d time.Duration
	var err error
	if days, ok := strings.CutSuffix(s, "d"); ok {
		var n int
		n, err = strconv.Atoi(days)
		d = time.Duration(n) * 24 * time.Hour
		if n > 366 {
			d = most + 1
		}
	} else {
		d, err = time.ParseDuration(s)
	}
	switch {
	case err != nil:
		return 0, userErrorf("ttl %q is not a duration — write it as 30m, 2h, 1h30m or 90s", raw)
	case d < MinClaimTTL:
		return 0, userErrorf("ttl %q is shorter than %v — give %v or more; a claim renews while you work, so it need not be long", raw, MinClaimTTL, MinClaimTTL)
	case d > most:
		return 0, userErrorf("ttl %q is longer than claims.max_lifetime (%v) — give at most that; a claim renews while you work, so it need not be long", raw, most)
	}
	return d, nil
}

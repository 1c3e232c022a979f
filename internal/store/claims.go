package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/mcpp/mcpp-chat/internal/store/engine"
)

// Claims: a party's lease on something it shares with others — a place in
// a repository, a branch, an environment, a port, a schema — while it
// changes it. A claim is granted unless a claim of a party the claimer
// shares a channel with overlaps it (one of the two exclusive); it lasts
// its time to live, moved on while its holder is active (any tool call,
// a running serve) up to claims.max_lifetime, and ends when released,
// freed by the person, when the item it serves is resolved, or when its
// time runs out. Its holder, if it did not end it itself, and every party
// it refused are told once that it ended. A party sees the claims of the
// parties it shares a channel with, and its own; nothing else of them, not
// even that they exist.

// Claims' bounds and defaults.
const (
	DefaultClaimTTL = 30 * time.Minute
	MinClaimTTL     = 10 * time.Second
	// DefaultClaimMaxLifetime is claims.max_lifetime's default.
	DefaultClaimMaxLifetime = 8 * time.Hour
	// maxClaimsHeld bounds the live claims one party holds.
	maxClaimsHeld = 64
	// maxWaits bounds the claims one party waits for; the oldest wait
	// gives way.
	maxWaits = 64
	// maxClaimReason bounds a claim's reason, in bytes.
	maxClaimReason = 1000
	// claimNewsFor is how long an ended claim is news to its holder and
	// those that waited for it; it is forgotten after.
	claimNewsFor = 24 * time.Hour
)

// Claim is a live claim as a party sees it.
type Claim struct {
	Resource  string `json:"resource"`
	Holder    string `json:"holder"`
	Reason    string `json:"reason"`
	Since     string `json:"since"`
	Until     string `json:"until"`
	Exclusive bool   `json:"exclusive"`
	// Item is the item the claim serves (channel:slug): resolving it
	// releases the claim.
	Item string `json:"item,omitempty"`
	// Kind and Pattern are the resource taken apart; for a path, Owner
	// is the party whose repository holds it and OwnerRoot its folder
	// (none on a team hub, where a party is its name).
	Kind      string `json:"kind"`
	Pattern   string `json:"pattern"`
	Owner     string `json:"owner,omitempty"`
	OwnerRoot string `json:"owner_root,omitempty"`
}

// ClaimEnd is a claim that ended and is news to a party: one it held and
// did not end itself, or one it was refused while it stood.
type ClaimEnd struct {
	// ID names the claim, for a hook's record of what it told.
	ID       int64  `json:"id"`
	Resource string `json:"resource"`
	Holder   string `json:"holder"`
	// How it ended: expired, released (by its holder), freed (by the
	// person), resolved (its item was resolved), handed (to another).
	How string `json:"how"`
	By  string `json:"by,omitempty"`
	At  string `json:"at"`
	// Yours: the party held it; otherwise the party waited for it.
	Yours bool `json:"yours"`
}

// Ended claims' ways.
const (
	endExpired  = "expired"
	endReleased = "released"
	endFreed    = "freed"
	endResolved = "resolved"
	endHanded   = "handed"
)

// claimRow is a row of claims as the protocol reads it.
type claimRow struct {
	id        int64
	kind      string
	pattern   string
	ownerID   int64
	owner     string
	ownerRoot string
	holderID  int64
	holder    string
	exclusive bool
	reason    string
	itemID    int64
	item      string
	ttl       int64
	claimedAt string
	expiresAt string
	renewTo   string
	endedAt   string
	endedHow  string
	endedBy   string
}

const claimColumns = `c.id, c.kind, c.pattern, coalesce(c.owner_id, 0), coalesce(o.name, ''), coalesce(o.workspace_path, ''),
	c.holder_id, h.name, c.exclusive, c.reason, coalesce(c.item_id, 0), coalesce(ch.name || ':' || m.slug, ''),
	c.ttl_seconds, c.claimed_at, c.expires_at, c.renew_until, coalesce(c.ended_at, ''), coalesce(c.ended_how, ''), coalesce(b.name, '')`

const claimJoins = ` FROM claims c JOIN parties h ON h.id = c.holder_id
	LEFT JOIN parties o ON o.id = c.owner_id
	LEFT JOIN messages m ON m.id = c.item_id LEFT JOIN channels ch ON ch.id = m.channel_id
	LEFT JOIN parties b ON b.id = c.ended_by `

// visibleTo is the condition that a claim's holder is ?1 or shares a
// channel with it.
const visibleTo = `(c.holder_id = ?1 OR c.holder_id IN (SELECT b2.party_id FROM channel_parties a2
	JOIN channel_parties b2 ON b2.channel_id = a2.channel_id
	WHERE a2.party_id = ?1 AND a2.left_at IS NULL AND b2.left_at IS NULL))`

func (t *tx) claimRows(where string, args ...any) ([]claimRow, error) {
	rows, err := t.query(`SELECT `+claimColumns+claimJoins+where, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []claimRow
	for rows.Next() {
		var c claimRow
		if err := rows.Scan(&c.id, &c.kind, &c.pattern, &c.ownerID, &c.owner, &c.ownerRoot, &c.holderID, &c.holder, &c.exclusive,
			&c.reason, &c.itemID, &c.item, &c.ttl, &c.claimedAt, &c.expiresAt, &c.renewTo, &c.endedAt, &c.endedHow, &c.endedBy); err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, rows.Err()
}

// resource is the claim's resource as it is shown.
func (c claimRow) resource() string { return spell(c.kind, c.owner, c.pattern) }

// overlaps reports whether c and d hold something in common.
func (c claimRow) overlaps(d claimRow) bool {
	if c.kind != d.kind || c.ownerID != d.ownerID {
		return false
	}
	if c.pattern == d.pattern {
		return true
	}
	return compileGlob(c.pattern).overlaps(compileGlob(d.pattern))
}

// view is the claim as a party sees it; a team party sees no folders.
func (c claimRow) view(team bool) Claim {
	v := Claim{Resource: c.resource(), Holder: c.holder, Reason: c.reason, Since: c.claimedAt, Until: c.expiresAt,
		Exclusive: c.exclusive, Item: c.item, Kind: c.kind, Pattern: c.pattern, Owner: c.owner, OwnerRoot: c.ownerRoot}
	if team || c.kind != "path" {
		v.OwnerRoot = ""
	}
	return v
}

// ended is when and how the claim ended, as of now; ok is false while it
// is live.
func (c claimRow) ended(now string) (at, how string, ok bool) {
	switch {
	case c.endedAt != "":
		return c.endedAt, c.endedHow, true
	case c.expiresAt <= now:
		return c.expiresAt, endExpired, true
	}
	return "", "", false
}

// addTime is the stored time at plus d.
func addTime(at string, d time.Duration) string {
	t, err := time.Parse(time.RFC3339Nano, at)
	if err != nil {
		return at
	}
	return Timestamp(t.Add(d))
}

// ClaimArgs are chat_claim's arguments.
type ClaimArgs struct {
	Resource  string
	TTL       time.Duration
	Reason    string
	Exclusive bool
	Item      string
	// MaxLifetime is claims.max_lifetime: renewals stop that long after
	// the claim was made.
	MaxLifetime    time.Duration
	DefaultChannel string
}

// ClaimResult is chat_claim's result: the claim granted, or the one that
// stands in its way.
type ClaimResult struct {
	Granted  bool   `json:"granted"`
	Resource string `json:"resource"`
	// Until is when the granted claim expires unless renewed, or when
	// the one in the way does.
	Until string `json:"until"`
	// HeldBy holds the claim in the way, HeldResource is what it names
	// (an overlapping pattern), Reason is its holder's.
	HeldBy       string `json:"held_by,omitempty"`
	HeldResource string `json:"held_resource,omitempty"`
	Reason       string `json:"reason"`
	Exclusive    bool   `json:"exclusive"`
	Item         string `json:"item,omitempty"`
	// Renewed: the caller held this claim already; it now lasts anew.
	Renewed bool `json:"renewed,omitempty"`
	// News are claims that ended and concern the caller.
	News []ClaimEnd `json:"claim_news,omitempty"`
}

// Claim grants the caller a claim on a.Resource, or says who holds one in
// its way and records that the caller waits for it.
func (d *DB) Claim(ctx context.Context, me Identity, a ClaimArgs) (ClaimResult, error) {
	var out ClaimResult
	if len(a.Reason) > maxClaimReason {
		return out, userErrorf("reason is %d bytes long — say it in at most %d", len(a.Reason), maxClaimReason)
	}
	res, err := parseResource(a.Resource)
	if err != nil {
		return out, err
	}
	err = d.update(ctx, func(t *tx) error {
		p, err := t.me(me, true)
		if err != nil {
			return err
		}
		want, err := t.claimOwner(p, res)
		if err != nil {
			return err
		}
		want.holderID, want.holder = p.id, p.name
		want.exclusive, want.reason = a.Exclusive, strings.TrimSpace(a.Reason)
		if a.Item != "" {
			x, err := t.findItem(p, a.Item, a.DefaultChannel)
			if err != nil {
				return err
			}
			if x.archived || x.status == "done" {
				return userErrorf("%s is done — a claim serves an item still open; leave item out, or raise a new one", x.label())
			}
			want.itemID, want.item = x.id, x.ch.name+":"+x.slug
		}
		if _, err := t.lockName(engine.Claims, want.kind); err != nil {
			return err
		}
		if err := t.forgetOldClaims(); err != nil {
			return err
		}
		out, err = t.claim(p, want, a)
		if err != nil {
			return err
		}
		out.News, err = t.claimNews(p)
		return err
	})
	return out, err
}

// claimOwner finds whose repository a path names: the party its first
// name is, if one is, else the claimer's own.
func (t *tx) claimOwner(p party, res resource) (claimRow, error) {
	c := claimRow{kind: res.kind, pattern: res.pattern}
	if res.kind != "path" {
		return c, nil
	}
	first, rest, _ := strings.Cut(res.pattern, "/")
	c.ownerID, c.owner = p.id, p.name
	var id int64
	err := t.row(`SELECT id FROM parties WHERE name = ?`, first).Scan(&id)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return c, nil
	case err != nil:
		return c, err
	}
	c.ownerID, c.owner = id, first
	c.pattern = rest
	if rest == "" {
		c.pattern = "**" // the whole repository
	}
	return c, nil
}

// claim is Claim inside its transaction, holding the kind's turn.
func (t *tx) claim(p party, want claimRow, a ClaimArgs) (ClaimResult, error) {
	live, err := t.claimRows(`WHERE c.kind = ?2 AND c.ended_at IS NULL AND `+visibleTo+` ORDER BY c.claimed_at, c.id`, p.id, want.kind)
	if err != nil {
		return ClaimResult{}, err
	}
	var mine *claimRow
	var inTheWay []claimRow
	held := 0
	for i, c := range live {
		if !want.overlaps(c) {
			continue
		}
		if c.holderID == p.id {
			switch {
			case c.ownerID != want.ownerID || c.pattern != want.pattern:
			case c.expiresAt > t.now:
				mine = &live[i]
			default:
				// Its own claim ran out, and it claims it again: that it
				// ran out is no longer news to it.
				if _, err := t.exec(`UPDATE claims SET ended_at = expires_at, ended_how = ?, ended_by = ? WHERE id = ? AND ended_at IS NULL`,
					endExpired, p.id, c.id); err != nil {
					return ClaimResult{}, err
				}
			}
			continue
		}
		if !want.exclusive && !c.exclusive {
			continue
		}
		if c.expiresAt <= t.now {
			// Ended by its time. Marked so, unless its holder renewed
			// it meanwhile (a team store's calls run side by side):
			// then it stands.
			ended, err := t.markExpired(c)
			if err != nil || ended {
				if err != nil {
					return ClaimResult{}, err
				}
				continue
			}
		}
		inTheWay = append(inTheWay, c)
	}
	if len(inTheWay) > 0 {
		return t.refuse(p, want, inTheWay)
	}
	if err := t.row(`SELECT count(*) FROM claims WHERE holder_id = ? AND ended_at IS NULL AND expires_at > ?`, p.id, t.now).Scan(&held); err != nil {
		return ClaimResult{}, err
	}
	renewUntil := addTime(t.now, a.MaxLifetime)
	until := min(addTime(t.now, a.TTL), renewUntil)
	out := ClaimResult{Granted: true, Resource: want.resource(), Until: until, Reason: want.reason, Exclusive: want.exclusive, Item: want.item}
	var item any
	if want.itemID != 0 {
		item = want.itemID
	}
	if mine != nil {
		out.Renewed = true
		if _, err := t.exec(`UPDATE claims SET exclusive = ?, reason = ?, item_id = ?, ttl_seconds = ?, expires_at = ?, renew_until = ? WHERE id = ?`,
			boolInt(want.exclusive), want.reason, item, int64(a.TTL/time.Second), until, renewUntil, mine.id); err != nil {
			return out, err
		}
	} else {
		if held >= maxClaimsHeld {
			return out, userErrorf("you hold %d claims, the most a party may — release those you no longer need (chat_claims lists them) and claim again", held)
		}
		var owner any
		if want.ownerID != 0 {
			owner = want.ownerID
		}
		var id int64
		if err := t.insert(&id, `INSERT INTO claims (kind, owner_id, pattern, holder_id, exclusive, reason, item_id, ttl_seconds, claimed_at, expires_at, renew_until)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id`,
			want.kind, owner, want.pattern, p.id, boolInt(want.exclusive), want.reason, item, int64(a.TTL/time.Second), t.now, until, renewUntil); err != nil {
			return out, err
		}
	}
	// No longer waiting for what it now holds.
	if _, err := t.exec(`DELETE FROM claim_waiters WHERE party_id = ? AND claim_id IN (SELECT id FROM claims WHERE kind = ? AND (ended_at IS NOT NULL OR expires_at <= ?))`,
		p.id, want.kind, t.now); err != nil {
		return out, err
	}
	if err := t.claimsChanged(p); err != nil {
		return out, err
	}
	if want.kind == "path" {
		return out, t.markPathClaims()
	}
	return out, nil
}

// refuse answers a claim that others' claims stand in the way of, and
// notes that the party waits for each of them.
func (t *tx) refuse(p party, want claimRow, inTheWay []claimRow) (ClaimResult, error) {
	first := inTheWay[0]
	out := ClaimResult{Resource: want.resource(), Until: first.expiresAt, HeldBy: first.holder, HeldResource: first.resource(),
		Reason: first.reason, Exclusive: first.exclusive, Item: first.item}
	for _, c := range inTheWay {
		if _, err := t.exec(`INSERT INTO claim_waiters (claim_id, party_id, asked_at) VALUES (?, ?, ?) ON CONFLICT (claim_id, party_id) DO NOTHING`,
			c.id, p.id, t.now); err != nil {
			return out, err
		}
	}
	// The oldest waits give way to the newest.
	_, err := t.exec(`DELETE FROM claim_waiters WHERE party_id = ?1 AND claim_id NOT IN
		(SELECT claim_id FROM claim_waiters WHERE party_id = ?1 ORDER BY asked_at DESC, claim_id DESC LIMIT ?2)`, p.id, maxWaits)
	return out, err
}

// markExpired records that c ended at its expiry, unless it was renewed
// since it was read; ended reports that it did end.
func (t *tx) markExpired(c claimRow) (ended bool, err error) {
	res, err := t.exec(`UPDATE claims SET ended_at = expires_at, ended_how = ? WHERE id = ? AND ended_at IS NULL AND expires_at <= ?`,
		endExpired, c.id, t.now)
	if err != nil {
		return false, err
	}
	n, err := res.RowsAffected()
	return n > 0, err
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// claimsChanged marks what a change of p's claims concerns: every party
// that shares a channel with p sees them, so each of p's channels moves
// (and p's own state).
func (t *tx) claimsChanged(p party) error {
	seats, err := t.seats(p.id)
	if err != nil {
		return err
	}
	for _, c := range seats {
		t.clock(c.id)
	}
	t.clock(-p.id)
	return nil
}

// markPathClaims tells an engine that keeps a mark beside its store
// (engine.PathClaimMarks) until when the live path claims last, after the
// call's last change to them: written before the commit, so a hook never
// finds it lower than a committed claim's expiry.
func (t *tx) markPathClaims() error {
	m, ok := t.et.(engine.PathClaimMarks)
	if !ok {
		return nil
	}
	var until string
	if err := t.row(`SELECT coalesce(max(expires_at), '') FROM claims WHERE kind = 'path' AND ended_at IS NULL AND expires_at > ?`, t.now).Scan(&until); err != nil {
		return err
	}
	return m.MarkPathClaims(until)
}

// forgetOldClaims deletes the claims that ended longer ago than they are
// news, and the waits for them.
func (t *tx) forgetOldClaims() error {
	before := addTime(t.now, -claimNewsFor)
	const old = `SELECT id FROM claims WHERE coalesce(ended_at, expires_at) < ?`
	if _, err := t.exec(`DELETE FROM claim_waiters WHERE claim_id IN (`+old+`)`, before); err != nil {
		return err
	}
	_, err := t.exec(`DELETE FROM claims WHERE coalesce(ended_at, expires_at) < ?`, before)
	return err
}

// renewClaims moves on the party's live claims, each at most to its
// renew_until, once a quarter of its time to live has passed since it was
// last moved: a party that stays active keeps what it claimed. A claim
// whose time ran out is not renewed: it ended, and may be another's now.
func (t *tx) renewClaims(p party) error {
	rows, err := t.query(`SELECT id, kind, ttl_seconds, expires_at, renew_until FROM claims
		WHERE holder_id = ? AND ended_at IS NULL AND expires_at > ?`, p.id, t.now)
	if err != nil {
		return err
	}
	type due struct {
		id    int64
		kind  string
		until string
	}
	var renew []due
	for rows.Next() {
		var d due
		var ttl int64
		var expires, limit string
		if err := rows.Scan(&d.id, &d.kind, &ttl, &expires, &limit); err != nil {
			rows.Close()
			return err
		}
		life := time.Duration(ttl) * time.Second
		d.until = min(addTime(t.now, life), limit)
		if d.until > expires && d.until >= addTime(expires, life/4) || d.until == limit && limit > expires {
			renew = append(renew, d)
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil || len(renew) == 0 {
		return err
	}
	path := false
	for _, d := range renew {
		if _, err := t.exec(`UPDATE claims SET expires_at = ? WHERE id = ? AND ended_at IS NULL AND expires_at > ?`, d.until, d.id, t.now); err != nil {
			return err
		}
		path = path || d.kind == "path"
	}
	if err := t.claimsChanged(p); err != nil {
		return err
	}
	if path {
		return t.markPathClaims()
	}
	return nil
}

// RenewClaims moves on the live claims of the party me, as its running
// serve does while the party's session lives, and says when to come
// again: when the first of them is due (at most a minute on). A party not
// made yet holds nothing; last_seen is not touched — a serve that runs is
// not a party at work.
func (d *DB) RenewClaims(ctx context.Context, me Identity) (next time.Duration, err error) {
	next = time.Minute
	err = d.view(ctx, func(t *tx) error {
		p, err := t.existingParty(me)
		if errors.Is(err, ErrUnknownParty) {
			return nil
		}
		if err != nil {
			return err
		}
		if err := t.renewClaims(p); err != nil {
			return err
		}
		var ttl sql.NullInt64
		if err := t.row(`SELECT min(ttl_seconds) FROM claims WHERE holder_id = ? AND ended_at IS NULL AND expires_at > ?`, p.id, t.now).Scan(&ttl); err != nil {
			return err
		}
		if ttl.Valid {
			next = min(next, max(time.Duration(ttl.Int64)*time.Second/4, time.Second))
		}
		return nil
	})
	return next, err
}

// endClaims ends the live claims that where picks (holding ?1 for the
// time), how, by the party by (0: the person), and tells an engine that
// marks path claims their new end. It returns what it ended.
func (t *tx) endClaims(how string, by int64, where string, args ...any) ([]claimRow, error) {
	ended, err := t.claimRows(`WHERE c.ended_at IS NULL AND c.expires_at > ?1 AND `+where, append([]any{t.now}, args...)...)
	if err != nil || len(ended) == 0 {
		return nil, err
	}
	var endedBy any
	if by != 0 {
		endedBy = by
	}
	path := false
	holders := map[int64]bool{}
	for _, c := range ended {
		if _, err := t.exec(`UPDATE claims SET ended_at = ?, ended_how = ?, ended_by = ? WHERE id = ?`, t.now, how, endedBy, c.id); err != nil {
			return nil, err
		}
		path = path || c.kind == "path"
		holders[c.holderID] = true
	}
	for id := range holders {
		if err := t.claimsChanged(party{id: id}); err != nil {
			return nil, err
		}
	}
	if path {
		return ended, t.markPathClaims()
	}
	return ended, nil
}

// ReleaseResult is chat_release's result.
type ReleaseResult struct {
	Released bool   `json:"released"`
	Resource string `json:"resource"`
	// Ended says when the claim had already ended, and how, when it was
	// not released by this call.
	Ended string `json:"ended,omitempty"`
	How   string `json:"how,omitempty"`
	// Waiting are the parties that were refused it: they are told it is
	// free.
	Waiting []string   `json:"waiting"`
	News    []ClaimEnd `json:"claim_news,omitempty"`
}

// Release ends the caller's claim on resource. A claim that had already
// ended (its time ran out, the person freed it) is no error: the answer
// says when and how.
func (d *DB) Release(ctx context.Context, me Identity, raw string) (ReleaseResult, error) {
	var out ReleaseResult
	res, err := parseResource(raw)
	if err != nil {
		return out, err
	}
	err = d.update(ctx, func(t *tx) error {
		p, err := t.me(me, true)
		if err != nil {
			return err
		}
		want, err := t.claimOwner(p, res)
		if err != nil {
			return err
		}
		out = ReleaseResult{Resource: want.resource(), Waiting: []string{}}
		if _, err := t.lockName(engine.Claims, want.kind); err != nil {
			return err
		}
		ended, err := t.endClaims(endReleased, p.id, `c.holder_id = ?2 AND c.kind = ?3 AND coalesce(c.owner_id, 0) = ?4 AND c.pattern = ?5`,
			p.id, want.kind, want.ownerID, want.pattern)
		if err != nil {
			return err
		}
		if len(ended) > 0 {
			out.Released = true
			if out.Waiting, err = t.names(`SELECT DISTINCT p.name FROM claim_waiters w JOIN parties p ON p.id = w.party_id
				WHERE w.claim_id = ? ORDER BY p.name`, ended[0].id); err != nil {
				return err
			}
			out.Waiting = nonNil(out.Waiting)
		} else if err := t.releasedBefore(p, want, &out); err != nil {
			return err
		}
		out.News, err = t.claimNews(p)
		return err
	})
	return out, err
}

func nonNil(list []string) []string {
	if list == nil {
		return []string{}
	}
	return list
}

// releasedBefore fills in how the party's claim on want ended, or refuses
// a release of what it never claimed (within the time an ended claim is
// kept).
func (t *tx) releasedBefore(p party, want claimRow, out *ReleaseResult) error {
	rows, err := t.claimRows(`WHERE c.holder_id = ?1 AND c.kind = ?2 AND coalesce(c.owner_id, 0) = ?3 AND c.pattern = ?4 ORDER BY c.id DESC LIMIT 1`,
		p.id, want.kind, want.ownerID, want.pattern)
	if err != nil {
		return err
	}
	if len(rows) == 0 {
		return userErrorf("you hold no claim on %s — release what you claimed as chat_claims lists it", want.resource())
	}
	out.Ended, out.How, _ = rows[0].ended(t.now)
	return nil
}

// claimNews lists the claims that ended and concern p, newest first: its
// own that it did not end itself, and those it was refused while they
// stood (unless handed to another, which is no end).
func (t *tx) claimNews(p party) ([]ClaimEnd, error) {
	since := addTime(t.now, -claimNewsFor)
	const ended = `(c.ended_at IS NOT NULL OR c.expires_at <= ?2) AND coalesce(c.ended_at, c.expires_at) > ?3`
	own, err := t.claimRows(`WHERE c.holder_id = ?1 AND `+ended+` AND coalesce(c.ended_by, 0) <> ?1 AND coalesce(c.ended_how, '') <> 'handed'
		ORDER BY coalesce(c.ended_at, c.expires_at) DESC, c.id DESC LIMIT 50`, p.id, t.now, since)
	if err != nil {
		return nil, err
	}
	// Of those it waited for, only while it still sees the holder
	// (visibleTo), as chat_claims and the inbox show claims.
	waited, err := t.claimRows(`WHERE c.id IN (SELECT claim_id FROM claim_waiters WHERE party_id = ?1) AND `+ended+` AND coalesce(c.ended_how, '') <> 'handed'
		AND `+visibleTo+` ORDER BY coalesce(c.ended_at, c.expires_at) DESC, c.id DESC LIMIT 50`, p.id, t.now, since)
	if err != nil {
		return nil, err
	}
	var out []ClaimEnd
	for _, list := range [][]claimRow{own, waited} {
		for _, c := range list {
			at, how, _ := c.ended(t.now)
			out = append(out, ClaimEnd{ID: c.id, Resource: c.resource(), Holder: c.holder, How: how, By: c.endedBy, At: at, Yours: c.holderID == p.id})
		}
	}
	return out, nil
}

// ClaimList is chat_claims' result.
type ClaimList struct {
	Claims []Claim    `json:"claims"`
	News   []ClaimEnd `json:"claim_news"`
	Me     string     `json:"me"`
}

// Claims lists the live claims the caller sees — its own and those of the
// parties it shares a channel with — and the claims that ended and
// concern it.
func (d *DB) Claims(ctx context.Context, me Identity) (ClaimList, error) {
	var out ClaimList
	err := d.view(ctx, func(t *tx) error {
		p, err := t.me(me, false)
		if err != nil {
			return err
		}
		out.Me = p.name
		if out.Claims, err = t.visibleClaims(p, me.Team); err != nil {
			return err
		}
		news, err := t.claimNews(p)
		out.News = news
		if out.News == nil {
			out.News = []ClaimEnd{}
		}
		return err
	})
	return out, err
}

// visibleClaims are the live claims p sees, by resource.
func (t *tx) visibleClaims(p party, team bool) ([]Claim, error) {
	rows, err := t.claimRows(`WHERE c.ended_at IS NULL AND c.expires_at > ?2 AND `+visibleTo+` ORDER BY c.kind, coalesce(o.name, ''), c.pattern, c.claimed_at`, p.id, t.now)
	if err != nil {
		return nil, err
	}
	out := []Claim{}
	for _, c := range rows {
		out = append(out, c.view(team))
	}
	return out, nil
}

// inboxClaims are the live claims p holds and those it waits for, each
// list by resource; none is nil.
func (t *tx) inboxClaims(p party, team bool) (held, awaited []Claim, err error) {
	const live = `c.ended_at IS NULL AND c.expires_at > ?2`
	// Both lists are bounded where they are made (maxClaimsHeld, maxWaits);
	// a hand-over may pass one more, which the limit leaves out.
	order := ` ORDER BY c.kind, coalesce(o.name, ''), c.pattern, c.claimed_at LIMIT ` + strconv.Itoa(max(maxClaimsHeld, maxWaits))
	mine, err := t.claimRows(`WHERE c.holder_id = ?1 AND `+live+order, p.id, t.now)
	if err != nil {
		return nil, nil, err
	}
	// Only while p still sees the holder: a party that left every channel
	// it shared with the holder sees nothing of its claims (visibleTo).
	theirs, err := t.claimRows(`WHERE c.id IN (SELECT claim_id FROM claim_waiters WHERE party_id = ?1) AND c.holder_id <> ?1 AND `+live+` AND `+visibleTo+order, p.id, t.now)
	if err != nil {
		return nil, nil, err
	}
	for _, c := range mine {
		held = append(held, c.view(team))
	}
	for _, c := range theirs {
		awaited = append(awaited, c.view(team))
	}
	return held, awaited, nil
}

// ForceReleased is what `claims release --force` ended.
type ForceReleased struct {
	Resource string
	Holder   string
	Reason   string
	Until    string
	Waiting  []string
}

// ForceRelease is the person's: it ends every live claim on resource,
// whoever holds it. A path names its repository's party first
// (path:node-dash/proto/**), as claims are listed. Nothing live on it is
// refused, naming the claims that overlap it.
func (d *DB) ForceRelease(ctx context.Context, raw string) ([]ForceReleased, error) {
	var out []ForceReleased
	res, err := parseResource(raw)
	if err != nil {
		return nil, err
	}
	err = d.exclusive(ctx, func(t *tx) error {
		out = nil
		want := claimRow{kind: res.kind, pattern: res.pattern}
		if res.kind == "path" {
			first, rest, _ := strings.Cut(res.pattern, "/")
			if err := t.row(`SELECT id, name FROM parties WHERE name = ?`, first).Scan(&want.ownerID, &want.owner); errors.Is(err, sql.ErrNoRows) {
				return userErrorf("%q names no party first — a path claim is written party/pattern, as `mcpp-chat claims` lists it", raw)
			} else if err != nil {
				return err
			}
			want.pattern = cmpOr(rest, "**")
		}
		ended, err := t.endClaims(endFreed, 0, `c.kind = ?2 AND coalesce(c.owner_id, 0) = ?3 AND c.pattern = ?4`, want.kind, want.ownerID, want.pattern)
		if err != nil {
			return err
		}
		if len(ended) == 0 {
			return t.nothingToFree(want)
		}
		for _, c := range ended {
			waiting, err := t.names(`SELECT p.name FROM claim_waiters w JOIN parties p ON p.id = w.party_id WHERE w.claim_id = ? ORDER BY p.name`, c.id)
			if err != nil {
				return err
			}
			out = append(out, ForceReleased{Resource: c.resource(), Holder: c.holder, Reason: c.reason, Until: c.expiresAt, Waiting: waiting})
		}
		return nil
	})
	return out, err
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// nothingToFree refuses a force release that ends nothing, naming the
// live claims that overlap what was asked.
func (t *tx) nothingToFree(want claimRow) error {
	live, err := t.claimRows(`WHERE c.ended_at IS NULL AND c.expires_at > ?1 AND c.kind = ?2 ORDER BY c.claimed_at`, t.now, want.kind)
	if err != nil {
		return err
	}
	var near []string
	for _, c := range live {
		if want.overlaps(c) {
			near = append(near, fmt.Sprintf("%s (held by %s)", c.resource(), c.holder))
		}
	}
	if len(near) == 0 {
		return userErrorf("no live claim on %s — `mcpp-chat claims` lists what is claimed", want.resource())
	}
	return userErrorf("no live claim on %s exactly — the claims that overlap it are %s; free one of them by its resource", want.resource(), strings.Join(near, ", "))
}

// AllClaims lists every live claim, whoever holds it, for the person
// (`mcpp-chat claims`, log, the page, doctor).
func (r *ReadOnly) AllClaims(ctx context.Context) ([]Claim, error) {
	var out []Claim
	err := r.view(ctx, func(t *tx) error {
		rows, err := t.claimRows(`WHERE c.ended_at IS NULL AND c.expires_at > ?1 ORDER BY c.kind, coalesce(o.name, ''), c.pattern, c.claimed_at`, t.now)
		out = make([]Claim, 0, len(rows))
		for _, c := range rows {
			out = append(out, c.view(false))
		}
		return err
	})
	return out, err
}

// EditClaims are the claims that stop an edit by the party id: the live,
// exclusive path claims of the parties it shares a channel with. An
// unknown party sits in no channel: nothing stops it.
func (r *ReadOnly) EditClaims(ctx context.Context, id Identity) ([]Claim, error) {
	var out []Claim
	err := r.view(ctx, func(t *tx) error {
		p, err := t.existingParty(id)
		if errors.Is(err, ErrUnknownParty) {
			return nil
		}
		if err != nil {
			return err
		}
		rows, err := t.claimRows(`WHERE c.kind = 'path' AND c.exclusive = 1 AND c.ended_at IS NULL AND c.expires_at > ?2
			AND c.holder_id <> ?1 AND `+visibleTo+` ORDER BY c.claimed_at`, p.id, t.now)
		for _, c := range rows {
			out = append(out, c.view(id.Team))
		}
		return err
	})
	return out, err
}

// pendingClaims adds to what waits on p the claims it sees and those that
// ended and concern it: what the hook tells and checks an edit against.
func (t *tx) pendingClaims(p party, team bool, out *Pending) error {
	var err error
	if out.Claims, err = t.visibleClaims(p, team); err != nil {
		return err
	}
	out.ClaimNews, err = t.claimNews(p)
	return err
}

// ClaimsOf is what chat_claims answers the party id, read without
// writing: for the person (doctor) and a hub's /v1/claims. An unknown
// party sees nothing.
func (r *ReadOnly) ClaimsOf(ctx context.Context, id Identity) (ClaimList, error) {
	out := ClaimList{Me: id.Name, Claims: []Claim{}, News: []ClaimEnd{}}
	err := r.view(ctx, func(t *tx) error {
		p, err := t.existingParty(id)
		if errors.Is(err, ErrUnknownParty) {
			return nil
		}
		if err != nil {
			return err
		}
		out.Me = p.name
		if out.Claims, err = t.visibleClaims(p, id.Team); err != nil {
			return err
		}
		news, err := t.claimNews(p)
		if news != nil {
			out.News = news
		}
		return err
	})
	return out, err
}

package store

import (
	"context"
	"fmt"
	"time"

	"github.com/mcpp/mcpp-chat/internal/store/engine"
)

// HandOver is a claim a reply handed to the party it answers.
type HandOver struct {
	Resource string `json:"resource"`
	To       string `json:"to"`
	Until    string `json:"until"`
}

// ReplyHandingOver is Reply that also hands the caller's claim on
// resource to the author of what it answers, in the same transaction: the
// claim is never free between the two, and whoever waited for it waits on.
// The new holder's claim lasts as the old one did, from now.
func (d *DB) ReplyHandingOver(ctx context.Context, me Identity, a ReplyArgs, resource string, maxLifetime time.Duration) (ReplyResult, HandOver, error) {
	var out ReplyResult
	var handed HandOver
	res, err := parseResource(resource)
	if err != nil {
		return out, handed, err
	}
	err = d.update(ctx, func(t *tx) error {
		p, err := t.me(me, true)
		if err != nil {
			return err
		}
		if out, err = t.reply(p, a); err != nil {
			return err
		}
		handed, err = t.handOver(p, out, res, maxLifetime)
		return err
	})
	return out, handed, err
}

// handOver moves p's claim on res to the author of what the reply r
// answers, and posts the change in the reply's channel.
func (t *tx) handOver(p party, r ReplyResult, res resource, maxLifetime time.Duration) (HandOver, error) {
	if r.to == p.id {
		return HandOver{}, userErrorf("you answer a message of your own — hand_over gives a claim to the party you reply to; reply to one of its messages")
	}
	want, err := t.claimOwner(p, res)
	if err != nil {
		return HandOver{}, err
	}
	if _, err := t.lockName(engine.Claims, want.kind); err != nil {
		return HandOver{}, err
	}
	mine, err := t.claimRows(`WHERE c.holder_id = ?1 AND c.kind = ?2 AND coalesce(c.owner_id, 0) = ?3 AND c.pattern = ?4
		AND c.ended_at IS NULL AND c.expires_at > ?5`, p.id, want.kind, want.ownerID, want.pattern, t.now)
	if err != nil {
		return HandOver{}, err
	}
	if len(mine) == 0 {
		return HandOver{}, userErrorf("you hold no claim on %s — hand over what you claimed as chat_claims lists it, or leave hand_over out", want.resource())
	}
	c := mine[0]
	var to party
	if err := t.row(`SELECT id, name FROM parties WHERE id = ?`, r.to).Scan(&to.id, &to.name); err != nil {
		return HandOver{}, err
	}
	if _, err := t.exec(`UPDATE claims SET ended_at = ?, ended_how = ?, ended_by = ? WHERE id = ?`, t.now, endHanded, p.id, c.id); err != nil {
		return HandOver{}, err
	}
	renewUntil := addTime(t.now, maxLifetime)
	until := min(addTime(t.now, time.Duration(c.ttl)*time.Second), renewUntil)
	var owner, item any
	if c.ownerID != 0 {
		owner = c.ownerID
	}
	if c.itemID != 0 {
		item = c.itemID
	}
	var id int64
	if err := t.insert(&id, `INSERT INTO claims (kind, owner_id, pattern, holder_id, exclusive, reason, item_id, ttl_seconds, claimed_at, expires_at, renew_until)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id`,
		c.kind, owner, c.pattern, to.id, boolInt(c.exclusive), c.reason, item, c.ttl, t.now, until, renewUntil); err != nil {
		return HandOver{}, err
	}
	if _, err := t.exec(`UPDATE claim_waiters SET claim_id = ? WHERE claim_id = ? AND party_id <> ?`, id, c.id, to.id); err != nil {
		return HandOver{}, err
	}
	if _, err := t.exec(`DELETE FROM claim_waiters WHERE claim_id = ?`, c.id); err != nil {
		return HandOver{}, err
	}
	ch := channel{id: r.channelID, name: r.Channel}
	if _, _, err := t.post(ch, p, post{kind: "event", body: fmt.Sprintf("[%s] claim handed by %s to %s", c.resource(), p.name, to.name)}); err != nil {
		return HandOver{}, err
	}
	for _, q := range []party{p, to} {
		if err := t.claimsChanged(q); err != nil {
			return HandOver{}, err
		}
	}
	if c.kind == "path" {
		if err := t.markPathClaims(); err != nil {
			return HandOver{}, err
		}
	}
	return HandOver{Resource: c.resource(), To: to.name, Until: until}, nil
}

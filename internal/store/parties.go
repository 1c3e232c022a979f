package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
	"unicode/utf8"

	"github.com/mcpp/mcpp-chat/internal/store/engine"
)

// Identity is who makes a call: the party's folder-derived name and its
// root folder (the true key), as resolved by package config.
type Identity struct {
	Name      string
	Workspace string
	OSUser    string
	// Team marks a caller a team hub vouches for: its token is bound to
	// the party named Name, which is then the key (the same repository
	// has other paths on other machines). Workspace is only recorded
	// when the party is new.
	Team bool
}

// check refuses an identity whose text is not UTF-8. PostgreSQL cannot
// store such text, and SQLite keeps to the same rule, so that a folder
// works on both engines or on neither: a replacement character would
// make folders that differ only in those bytes one party, and record a
// path that names no folder. Refused, nothing is written and nothing lost.
func (id Identity) check() error {
	switch {
	case !utf8.ValidString(id.Workspace):
		return userErrorf("the folder %q is not UTF-8 text, which the chat cannot store — rename it to a UTF-8 name and start the session there (mcpp-chat parties move gives a party that lived at the old one its new folder)", id.Workspace)
	case !utf8.ValidString(id.OSUser):
		return userErrorf("the user name %q (USER or USERNAME) is not UTF-8 text, which the chat cannot store — set USER to a UTF-8 name for the session", id.OSUser)
	case !utf8.ValidString(id.Name):
		return userErrorf("the party name %q is not UTF-8 text, which the chat cannot store — give a UTF-8 name (lowercase letters, digits and . _ ~ -)", id.Name)
	}
	return nil
}

// who is the identity as an engine tells parties apart.
func (id Identity) who() engine.Who {
	return engine.Who{Name: id.Name, Workspace: id.Workspace, Team: id.Team}
}

// TeamWorkspace is what a team party made by a hub records as its
// workspace: no path of the hub's machine is the party's.
func TeamWorkspace(name string) string { return "team:" + name }

// party is a row of the parties table.
type party struct {
	id   int64
	name string
	// lastSeen is the party's last_seen as me left it.
	lastSeen string
}

// lastSeenEvery bounds how often a read-only call writes last_seen, so that
// reading stays free of the write lock.
const lastSeenEvery = time.Minute

// me upserts the caller's party. A new root gets its folder name, or name~2,
// name~3, ... when another root already has it; a party's name never changes
// afterwards.
func (t *tx) me(id Identity, writing bool) (party, error) {
	if err := id.check(); err != nil {
		return party{}, err
	}
	var p party
	by, key := id.who().Key()
	err := t.row(`SELECT id, name, last_seen FROM parties WHERE `+by+` = ?`, key).Scan(&p.id, &p.name, &p.lastSeen)
	if errors.Is(err, sql.ErrNoRows) {
		// Two first calls of one party beside each other: the second
		// finds the first's party once it has the name's turn.
		fresh, err := t.lockName(engine.NewParty, id.Name)
		switch {
		case err != nil:
			return party{}, err
		case fresh:
			return t.me(id, writing)
		}
		return t.newParty(id)
	}
	if err != nil {
		return party{}, err
	}
	if writing || stale(p.lastSeen, t.now) {
		if err := t.seen(p); err != nil {
			return party{}, err
		}
		p.lastSeen = t.now
		// A party at work keeps what it claimed (claims.go).
		if err := t.renewClaims(p); err != nil {
			return party{}, err
		}
	}
	return p, nil
}

// meKnown is me, without looking the party up again when the call found
// its row a moment ago (known; a party's id and name never change) and
// has no last_seen to write.
func (t *tx) meKnown(id Identity, writing bool, known party) (party, error) {
	if known.id != 0 && !writing && !stale(known.lastSeen, t.now) {
		return known, nil
	}
	return t.me(id, writing)
}

// seen writes the party's last_seen, unless another call of the party is
// writing it right now (engine.Tx.SeenParty): a party's calls never queue
// behind each other for a time stamp.
func (t *tx) seen(p party) error { return t.et.SeenParty(p.id, t.now) }

func stale(lastSeen, now string) bool {
	seen, err1 := time.Parse(time.RFC3339Nano, lastSeen)
	cur, err2 := time.Parse(time.RFC3339Nano, now)
	return err1 != nil || err2 != nil || cur.Sub(seen) >= lastSeenEvery
}

func (t *tx) newParty(id Identity) (party, error) {
	if _, err := t.lockName(engine.NewParty, id.Name); err != nil {
		return party{}, err
	}
	name, err := t.freeName(id.Name)
	if err != nil {
		return party{}, err
	}
	if id.Team {
		name = id.Name // me found no party of that name
		if id.Workspace == "" {
			id.Workspace = TeamWorkspace(name)
		}
	}
	var pid int64
	err = t.insert(&pid, `INSERT INTO parties (name, workspace_path, os_user, about, first_seen, last_seen)
		VALUES (?, ?, ?, NULL, ?, ?) RETURNING id`, name, id.Workspace, nullable(id.OSUser), t.now, t.now)
	return party{id: pid, name: name}, err
}

// freeName is base, or base~2, base~3, ...: the first no party has.
func (t *tx) freeName(base string) (string, error) {
	name := base
	for n := 2; ; n++ {
		var taken int
		if err := t.row(`SELECT count(*) FROM parties WHERE name = ?`, name).Scan(&taken); err != nil {
			return "", err
		}
		if taken == 0 {
			return name, nil
		}
		name = fmt.Sprintf("%s~%d", base, n)
	}
}

// partyByName finds an existing party; the error tells how a party comes
// to exist, for a caller on a team hub (team) too, where a path names no
// party.
func (t *tx) partyByName(name string, team bool) (party, error) {
	p := party{name: name}
	err := t.row(`SELECT id FROM parties WHERE name = ?`, name).Scan(&p.id)
	switch {
	case !errors.Is(err, sql.ErrNoRows):
		return p, err
	case team:
		return p, userErrorf("no party named '%s' — on a team hub a party exists once a session with its token has called any chat tool; check the names in chat_whoami, or ask that party's session to call one first", name)
	}
	return p, userErrorf("no party named '%s' — a party exists once a session in its repo has called any chat tool; check the names in chat_whoami, or give the absolute path of its repository instead", name)
}

// PartyInfo is a known party as chat_whoami lists it.
type PartyInfo struct {
	Name      string  `json:"name"`
	Workspace string  `json:"workspace"`
	About     *string `json:"about"`
	LastSeen  string  `json:"last_seen"`
}

// knownParties lists every party. For a member of a team hub (team) each
// party's workspace is its name as a hub records it (TeamWorkspace): on a
// hub a party is its name, and the folder a party was made in is a path
// of another machine, which is none of the member's business.
func (t *tx) knownParties(team bool) ([]PartyInfo, error) {
	rows, err := t.query(`SELECT name, workspace_path, about, last_seen FROM parties ORDER BY name`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []PartyInfo{}
	for rows.Next() {
		var p PartyInfo
		var about sql.NullString
		if err := rows.Scan(&p.Name, &p.Workspace, &about, &p.LastSeen); err != nil {
			return nil, err
		}
		if about.Valid && about.String != "" {
			p.About = &about.String
		}
		if team {
			p.Workspace = TeamWorkspace(p.Name)
		}
		out = append(out, p)
	}
	return out, rows.Err()
}

// PartyName resolves the name a root has without writing; known is false
// for a root the chat has not seen yet (its name is then the one it asks
// for, which may still get a ~2 at first sight).
func (d *DB) PartyName(ctx context.Context, id Identity) (name string, known bool, err error) {
	if err := id.check(); err != nil {
		return "", false, err
	}
	err = d.read(ctx, func(t *tx) error {
		return t.row(`SELECT name FROM parties WHERE workspace_path = ?`, id.Workspace).Scan(&name)
	})
	if errors.Is(err, sql.ErrNoRows) {
		return id.Name, false, nil
	}
	return name, err == nil, err
}

func nullable(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// NameFor is the name a root has on the chat or, for a root not seen yet,
// the name its first call would give it (name~2 when another root has the
// name), without writing: a party exists from its first tool call, and a
// server names it before that.
func (d *DB) NameFor(ctx context.Context, id Identity) (string, error) {
	var name string
	if id.Team {
		return id.Name, nil
	}
	if err := id.check(); err != nil {
		return "", err
	}
	err := d.view(ctx, func(t *tx) error {
		err := t.row(`SELECT name FROM parties WHERE workspace_path = ?`, id.Workspace).Scan(&name)
		if errors.Is(err, sql.ErrNoRows) {
			name, err = t.freeName(id.Name)
		}
		return err
	})
	return name, err
}

// Register upserts the caller's party and returns its name (tests set up
// parties with it).
func (d *DB) Register(ctx context.Context, id Identity) (string, error) {
	var name string
	err := d.update(ctx, func(t *tx) error {
		p, err := t.me(id, true)
		name = p.name
		return err
	})
	return name, err
}

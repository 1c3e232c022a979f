package store

import (
	"context"
	"database/sql"
	"errors"
	"strings"

	"github.com/mcpp/mcpp-chat/internal/store/engine"
)

// ChannelName trims and lowercases a channel name and checks it against
// the protocol's ^[a-z0-9][a-z0-9._~-]{0,63}$ (docs/protocol.md), which
// the Python edition enforces too.
func ChannelName(raw string) (string, error) {
	name := strings.ToLower(strings.TrimSpace(raw))
	if !validChannelName(name) {
		return "", userErrorf("channel name %q is not valid — use 1 to %d lowercase letters, digits and . _ ~ - starting with a letter or digit, e.g. gw--dash", raw, maxChannelName)
	}
	return name, nil
}

// maxChannelName is the longest channel name, in bytes (all ASCII).
const maxChannelName = 64

// validChannelName is the check by hand: compiled, that regular expression
// costs every process (the hook too) most of a millisecond at start-up.
func validChannelName(name string) bool {
	if len(name) == 0 || len(name) > maxChannelName {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch {
		case 'a' <= c && c <= 'z', '0' <= c && c <= '9':
		case i > 0 && (c == '.' || c == '_' || c == '~' || c == '-'):
		default:
			return false
		}
	}
	return true
}

// channel is a row of the channels table.
type channel struct {
	id   int64
	name string
}

// lookupChannel finds a channel by a name the caller gave: sql.ErrNoRows
// when there is none, for the caller to word.
func (t *tx) lookupChannel(raw string) (channel, error) {
	name, err := ChannelName(raw)
	if err != nil {
		return channel{}, err
	}
	c := channel{name: name}
	return c, t.row(`SELECT id FROM channels WHERE name = ?`, name).Scan(&c.id)
}

// channelByName finds a channel the caller named; a call that writes holds
// its lock from then on (a channel is never renamed or removed by a tool,
// so what was found stays true).
func (t *tx) channelByName(raw string) (channel, error) {
	c, err := t.lookupChannel(raw)
	if errors.Is(err, sql.ErrNoRows) {
		return c, userErrorf("no channel named '%s' — create it with chat_channel_new or pick one from chat_channel_list(all=true)", c.name)
	}
	if err != nil {
		return c, err
	}
	_, err = t.lockChannel(c.id)
	return c, err
}

func (t *tx) seated(channelID, partyID int64) (bool, error) {
	var n int
	err := t.row(`SELECT count(*) FROM channel_parties WHERE channel_id = ? AND party_id = ? AND left_at IS NULL`, channelID, partyID).Scan(&n)
	return n > 0, err
}

// seats lists the channels a party sits in, by name.
func (t *tx) seats(partyID int64) ([]channel, error) {
	rows, err := t.query(`SELECT c.id, c.name FROM channel_parties cp JOIN channels c ON c.id = cp.channel_id
		WHERE cp.party_id = ? AND cp.left_at IS NULL ORDER BY c.name`, partyID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []channel
	for rows.Next() {
		var c channel
		if err := rows.Scan(&c.id, &c.name); err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, rows.Err()
}

// seatedChannel applies the channel choice rule: an explicit channel must
// exist and hold your seat; none means your single channel, else the
// default channel if you sit there.
func (t *tx) seatedChannel(p party, explicit, fallback string) (channel, error) {
	if strings.TrimSpace(explicit) != "" {
		c, err := t.channelByName(explicit)
		if err != nil {
			return c, err
		}
		ok, err := t.seated(c.id, p.id)
		if err != nil {
			return c, err
		}
		if !ok {
			return c, userErrorf("you are not in '%s' — join it with chat_channel_join first", c.name)
		}
		return c, nil
	}
	mine, err := t.seats(p.id)
	if err != nil {
		return channel{}, err
	}
	switch {
	case len(mine) == 1:
		return t.stillSeated(p, mine[0], explicit, fallback)
	case len(mine) == 0:
		return channel{}, userErrorf("you are not in any channel — create one with chat_channel_new or join one with chat_channel_join")
	}
	names := make([]string, len(mine))
	for i, c := range mine {
		if c.name == fallback {
			return t.stillSeated(p, c, explicit, fallback)
		}
		names[i] = c.name
	}
	return channel{}, userErrorf("you are in several channels — pass channel=<one of: %s>", quoteList(names))
}

// stillSeated locks the channel the rule chose for a call that writes in
// it, and chooses again if the party left it before the lock was had.
func (t *tx) stillSeated(p party, c channel, explicit, fallback string) (channel, error) {
	fresh, err := t.lockChannel(c.id)
	if err != nil || !fresh {
		return c, err
	}
	if ok, err := t.seated(c.id, p.id); err != nil || ok {
		return c, err
	}
	return t.seatedChannel(p, explicit, fallback)
}

// seatUnread is a channel a party sits in, with the party's unread count.
type seatUnread struct {
	channel
	unread int
}

// seatsWithUnread lists the channels a party sits in, by name, each with
// its unread count, in one query.
func (t *tx) seatsWithUnread(partyID int64) ([]seatUnread, error) {
	rows, err := t.query(`SELECT c.id, c.name, (SELECT count(*) FROM messages m
			WHERE m.channel_id = c.id AND m.is_archived = 0 AND m.author_id <> ?1
			  AND m.seq > coalesce((SELECT last_seq FROM cursors WHERE channel_id = c.id AND party_id = ?1), 0))
		FROM channel_parties cp JOIN channels c ON c.id = cp.channel_id
		WHERE cp.party_id = ?1 AND cp.left_at IS NULL ORDER BY c.name`, partyID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []seatUnread
	for rows.Next() {
		var s seatUnread
		if err := rows.Scan(&s.id, &s.name, &s.unread); err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, rows.Err()
}

// seatedNamesByChannel lists the parties seated in each channel, by name,
// in one query: of the channels partyID sits in, or of every channel when
// partyID is 0.
func (t *tx) seatedNamesByChannel(partyID int64) (map[int64][]string, error) {
	rows, err := t.query(`SELECT cp.channel_id, p.name FROM channel_parties cp JOIN parties p ON p.id = cp.party_id
		WHERE cp.left_at IS NULL AND (?1 = 0 OR cp.channel_id IN (SELECT channel_id FROM channel_parties WHERE party_id = ?1 AND left_at IS NULL))
		ORDER BY cp.channel_id, p.name`, partyID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[int64][]string{}
	for rows.Next() {
		var id int64
		var name string
		if err := rows.Scan(&id, &name); err != nil {
			return nil, err
		}
		out[id] = append(out[id], name)
	}
	return out, rows.Err()
}

// seatedNames lists the parties seated in a channel, by name.
func (t *tx) seatedNames(channelID int64) ([]string, error) {
	return t.names(`SELECT p.name FROM channel_parties cp JOIN parties p ON p.id = cp.party_id
		WHERE cp.channel_id = ? AND cp.left_at IS NULL ORDER BY p.name`, channelID)
}

func (t *tx) names(query string, args ...any) ([]string, error) {
	rows, err := t.query(query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []string{}
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, rows.Err()
}

// ChannelInfo is a channel as the channel tools report it.
type ChannelInfo struct {
	Channel   string   `json:"channel"`
	About     *string  `json:"about"`
	Closed    bool     `json:"closed"`
	CreatedAt string   `json:"created_at"`
	LiveItems int      `json:"live_items"`
	Member    bool     `json:"member"`
	Parties   []string `json:"parties"`
	Unread    int      `json:"unread"`
	// Attention is the caller's attention there, in the answer of a join
	// that set it; left out otherwise.
	Attention string `json:"attention,omitempty"`
}

// channelInfos reports every channel (or only the caller's seats; or only
// channel only, when it is not 0), by name, in two queries: the channels
// with their counts, and who sits where.
func (t *tx) channelInfos(p party, all bool, only int64) ([]ChannelInfo, error) {
	member := `EXISTS (SELECT 1 FROM channel_parties cp WHERE cp.channel_id = c.id AND cp.party_id = ?1 AND cp.left_at IS NULL)`
	rows, err := t.query(`
		SELECT c.id, c.name, c.about, c.is_closed, c.created_at, `+member+`,
		       (SELECT count(*) FROM messages m WHERE m.channel_id = c.id AND m.kind = 'ask' AND m.is_archived = 0),
		       (SELECT count(*) FROM messages m WHERE m.channel_id = c.id AND m.is_archived = 0 AND m.author_id <> ?1
		          AND m.seq > coalesce((SELECT last_seq FROM cursors WHERE channel_id = c.id AND party_id = ?1), 0))
		FROM channels c WHERE (?3 = 0 OR c.id = ?3) AND (?2 = 1 OR `+member+`) ORDER BY c.name`, p.id, all, only)
	if err != nil {
		return nil, err
	}
	ids := []int64{}
	out := []ChannelInfo{}
	for rows.Next() {
		var id int64
		var info ChannelInfo
		var about sql.NullString
		if err := rows.Scan(&id, &info.Channel, &about, &info.Closed, &info.CreatedAt, &info.Member, &info.LiveItems, &info.Unread); err != nil {
			rows.Close()
			return nil, err
		}
		if about.Valid && about.String != "" {
			info.About = &about.String
		}
		ids = append(ids, id)
		out = append(out, info)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	var names map[int64][]string
	if all {
		names, err = t.seatedNamesByChannel(0)
	} else {
		names, err = t.seatedNamesByChannel(p.id)
	}
	if err != nil {
		return nil, err
	}
	for i, id := range ids {
		if out[i].Parties = names[id]; out[i].Parties == nil {
			out[i].Parties = []string{}
		}
	}
	return out, nil
}

func (t *tx) cursor(channelID, partyID int64) (int64, error) {
	var seq int64
	err := t.row(`SELECT coalesce((SELECT last_seq FROM cursors WHERE channel_id = ? AND party_id = ?), 0)`, channelID, partyID).Scan(&seq)
	return seq, err
}

// advanceCursor moves a cursor forward, never backwards, and records when
// it moved (the read times, schema version 8).
func (t *tx) advanceCursor(channelID, partyID, seq int64) error {
	t.clock(-partyID)
	res, err := t.exec(`INSERT INTO cursors (channel_id, party_id, last_seq, updated_at) VALUES (?1, ?2, ?3, ?4)
		ON CONFLICT (channel_id, party_id) DO UPDATE SET last_seq = excluded.last_seq, updated_at = excluded.updated_at
		WHERE excluded.last_seq > cursors.last_seq`, channelID, partyID, seq, t.now)
	if err != nil {
		return err
	}
	if n, err := res.RowsAffected(); err != nil || n == 0 || seq <= 0 {
		return err
	}
	_, err = t.exec(`INSERT INTO reads (channel_id, party_id, upto_seq, read_at) VALUES (?, ?, ?, ?)
		ON CONFLICT (channel_id, party_id, upto_seq) DO NOTHING`, channelID, partyID, seq, t.now)
	return err
}

func (t *tx) channelInfo(p party, c channel) (ChannelInfo, error) {
	infos, err := t.channelInfos(p, true, c.id)
	if err != nil {
		return ChannelInfo{}, err
	}
	if len(infos) != 1 {
		return ChannelInfo{}, errors.New("channel vanished inside its own transaction")
	}
	return infos[0], nil
}

// ChannelList is chat_channel_list's result.
type ChannelList struct {
	Channels []ChannelInfo `json:"channels"`
}

// ChannelList lists the caller's channels, or every channel with all.
func (d *DB) ChannelList(ctx context.Context, me Identity, all bool) (ChannelList, error) {
	var out ChannelList
	err := d.view(ctx, func(t *tx) error {
		p, err := t.me(me, false)
		if err != nil {
			return err
		}
		out.Channels, err = t.channelInfos(p, all, 0)
		return err
	})
	return out, err
}

// ChannelNew creates a channel seating the caller and the named parties.
func (d *DB) ChannelNew(ctx context.Context, me Identity, name, about string, parties []string) (ChannelInfo, error) {
	refs := make([]PartyRef, len(parties))
	for i, n := range parties {
		refs[i] = PartyRef{Name: n}
	}
	return d.ChannelNewWith(ctx, me, name, about, refs)
}

// PartyRef names a party to seat: by its name, or by its repository.
type PartyRef struct {
	Name string
	// Folder, when set, is a repository as identity resolves it (its root
	// and the name it asks for): the party living there is seated.
	Folder *Identity
	// MayCreate lets a Folder no party lives at yet get its party now, the
	// one a session there gets at its first call.
	MayCreate bool
}

// partyOf finds the party a reference names, for a caller on a team hub
// when team.
func (t *tx) partyOf(r PartyRef, team bool) (party, error) {
	if r.Folder == nil {
		return t.partyByName(strings.TrimSpace(r.Name), team)
	}
	if err := r.Folder.check(); err != nil {
		return party{}, err
	}
	var p party
	err := t.row(`SELECT id, name FROM parties WHERE workspace_path = ?`, r.Folder.Workspace).Scan(&p.id, &p.name)
	switch {
	case !errors.Is(err, sql.ErrNoRows):
		return p, err
	case !r.MayCreate:
		return p, userErrorf("no party lives at %s and there is no such folder on this host — give the folder a peer's session runs in, or a party's name from chat_whoami", r.Folder.Workspace)
	}
	return t.newParty(*r.Folder)
}

// ChannelNewWith creates a channel seating the caller and the parties the
// references name.
func (d *DB) ChannelNewWith(ctx context.Context, me Identity, name, about string, parties []PartyRef) (ChannelInfo, error) {
	var out ChannelInfo
	err := d.update(ctx, func(t *tx) error {
		p, err := t.me(me, true)
		if err != nil {
			return err
		}
		clean, err := ChannelName(name)
		if err != nil {
			return err
		}
		if _, err := t.lockName(engine.ChannelName, clean); err != nil {
			return err
		}
		var exists int
		if err := t.row(`SELECT count(*) FROM channels WHERE name = ?`, clean).Scan(&exists); err != nil {
			return err
		}
		if exists > 0 {
			return userErrorf("channel '%s' already exists — join it with chat_channel_join(name=%q)", clean, clean)
		}
		seat := []party{p}
		for _, r := range parties {
			q, err := t.partyOf(r, me.Team)
			if err != nil {
				return err
			}
			if q.id != p.id {
				seat = append(seat, q)
			}
		}
		c := channel{name: clean}
		if err := t.insert(&c.id, `INSERT INTO channels (name, about, created_by, created_at) VALUES (?, ?, ?, ?) RETURNING id`,
			clean, nullable(strings.TrimSpace(about)), p.id, t.now); err != nil {
			return err
		}
		t.clock(c.id)
		for _, q := range seat {
			if _, err := t.exec(`INSERT INTO channel_parties (channel_id, party_id, joined_at) VALUES (?, ?, ?) ON CONFLICT DO NOTHING`, c.id, q.id, t.now); err != nil {
				return err
			}
			t.wake(-q.id)
		}
		t.touch(c.name, 0, p.name)
		out, err = t.channelInfo(p, c)
		return err
	})
	return out, err
}

// ChannelJoin (re)seats the caller and posts a join event.
func (d *DB) ChannelJoin(ctx context.Context, me Identity, name string) (ChannelInfo, error) {
	return d.ChannelJoinWith(ctx, me, name, "")
}

// ChannelJoinWith is ChannelJoin that also sets the caller's attention in
// the channel, when mode is given ("all" or "mentions"); a party already
// seated only sets it.
func (d *DB) ChannelJoinWith(ctx context.Context, me Identity, name, mode string) (ChannelInfo, error) {
	if strings.TrimSpace(mode) != "" {
		var err error
		if mode, err = AttentionMode(mode); err != nil {
			return ChannelInfo{}, err
		}
	}
	var out ChannelInfo
	err := d.update(ctx, func(t *tx) error {
		p, err := t.me(me, true)
		if err != nil {
			return err
		}
		c, err := t.channelByName(name)
		if err != nil {
			return err
		}
		already, err := t.seated(c.id, p.id)
		if err != nil {
			return err
		}
		if !already {
			if _, err := t.exec(`INSERT INTO channel_parties (channel_id, party_id, joined_at) VALUES (?1, ?2, ?3)
				ON CONFLICT (channel_id, party_id) DO UPDATE SET joined_at = ?3, left_at = NULL`, c.id, p.id, t.now); err != nil {
				return err
			}
			t.wake(-p.id) // the party's other sessions' waits

			if _, _, err := t.post(c, p, post{kind: "event", body: p.name + " joined the channel"}); err != nil {
				return err
			}
		}
		if mode != "" {
			if err := t.setAttention(c, p, mode); err != nil {
				return err
			}
		}
		if out, err = t.channelInfo(p, c); err != nil {
			return err
		}
		out.Attention = mode
		return nil
	})
	return out, err
}

// LeaveResult is chat_channel_leave's result.
type LeaveResult struct {
	Channel string `json:"channel"`
	Left    bool   `json:"left"`
}

// ChannelLeave unseats the caller; item obligations stay.
func (d *DB) ChannelLeave(ctx context.Context, me Identity, name string) (LeaveResult, error) {
	var out LeaveResult
	err := d.update(ctx, func(t *tx) error {
		p, err := t.me(me, true)
		if err != nil {
			return err
		}
		c, err := t.channelByName(name)
		if err != nil {
			return err
		}
		ok, err := t.seated(c.id, p.id)
		if err != nil {
			return err
		}
		if !ok {
			return userErrorf("you are not in '%s' — there is no seat to leave (see chat_channel_list)", c.name)
		}
		if _, err := t.exec(`UPDATE channel_parties SET left_at = ? WHERE channel_id = ? AND party_id = ?`, t.now, c.id, p.id); err != nil {
			return err
		}
		if _, _, err := t.post(c, p, post{kind: "event", body: p.name + " left the channel (existing item obligations remain)"}); err != nil {
			return err
		}
		out = LeaveResult{Channel: c.name, Left: true}
		return nil
	})
	return out, err
}

package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"slices"
	"time"
)

// Delivery states (docs/protocol.md): a message is written; told, once
// our hook or wake put it into a party's session; read, once the party's
// cursor passed it (receipts.go); an item is then acked and resolved.
// "Told" is recorded only from the hook's own journal of output that
// reached its client (internal/told): the hook never writes the chat, so
// the party's serve folds that journal in with RecordTold.

// The events that tell a session, as the hook names them.
const (
	ViaSessionStart     = "SessionStart"
	ViaUserPromptSubmit = "UserPromptSubmit"
	ViaStop             = "Stop"
	ViaWake             = "wake"
)

// MaxTellings bounds the tellings one RecordTold takes.
const MaxTellings = 500

// Telling is one message the hook put into a party's session: the
// message, when the output holding it reached the client, and the event.
type Telling struct {
	Channel string `json:"channel"`
	Seq     int64  `json:"seq"`
	At      string `json:"at"`
	Via     string `json:"via"`
}

// Told is when and by which event a party was first told of a message.
type Told struct {
	At  string `json:"at"`
	Via string `json:"via"`
}

// RecordTold records that party me was told of the messages list names.
// The first telling of a message to a party is kept; a telling of a
// message that is not there (archived and gone, or never written), of
// one me wrote, in a channel me never sat in, or by an unknown event is
// dropped, as is one of a party that does not exist. It reports how many
// tellings were new.
func (d *DB) RecordTold(ctx context.Context, me Identity, list []Telling) (int, error) {
	if len(list) > MaxTellings {
		list = list[:MaxTellings]
	}
	var added int
	err := d.update(ctx, func(t *tx) error {
		added = 0
		p, err := t.existingParty(me)
		if errors.Is(err, ErrUnknownParty) {
			return nil
		}
		if err != nil {
			return err
		}
		for _, tl := range list {
			n, err := t.recordTold(p, tl)
			if err != nil {
				return err
			}
			added += n
		}
		return nil
	})
	return added, err
}

// recordTold records one telling; 1 when it was new.
func (t *tx) recordTold(p party, tl Telling) (int, error) {
	at, ok := tellingTime(tl.At, t.at())
	if !ok || !slices.Contains([]string{ViaSessionStart, ViaUserPromptSubmit, ViaStop, ViaWake}, tl.Via) {
		return 0, nil
	}
	var id, channelID int64
	err := t.row(`SELECT m.id, m.channel_id FROM messages m JOIN channels c ON c.id = m.channel_id
		WHERE c.name = ? AND m.seq = ? AND m.author_id <> ? AND m.kind <> 'event'
		  AND EXISTS (SELECT 1 FROM channel_parties cp WHERE cp.channel_id = m.channel_id AND cp.party_id = ?)`,
		tl.Channel, tl.Seq, p.id, p.id).Scan(&id, &channelID)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	res, err := t.exec(`INSERT INTO told (message_id, party_id, told_at, via) VALUES (?, ?, ?, ?)
		ON CONFLICT (message_id, party_id) DO NOTHING`, id, p.id, at, tl.Via)
	if err != nil {
		return 0, err
	}
	n, err := res.RowsAffected()
	if err != nil || n == 0 {
		return 0, err
	}
	t.clock(channelID) // what the message's author sees moved
	return 1, nil
}

// tellingTime is a telling's time as the store writes times: a time in
// the future (another machine's clock) is taken as now.
func tellingTime(at string, now time.Time) (string, bool) {
	when, err := time.Parse(time.RFC3339Nano, at)
	if err != nil {
		return "", false
	}
	if when.After(now) {
		when = now
	}
	return Timestamp(when), true
}

// toldOf loads who was told of the messages ids names, per message and
// party name, in one query; nil when none was.
func (t *tx) toldOf(ids []int64) (map[int64]map[string]Told, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	list, _ := json.Marshal(ids)
	rows, err := t.query(`SELECT tl.message_id, p.name, tl.told_at, tl.via
		FROM told tl JOIN parties p ON p.id = tl.party_id
		WHERE tl.message_id IN (SELECT value FROM json_each(?))`, string(list))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out map[int64]map[string]Told
	for rows.Next() {
		var id int64
		var name string
		var tl Told
		if err := rows.Scan(&id, &name, &tl.At, &tl.Via); err != nil {
			return nil, err
		}
		if out == nil {
			out = map[int64]map[string]Told{}
		}
		if out[id] == nil {
			out[id] = map[string]Told{}
		}
		out[id][name] = tl
	}
	return out, rows.Err()
}

// withTold gives the messages of list that carry receipts who was told of
// them (told_to).
func (t *tx) withTold(list []Message) error {
	var ids []int64
	for _, m := range list {
		if m.ReadBy != nil {
			ids = append(ids, m.id)
		}
	}
	told, err := t.toldOf(ids)
	if err != nil {
		return err
	}
	for i := range list {
		if tl, ok := told[list[i].id]; ok {
			list[i].ToldTo = tl
		}
	}
	return nil
}

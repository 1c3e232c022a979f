package store

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// How a message names a party it is addressed to (the mentions table's
// via), strongest first: a party both named and in the thread is "to".
const (
	viaTo     = "to"     // the post's to argument
	viaAt     = "at"     // @name in its text
	viaHere   = "here"   // @here or @all in its text
	viaThread = "thread" // a reply in a thread the party wrote in or was addressed in
)

// Broadcasts are the words that address every seated party. A party
// named "here" or "all" is addressed with to.
var broadcasts = []string{"here", "all"}

// attended is what addressing decided for the post just written: the
// parties it names (to, @name, @here), and, when its chain went too many
// hops, the sentence that says it wakes no one.
type attended struct {
	addressed []string
	halted    string
}

// address writes who the message id, just posted in c by author, is
// addressed to: the names in to (each must sit in c), the @names of
// seated parties in its words, every seated peer for @here or @all (at
// most Attention.MaxBroadcast of them), and for a reply the parties of
// its thread. An @word that names no seated party is plain text. It
// refuses, before anything is kept, a to name that does not sit in c and
// a broadcast to too many.
func (t *tx) address(c channel, author party, id, parentID int64, words string, to []string) (attended, error) {
	var out attended
	seated, err := t.seatedParties(c.id)
	if err != nil {
		return out, err
	}
	byName := make(map[string]int64, len(seated))
	names := make([]string, 0, len(seated))
	for _, s := range seated {
		byName[s.name] = s.id
		names = append(names, s.name)
	}
	rows := map[int64]string{} // party id → via
	order := []int64{}
	add := func(id int64, via string) {
		if id == author.id {
			return // nobody is addressed by their own words
		}
		if _, ok := rows[id]; !ok {
			rows[id] = via
			order = append(order, id)
		}
	}
	for _, raw := range to {
		name := strings.ToLower(strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(raw), "@")))
		id, ok := byName[name]
		if !ok {
			return out, notSeated(raw, c.name, names)
		}
		add(id, viaTo)
	}
	at, here := mentionsIn(words)
	for _, name := range at {
		if id, ok := byName[name]; ok {
			add(id, viaAt)
		}
	}
	if here {
		peers := len(seated)
		if _, in := byName[author.name]; in {
			peers--
		}
		if max := t.att.maxBroadcast(); peers > max {
			return out, userErrorf("@here and @all address every party seated in '%s', %d of them, more than attention.max_broadcast (%d) allows — name the parties you mean, with @name in the text or to=[names]", c.name, peers, max)
		}
		for _, s := range seated {
			add(s.id, viaHere)
		}
	}
	for _, id := range order {
		for _, s := range seated {
			if s.id == id {
				out.addressed = append(out.addressed, s.name)
			}
		}
	}
	slices.Sort(out.addressed)
	if parentID != 0 {
		thread, err := t.threadParties(parentID)
		if err != nil {
			return out, err
		}
		for _, id := range thread {
			add(id, viaThread)
		}
	}
	for _, pid := range order {
		if _, err := t.exec(`INSERT INTO mentions (message_id, party_id, via) VALUES (?, ?, ?)`, id, pid, rows[pid]); err != nil {
			return out, err
		}
	}
	return out, nil
}

// seatedParty is a party seated in a channel.
type seatedParty struct {
	id   int64
	name string
}

func (t *tx) seatedParties(channelID int64) ([]seatedParty, error) {
	rows, err := t.query(`SELECT p.id, p.name FROM channel_parties cp JOIN parties p ON p.id = cp.party_id
		WHERE cp.channel_id = ? AND cp.left_at IS NULL ORDER BY p.name`, channelID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []seatedParty
	for rows.Next() {
		var s seatedParty
		if err := rows.Scan(&s.id, &s.name); err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, rows.Err()
}

// threadParties are the parties of the thread the message parent belongs
// to: the authors of its root and of every reply under that root, and the
// parties any of them was addressed to. A reply's parent chain is walked
// up to its root first.
func (t *tx) threadParties(parent int64) ([]int64, error) {
	rows, err := t.query(`WITH RECURSIVE up(id, parent_id) AS (
			SELECT id, parent_id FROM messages WHERE id = ?1
			UNION ALL SELECT m.id, m.parent_id FROM messages m JOIN up ON m.id = up.parent_id
		), thread(id) AS (
			SELECT id FROM up WHERE parent_id IS NULL
			UNION SELECT m.id FROM messages m JOIN thread ON m.parent_id = thread.id
		)
		SELECT author_id FROM messages WHERE id IN (SELECT id FROM thread)
		UNION SELECT party_id FROM mentions WHERE message_id IN (SELECT id FROM thread)`, parent)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []int64
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		out = append(out, id)
	}
	slices.Sort(out)
	return out, rows.Err()
}

// notSeated refuses a to name that does not sit in the channel, naming
// the seated party it most likely meant, or the ones there are.
func notSeated(raw, channel string, seated []string) error {
	name := strings.TrimSpace(raw)
	if guess := closest(strings.ToLower(strings.TrimPrefix(name, "@")), seated); guess != "" {
		return userErrorf("%q does not sit in '%s' — did you mean %s?", name, channel, guess)
	}
	const listed = 12
	list := quoteList(seated[:min(len(seated), listed)])
	if len(seated) > listed {
		list += fmt.Sprintf(" and %d more", len(seated)-listed)
	}
	return userErrorf("%q does not sit in '%s' — address parties seated there: %s", name, channel, list)
}

// closest is the seated name nearest to name in edits, when it is near
// enough to be a slip: at most a third of the name's length, at least 2.
func closest(name string, seated []string) string {
	best, bestDist := "", max(2, utf8.RuneCountInString(name)/3)+1
	for _, s := range seated {
		if d := editDistance(name, s); d < bestDist {
			best, bestDist = s, d
		}
	}
	return best
}

// editDistance counts the insertions, deletions and substitutions of
// runes that turn a into b (Levenshtein).
func editDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(rb)]
}

// mentionsIn finds the @words of a text that could name a party — an @
// at the start or after a character that cannot be part of a word (so
// not an e-mail address), then the characters a party name holds, less
// trailing punctuation — lowercased, once each; here reports @here or
// @all. Which of them name a seated party the caller decides: the rest
// is plain text.
func mentionsIn(text string) (names []string, here bool) {
	seen := map[string]bool{}
	for i := 0; i < len(text); i++ {
		if text[i] != '@' {
			continue
		}
		if i > 0 {
			if r, _ := utf8.DecodeLastRuneInString(text[:i]); nameRune(r) || r == '@' {
				continue
			}
		}
		j := i + 1
		for j < len(text) && text[j] < utf8.RuneSelf && nameRune(rune(text[j])) {
			j++
		}
		word := strings.ToLower(strings.TrimRight(text[i+1:j], ".-~_"))
		if j < len(text) {
			if r, _ := utf8.DecodeRuneInString(text[j:]); r >= utf8.RuneSelf && (unicode.IsLetter(r) || unicode.IsDigit(r)) {
				continue // a longer word in another script: not a name
			}
		}
		i = j - 1
		switch {
		case word == "":
		case slices.Contains(broadcasts, word):
			here = true
		case !seen[word]:
			seen[word] = true
			names = append(names, word)
		}
	}
	return names, here
}

// nameRune reports a character that can be part of a word: a letter, a
// digit, or one of . _ ~ - that party names hold.
func nameRune(r rune) bool {
	return unicode.IsLetter(r) || unicode.IsDigit(r) || r == '.' || r == '_' || r == '~' || r == '-'
}

// loadTo sets To on each message: the parties it names (to, @name, @here),
// by name; the parties of its thread are not listed.
func (t *tx) loadTo(msgs []Message) error {
	if len(msgs) == 0 {
		return nil
	}
	ids := make([]int64, 0, len(msgs))
	at := make(map[int64]int, len(msgs))
	for i, m := range msgs {
		if m.Kind != "event" {
			ids = append(ids, m.id)
			at[m.id] = i
		}
	}
	if len(ids) == 0 {
		return nil
	}
	list, _ := json.Marshal(ids)
	rows, err := t.query(`SELECT mn.message_id, p.name FROM mentions mn JOIN parties p ON p.id = mn.party_id
		WHERE mn.message_id IN (SELECT value FROM json_each(?)) AND mn.via <> 'thread'`, string(list))
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var id int64
		var name string
		if err := rows.Scan(&id, &name); err != nil {
			return err
		}
		i := at[id]
		msgs[i].To = append(msgs[i].To, name)
	}
	for i := range msgs {
		slices.Sort(msgs[i].To)
	}
	return rows.Err()
}

// mergeMentions folds party b's rows of attention into party a's (parties
// move --merge): a message addressed to either is addressed to a, and a's
// own choice of attention in a channel stands over b's.
func (t *tx) mergeMentions(a, b party) error {
	for _, q := range []string{
		`DELETE FROM mentions WHERE party_id = ?2 AND message_id IN (SELECT message_id FROM mentions WHERE party_id = ?1)`,
		`DELETE FROM mentions WHERE party_id = ?2 AND message_id IN (SELECT id FROM messages WHERE author_id = ?1)`,
		`UPDATE mentions SET party_id = ?1 WHERE party_id = ?2`,
		`DELETE FROM mentions WHERE party_id = ?1 AND message_id IN (SELECT id FROM messages WHERE author_id = ?2)`,
		`DELETE FROM attention WHERE party_id = ?2 AND channel_id IN (SELECT channel_id FROM attention WHERE party_id = ?1)`,
		`UPDATE attention SET party_id = ?1 WHERE party_id = ?2`,
	} {
		if _, err := t.exec(q, a.id, b.id); err != nil {
			return fmt.Errorf("merge %s into %s: %w", b.name, a.name, err)
		}
	}
	return nil
}

// forgetMentions removes a forgotten party's rows of attention.
func (t *tx) forgetMentions(id int64) error {
	for _, q := range []string{`DELETE FROM mentions WHERE party_id = ?`, `DELETE FROM attention WHERE party_id = ?`} {
		if _, err := t.exec(q, id); err != nil {
			return err
		}
	}
	return nil
}

// attend writes who the post id is addressed to and its chain, and keeps
// what they decided for the call's answer.
func (t *tx) attend(c channel, author party, id int64, m post) error {
	a, err := t.address(c, author, id, m.parentID, strings.TrimSpace(m.title+"\n"+m.body), m.to)
	if err != nil {
		return err
	}
	if a.halted, err = t.chain(id); err != nil {
		return err
	}
	t.attended = a
	return nil
}

package hook

import (
	"strconv"
	"strings"
	"time"

	"github.com/mcpp/mcpp-chat/internal/config"
	"github.com/mcpp/mcpp-chat/internal/store"
	"github.com/mcpp/mcpp-chat/internal/told"
)

// What the hook told a session is recorded only once its output reached
// the client: Run prints a reply whole within the run's time and only
// then appends the tellings to the party's journal (internal/told), and
// a waiter does so once its wake is on stderr. The party's serve folds
// the journal into the store; the hook never writes the chat.

// journalled is the reply that prints ans and then, for the events that
// tell a session (SessionStart, UserPromptSubmit, Stop), journals what it
// told by event.
func journalled(paths config.Paths, party config.Party, event string, ans Answer) reply {
	r := reply{text: ans.Text}
	if list := tellings(ans.Shown); len(list) > 0 && tellsSession(event) {
		r.told = func() { journal(paths, party, event, list) }
	}
	return r
}

// journal appends to the party's journal that it was told of list, now,
// by event. A journal it cannot write loses the record, never the output.
func journal(paths config.Paths, party config.Party, event string, list []store.Telling) {
	now := time.Now()
	at := store.Timestamp(now)
	for i := range list {
		list[i].At, list[i].Via = at, event
	}
	told.Append(told.Dir(paths, party.Root), told.Entry{Tellings: list}, now)
}

// tellings are the messages the summary lines keyed keys quote: an unread
// message (m/channel/seq) and an item that waits on the party
// (i/channel/seq/need). Receipt lines are about the party's own messages
// and tell it nothing of a peer's.
func tellings(keys []string) []store.Telling {
	var out []store.Telling
	seen := map[string]bool{}
	for _, k := range keys {
		parts := strings.Split(k, "/")
		if len(parts) < 3 || parts[0] != "m" && parts[0] != "i" {
			continue
		}
		seq, err := strconv.ParseInt(parts[2], 10, 64)
		if id := parts[1] + "/" + parts[2]; err == nil && !seen[id] {
			seen[id] = true
			out = append(out, store.Telling{Channel: parts[1], Seq: seq})
		}
	}
	return out
}

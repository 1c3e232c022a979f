package hook

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpp/mcpp-chat/internal/golden"
	"github.com/mcpp/mcpp-chat/internal/store"
)

// docsPending is what waits on node-dash in docs/hooks.md's example: two
// unread messages from mesh-gw, the item it asked, and node-dash's own
// item, answered.
func docsPending() store.Pending {
	p := pendingFor()
	p.Workspace = "/home/you/src/node-dash"
	p.Channels[0].Newest[1].Title = "Is the chunk header enum closed?"
	p.WaitingOnMe = []store.WaitingOnMe{
		needs("chunk-api", "Is the chunk header enum closed?", "mesh-gw", 2, store.NeedAck),
		needs("tls", "TLS upgrade", "node-dash", 1, store.NeedResolve),
	}
	return p
}

// inGwDash is node-dash's channel with mesh-gw: unread messages, the
// newest of them from a peer (0 for none) and those the hook fetched.
func inGwDash(unread int, newestTalk int64, newest ...store.Message) []store.ChannelPending {
	return []store.ChannelPending{{Channel: "gw--dash", Parties: []string{"mesh-gw", "node-dash"},
		Unread: unread, NewestTalk: newestTalk, Newest: newest}}
}

// The hook's output at each event of two sessions, through the session
// record as the hook keeps it, is pinned in testdata/session.golden; run
// go test ./hook -run Golden -update to rewrite it after a deliberate
// change, and review the diff. docs/hooks.md quotes it.
func TestHookOutputGolden(t *testing.T) {
	dir := t.TempDir()
	var out strings.Builder
	step := func(session, event, note string, p store.Pending) string {
		t.Helper()
		printed := tell(context.Background(), dir, session, p.Workspace, event, "fp-"+note, p, 0).Text
		out.WriteString("### " + event + " (session " + session + "): " + note + "\n")
		out.WriteString(readable(t, printed) + "\n")
		return printed
	}
	p := docsPending()
	first := step("s1", SessionStart, "the full picture", p)
	step("s1", UserPromptSubmit, "nothing new: silent", p)
	block := step("s1", Stop, "a peer waits: block", p)
	step("s1", Stop, "the same state again: silent", p)
	newest := p.Channels[0].Newest
	p.Channels = inGwDash(3, 3, newest[1], store.Message{Channel: "gw--dash", Seq: 3, Kind: "say", From: "mesh-gw", Body: "are you there?"})
	step("s1", UserPromptSubmit, "only the news", p)
	step("s1", Stop, "news that blocks: block again", p)

	p = docsPending()
	p.WaitingOnMe = p.WaitingOnMe[1:] // node-dash acked chunk-api
	p.Channels = inGwDash(1, 0, store.Message{Channel: "gw--dash", Seq: 3, Kind: "event", Body: "[chunk-api] acked by node-dash"})
	step("s2", Stop, "nothing blocks (an event, your own answered item): silent", p)
	p.Channels = inGwDash(1, 4, store.Message{Channel: "gw--dash", Seq: 4, Kind: "say", From: "mesh-gw", Body: "are you there?"})
	talkBlock := step("s2", Stop, "a peer's message blocks", p)

	p = docsPending()
	p.WaitingOnMe = nil
	allHands := store.ChannelPending{Channel: "all-hands", Parties: []string{"fw-core", "mesh-gw", "node-dash"}, Newest: []store.Message{}, ReadByAll: 6}
	p.Channels = append([]store.ChannelPending{allHands}, inGwDash(0, 0)...)
	p.Channels[1].ReadByAll = 3
	p.UnreadByPeers = []store.Receipt{
		{Channel: "all-hands", Seq: 7, Kind: "say", Since: "2026-11-29T18:09:27.662912+00:00", ReadBy: []string{}, UnreadBy: []string{"fw-core", "mesh-gw"}},
		{Channel: "gw--dash", Seq: 4, Kind: "ask", Item: "tls", Since: "2026-11-29T18:12:02.5+00:00", ReadBy: []string{}, UnreadBy: []string{"mesh-gw"}},
	}
	step("s3", SessionStart, "only your messages that peers have not read: the full picture lists them", p)
	step("s3", UserPromptSubmit, "nothing new: silent", p)
	p.Channels[1].ReadByAll = 4 // mesh-gw read #4
	p.UnreadByPeers = p.UnreadByPeers[:1]
	p.UnreadByPeers[0].ReadBy, p.UnreadByPeers[0].UnreadBy = []string{"fw-core"}, []string{"mesh-gw"}
	step("s3", UserPromptSubmit, "mesh-gw read #4, fw-core read #7: both are news", p)
	step("s3", UserPromptSubmit, "the same again: silent", p)
	step("s3", Stop, "a message a peer has not read never blocks: silent", p)
	p.Channels[0].ReadByAll = 9 // mesh-gw read #7 and #9, which the session was never told unread
	p.UnreadByPeers = nil
	step("s3", UserPromptSubmit, "every peer read #7: news, once", p)
	step("s3", UserPromptSubmit, "the same again: silent", p)
	p.Channels[0].ReadByAll = 9
	p.UnreadByPeers = []store.Receipt{{Channel: "all-hands", Seq: 10, Kind: "say", Since: "2026-11-29T18:20:41.1+00:00", ReadBy: []string{}, UnreadBy: []string{"fw-core", "mesh-gw"}}}
	step("s3", UserPromptSubmit, "node-dash said #10, which no peer has read: no news, silent", p)
	p.UnreadByPeers[0].ReadBy, p.UnreadByPeers[0].UnreadBy = []string{"fw-core"}, []string{"mesh-gw"}
	step("s3", UserPromptSubmit, "fw-core read #10: news, once", p)
	step("s3", UserPromptSubmit, "the same again: silent", p)
	p.UnreadByPeers[0].UnreadBy = []string{"mesh-gw", "side-car"}
	step("s3", UserPromptSubmit, "side-car joined all-hands and has not read #10 either: no news, silent", p)
	golden.Check(t, "session.golden", out.String())

	summary := decodeContext(t, first).HookSpecificOutput.AdditionalContext
	lines := decodeBlock(t, block).SystemMessage + "\n" + decodeBlock(t, talkBlock).SystemMessage
	docs, err := os.ReadFile(filepath.Join("..", "docs", "hooks.md"))
	if err != nil {
		t.Fatal(err)
	}
	if got := codeAfter(string(docs), "The summary, e.g. for `node-dash`:"); got != strings.TrimSpace(summary) {
		t.Errorf("docs/hooks.md's summary differs from the hook's:\n%s\nwant (from testdata/session.golden):\n%s", got, summary)
	}
	if got := codeAfter(string(docs), "what is news first:"); got != lines {
		t.Errorf("docs/hooks.md's systemMessage lines differ from the hook's:\n%s\nwant:\n%s", got, lines)
	}
}

// readable is what the hook printed, then its text decoded: the printed
// line pins the output shape byte for byte, the text shows a change.
func readable(t *testing.T, printed string) string {
	t.Helper()
	if printed == "" {
		return "(prints nothing)\n"
	}
	var fields map[string]any
	if err := json.Unmarshal([]byte(printed), &fields); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, printed)
	}
	var b strings.Builder
	b.WriteString(printed)
	if c, ok := fields["hookSpecificOutput"].(map[string]any); ok {
		b.WriteString("--- additionalContext\n" + c["additionalContext"].(string) + "\n")
	}
	if m, ok := fields["systemMessage"].(string); ok {
		b.WriteString("--- systemMessage\n" + m + "\n")
	}
	if r, ok := fields["reason"].(string); ok {
		b.WriteString("--- reason\n" + r + "\n")
	}
	return b.String()
}

// codeAfter is the first fenced block after marker in a Markdown text.
func codeAfter(doc, marker string) string {
	_, rest, ok := strings.Cut(doc, marker)
	if !ok {
		return "(no " + marker + ")"
	}
	_, rest, _ = strings.Cut(rest, "```")
	_, rest, _ = strings.Cut(rest, "\n")
	block, _, _ := strings.Cut(rest, "```")
	return strings.TrimSpace(block)
}

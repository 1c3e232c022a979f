package tests

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/mcpp/mcpp-chat/internal/pgtest"
)

// viewWorld is a conversation for the person's view: gw and dash in
// gw--dash, an archived item whose body says "flamingo", a say with a
// peer's markup and terminal escapes, and an item in each live state: one
// acked with a reply under it (the resolve owed by gw), one done (prune-oks
// owed) and one open (dash's ack owed).
func viewWorld(t *testing.T) (w *world, gw, dash string) {
	t.Helper()
	w = newWorld(t)
	gw, dash = w.repo("mesh-gw"), w.repo("node-dash")
	w.mustCall(gw, "chat_channel_new", map[string]any{"name": "gw--dash", "about": "gateway <-> dashboard"}, nil)
	w.mustCall(dash, "chat_channel_join", map[string]any{"name": "gw--dash"}, nil)
	w.mustCall(gw, "chat_ask", map[string]any{"channel": "gw--dash", "slug": "old-wire", "title": "Wire format v1",
		"body": "the flamingo framing is settled", "consumers": []string{"node-dash"}}, nil)
	w.mustCall(dash, "chat_ack", map[string]any{"item": "old-wire"}, nil)
	w.mustCall(gw, "chat_resolve", map[string]any{"item": "old-wire"}, nil)
	w.mustCall(dash, "chat_prune_ok", map[string]any{"item": "old-wire"}, nil)
	w.mustCall(gw, "chat_prune_ok", map[string]any{"item": "old-wire"}, nil)
	w.mustCall(gw, "chat_say", map[string]any{"channel": "gw--dash",
		"text": "firmware 2.3 is on the bench \x1b[31m<img src=x onerror=\"window.pwned=1\"><script>window.pwned=1</script>"}, nil)
	w.mustCall(gw, "chat_ask", map[string]any{"channel": "gw--dash", "slug": "chunk-api", "title": "Is the chunk header enum closed?",
		"body": "I need FRAME_AUX. Can your generator emit it?", "consumers": []string{"node-dash"}}, nil)
	w.mustCall(dash, "chat_reply", map[string]any{"item": "chunk-api", "text": "Looking at the generator now."}, nil)
	w.mustCall(dash, "chat_ask", map[string]any{"channel": "gw--dash", "slug": "gen-v2", "title": "Generator v2 ships the new enum",
		"body": "Regenerated and pushed; tell me when the gateway builds.", "consumers": []string{"mesh-gw"}}, nil)
	w.mustCall(gw, "chat_ack", map[string]any{"item": "gen-v2", "note": "builds clean"}, nil)
	w.mustCall(dash, "chat_resolve", map[string]any{"item": "gen-v2"}, nil)
	w.mustCall(gw, "chat_ask", map[string]any{"channel": "gw--dash", "slug": "frame-order", "title": "Byte order of the frame length?",
		"body": "Little-endian on the wire, I assume.", "consumers": []string{"node-dash"}}, nil)
	return w, gw, dash
}

// runIn runs the mcpp-chat command line with cwd = dir.
func (w *world) runIn(dir string, args ...string) (stdout, stderr string, code int) {
	w.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, chatBin, args...)
	cmd.Dir = dir
	cmd.Env = w.env
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		w.t.Fatalf("mcpp-chat %v: %v", args, err)
	}
	return out.String(), errb.String(), code
}

// dataFiles is every file beside the database with a hash of its bytes
// and its modification time, but for the search index (the view's own
// derived file) and the -shm (where every reader of a WAL database takes
// its read marks; it holds no data).
func dataFiles(t *testing.T, w *world) map[string]string {
	t.Helper()
	out := map[string]string{}
	dir := filepath.Dir(w.db)
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		name, _ := filepath.Rel(dir, path)
		if strings.Contains(name, ".search") || strings.HasSuffix(name, "-shm") {
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		out[name] = fmt.Sprintf("%x %s", sha256.Sum256(data), info.ModTime().Format(time.RFC3339Nano))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func sameFiles(t *testing.T, what string, before, after map[string]string) {
	t.Helper()
	var diffs []string
	for name, v := range before {
		if after[name] != v {
			diffs = append(diffs, fmt.Sprintf("%s changed (%s → %s)", name, v, after[name]))
		}
	}
	for name := range after {
		if _, ok := before[name]; !ok {
			diffs = append(diffs, name+" appeared")
		}
	}
	sort.Strings(diffs)
	if len(diffs) > 0 {
		t.Errorf("%s wrote beside or into the database:\n%s", what, strings.Join(diffs, "\n"))
	}
}

// log, search and ui only read: run from a folder no party has, every
// form of each leaves the database, its -wal and every file beside it as
// they were — no cursor moved, no party made, nothing written — and the
// folder's party is still unknown to the chat afterwards.
func TestViewNeverWrites(t *testing.T) {
	w, _, _ := viewWorld(t)
	stranger := w.repo("stranger")
	before := dataFiles(t, w)
	if _, ok := before["chat.db"]; !ok {
		t.Fatalf("no chat.db among %v", before)
	}
	for _, args := range [][]string{
		{"log"}, {"log", "--all"}, {"log", "gw--dash", "--since", "2"}, {"log", "gw--dash", "--archived"},
		{"log", "--color", "always", "gw--dash"},
		{"search", "flamingo"}, {"search", "chunk", "--channel", "gw--dash"}, {"search", "framing", "--archived"},
	} {
		out, errs, code := w.runIn(stranger, args...)
		if code != 0 || out == "" {
			t.Errorf("mcpp-chat %s: exit %d, stdout %q, stderr %q", strings.Join(args, " "), code, out, errs)
		}
		sameFiles(t, "mcpp-chat "+strings.Join(args, " "), before, dataFiles(t, w))
	}

	// log --follow and ui stay open: read what they show, then stop them.
	follow := startView(t, w, stranger, "log", "--all", "--follow")
	follow.waitFor(t, "chunk-api", 30*time.Second)
	follow.stop(t)
	sameFiles(t, "mcpp-chat log --follow", before, dataFiles(t, w))

	ui := startView(t, w, stranger, "ui", "--listen", "127.0.0.1:0")
	base := ui.url(t)
	for _, path := range []string{"/", "/c/gw--dash", "/c/gw--dash?archived=1", "/search?q=flamingo", "/search?q=chunk&only=live", "/static/app.js"} {
		code, body := httpGet(t, base+path)
		if code != http.StatusOK || body == "" {
			t.Errorf("GET %s = %d\n%s", path, code, body)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	req, _ := http.NewRequestWithContext(ctx, "GET", base+"/events", nil)
	if res, err := http.DefaultClient.Do(req); err == nil {
		bufio.NewReader(res.Body).ReadString('\n')
		res.Body.Close()
	}
	cancel()
	ui.stop(t)
	sameFiles(t, "mcpp-chat ui", before, dataFiles(t, w))

	if out, _, _ := w.run("parties", "list"); strings.Contains(out, "stranger") {
		t.Errorf("a view made a party for its folder:\n%s", out)
	}
}

// viewProc is a log --follow or a ui running as its own process.
type viewProc struct {
	cmd    *exec.Cmd
	out    *syncBuffer
	stderr *syncBuffer
	done   chan error
}

func startView(t *testing.T, w *world, dir string, args ...string) *viewProc {
	t.Helper()
	cmd := exec.Command(chatBin, args...)
	cmd.Dir = dir
	cmd.Env = w.env
	p := &viewProc{cmd: cmd, out: &syncBuffer{}, stderr: &syncBuffer{}, done: make(chan error, 1)}
	cmd.Stdout, cmd.Stderr = p.out, p.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.done <- cmd.Wait() }()
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			<-p.done
		}
	})
	return p
}

// waitFor waits until the output holds want.
func (p *viewProc) waitFor(t *testing.T, want string, within time.Duration) {
	t.Helper()
	end := time.Now().Add(within)
	for !strings.Contains(p.out.String(), want) {
		if time.Now().After(end) {
			t.Fatalf("%v printed no %q within %v:\nstdout %s\nstderr %s", p.cmd.Args, want, within, p.out, p.stderr)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

var uiURL = regexp.MustCompile(`http://127\.0\.0\.1:[0-9]+/`)

// url is the address ui says it serves.
func (p *viewProc) url(t *testing.T) string {
	t.Helper()
	p.waitFor(t, "http://", 30*time.Second)
	u := uiURL.FindString(p.out.String())
	if u == "" {
		t.Fatalf("ui printed no loopback URL: %s", p.out)
	}
	return strings.TrimSuffix(u, "/")
}

// stop interrupts the process as Ctrl-C would and requires a clean exit.
func (p *viewProc) stop(t *testing.T) {
	t.Helper()
	p.cmd.Process.Signal(os.Interrupt)
	select {
	case err := <-p.done:
		if err != nil {
			t.Errorf("%v after Ctrl-C: %v\nstderr %s", p.cmd.Args, err, p.stderr)
		}
	case <-time.After(30 * time.Second):
		p.cmd.Process.Kill()
		<-p.done
		t.Errorf("%v did not stop within 30 s of Ctrl-C", p.cmd.Args)
	}
}

func httpGet(t *testing.T, url string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", url, nil)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(body)
}

// log to a pipe is plain text with no escape from anyone's message; it
// shows threads under their items with each item's state, and --follow
// prints what a peer posts afterwards, woken like watch.
func TestLogReadsLikeAConversationAndFollows(t *testing.T) {
	w, gw, dash := viewWorld(t)
	out, errs, code := w.runIn(dash, "log", "gw--dash")
	if code != 0 {
		t.Fatalf("log: exit %d: %s", code, errs)
	}
	if strings.ContainsAny(out, "\x1b\x07") {
		t.Errorf("log to a pipe carries escapes:\n%q", out)
	}
	for _, want := range []string{
		"━━ #gw--dash — gateway <-> dashboard",
		"[chunk-api] Is the chunk header enum closed?",
		"OPEN · ack owed by node-dash",
		"ACK · resolve owed by mesh-gw",
		"DONE · prune-ok owed by",
		"↳ #", "Looking at the generator now.",
		`<img src=x onerror="window.pwned=1">`,
		"not yet read by node-dash", // the read receipt of gw's newest ask
	} {
		if !strings.Contains(out, want) {
			t.Errorf("log lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "flamingo") {
		t.Errorf("log shows the archived thread among the live messages:\n%s", out)
	}
	if out, _, _ := w.runIn(dash, "log", "gw--dash", "--archived"); !strings.Contains(out, "flamingo") || !strings.Contains(out, "ARCHIVED") {
		t.Errorf("log --archived lacks the archived item:\n%s", out)
	}
	if out, _, _ := w.runIn(dash, "log", "--color", "always", "gw--dash"); !strings.Contains(out, "\x1b[") || strings.Contains(out, "\x1b[31m") {
		t.Errorf("log --color always: colour of its own expected, the peer's red removed:\n%q", out)
	}

	follow := startView(t, w, dash, "log", "gw--dash", "--follow")
	follow.waitFor(t, "Looking at the generator", 30*time.Second)
	w.mustCall(gw, "chat_say", map[string]any{"channel": "gw--dash", "text": "a heron \x1b]0;PWNED\x07landed on the bench"}, nil)
	follow.waitFor(t, "landed on the bench", 30*time.Second)
	if strings.ContainsAny(follow.out.String(), "\x1b\x07") {
		t.Errorf("log --follow carries escapes:\n%q", follow.out)
	}
	follow.stop(t)
}

// search finds live and archived messages by a word of their body, title
// or slug; --archived keeps to the archived threads.
func TestSearchFromTheCommandLine(t *testing.T) {
	w, _, dash := viewWorld(t)
	out, errs, code := w.runIn(dash, "search", "flamingo")
	if code != 0 || !strings.Contains(out, "1 hit, best first, for: flamingo") || !strings.Contains(out, "#gw--dash #2") ||
		!strings.Contains(out, "[old-wire] Wire format v1 · DONE  (archived)") || !strings.Contains(out, "the flamingo framing is settled") {
		t.Errorf("search flamingo: exit %d\n%s%s", code, out, errs)
	}
	if out, _, _ := w.runIn(dash, "search", "generator", "--archived"); !strings.Contains(out, "Nothing matches") {
		t.Errorf("search --archived found live messages:\n%s", out)
	}
	if out, _, _ := w.runIn(dash, "search", "generator"); !strings.Contains(out, "3 hits") {
		t.Errorf("search generator:\n%s", out)
	}
	if _, errs, code := w.runIn(dash, "search"); code != 2 || !strings.Contains(errs, "give the words to find") {
		t.Errorf("search with no words: exit %d: %s", code, errs)
	}
}

// search's answer in a pipe is plain text — no marks, which the index
// may put inside a word (FRAME_AUX is two words to it), the query as
// typed, quotes and all — and the same on a team store as on the file:
// each hit alike, in the order each engine ranks them (bm25 and ts_rank
// may order close matches differently).
func TestSearchPipedIsPlainAndTheSameOnBothEngines(t *testing.T) {
	w, gw, dash := viewWorld(t)
	w.mustCall(gw, "chat_say", map[string]any{"channel": "gw--dash", "text": "the dashboard's generator now takes FRAME_AUX frames, says gw--dash"}, nil)
	team := pgtest.URL(t)
	if out, errs, code := w.runIn(gw, "migrate", "--to", team); code != 0 {
		t.Fatalf("migrate: exit %d\n%s%s", code, out, errs)
	}
	onTeam := *w
	onTeam.env = append(append([]string{}, w.env...), "MCPP_CHAT_STORE="+team)
	for _, query := range [][]string{{"generator"}, {`"frame aux"`}, {"gw--dash", "aux"}} {
		lite, errs, code := w.runIn(dash, append([]string{"search"}, query...)...)
		if code != 0 || strings.ContainsAny(lite, "*\x02\x03\x1b") || strings.Contains(lite, `\"`) || !strings.Contains(lite, "for: "+strings.Join(query, " ")+"\n") {
			t.Errorf("search %s: exit %d, not plain:\n%s%s", query, code, lite, errs)
		}
		pg, errs, _ := onTeam.runIn(dash, append([]string{"search"}, query...)...)
		if !slices.Equal(hitBlocks(pg), hitBlocks(lite)) {
			t.Errorf("search %s on the team store:\n%s%s\non the file:\n%s", query, pg, errs, lite)
		}
	}
}

// hitBlocks is search's answer as its first line and its hits, each hit
// one block, sorted.
func hitBlocks(out string) []string {
	blocks := strings.Split(out, "\n\n")
	slices.Sort(blocks[1:])
	return blocks
}

// ui listens on loopback only unless asked, and says why.
func TestUIRefusesAnAddressOthersReach(t *testing.T) {
	w, _, dash := viewWorld(t)
	_, errs, code := w.runIn(dash, "ui", "--listen", "0.0.0.0:0")
	if code != 2 || !strings.Contains(errs, "not a loopback address") || !strings.Contains(errs, "--allow-remote") {
		t.Errorf("ui --listen 0.0.0.0:0: exit %d: %s", code, errs)
	}
}

// Before anyone has chatted there is nothing to show and nothing is made:
// each view says so and leaves no database behind.
func TestViewsOfAMissingDatabaseMakeNone(t *testing.T) {
	w := newWorld(t)
	dir := w.repo("mesh-gw")
	for _, args := range [][]string{{"log"}, {"search", "anything"}, {"ui", "--listen", "127.0.0.1:0"}} {
		_, errs, code := w.runIn(dir, args...)
		if code != 1 || !strings.Contains(errs, "there is no chat database at "+w.db) {
			t.Errorf("mcpp-chat %s: exit %d: %s", strings.Join(args, " "), code, errs)
		}
	}
	if _, err := os.Stat(filepath.Dir(w.db)); !os.IsNotExist(err) {
		t.Errorf("a view made the database's folder: %v", err)
	}
}

package tests

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpp/mcpp-chat/hook"
	"github.com/mcpp/mcpp-chat/internal/config"
	"github.com/mcpp/mcpp-chat/tests/sandbox"
	"github.com/mcpp/mcpp-chat/tests/scripted"
	"github.com/mcpp/mcpp-chat/tools"
)

// Real clients against the team hub (`mcpp-chat hub serve`) on loopback:
// Claude Code with the hub registered as an HTTP server, the official
// TypeScript SDK over streamable HTTP, and a Claude Code session on a
// member machine whose `mcpp-chat serve` fronts the hub, answering a
// party on another machine.

// hubLife bounds one hub process: it only catches a test that hangs.
const hubLife = 10 * time.Minute

// testHub is a hub serving a SQLite store in the test's folder.
type testHub struct {
	store string // sqlite:PATH
	url   string // the MCP endpoint, http://127.0.0.1:PORT/mcp
	base  string // the hub's address, what connect takes
	env   []string
	log   *syncBuffer // the hub's stderr: its log
}

// startHub starts `mcpp-chat hub serve` on a free loopback port; it is
// killed with the test, and its log shown when the test failed.
func startHub(t *testing.T) *testHub {
	t.Helper()
	skipShort(t)
	dir := t.TempDir()
	h := &testHub{store: "sqlite:" + filepath.Join(dir, "hub.db"), log: &syncBuffer{},
		env: sandbox.Env("MCPP_CHAT_HOME="+filepath.Join(dir, "module"), "HOME="+filepath.Join(dir, "home"))}
	ctx, cancel := context.WithTimeout(context.Background(), hubLife)
	cmd := exec.CommandContext(ctx, chatBin, "hub", "serve", "--store", h.store, "--listen", "127.0.0.1:0")
	cmd.Env, cmd.Dir = h.env, dir
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	// Ends with the test process, however that ends (a panic at the test
	// timeout runs no cleanup), as internal/pgtest's server does.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	cmd.WaitDelay = 10 * time.Second
	out := newLines()
	cmd.Stdout, cmd.Stderr = out, h.log
	if err := cmd.Start(); err != nil {
		cancel()
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); out.close(); close(done) }()
	t.Cleanup(func() {
		cancel()
		<-done
		if t.Failed() {
			t.Logf("the hub's log:\n%s", tail(h.log.String(), 6000))
		}
	})
	const prefix = "mcpp-chat hub: serving "
	if !out.await(30*time.Second, func(all []string) bool { return len(all) > 0 }) {
		t.Fatalf("the hub printed no address in 30 s; its log:\n%s", h.log.String())
	}
	all, _, _ := out.snapshot()
	_, url, ok := strings.Cut(all[0], " on ")
	if !strings.HasPrefix(all[0], prefix) || !ok || !strings.HasPrefix(url, "http://127.0.0.1:") || !strings.HasSuffix(url, "/mcp") {
		t.Fatalf("the hub's first line is not %q…: %q", prefix, all[0])
	}
	h.url, h.base = url, strings.TrimSuffix(url, "/mcp")
	return h
}

// issue makes a token for party and returns it.
func (h *testHub) issue(t *testing.T, party, label string) string {
	t.Helper()
	cmd := exec.Command(chatBin, "hub", "token", "issue", "--store", h.store, "--party", party, "--label", label, "--new-party")
	cmd.Env = h.env
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("hub token issue --party %s: %v\n%s", party, err, out)
	}
	token, _, _ := strings.Cut(string(out), "\n")
	if !strings.HasPrefix(token, "mcc_") {
		t.Fatalf("hub token issue printed no token first: %q", out)
	}
	return token
}

// session is an MCP session with the hub as the token's party, with the
// Go SDK's own streamable HTTP client: the tests' way to look.
func (h *testHub) session(t *testing.T, token string) *mcp.ClientSession {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	client := mcp.NewClient(&mcp.Implementation{Name: "tests", Version: "1"}, nil)
	s, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: h.url,
		HTTPClient: &http.Client{Transport: bearerTransport{token}}}, nil)
	if err != nil {
		t.Fatalf("connect to the hub: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

type bearerTransport struct{ token string }

func (b bearerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

// memberWorld is a machine that is not the hub's: no database of its own
// named (MCPP_CHAT_DB would win over the hub), its processes told apart
// by its module folder.
func memberWorld(t *testing.T, extra ...string) *world {
	t.Helper()
	w := newWorld(t)
	var env []string
	for _, kv := range w.env {
		if !strings.HasPrefix(kv, "MCPP_CHAT_DB=") {
			env = append(env, kv)
		}
	}
	w.env = append(env, extra...)
	w.mark = "MCPP_CHAT_HOME=" + filepath.Join(w.dir, "module")
	return w
}

// claudeCLI runs the Claude Code CLI with args (mcp add, mcp list) in
// dir, bounded, and returns what it printed. No model is involved, and
// no ANTHROPIC_* variable is set: with an API key, `claude mcp list` also
// tries to reach the vendor's API, which here only delays it (18 s).
func claudeCLI(t *testing.T, c *claudeCode, dir string, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), cliRunTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, c.bin, args...)
	cmd.Dir = dir
	for _, kv := range c.env("") {
		if !strings.HasPrefix(kv, "ANTHROPIC_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// bareClaude is Claude Code installed in the world with nothing
// registered and no hooks (an empty settings file).
func bareClaude(t *testing.T, w *world) *claudeCode {
	t.Helper()
	c := &claudeCode{w: w, bin: realClient(t, "claude"), settings: filepath.Join(w.dir, "claude-settings.json")}
	writeFile(t, filepath.Join(w.home, ".claude.json"), `{"hasCompletedOnboarding": true, "theme": "dark"}`)
	writeFile(t, c.settings, `{}`)
	return c
}

// addHTTP registers the hub in dir's project as the HTTP server name,
// with headers, as a user would.
func addHTTP(t *testing.T, c *claudeCode, dir, name, url string, headers ...string) {
	t.Helper()
	args := []string{"mcp", "add", "--transport", "http", name, url}
	for _, h := range headers {
		args = append(args, "--header", h)
	}
	if out, err := claudeCLI(t, c, dir, args...); err != nil {
		t.Fatalf("claude %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// mcpListed is the line `claude mcp list` printed for the server name.
func mcpListed(out, name string) string {
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, name+": ") {
			return line
		}
	}
	return ""
}

const connected = "✔ Connected"

// 1. Claude Code registers the hub as an HTTP server with the token in
// a header, and `claude mcp list` does the real handshake: connected.
// The controls: a token the hub never issued, and no header at all, do
// not connect, and the hub logged refusing each.
func TestHubClaudeCodeConnectsOverHTTP(t *testing.T) {
	w := newWorld(t)
	c := bareClaude(t, w)
	h := startHub(t)
	token := h.issue(t, "node-dash", "laptop")
	dir := gitRepo(t, w, "node-dash")

	addHTTP(t, c, dir, "chat", h.url, "Authorization: Bearer "+token)
	addHTTP(t, c, dir, "wrongtoken", h.url, "Authorization: Bearer mcc_000000000000_not-a-token")
	addHTTP(t, c, dir, "noheader", h.url)
	out, err := claudeCLI(t, c, dir, "mcp", "list")
	t.Logf("claude mcp list (exit %v):\n%s", err, out)

	if line := mcpListed(out, "chat"); !strings.Contains(line, connected) {
		t.Errorf("the hub with its token is not %s: %q", connected, line)
	}
	for _, name := range []string{"wrongtoken", "noheader"} {
		if line := mcpListed(out, name); line == "" || strings.Contains(line, connected) {
			t.Errorf("the server %s should be listed and not connected: %q", name, line)
		}
	}
	// Both refused servers' requests come from one address, whose first
	// refusal the hub logs in full, and whose next it counts (a line a
	// minute).
	log := h.log.String()
	if !strings.Contains(log, `msg="refused a request" status=401 path=/mcp`) ||
		!strings.Contains(log, "the token is not one this hub issued") && !strings.Contains(log, "no token: send the header") {
		t.Errorf("the hub did not log refusing a request with 401 for a wrong token or none:\n%s", tail(log, 4000))
	}
}

// 1b. Claude Code calls the hub's tools over HTTP in a real turn: both
// text contents reach the model, and what it says is the token's party's.
func TestHubClaudeCodeCallsToolsOverHTTP(t *testing.T) {
	w := newWorld(t)
	c := bareClaude(t, w)
	h := startHub(t)
	token := h.issue(t, "node-dash", "laptop")
	// The folder's name is not the party: the token decides who speaks.
	dir := gitRepo(t, w, "somewhere-else")
	addHTTP(t, c, dir, "chat", h.url, "Authorization: Bearer "+token)

	const text = "said by Claude Code over HTTP"
	model := startModel(t,
		scripted.Do(scripted.MCP("chat", "chat_whoami", map[string]any{})),
		scripted.Do(scripted.MCP("chat", "chat_channel_new", map[string]any{"name": "http-check"})),
		scripted.Do(scripted.MCP("chat", "chat_say", map[string]any{"text": text, "channel": "http-check"})),
		scripted.End("done"))
	c.run(t, dir, model, "say something on the team chat")

	got := results(model, "chat_whoami")
	if len(got) != 1 || got[0].IsError || len(got[0].Contents) != 2 {
		t.Fatalf("chat_whoami reached the model as %+v, want one result of 2 contents", got)
	}
	if !strings.HasPrefix(got[0].Contents[0], "**You are node-dash**") {
		t.Errorf("the first content is not the display of node-dash: %q", got[0].Contents[0])
	}
	var who struct{ Me string }
	if err := json.Unmarshal([]byte(got[0].Contents[1]), &who); err != nil || who.Me != "node-dash" {
		t.Errorf("the second content is not node-dash's result JSON (%v): %q", err, got[0].Contents[1])
	}
	var said struct {
		Channel string
		Seq     int
	}
	mustResult(t, model, "chat_say", &said)

	var read struct {
		Messages []struct {
			Seq        int
			From, Body string
		}
	}
	toolCall(t, h.session(t, token), "chat_read", map[string]any{"channel": "http-check", "since": 0}, &read)
	if len(read.Messages) != 1 || read.Messages[0].Seq != said.Seq || read.Messages[0].From != "node-dash" || read.Messages[0].Body != text {
		t.Fatalf("the hub's store holds %+v in http-check, want #%d %q from node-dash", read.Messages, said.Seq, text)
	}
}

// 2. The official TypeScript SDK over streamable HTTP
// (tests/e2e/ts-http-client.mjs): a wrong token is refused, the tools are
// module.yaml's, chat_whoami and chat_say answer display and JSON as the
// token's party, an author-naming argument is refused.
func TestHubTypeScriptSDKOverHTTP(t *testing.T) {
	skipShort(t)
	node, err := exec.LookPath("node")
	if err != nil {
		missingClient(t, "node is not installed")
	}
	modules := filepath.Dir(e2eBinDir()) // …/node_modules
	if _, err := os.Stat(filepath.Join(modules, "@modelcontextprotocol", "sdk", "package.json")); err != nil {
		missingClient(t, "the MCP TypeScript SDK is not installed in %s (run `make e2e-clients`, or set %s)", modules, e2eBinEnv)
	}
	h := startHub(t)
	token := h.issue(t, "mesh-gw", "ts-sdk")

	// ESM resolves packages from the script's folder: a copy beside a
	// link to the installed node_modules.
	dir := t.TempDir()
	script, err := os.ReadFile(filepath.Join(repoRoot(), "tests", "e2e", "ts-http-client.mjs"))
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, "ts-http-client.mjs"), string(script))
	if err := os.Symlink(modules, filepath.Join(dir, "node_modules")); err != nil {
		t.Fatal(err)
	}
	manifest, err := tools.LoadManifest()
	if err != nil {
		t.Fatal(err)
	}
	var declared []string
	for _, tool := range manifest.Tools {
		declared = append(declared, tool.Name)
	}

	ctx, cancel := context.WithTimeout(t.Context(), cliRunTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "ts-http-client.mjs", h.url, token, "mesh-gw", strings.Join(declared, ","))
	cmd.Dir, cmd.Env = dir, sandbox.Env("HOME="+dir)
	out, err := cmd.CombinedOutput()
	t.Logf("%s", out)
	if err != nil || !strings.Contains(string(out), "ts-http-client: ok:") {
		t.Fatalf("the TypeScript SDK client against the hub: %v", err)
	}
}

// 3. A laptop is a member of the hub: `mcpp-chat connect`, then Claude
// Code with `mcpp-chat serve` and the hooks registered as `mcpp-chat
// setup` prints them. Another machine's party, mesh-gw, with its own
// token, asks node-dash a question while the laptop's session is open.
// The next prompt carries the question (the UserPromptSubmit hook, from
// the cache serve keeps), chat_inbox shows it to the model, and the
// model's chat_reply lands in the hub's store as node-dash's.
func TestHubClaudeMemberAnswersAPeerOnAnotherMachine(t *testing.T) {
	realClient(t, "claude") // skips before anything starts
	h := startHub(t)
	dashToken, gwToken := h.issue(t, "node-dash", "laptop"), h.issue(t, "mesh-gw", "gw-box")

	laptop := memberWorld(t)
	dash := gitRepo(t, laptop, "node-dash")
	if out, errs, code := laptop.runIn(dash, "connect", h.base, "--token", dashToken); code != 0 {
		t.Fatalf("mcpp-chat connect: exit %d\n%s%s", code, out, errs)
	}
	module := filepath.Join(laptop.dir, "module")
	if _, err := os.Stat(filepath.Join(module, "hub.json")); err != nil {
		t.Fatalf("connect saved no hub.json: %v", err)
	}
	c := newClaude(t, laptop)

	other := memberWorld(t, "MCPP_CHAT_STORE="+h.base, "MCPP_CHAT_TOKEN="+gwToken)
	gw := gitRepo(t, other, "mesh-gw")
	other.mustCall(gw, "chat_channel_new", map[string]any{"name": "gw--dash", "parties": []string{"node-dash"}}, nil)

	const (
		title  = "Is the chunk header enum closed?"
		answer = "It is open: FRAME_AUX is in since 2.3."
	)
	model := startModel(t,
		scripted.End("nothing yet"),
		scripted.Do(scripted.MCP("chat", "chat_inbox", map[string]any{})),
		scripted.Do(scripted.MCP("chat", "chat_reply", map[string]any{"item": "enum", "text": answer})),
		scripted.End("answered"))
	s := c.start(t, dash, model)
	s.prompt(t, "prompt-1: before the question")
	if first := firstTurn(t, model); first.Contains(title) {
		t.Fatalf("the model heard of the question before it was asked:\n%s", describe(first.Parts))
	}

	other.mustCall(gw, "chat_ask", map[string]any{"title": title, "body": "I need FRAME_AUX.", "slug": "enum"}, nil)
	// serve follows the hub and keeps the hook's cache; the hook answers
	// from it while it is fresh, so the next prompt waits for it to hold
	// the question.
	cache := hook.HubCachePath(config.Paths{Hub: filepath.Join(module, "hub.json")}, "node-dash")
	deadline := time.Now().Add(30 * time.Second)
	for {
		data, _ := os.ReadFile(cache)
		if strings.Contains(string(data), title) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("in 30 s the laptop's serve did not bring the question into the hook's cache %s; it holds:\n%s", cache, data)
		}
		time.Sleep(100 * time.Millisecond)
	}

	s.prompt(t, "prompt-2: anything for me?")
	s.close(t)
	// serve's long poll of the hub does not keep it alive past its client.
	awaitNoneOfOurs(t, laptop, "Claude Code exited")

	turn := promptTurn(t, model, "prompt-2")
	if p := partWith(turn.New, "system", promptContext); p == nil || !strings.Contains(p.Text, `[enum] "`+title+`" from mesh-gw — needs your ack`) {
		t.Errorf("the prompt after the question carries no UserPromptSubmit context naming it:\n%s", describe(turn.New))
	}
	var inbox struct {
		Me          string `json:"me"`
		WaitingOnMe []struct {
			Item, From, Needs string
		} `json:"waiting_on_me"`
	}
	mustResult(t, model, "chat_inbox", &inbox)
	found := false
	for _, wait := range inbox.WaitingOnMe {
		found = found || (wait.Item == "enum" && strings.Contains(wait.Needs, "ack"))
	}
	if !found {
		t.Errorf("chat_inbox did not show the model that enum needs node-dash's ack: %+v", inbox.WaitingOnMe)
	}
	var replied struct {
		AutoAcked bool `json:"auto_acked"`
	}
	if mustResult(t, model, "chat_reply", &replied); !replied.AutoAcked {
		t.Errorf("node-dash's reply did not ack the item")
	}

	// The other machine reads the answer from the hub, node-dash's.
	var read struct {
		Messages []struct{ From, Body, Kind string }
	}
	other.mustCall(gw, "chat_read", map[string]any{"channel": "gw--dash"}, &read)
	if n := len(read.Messages); n == 0 || read.Messages[n-1].From != "node-dash" || read.Messages[n-1].Body != answer {
		t.Fatalf("mesh-gw read %+v from the hub, want node-dash's answer last", read.Messages)
	}
	// Nothing of the chat was kept on the laptop: serve fronted the hub.
	if _, err := os.Stat(filepath.Join(module, "chat.db")); err == nil {
		t.Errorf("the laptop has a chat database of its own (%s): its serve or hook used it instead of the hub", filepath.Join(module, "chat.db"))
	}
	if log := h.log.String(); strings.Contains(log, "refused a request") {
		t.Errorf("the hub refused requests from its members:\n%s", log)
	}
}

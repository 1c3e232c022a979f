package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"io"
	"log/slog"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpp/mcpp-chat/hub"
	"github.com/mcpp/mcpp-chat/internal/store"
)

func TestHubListenRules(t *testing.T) {
	for _, c := range []struct {
		addr, cert, key string
		plain           bool
		ok              bool
	}{
		{"127.0.0.1:8765", "", "", false, true},
		{"[::1]:0", "", "", false, true},
		{"localhost:80", "", "", false, true},
		{"0.0.0.0:8765", "", "", false, false},
		{":8765", "", "", false, false},
		{"10.0.0.5:8765", "", "", false, false},
		{"0.0.0.0:8765", "c.pem", "k.pem", false, true},
		{"0.0.0.0:8765", "c.pem", "", false, false},
		{"0.0.0.0:8765", "", "", true, true},
		{"nonsense", "", "", false, false},
	} {
		err := checkHubListen(c.addr, c.cert, c.key, c.plain)
		if (err == nil) != c.ok {
			t.Errorf("checkHubListen(%q, cert %q, key %q, plain %v) = %v", c.addr, c.cert, c.key, c.plain, err)
		}
	}
}

func TestParseTTL(t *testing.T) {
	for in, want := range map[string]time.Duration{"90d": 90 * 24 * time.Hour, "2w": 14 * 24 * time.Hour, "12h": 12 * time.Hour, "30m": 30 * time.Minute} {
		if got, err := parseTTL(in); err != nil || got != want {
			t.Errorf("parseTTL(%q) = %v, %v", in, got, err)
		}
	}
	for _, bad := range []string{"", "0d", "-1h", "d", "soon", "1y"} {
		if _, err := parseTTL(bad); err == nil {
			t.Errorf("parseTTL(%q) accepted", bad)
		}
	}
}

// cli runs the command line in-process with env.
func cli(t *testing.T, env map[string]string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = run(context.Background(), args, func(k string) string { return env[k] }, strings.NewReader(""), &out, &errb)
	return code, out.String(), errb.String()
}

var tokenLine = regexp.MustCompile(`^mcc_[0-9a-f]{12}_[A-Za-z0-9_-]{43}$`)

// The token commands: bad input refused with nothing written; a token
// printed once, on its own line, with the connect line; never listed.
func TestHubTokenCommands(t *testing.T) {
	home := t.TempDir()
	db := filepath.Join(home, "hub.db")
	env := map[string]string{"HOME": home, "MCPP_CHAT_HOME": home, "MCPP_CHAT_STORE": "sqlite:" + db}
	for _, args := range [][]string{
		{"hub", "token", "issue", "--label", "x"},
		{"hub", "token", "issue", "--party", "Node Dash", "--label", "x"},
		{"hub", "token", "issue", "--party", "node-dash"},
		{"hub", "token", "issue", "--party", "node-dash", "--label", "x", "--ttl", "forever"},
	} {
		if code, _, errs := cli(t, env, args...); code != exitUsage || !strings.Contains(errs, "mcpp-chat hub token issue: ") {
			t.Errorf("%v: exit %d, %s", args, code, errs)
		}
	}
	if _, err := os.Stat(db); err == nil {
		t.Fatal("refused commands made the store")
	}
	code, out, errs := cli(t, env, "hub", "token", "issue", "--party", "node-dash", "--party", "mesh-gw", "--label", "alice-laptop", "--ttl", "2w", "--url", "https://chat.example", "--new-party")
	if code != exitOK {
		t.Fatalf("issue: %d %s", code, errs)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 3 || !tokenLine.MatchString(lines[0]) || lines[2] != "mcpp-chat connect https://chat.example --token "+lines[0] {
		t.Fatalf("issue printed:\n%s", out)
	}
	secret := strings.SplitN(lines[0], "_", 3)[2]
	code, out, _ = cli(t, env, "hub", "token", "list")
	if code != exitOK || !strings.Contains(out, "alice-laptop") || !strings.Contains(out, "node-dash,mesh-gw") || !strings.Contains(out, "active") || strings.Contains(out, secret) {
		t.Fatalf("list:\n%s", out)
	}
	if code, out, errs = cli(t, env, "hub", "token", "revoke", "alice-laptop"); code != exitOK || !strings.Contains(out, "revoked token") {
		t.Fatalf("revoke: %d %s %s", code, out, errs)
	}
	if _, out, _ = cli(t, env, "hub", "token", "list"); !strings.Contains(out, "revoked") {
		t.Fatalf("list after revoke:\n%s", out)
	}
	// A 12-hour token says at what hour it ends, at issue and in the list.
	code, out, errs = cli(t, env, "hub", "token", "issue", "--party", "node-dash", "--label", "ci-run", "--ttl", "12h", "--new-party")
	if code != exitOK || !regexp.MustCompile(`valid until \d{4}-\d\d-\d\d \d\d:\d\d UTC \(in 1[12]h \d\dmin\)`).MatchString(out) {
		t.Fatalf("issue of a 12h token: %d %s %s", code, out, errs)
	}
	if _, out, _ = cli(t, env, "hub", "token", "list"); !regexp.MustCompile(`ci-run\s+node-dash\s+\d{4}-\d\d-\d\d \d\d:\d\d UTC\s+active`).MatchString(out) {
		t.Fatalf("list of a 12h token:\n%s", out)
	}
	if code, _, errs = cli(t, env, "hub", "token", "revoke", "nobody"); code != exitError || !strings.Contains(errs, "hub token list") {
		t.Fatalf("revoking an unknown token: %d %s", code, errs)
	}
}

// A token for a party the store does not have is refused — a typo would
// make a party nobody works in — naming the nearest party and --new-party;
// nothing is written, not even a store.
func TestHubTokenForAnUnknownPartyIsRefused(t *testing.T) {
	home := t.TempDir()
	db := filepath.Join(home, "hub.db")
	env := map[string]string{"HOME": home, "MCPP_CHAT_HOME": home, "MCPP_CHAT_STORE": "sqlite:" + db}
	code, out, errs := cli(t, env, "hub", "token", "issue", "--party", "node-dash", "--label", "x")
	if code != exitError || out != "" || !strings.Contains(errs, "no party node-dash (the store has no parties yet)") || !strings.Contains(errs, "add --new-party") {
		t.Errorf("a store without parties: exit %d\n%s%s", code, out, errs)
	}
	if _, err := os.Stat(db); err == nil {
		t.Fatal("the refused issue made the store")
	}
	s, err := store.Open(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	_, err = s.Register(context.Background(), store.Identity{Name: "node-dash", Workspace: "/srv/node-dash"})
	s.Close()
	if err != nil {
		t.Fatal(err)
	}
	code, out, errs = cli(t, env, "hub", "token", "issue", "--party", "node-dsah", "--label", "x")
	if code != exitError || out != "" || !strings.Contains(errs, "no party node-dsah (did you mean node-dash?) — check the spelling") {
		t.Errorf("a typo: exit %d\n%s%s", code, out, errs)
	}
	if _, list, _ := cli(t, env, "hub", "token", "list"); strings.Contains(list, "x ") {
		t.Errorf("a refused issue made a token:\n%s", list)
	}
	if code, _, errs := cli(t, env, "hub", "token", "issue", "--party", "node-dash", "--label", "x"); code != exitOK {
		t.Errorf("a known party: exit %d %s", code, errs)
	}
	if code, _, errs := cli(t, env, "hub", "token", "issue", "--party", "mesh-gw", "--label", "y", "--new-party"); code != exitOK {
		t.Errorf("a new party with --new-party: exit %d %s", code, errs)
	}
}

// startHubCLI runs `hub serve` in-process on a free loopback port and
// returns its base URL; it stops with the test.
func startHubCLI(t *testing.T, env map[string]string, extra ...string) string {
	t.Helper()
	line := hubBanner(t, env, extra...)
	m := regexp.MustCompile(`(https?://127\.0\.0\.1:\d+)/mcp`).FindStringSubmatch(line)
	if m == nil {
		t.Fatalf("hub serve said %q", line)
	}
	return m[1]
}

// hubBanner runs `hub serve` as startHubCLI does and returns the line it
// prints first, naming what it serves and where.
func hubBanner(t *testing.T, env map[string]string, extra ...string) string {
	t.Helper()
	return firstLine(t, env, append([]string{"hub", "serve", "--listen", "127.0.0.1:0"}, extra...))
}

// firstLine runs a command that serves until it is stopped (ui, hub
// serve) in-process, returns the first line it prints, and stops it with
// the test.
func firstLine(t *testing.T, env map[string]string, args []string) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, args, func(k string) string { return env[k] }, strings.NewReader(""), pw, io.Discard)
		pw.Close()
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Errorf("%s did not stop", args[0])
		}
	})
	line, err := bufio.NewReader(pr).ReadString('\n')
	if err != nil {
		t.Fatalf("%s printed no address: %v", args[0], err)
	}
	go io.Copy(io.Discard, pr)
	return line
}

// A laptop connects with a token: a wrong one saves nothing; a right one
// is saved owner-only, after which call, doctor and info use the hub, and
// the commands that need the store itself say where to run them.
func TestConnectMakesAMember(t *testing.T) {
	hubHome := t.TempDir()
	hubEnv := map[string]string{"HOME": hubHome, "MCPP_CHAT_HOME": hubHome, "MCPP_CHAT_STORE": "sqlite:" + filepath.Join(hubHome, "hub.db")}
	url := startHubCLI(t, hubEnv)
	_, out, _ := cli(t, hubEnv, "hub", "token", "issue", "--party", "node-dash", "--label", "laptop", "--new-party", "--ttl", "12h")
	token := strings.SplitN(out, "\n", 2)[0]

	lap := t.TempDir()
	repo := filepath.Join(lap, "node-dash")
	os.MkdirAll(repo, 0o700)
	env := map[string]string{"HOME": lap, "MCPP_CHAT_HOME": filepath.Join(lap, "home"), "MCPP_CHAT_WORKSPACE": repo}
	hubFile := filepath.Join(lap, "home", "hub.json")

	if code, _, errs := cli(t, env, "connect", url, "--token", token+"x"); code != exitError || !strings.Contains(errs, "refused this machine's token") || !strings.Contains(errs, "nothing was saved") {
		t.Fatalf("a wrong token: %d %s", code, errs)
	}
	if strings.Contains(func() string { _, _, e := cli(t, env, "connect", url, "--token", token+"x"); return e }(), token) {
		t.Fatal("the refusal shows the token")
	}
	if _, err := os.Stat(hubFile); err == nil {
		t.Fatal("a refused connect saved the hub")
	}
	code, out, errs := cli(t, env, "connect", url, "--token", token)
	if code != exitOK || !strings.Contains(out, "connected to the team hub "+url) || !strings.Contains(out, "You are node-dash") {
		t.Fatalf("connect: %d\n%s%s", code, out, errs)
	}
	// A 12-hour token: the hour it ends, not its date alone.
	nearExpiry := regexp.MustCompile(`\d{4}-\d\d-\d\d \d\d:\d\d UTC \(in 1[12]h \d\dmin\)`)
	if !nearExpiry.MatchString(out) {
		t.Errorf("connect does not say the hour the token ends:\n%s", out)
	}
	if info, err := os.Stat(hubFile); err != nil || info.Mode().Perm() != 0o600 {
		t.Fatalf("hub.json: %v %v", info, err)
	}
	if code, out, errs = cli(t, env, "call", "chat_channel_new", `{"name":"gw--dash"}`); code != exitOK || !strings.Contains(out, `"parties":["node-dash"]`) {
		t.Fatalf("call through the hub: %d %s %s", code, out, errs)
	}
	if _, err := os.Stat(filepath.Join(lap, "home", "chat.db")); err == nil {
		t.Fatal("a member made a local database")
	}
	_, out, _ = cli(t, env, "doctor")
	for _, want := range []string{"(a team hub: this machine is a member)", "reachable:   yes", "for node-dash; expires", "party:       node-dash"} {
		if !strings.Contains(out, want) {
			t.Errorf("doctor lacks %q:\n%s", want, out)
		}
	}
	if !nearExpiry.MatchString(out) {
		t.Errorf("doctor does not say the hour the token ends:\n%s", out)
	}
	if strings.Contains(out, token) {
		t.Errorf("doctor shows the token:\n%s", out)
	}
	for _, args := range [][]string{{"log"}, {"search", "x"}, {"parties", "list"}} {
		if code, _, errs := cli(t, env, args...); code == exitOK || !strings.Contains(errs, "member of the team hub") {
			t.Errorf("%v on a member: %d %s", args, code, errs)
		}
	}
	// A folder whose party the token does not hold is refused by the hub,
	// in a sentence: never a silent other party.
	other := filepath.Join(lap, "mesh-gw")
	os.MkdirAll(other, 0o700)
	env["MCPP_CHAT_WORKSPACE"] = other
	if code, out, _ = cli(t, env, "call", "chat_whoami"); code != exitError || !strings.Contains(out, `not bound to the party \"mesh-gw\"`) {
		t.Fatalf("another folder's party: %d %s", code, out)
	}
}

// With a certificate the hub serves TLS, and nothing in plain HTTP.
func TestHubServesTLS(t *testing.T) {
	home := t.TempDir()
	certPEM, keyPEM := selfSigned(t)
	cert, key := filepath.Join(home, "cert.pem"), filepath.Join(home, "key.pem")
	writeFile(t, cert, string(certPEM), 0o600)
	writeFile(t, key, string(keyPEM), 0o600)
	env := map[string]string{"HOME": home, "MCPP_CHAT_HOME": home, "MCPP_CHAT_STORE": "sqlite:" + filepath.Join(home, "hub.db")}
	url := startHubCLI(t, env, "--tls-cert", cert, "--tls-key", key)
	if !strings.HasPrefix(url, "https://") {
		t.Fatalf("hub serve with a certificate says %s", url)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(certPEM)
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	resp, err := client.Get(url + "/healthz")
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("healthz over TLS: %v %v", resp, err)
	}
	resp.Body.Close()
	if resp, err := http.Get(strings.Replace(url, "https://", "http://", 1) + "/healthz"); err == nil && resp.StatusCode == http.StatusOK {
		t.Fatal("the TLS hub answered plain HTTP")
	}
}

// selfSigned is a certificate for 127.0.0.1, valid for an hour.
func selfSigned(t *testing.T) (certPEM, keyPEM []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "hub"},
		NotBefore: time.Now().Add(-time.Minute), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder})
}

// A member's watch lists the messages of its own channels, never
// another party's, though the hub holds them all.
func TestMemberWatchShowsOnlyItsChannels(t *testing.T) {
	hubHome := t.TempDir()
	hubEnv := map[string]string{"HOME": hubHome, "MCPP_CHAT_HOME": hubHome, "MCPP_CHAT_STORE": "sqlite:" + filepath.Join(hubHome, "hub.db")}
	url := startHubCLI(t, hubEnv)
	token := func(party string) string {
		_, out, _ := cli(t, hubEnv, "hub", "token", "issue", "--party", party, "--label", party, "--new-party")
		return strings.SplitN(out, "\n", 2)[0]
	}
	member := func(party string) *hub.Client {
		c, err := hub.NewClient(url, token(party), party)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	say := func(c *hub.Client, tool, args string) {
		t.Helper()
		if _, err := c.Call(context.Background(), tool, json.RawMessage(args), nil); err != nil {
			t.Fatalf("%s %s: %v", tool, args, err)
		}
	}
	gamma, delta := member("gamma"), member("delta")
	say(delta, "chat_whoami", `{}`)
	say(gamma, "chat_channel_new", `{"name":"gamma--delta","parties":["delta"]}`)

	lap := t.TempDir()
	repo := filepath.Join(lap, "alpha")
	os.MkdirAll(repo, 0o700)
	env := map[string]string{"HOME": lap, "MCPP_CHAT_HOME": filepath.Join(lap, "home"), "MCPP_CHAT_WORKSPACE": repo}
	if code, out, errs := cli(t, env, "connect", url, "--token", token("alpha")); code != exitOK {
		t.Fatalf("connect: %d %s %s", code, out, errs)
	}
	if code, out, errs := cli(t, env, "call", "chat_channel_new", `{"name":"alpha--delta","parties":["delta"]}`); code != exitOK {
		t.Fatalf("channel: %d %s %s", code, out, errs)
	}

	ctx, cancel := context.WithCancel(context.Background())
	out, errs := &syncBuffer{}, &lineSignal{first: make(chan struct{})}
	done := make(chan int)
	go func() {
		done <- run(ctx, []string{"watch"}, func(k string) string { return env[k] }, strings.NewReader(""), out, errs)
	}()
	defer func() { cancel(); <-done }()
	select {
	case <-errs.first: // it has noted where the newest message is
	case <-time.After(time.Minute):
		t.Fatalf("watch said nothing: %s", errs.String())
	}
	say(gamma, "chat_say", `{"channel":"gamma--delta","text":"not for alpha"}`)
	say(delta, "chat_say", `{"channel":"alpha--delta","text":"for alpha"}`)
	for deadline := time.Now().Add(30 * time.Second); !strings.Contains(out.String(), "alpha--delta"); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("watch printed nothing for delta's say to alpha: %q (stderr %q)", out.String(), errs.String())
		}
	}
	if strings.Contains(out.String(), "gamma--delta") {
		t.Fatalf("a member's watch shows another party's channel:\n%s", out.String())
	}
}

// syncBuffer is a buffer written by one goroutine and read by another.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// A certificate that cannot be loaded stops hub serve before it says it
// serves, in one sentence; so does a bound of no connections.
func TestHubServeChecksItsSettingsFirst(t *testing.T) {
	home := t.TempDir()
	env := map[string]string{"HOME": home, "MCPP_CHAT_HOME": home, "MCPP_CHAT_STORE": "sqlite:" + filepath.Join(home, "hub.db")}
	missing := filepath.Join(home, "missing.pem")
	for _, args := range [][]string{
		{"--tls-cert", missing, "--tls-key", missing},
		{"--max-conns", "0"},
		{"--max-conns-per-addr", "-1"},
	} {
		code, out, errs := cli(t, env, append([]string{"hub", "serve", "--listen", "127.0.0.1:0"}, args...)...)
		if code == exitOK || out != "" || strings.Count(strings.TrimSpace(errs), "\n") != 0 || !strings.Contains(errs, " — ") {
			t.Errorf("hub serve %v: exit %d\nstdout: %s\nstderr: %s", args, code, out, errs)
		}
	}
}

// The connection bound stays at most half the open-file limit (which
// hub serve raises to its hard limit first).
func TestFitConnsKeepsToHalfTheFileLimit(t *testing.T) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	for _, c := range []struct {
		want  int
		files uint64
		fit   int
	}{{1024, 1 << 20, 1024}, {1024, 1024, 512}, {1024, 0, 1024}, {10, 1, 1}} {
		if got := fitConns(c.want, c.files, log); got != c.fit {
			t.Errorf("fitConns(%d, %d) = %d, want %d", c.want, c.files, got, c.fit)
		}
	}
}

// hub serve and ui say so when they stop: the person sees the service end.
func TestHubAndUISayTheyStopped(t *testing.T) {
	env := isolatedEnv(t)
	env["MCPP_CHAT_STORE"] = "sqlite:" + env["MCPP_CHAT_DB"]
	if code, out, _ := cli(t, env, "call", "chat_whoami"); code != exitOK {
		t.Fatalf("call: %s", out)
	}
	for args, want := range map[string]string{
		"hub serve --listen 127.0.0.1:0": "mcpp-chat hub: stopped; http://127.0.0.1:",
		"ui --listen 127.0.0.1:0":        "mcpp-chat ui: stopped",
	} {
		ctx, cancel := context.WithCancel(context.Background())
		out := &syncBuffer{}
		done := make(chan int, 1)
		go func() {
			done <- run(ctx, strings.Fields(args), func(k string) string { return env[k] }, strings.NewReader(""), out, io.Discard)
		}()
		for end := time.Now().Add(30 * time.Second); !strings.Contains(out.String(), "http://"); time.Sleep(10 * time.Millisecond) {
			if time.Now().After(end) {
				t.Fatalf("%s did not start: %q", args, out.String())
			}
		}
		cancel()
		select {
		case code := <-done:
			if last := strings.TrimSpace(out.String()[strings.LastIndex(strings.TrimSpace(out.String()), "\n")+1:]); code != exitOK || !strings.HasPrefix(last, want) {
				t.Errorf("%s: exit %d, last line %q, want %q…", args, code, last, want)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("%s did not stop", args)
		}
	}
}

// doctor on a member whose hub is down says what to check there, not to
// run doctor.
func TestDoctorOnAMemberWhoseHubIsDown(t *testing.T) {
	hubHome := t.TempDir()
	hubEnv := map[string]string{"HOME": hubHome, "MCPP_CHAT_HOME": hubHome, "MCPP_CHAT_STORE": "sqlite:" + filepath.Join(hubHome, "hub.db")}
	_, out, _ := cli(t, hubEnv, "hub", "token", "issue", "--party", "node-dash", "--label", "laptop", "--new-party")
	token := strings.SplitN(out, "\n", 2)[0]
	ctx, cancel := context.WithCancel(context.Background())
	banner := &syncBuffer{}
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"hub", "serve", "--listen", "127.0.0.1:0"}, func(k string) string { return hubEnv[k] }, strings.NewReader(""), banner, io.Discard)
	}()
	var url string
	for end := time.Now().Add(30 * time.Second); url == ""; time.Sleep(10 * time.Millisecond) {
		if m := regexp.MustCompile(`(http://127\.0\.0\.1:\d+)/mcp`).FindStringSubmatch(banner.String()); m != nil {
			url = m[1]
		} else if time.Now().After(end) {
			t.Fatalf("hub serve said %q", banner.String())
		}
	}
	lap := t.TempDir()
	repo := filepath.Join(lap, "node-dash")
	os.MkdirAll(repo, 0o700)
	env := map[string]string{"HOME": lap, "MCPP_CHAT_HOME": filepath.Join(lap, "home"), "MCPP_CHAT_WORKSPACE": repo}
	if code, out, errs := cli(t, env, "connect", url, "--token", token); code != exitOK {
		t.Fatalf("connect: %d %s %s", code, out, errs)
	}
	cancel()
	<-done
	code, doc, _ := cli(t, env, "doctor")
	if code != exitError || !strings.Contains(doc, "reachable:   no — the team hub at "+url+" does not answer (") ||
		!strings.Contains(doc, "check that mcpp-chat hub serve runs there") || strings.Contains(doc, "mcpp-chat doctor") {
		t.Errorf("doctor with the hub down: exit %d\n%s", code, doc)
	}
}

// hub token issue takes each party once, refuses names that are no
// party's (".", "..", "~") and a lifetime past the bound, saying the
// bound; a refusal writes nothing.
func TestHubTokenIssueRefusesWhatNoTokenCanBe(t *testing.T) {
	home := t.TempDir()
	db := filepath.Join(home, "hub.db")
	env := map[string]string{"HOME": home, "MCPP_CHAT_HOME": home, "MCPP_CHAT_STORE": "sqlite:" + db}
	for _, name := range []string{".", "..", "~"} {
		code, _, errs := cli(t, env, "hub", "token", "issue", "--party", name, "--label", "x", "--new-party")
		if code != exitUsage || !strings.Contains(errs, "a letter or a digit") {
			t.Errorf("--party %s: exit %d, %s", name, code, errs)
		}
	}
	for _, ttl := range []string{"1000000d", "100000w", "1000000h", "3651d"} {
		code, _, errs := cli(t, env, "hub", "token", "issue", "--party", "node-dash", "--label", "x", "--new-party", "--ttl", ttl)
		if code != exitUsage || !strings.Contains(errs, "3650d") {
			t.Errorf("--ttl %s: exit %d, %s — want it refused, naming the longest lifetime", ttl, code, errs)
		}
	}
	if _, err := os.Stat(db); err == nil {
		t.Fatal("refused commands made the store")
	}
	code, out, errs := cli(t, env, "hub", "token", "issue", "--party", "node-dash", "--party", "node-dash", "--label", "twice", "--new-party", "--ttl", "3650d")
	if code != exitOK || !strings.Contains(out, "for node-dash (twice)") {
		t.Fatalf("issue naming a party twice: exit %d\n%s%s", code, out, errs)
	}
	if _, out, _ = cli(t, env, "hub", "token", "list"); strings.Contains(out, "node-dash,node-dash") {
		t.Fatalf("a token for one party named twice is for two:\n%s", out)
	}
}

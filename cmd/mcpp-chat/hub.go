package main

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/mcpp/mcpp-chat/hub"
	"github.com/mcpp/mcpp-chat/internal/config"
	"github.com/mcpp/mcpp-chat/internal/listen"
	"github.com/mcpp/mcpp-chat/internal/redact"
	"github.com/mcpp/mcpp-chat/internal/store"
	"github.com/mcpp/mcpp-chat/internal/wake"
	"github.com/mcpp/mcpp-chat/tools"
)

const hubUsage = `Usage:
  mcpp-chat hub serve [--store URL] [--listen 127.0.0.1:8765] [--tls-cert FILE --tls-key FILE] [--insecure-plain-http] [--max-conns N] [--max-conns-per-addr N]
  mcpp-chat hub token issue --party NAME [--party NAME] --label TEXT [--ttl 90d] [--url HUB_URL] [--new-party]
  mcpp-chat hub token list
  mcpp-chat hub token revoke ID|LABEL

Every hub command takes the store from --store or MCPP_CHAT_STORE:
postgres://USER@HOST/DB for a team, or sqlite:PATH for a small one.
See docs/team.md.
`

// hubCmd is the team hub: serving it, and its tokens.
func hubCmd(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	switch {
	case len(args) > 0 && args[0] == "serve":
		return hubServe(ctx, args[1:], getenv, stdout, stderr)
	case len(args) > 1 && args[0] == "token":
		return hubToken(ctx, args[1], args[2:], getenv, stdout, stderr)
	case len(args) > 0 && (args[0] == "--help" || args[0] == "-h" || args[0] == "help"):
		fmt.Fprint(stdout, hubUsage)
		return exitOK
	}
	fmt.Fprint(stderr, hubUsage)
	return exitUsage
}

// hubStore is the store a hub command names: --store, else
// MCPP_CHAT_STORE. A hub never guesses it from the install.
func hubStore(flag string, getenv func(string) string) (string, error) {
	url := flag
	if url == "" {
		url = getenv("MCPP_CHAT_STORE")
	}
	switch {
	case url == "":
		return "", errors.New("give the hub's store: --store postgres://USER@HOST/DB (or sqlite:PATH), or set MCPP_CHAT_STORE")
	case config.IsPostgres(url):
		return url, nil
	case strings.HasPrefix(url, "sqlite:") && len(url) > len("sqlite:"):
		path, err := filepath.Abs(strings.TrimPrefix(url, "sqlite:"))
		if err != nil {
			return "", fmt.Errorf("the store %q: %w", redact.URL(url), err)
		}
		return "sqlite:" + path, nil
	}
	// A key=value connection string (host=… password=…) is libpq's too,
	// but not a store address here: it is refused, and named without
	// its password, as every store is.
	return "", fmt.Errorf("the store %q is neither postgres://… nor sqlite:PATH — give one of those (a connection string's keys go in a URL's query: postgres://USER@HOST/DB?sslmode=require)", redact.URL(url))
}

// openHubStore opens the store for writing.
func openHubStore(ctx context.Context, url string, o store.Options) (*store.DB, error) {
	if config.IsPostgres(url) {
		return store.OpenPostgres(ctx, url, o)
	}
	return store.OpenWith(ctx, strings.TrimPrefix(url, "sqlite:"), o)
}

const hubServeSynopsis = `hub serve [--store URL] [--listen 127.0.0.1:8765] [--tls-cert FILE --tls-key FILE] [--insecure-plain-http] [--max-conns N] [--max-conns-per-addr N]

Serves the team hub: MCP over streamable HTTP at /mcp (stateless: any
replica answers any request), /healthz, and the member endpoints under /v1/.
Every request needs a token (mcpp-chat hub token issue). Plain HTTP is
served on a loopback address only (for tests, or a TLS proxy in front):
elsewhere give --tls-cert and --tls-key.

Connections are bounded in all and per client address (loopback clients,
such as a proxy on this machine, are bounded in all only); at a bound the
connection idle longest is closed to make room. See docs/team.md.`

// hubGCPercent is hub serve's GOGC unless the environment sets one.
const hubGCPercent = 200

// hubListen is the hub's default address: loopback, behind a proxy.
const hubListen = "127.0.0.1:8765"

func hubServe(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	fs := flags("hub serve", hubServeSynopsis, stderr)
	storeURL := fs.String("store", "", "the team store: postgres://… or sqlite:PATH (default: $MCPP_CHAT_STORE)")
	addr := fs.String("listen", hubListen, "serve on `ADDRESS` (host:port; port 0 picks a free one)")
	cert := fs.String("tls-cert", "", "TLS certificate `FILE` (PEM)")
	key := fs.String("tls-key", "", "TLS private key `FILE` (PEM)")
	plain := fs.Bool("insecure-plain-http", false, "allow plain HTTP on a non-loopback address (tokens cross the network in the clear)")
	defaults := hub.DefaultLimits()
	maxConns := fs.Int("max-conns", defaults.MaxConns, "the most connections open at once (at most half the open-file limit)")
	perAddr := fs.Int("max-conns-per-addr", defaults.MaxConnsPerAddr, "the most connections open at once from one client address (an IPv6 /64)")
	if code, done := parse(fs, args, stdout); done {
		return code
	}
	fail := func(err error) int {
		fmt.Fprintf(stderr, "mcpp-chat hub serve: %v\n", err)
		return exitError
	}
	url, err := hubStore(*storeURL, getenv)
	if err != nil {
		return fail(err)
	}
	if err := checkHubListen(*addr, *cert, *key, *plain); err != nil {
		return fail(err)
	}
	if *maxConns < 1 || *perAddr < 1 {
		return fail(fmt.Errorf("--max-conns %d and --max-conns-per-addr %d must both be counts of connections — give 1 or more (the defaults are %d and %d)", *maxConns, *perAddr, defaults.MaxConns, defaults.MaxConnsPerAddr))
	}
	tlsConf, err := loadTLS(*cert, *key)
	if err != nil {
		return fail(err)
	}
	in, err := locate(getenv, "")
	if err != nil {
		return fail(err)
	}
	if _, set := os.LookupEnv("GOGC"); !set { // the runtime reads it from the real environment
		// A hub's heap is mostly short-lived: each request's JSON and rows.
		// Collected at 3× the live heap instead of 2×, a busy hub spent a
		// third less of its CPU on the collector (docs/performance.md); its
		// caches stay bounded by the hub's limits either way.
		debug.SetGCPercent(hubGCPercent)
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	srv, closeAll, err := newHubServer(ctx, url, in, log)
	if err != nil {
		return fail(err)
	}
	defer closeAll()
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return fail(fmt.Errorf("listen on %s: %w — choose another --listen address", *addr, err))
	}
	srv.Limits = defaults
	srv.Limits.MaxConns = fitConns(*maxConns, openFileLimit(), log)
	srv.Limits.MaxConnsPerAddr = *perAddr
	srv.StopGrace = stopGrace / 2
	defer startClock(ctx, srv.DB, in.cfg, srv.Changes, log)()
	scheme := "http"
	if tlsConf != nil {
		scheme = "https"
	}
	fmt.Fprintf(stdout, "mcpp-chat hub: serving %s on %s://%s/mcp\n", redact.URL(url), scheme, ln.Addr())
	if err := srv.Serve(ctx, ln, tlsConf); err != nil {
		return fail(err)
	}
	fmt.Fprintf(stdout, "mcpp-chat hub: stopped; %s://%s/mcp serves no more (the store keeps everything)\n", scheme, ln.Addr())
	return exitOK
}

// loadTLS reads the certificate and key hub serve is given, before it
// says it serves; nil without them.
func loadTLS(cert, key string) (*tls.Config, error) {
	if cert == "" {
		return nil, nil
	}
	pair, err := tls.LoadX509KeyPair(cert, key)
	if err != nil {
		return nil, fmt.Errorf("the TLS certificate %s and key %s could not be loaded (%v) — give a PEM certificate with --tls-cert and its private key with --tls-key", cert, key, err)
	}
	return &tls.Config{Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12}, nil
}

// fitConns is the connection bound the hub keeps: the one asked for, at
// most half the open-file limit (files), so that the store, the log and
// sockets still closing have the other half.
func fitConns(want int, files uint64, log *slog.Logger) int {
	if files == 0 || uint64(want) <= files/2 {
		return want
	}
	fit := max(int(files/2), 1)
	log.Warn("the open-file limit holds fewer connections than --max-conns: the hub keeps to fewer", "open_file_limit", files, "max_conns", fit)
	return fit
}

// checkHubListen refuses to send tokens in the clear over a network.
func checkHubListen(addr, cert, key string, plain bool) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("--listen %q is not host:port — e.g. --listen %s", addr, hubListen)
	}
	if (cert == "") != (key == "") {
		return errors.New("give both --tls-cert and --tls-key, or neither")
	}
	if cert != "" || plain || loopback(host) {
		return nil
	}
	return fmt.Errorf("--listen %s is not a loopback address, and plain HTTP would carry every token in the clear — give --tls-cert and --tls-key, listen on 127.0.0.1 behind a TLS proxy, or pass --insecure-plain-http on a network you trust", addr)
}

// newHubServer opens the store and everything the hub serves from it.
func newHubServer(ctx context.Context, url string, in install, log *slog.Logger) (*hub.Server, func(), error) {
	manifest, err := tools.LoadManifest()
	if err != nil {
		return nil, nil, err
	}
	db, err := openHubStore(ctx, url, storeOptions(in.cfg))
	if err != nil {
		return nil, nil, err
	}
	var closers []func() error
	closeAll := func() {
		for i := len(closers) - 1; i >= 0; i-- {
			closers[i]()
		}
	}
	closers = append(closers, db.Close)
	var read *store.ReadOnly
	var changes interface {
		Next() <-chan struct{}
		Close() error
	}
	if config.IsPostgres(url) {
		// One pool for the calls, the reads and the token checks: the
		// hub opens storage.max_connections connections and its
		// listener's one, not a pool more for its reads.
		read = db.Reader()
		changes = listen.New(url)
	} else {
		path := db.Path()
		tick := ""
		if in.cfg.Chat.TickFile != "" {
			tick = filepath.Join(filepath.Dir(path), in.cfg.Chat.TickFile)
			db.OnCommit = tickWriter(tick)
		}
		if read, err = store.OpenReadOnly(ctx, path); err == nil {
			changes, err = wake.Watch(path, tick)
		}
	}
	if read != nil {
		read.SetAttention(*attentionOf(in.cfg))
		closers = append(closers, read.Close)
	}
	if changes != nil {
		closers = append(closers, changes.Close)
	}
	if err != nil {
		closeAll()
		return nil, nil, err
	}
	tokens, err := db.Tokens(ctx)
	if err != nil {
		closeAll()
		return nil, nil, err
	}
	closers = append(closers, tokens.Close)
	return &hub.Server{DB: db, Read: read, Tokens: tokens, Manifest: manifest, Config: in.cfg, Env: in.env,
		Changes: changes, Log: log, Version: version}, closeAll, nil
}

const hubTokenSynopsis = `hub token issue --party NAME [--party NAME] --label TEXT [--ttl 90d] [--url HUB_URL] [--store URL] [--new-party]

Makes a token for the named parties and prints it on a line of its own,
then the command a member machine runs. The token is shown only now: the
store keeps only its hash. A party the store does not have yet is refused
(a typo would make a party nobody is), unless --new-party says it is new:
its first call then makes it.`

func hubToken(ctx context.Context, sub string, args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	fs := flags("hub token "+sub, hubTokenSynopsis, stderr)
	storeURL := fs.String("store", "", "the team store: postgres://… or sqlite:PATH (default: $MCPP_CHAT_STORE)")
	var parties multiFlag
	label, ttl, hubURL := new(string), new(string), new(string)
	newParty := new(bool)
	if sub == "issue" {
		fs.Var(&parties, "party", "a party the token acts for (repeat for several)")
		newParty = fs.Bool("new-party", false, "a --party the store does not have yet is new, not a typo: its first call makes it")
		label = fs.String("label", "", "who or what holds it, e.g. alice-laptop or ci")
		ttl = fs.String("ttl", "90d", "how long it is valid: 90d, 12h, 30m")
		hubURL = fs.String("url", getenv("MCPP_CHAT_HUB_URL"), "the hub's public address, for the connect line (default: $MCPP_CHAT_HUB_URL)")
	}
	var named []string
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		named, args = args[:1], args[1:] // revoke's token first, as the usage writes it
	}
	if code, done := parse(fs, args, stdout); done {
		return code
	}
	named = append(named, fs.Args()...)
	fail := func(code int, err error) int {
		fmt.Fprintf(stderr, "mcpp-chat hub token %s: %v\n", sub, err)
		return code
	}
	var lifetime time.Duration
	switch sub {
	case "issue":
		var err error
		if lifetime, err = parseTTL(*ttl); err != nil {
			return fail(exitUsage, err)
		}
		if err := checkTokenParties(parties); err != nil {
			return fail(exitUsage, err)
		}
		if strings.TrimSpace(*label) == "" {
			return fail(exitUsage, errors.New("give --label: who or what holds the token (alice-laptop, ci), so that you can list and revoke it"))
		}
	case "list":
	case "revoke":
		if len(named) != 1 {
			return fail(exitUsage, errors.New("name the token to revoke: its id or label (mcpp-chat hub token list)"))
		}
	default:
		fmt.Fprint(stderr, hubUsage)
		return exitUsage
	}
	url, err := hubStore(*storeURL, getenv)
	if err != nil {
		return fail(exitUsage, err)
	}
	in, err := locate(getenv, "")
	if err != nil {
		return fail(exitError, err)
	}
	if sub == "issue" && !*newParty && !config.IsPostgres(url) && !fileExists(strings.TrimPrefix(url, "sqlite:")) {
		return fail(exitError, unknownParties(parties, nil)) // no store yet: nothing to make for a typo
	}
	db, err := openHubStore(ctx, url, storeOptions(in.cfg))
	if err != nil {
		return fail(exitError, err)
	}
	defer db.Close()
	if sub == "issue" && !*newParty {
		known, err := db.Parties(ctx)
		if err != nil {
			return fail(exitError, err)
		}
		if err := unknownParties(parties, known); err != nil {
			return fail(exitError, err)
		}
	}
	tokens, err := db.Tokens(ctx)
	if err != nil {
		return fail(exitError, err)
	}
	defer tokens.Close()
	switch sub {
	case "issue":
		secret, tok, err := tokens.Issue(ctx, parties, strings.TrimSpace(*label), lifetime)
		if err != nil {
			return fail(exitError, err)
		}
		where := *hubURL
		if where == "" {
			where = "https://YOUR-HUB"
		}
		fmt.Fprintln(stdout, secret)
		fmt.Fprintf(stdout, "# token %s for %s (%s), valid until %s — shown only now; on the member machine run:\n",
			tok.ID, strings.Join(tok.Parties, ", "), tok.Label, tokenExpiry(tok.Expires, time.Now()))
		fmt.Fprintf(stdout, "mcpp-chat connect %s --token %s\n", where, secret)
	case "list":
		list, err := tokens.List(ctx)
		if err != nil {
			return fail(exitError, err)
		}
		printTokens(stdout, list, time.Now())
	case "revoke":
		tok, err := tokens.Revoke(ctx, named[0])
		if err != nil {
			return fail(exitError, err)
		}
		fmt.Fprintf(stdout, "revoked token %s (%s, for %s): every hub refuses it from now on\n", tok.ID, tok.Label, strings.Join(tok.Parties, ", "))
	}
	return exitOK
}

func printTokens(w io.Writer, list []store.Token, now time.Time) {
	if len(list) == 0 {
		fmt.Fprintln(w, "no tokens yet — make one with mcpp-chat hub token issue --party NAME --label TEXT")
		return
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tLABEL\tPARTIES\tEXPIRES\tSTATE")
	for _, t := range list {
		state := "active"
		switch {
		case !t.Revoked.IsZero():
			state = "revoked " + t.Revoked.Format(time.DateOnly)
		case !now.Before(t.Expires):
			state = "expired"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", t.ID, tools.OneLine(t.Label, 40), strings.Join(t.Parties, ","), expiryDay(t.Expires, now), state)
	}
	tw.Flush()
}

// expiryDay is a token's expiry in a column: its day, and for one that
// ends within two days of now the time of day (UTC) too.
func expiryDay(expires, now time.Time) string {
	if d := expires.Sub(now); d > -48*time.Hour && d < 48*time.Hour {
		return expires.UTC().Format("2006-01-02 15:04 UTC")
	}
	return expires.Format(time.DateOnly)
}

// parseTTL reads a lifetime: Go's durations, plus days (90d) and weeks (2w).
func parseTTL(s string) (time.Duration, error) {
	bad := fmt.Errorf("--ttl %q is not a lifetime — write e.g. 90d, 2w, 12h or 30m", s)
	maxDays := int(store.MaxTokenTTL / (24 * time.Hour))
	tooLong := fmt.Errorf("--ttl %s is longer than a token may live, %dd (ten years) — give at most that, and issue a new token when it ends", strings.TrimSpace(s), maxDays)
	s = strings.TrimSpace(s)
	for suffix, days := range map[string]int{"d": 1, "w": 7} {
		if n, ok := strings.CutSuffix(s, suffix); ok {
			v, err := strconv.Atoi(n)
			switch {
			case errors.Is(err, strconv.ErrRange) && !strings.HasPrefix(n, "-"):
				return 0, tooLong
			case err != nil || v <= 0:
				return 0, bad
			case v > maxDays/days: // before multiplying, which would overflow
				return 0, tooLong
			}
			return time.Duration(v*days) * 24 * time.Hour, nil
		}
	}
	d, err := time.ParseDuration(s)
	switch {
	case err != nil && overflows(s):
		return 0, tooLong
	case err != nil || d <= 0:
		return 0, bad
	case d > store.MaxTokenTTL:
		return 0, tooLong
	}
	return d, nil
}

// overflows reports a positive number and a unit that time.ParseDuration
// refused: a duration past its range (about 290 years).
func overflows(s string) bool {
	number := strings.TrimRight(s, "hms")
	_, err := strconv.ParseFloat(number, 64)
	return err == nil && number != s && !strings.HasPrefix(s, "-")
}

// checkTokenParties refuses names no session could have.
func checkTokenParties(parties []string) error {
	if len(parties) == 0 {
		return errors.New("give --party NAME: the party the token acts for (a repository's party name, e.g. node-dash)")
	}
	for _, p := range parties {
		if err := config.CheckPartyName(p); err != nil {
			return fmt.Errorf("--party: %w", err)
		}
		if p == "unnamed" {
			return errors.New(`--party "unnamed" is what a folder without a usable name is called, not a party name — give the repository's party name, e.g. node-dash`)
		}
	}
	return nil
}

// unknownParties refuses a token for parties the store does not have: most
// likely a typo, whose token would make a party nobody works in. It names
// the nearest known name, and the flag for a party that is new.
func unknownParties(named []string, known []store.PartyRecord) error {
	var missing []string
	for _, n := range named {
		if !slices.ContainsFunc(known, func(p store.PartyRecord) bool { return p.Name == n }) {
			missing = append(missing, n)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	hint := ""
	for _, p := range known {
		if editDistance(p.Name, missing[0]) <= 2 {
			hint = fmt.Sprintf(" (did you mean %s?)", p.Name)
			break
		}
	}
	what := "no party " + strings.Join(missing, ", ")
	if len(known) == 0 {
		what += " (the store has no parties yet)"
	}
	return fmt.Errorf("%s%s — check the spelling: a session's party is its repository's folder name; if the party is new, add --new-party (its first call makes it)", what, hint)
}

// editDistance is the number of letters to insert, delete or change to
// turn a into b.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(b)]
}

// multiFlag is a flag given any number of times.
type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, ",") }
func (m *multiFlag) Set(v string) error { *m = append(*m, strings.TrimSpace(v)); return nil }

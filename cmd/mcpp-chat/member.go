package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/mcpp/mcpp-chat/hook"
	"github.com/mcpp/mcpp-chat/hub"
	"github.com/mcpp/mcpp-chat/internal/config"
	"github.com/mcpp/mcpp-chat/internal/store"
	"github.com/mcpp/mcpp-chat/internal/wake"
)

// A member machine reaches the chat through its team hub: serve and call
// forward the tools (tools.Service.Remote), serve keeps the hook's cache
// and the tick file fresh, and watch and the hook ask the hub.

const connectSynopsis = `connect URL --token TOKEN [--workspace DIR]

Makes this machine a member of the team hub at URL: checks the token with
the hub (its parties and expiry, then a chat_whoami as this folder's
party), and only then saves URL and token, readable by you alone, in
hub.json beside config.yaml. serve, call, watch and the hook then use the
hub. MCPP_CHAT_TOKEN, when set, is sent instead of the saved token.`

func connect(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	fs := flags("connect", connectSynopsis, stderr)
	token := fs.String("token", "", "the token the hub's admin gave you (mcc_…)")
	workspace := fs.String("workspace", "", "start folder for identity (default: $MCPP_CHAT_WORKSPACE, $CLAUDE_PROJECT_DIR, cwd)")
	var url []string
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		url, args = args[:1], args[1:] // the address first, as the issue line prints it
	}
	if code, done := parse(fs, args, stdout); done {
		return code
	}
	fail := func(code int, err error) int {
		fmt.Fprintf(stderr, "mcpp-chat connect: %v\n", err)
		return code
	}
	url = append(url, fs.Args()...)
	if len(url) != 1 {
		return fail(exitUsage, errors.New("give the hub's address: mcpp-chat connect https://chat.team.example --token TOKEN"))
	}
	secret := strings.TrimSpace(*token)
	if secret == "" {
		secret = strings.TrimSpace(getenv("MCPP_CHAT_TOKEN"))
	}
	if secret == "" {
		return fail(exitUsage, errors.New("give --token TOKEN: the token the hub's admin made with mcpp-chat hub token issue"))
	}
	in, err := locate(getenv, *workspace)
	if err != nil {
		return fail(exitError, err)
	}
	c, err := hub.NewClient(url[0], secret, "")
	if err != nil {
		return fail(exitUsage, err)
	}
	check, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	info, err := c.TokenInfo(check)
	if err != nil {
		return fail(exitError, fmt.Errorf("%w (nothing was saved)", err))
	}
	c.Party = in.party.Name
	if !slices.Contains(info.Parties, c.Party) {
		c.Party = info.Parties[0]
	}
	res, err := c.Call(check, "chat_whoami", []byte(`{}`), nil)
	if err != nil {
		return fail(exitError, fmt.Errorf("%w (nothing was saved)", err))
	}
	if err := config.SaveHub(in.paths.Hub, config.Hub{URL: c.Base, Token: secret}); err != nil {
		return fail(exitError, err)
	}
	fmt.Fprintf(stdout, "connected to the team hub %s: token %s (%s) acts for %s until %s; saved in %s\n",
		c.Where(), info.ID, info.Label, strings.Join(info.Parties, ", "), tokenExpiry(info.Expires, time.Now()), in.paths.Hub)
	if c.Party != in.party.Name {
		fmt.Fprintf(stdout, "note: this folder's party, %s, is not one of the token's: sessions here would be refused — run them in %s's repository, or ask for a token for %s\n",
			in.party.Name, strings.Join(info.Parties, " or "), in.party.Name)
	}
	fmt.Fprintf(stdout, "\n%s\n", strings.TrimSpace(res.Display))
	if after, err := locate(getenv, *workspace); err == nil && !after.onHub() {
		fmt.Fprintf(stdout, "\nnote: in this shell the store is still %s (MCPP_CHAT_STORE or MCPP_CHAT_DB wins over the hub) — unset it where sessions should use the hub\n", after.where())
	}
	fmt.Fprintf(stdout, "\nserve, call, watch and the hook on this machine now use the hub; register the server once if you have not: %s setup claude (or codex)\n", invocation(getenv))
	return exitOK
}

// followHub keeps, while serve runs, the hook's cache of what waits on
// the party and the tick file in step with the hub. It returns a
// function that stops it. The cache names this process and is fresh only
// while it runs and hears the hub: a poll or a read that fails (the token
// refused, the hub out of reach) and the end of serve take it away, so
// that the hook asks the hub itself rather than answer from it.
func followHub(in install, c *hub.Client, log *slog.Logger, stderr io.Writer, onChange func()) func() {
	w := c.Watch()
	path := hook.HubCachePath(in.paths, c.Party)
	pid := os.Getpid()
	drop := func() {
		if err := hook.DropHubCache(path, pid); err != nil {
			log.Warn("could not take the hook's cache away", "err", err)
		}
	}
	var last hook.HubCache
	status := &hubStatus{c: c, w: stderr, command: "serve",
		meanwhile: "the chat tools fail and the hook stays silent", back: "the chat tools and the hook work again"}
	w.OnError = func(err error) {
		drop()
		status.trouble(err)
	}
	first := true
	w.OnPoll = func(etag string, changed bool) {
		status.fine()
		if changed && !first && in.paths.Tick != "" {
			wake.WriteTick(in.paths.Tick, store.Change{Channel: "*", Author: "hub", CommittedAt: store.Now()})
		}
		if changed {
			onChange()
		}
		first = false
		// The poll and the summary name the same state by the same tag:
		// a summary that could not be read is read again at the next poll.
		if etag != last.ETag {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			s, _, err := c.Pending(ctx, "", hook.NewestShown)
			cancel()
			if err != nil {
				last = hook.HubCache{}
				drop()
				return
			}
			last = hook.HubCache{Party: c.Party, ETag: s.ETag, Pending: s.Pending, ServePID: pid}
		}
		last.CheckedAt = time.Now()
		if err := hook.WriteHubCache(path, last); err != nil {
			log.Warn("could not keep the hook's cache", "err", err)
		}
	}
	w.Start()
	return func() {
		w.Close()
		drop()
	}
}

// hubStatus says on stderr, one line each, when a member's line to its hub
// goes wrong — the token refused (revoked, expired), the hub out of reach —
// and when it works again: a process that keeps polling (watch, serve)
// must not stay silent through an outage, nor speak at every retry.
type hubStatus struct {
	c       *hub.Client
	w       io.Writer
	command string // watch or serve
	// meanwhile is what does not work until the hub answers; back what
	// works again then.
	meanwhile, back string

	mu   sync.Mutex
	kind string // the trouble now, "" for none
}

// trouble is a failed request: said once per kind of trouble.
func (s *hubStatus) trouble(err error) {
	kind, sentence := s.c.Trouble(err)
	s.mu.Lock()
	defer s.mu.Unlock()
	if kind == s.kind {
		return
	}
	s.kind = kind
	fix := "it keeps trying, and says so when the hub is back"
	if kind == "token" {
		fix = fmt.Sprintf("once you have a new token, run: mcpp-chat connect %s --token TOKEN (this %s picks it up); it keeps trying", s.c.Where(), s.command)
	}
	fmt.Fprintf(s.w, "mcpp-chat %s: %s — %s; %s\n", s.command, sentence, s.meanwhile, fix)
}

// fine is a request the hub answered: said once after trouble.
func (s *hubStatus) fine() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.kind == "" {
		return
	}
	s.kind = ""
	fmt.Fprintf(s.w, "mcpp-chat %s: the team hub at %s answers again — %s\n", s.command, s.c.Where(), s.back)
}

// hubHookBudget bounds the hook's question to the hub, well inside the
// hook's own deadline.
const hubHookBudget = 600 * time.Millisecond

// hookHubPending is the hook's way to ask the hub what waits on party.
func hookHubPending(env config.Env) func(ctx context.Context, paths config.Paths, party, etag string) (store.Pending, string, bool, error) {
	return func(ctx context.Context, paths config.Paths, party, etag string) (store.Pending, string, bool, error) {
		c, err := memberClient(env, paths, party)
		if err != nil {
			return store.Pending{}, "", false, err
		}
		ctx, cancel := context.WithTimeout(ctx, hubHookBudget)
		defer cancel()
		s, changed, err := c.Pending(ctx, etag, hook.NewestShown)
		return s.Pending, s.ETag, changed, err
	}
}

// hookHubChanges follows the hub for the hook's --wait.
func hookHubChanges(env config.Env) func(paths config.Paths, party string) hook.Changes {
	return func(paths config.Paths, party string) hook.Changes {
		c, err := memberClient(env, paths, party)
		if err != nil {
			return neverChanges{}
		}
		return c.Watch()
	}
}

// neverChanges is a hub the waiter cannot reach: it never wakes.
type neverChanges struct{}

func (neverChanges) Next() <-chan struct{} { return nil }
func (neverChanges) Close() error          { return nil }

// memberClient is a client of the member's hub acting for party.
func memberClient(env config.Env, paths config.Paths, party string) (*hub.Client, error) {
	saved, _, err := config.LoadHub(paths.Hub)
	if err != nil {
		return nil, err
	}
	token := config.HubToken(env, saved)
	if token == "" {
		return nil, errors.New("no token for the team hub")
	}
	c, err := hub.NewClient(paths.Store, token, party)
	if err != nil {
		return nil, err
	}
	// A token refused may have been replaced by mcpp-chat connect since.
	c.Renew = func() string {
		saved, _, err := config.LoadHub(paths.Hub)
		if err != nil {
			return ""
		}
		return config.HubToken(env, saved)
	}
	return c, nil
}

// hubArrivals is a member's watch: the messages the hub lists.
type hubArrivals struct {
	c       *hub.Client
	all     bool
	after   int64
	started bool
}

// start notes the newest message; a hub out of reach is asked again at
// the next change, and what came before that does not show.
func (s *hubArrivals) start(ctx context.Context) error {
	page, err := s.c.Arrivals(ctx, -1, s.all)
	s.after, s.started = page.Newest, err == nil
	return err
}

func (s *hubArrivals) next(ctx context.Context) ([]string, error) {
	if !s.started {
		return nil, s.start(ctx)
	}
	var lines []string
	for {
		page, err := s.c.Arrivals(ctx, s.after, s.all)
		if err != nil {
			return lines, err
		}
		s.after = page.Newest
		for _, a := range page.Arrivals {
			lines = append(lines, arrivalLine(a, !s.all))
		}
		if !page.More {
			return lines, nil
		}
	}
}

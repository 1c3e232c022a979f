// Package hub is the team hub: sessions on other machines reach one store
// through it over HTTP, each with a token bound to its party. The hub is
// stateless (any replica answers any request, a restart strands nobody):
// MCP at /mcp, a summary for the hook at /v1/hook, a long-poll at /v1/wait,
// what a member's hook told its sessions at /v1/told, the token's own
// description at /v1/token, and /healthz. The member side
// (Client) is what a member machine's serve, call and hook use.
package hub

import (
	"cmp"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpp/mcpp-chat/internal/config"
	"github.com/mcpp/mcpp-chat/internal/store"
	"github.com/mcpp/mcpp-chat/internal/wake"
	"github.com/mcpp/mcpp-chat/tools"
)

// Changes says when the store may have changed: a team store's listener,
// or the watcher of a database file.
type Changes interface {
	Next() <-chan struct{}
}

// keyedChanges are Changes that can wake a waiter only at the commits
// that concern it (listen.Listener on a team store).
type keyedChanges interface {
	NextOf(keys []int64) (<-chan struct{}, func())
}

// nextFor is a channel closed at the next change that may concern party,
// and a stop to call once done waiting on it: on a team store only the
// commits in its channels, or its own, wake it (store.WaitKeys);
// otherwise every move of the generation.
func (s *Server) nextFor(ctx context.Context, party string) (<-chan struct{}, func()) {
	if keyed, ok := s.Changes.(keyedChanges); ok {
		keys, err := s.DB.WaitKeys(ctx, store.Identity{Name: party, Team: true})
		if err == nil && keys != nil {
			return keyed.NextOf(keys)
		}
	}
	return s.gen.next(), func() {}
}

// Server is one hub process. Its fields are its dependencies; Handler
// serves them.
type Server struct {
	DB       *store.DB
	Read     *store.ReadOnly
	Tokens   *store.Tokens
	Manifest tools.Manifest
	Config   config.Config
	Env      config.Env
	Changes  Changes
	Log      *slog.Logger
	Version  string
	// MaxWait bounds a /v1/wait; 0 means DefaultMaxWait.
	MaxWait time.Duration
	// Limits bound what any client gets of the hub.
	Limits Limits
	// StopGrace is how long Serve lets calls in flight finish when its
	// context ends; 0 means a second.
	StopGrace time.Duration

	gen generation
	mu  sync.Mutex
	// parties are the parties' MCP servers, views what each party sees
	// at the newest state one of its requests asked about (seenAt).
	parties *lru[string, *partyServer]
	views   *lru[string, *seenAt]
	// seenReads counts the reads of what a party sees (for tests).
	seenReads atomic.Int64
	// open are the requests under way, for a revoke to end them.
	open openRequests
	// refusals log refused requests as a rate.
	refusals *refusalLog
}

// partyServer is the tool service and MCP server of one party: tools act
// as the party the token is bound to, and nothing in a call can change it.
type partyServer struct {
	svc *tools.Service
	mcp *mcp.Server
}

// DefaultMaxWait is the longest /v1/wait: inside every proxy's and
// client's idle limit.
const DefaultMaxWait = 50 * time.Second

// Handler is the hub's HTTP surface. ctx bounds the hub's life: waits end
// with it.
func (s *Server) Handler(ctx context.Context) http.Handler {
	lim := s.Limits.orDefaults()
	s.parties = newLRU[string, *partyServer](lim.MaxParties, math.MaxInt)
	s.views = newLRU[string, *seenAt](lim.MaxParties, lim.CacheBytes)
	s.gen.boot = randomHex(4)
	s.gen.state = s.DB.State
	s.gen.look()
	go s.gen.follow(ctx, s.Changes)
	go s.followRevokes(ctx)
	s.refusals = newRefusalLog(s.log())
	go s.refusals.run(ctx)
	mcpHandler := mcp.NewStreamableHTTPHandler(func(r *http.Request) *mcp.Server {
		return s.serverFor(partyOf(r.Context())).mcp
	}, &mcp.StreamableHTTPOptions{
		Stateless: true,
		// Every request carries a token; a proxy in front may forward
		// any Host.
		DisableLocalhostProtection: true,
		Logger:                     s.sdkLog(),
	})
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", s.healthz)
	mux.Handle("/mcp", s.authed(s.guardAuthor(mcpHandler)))
	mux.Handle("GET /v1/hook", s.authed(http.HandlerFunc(s.hook)))
	mux.Handle("GET /v1/wait", s.authed(s.waitHandler(ctx)))
	mux.Handle("GET /v1/token", s.tokenOnly(http.HandlerFunc(s.token)))
	mux.Handle("GET /v1/arrivals", s.authed(http.HandlerFunc(s.arrivals)))
	mux.Handle("POST /v1/told", s.authed(http.HandlerFunc(s.told)))
	mux.Handle("GET /v1/claims", s.authed(http.HandlerFunc(s.claims)))
	mux.Handle("POST /v1/renew", s.authed(http.HandlerFunc(s.renew)))
	mux.HandleFunc("/", notHere)
	return s.deadlines(mux)
}

// notHere answers a path the hub does not serve — such as the OAuth
// discovery and registration a client tries once /mcp asked it for a token
// — with what the hub is and how to connect to it, not a bare 404. Claude
// Code shows the sentence with every "/mcp" in it redacted (as a path that
// may hold a secret; the server's own URL becomes its bare address), so it
// names the endpoint's path in words.
func notHere(w http.ResponseWriter, r *http.Request) {
	scheme := "http"
	if r.TLS != nil || r.Header.Get("X-Forwarded-Proto") == "https" {
		scheme = "https"
	}
	writeJSON(w, http.StatusNotFound, map[string]string{"error": fmt.Sprintf(
		"nothing at %s: this is an mcpp-chat team hub, and it takes a token, not OAuth — register it with: "+
			`claude mcp add --transport http chat URL --header "Authorization: Bearer TOKEN", `+
			"where URL is %s://%s with the path mcp after a slash (the hub's admin makes a TOKEN with mcpp-chat hub token issue)",
		r.URL.Path, scheme, r.Host)})
}

// serverFor is the party's MCP server, made at its first request.
func (s *Server) serverFor(party string) *partyServer {
	s.mu.Lock()
	defer s.mu.Unlock()
	if ps, ok := s.parties.get(party); ok {
		return ps
	}
	svc := &tools.Service{DB: s.DB, Config: s.Config, Manifest: s.Manifest, Env: s.Env, Log: s.log(), Changes: s.Changes,
		Me: store.Identity{Name: party, Workspace: store.TeamWorkspace(party), Team: true}}
	srv := tools.NewMCPServer(svc, s.Version, s.sdkLog())
	srv.AddReceivingMiddleware(endWithToken)
	ps := &partyServer{svc: svc, mcp: srv}
	s.parties.put(party, ps, 0)
	return ps
}

// healthz says whether the hub can reach its store, within a second.
func (s *Server) healthz(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), time.Second)
	defer cancel()
	if _, err := s.Read.Version(ctx); err != nil {
		s.log().Warn("the store is unreachable", "err", err)
		writeJSON(w, http.StatusServiceUnavailable, map[string]any{"ok": false, "error": "the hub cannot reach its store"})
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"ok": true, "version": s.Version})
}

// hook is the hook's summary of what waits on the party, with its
// newest ?newest= unread messages per channel. Its ETag names what the
// party sees: a poll that sends it back while that is unchanged gets 304,
// and a poll while the store is unchanged costs no read.
func (s *Server) hook(w http.ResponseWriter, r *http.Request) {
	newest, err := intParam(r, "newest", 1, 1, MaxNewest)
	if err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": fmt.Sprintf("give ?newest= as a number from 1 to %d", MaxNewest)})
		return
	}
	e, ok := s.seenOr503(w, r)
	if !ok {
		return
	}
	w.Header().Set("ETag", e.tag)
	w.Header().Set("Cache-Control", "no-cache")
	if r.Header.Get("If-None-Match") == e.tag {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	body, err := json.Marshal(newestOnly(e.seen.Pending, newest))
	if err != nil {
		writeJSON(w, http.StatusInternalServerError, map[string]any{"error": "the hub could not encode the summary"})
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Write(body)
}

// seenOr503 is what the request's party sees, or false once it has
// answered that the store could not be read.
func (s *Server) seenOr503(w http.ResponseWriter, r *http.Request) (*seenAt, bool) {
	party := partyOf(r.Context())
	e, err := s.seen(r.Context(), party)
	switch {
	case err == nil:
		return e, true
	case r.Context().Err() == nil:
		s.log().Warn("reading what a party sees failed", "party", party, "err", err)
		writeJSON(w, http.StatusServiceUnavailable, map[string]any{"error": "the hub could not read its store — try again shortly"})
	}
	return nil, false
}

// intParam reads the query parameter name as a whole number from lo to
// hi; def when it is absent.
func intParam(r *http.Request, name string, def, lo, hi int) (int, error) {
	raw := r.URL.Query().Get(name)
	if raw == "" {
		return def, nil
	}
	v, err := strconv.Atoi(raw)
	if err != nil || v < lo || v > hi {
		return 0, fmt.Errorf("?%s=%q is out of range", name, raw)
	}
	return v, nil
}

// waitHandler holds a request until what the party sees changes (its
// ETag moves past the one sent in ?etag=) or ?timeout= seconds pass, and
// answers the ETag as it is then. On a team store only the commits that
// concern the party wake the handler (nextFor); elsewhere any change
// does, and the handler finds the party's ETag where it was and waits on.
func (s *Server) waitHandler(ctx context.Context) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		wait, err := s.waitParam(r)
		if err != nil {
			writeJSON(w, http.StatusBadRequest, map[string]string{"error": err.Error()})
			return
		}
		timer := time.NewTimer(wait)
		defer timer.Stop()
		sent := r.URL.Query().Get("etag")
		party := partyOf(r.Context())
		life := authOf(r.Context()).life // ends with the client, or the token
		stop := func() {}
		defer func() { stop() }() // the last look's wish to be woken
		for {
			var next <-chan struct{}
			next, stop = s.nextFor(r.Context(), party)
			e, ok := s.seenOr503(w, r)
			if !ok {
				return
			}
			if e.tag != sent {
				writeJSON(w, http.StatusOK, map[string]any{"etag": e.tag, "changed": true})
				return
			}
			// A claim the party sees runs out without a commit: look
			// again then (view.go).
			var due <-chan time.Time
			if d := e.untilClaimsEnd(); d > 0 {
				due = time.After(d) // collected once unreachable, run or not
			}
			select {
			case <-due:
			case <-next:
			case <-timer.C:
				writeJSON(w, http.StatusOK, map[string]any{"etag": e.tag, "changed": false})
				return
			case <-life.Done():
				return // the gate answers 401 if the token ended it
			case <-ctx.Done():
				writeJSON(w, http.StatusOK, map[string]any{"etag": e.tag, "changed": false})
				return
			}
			stop()
		}
	})
}

// maxWait is the longest /v1/wait.
func (s *Server) maxWait() time.Duration { return cmp.Or(s.MaxWait, DefaultMaxWait) }

// waitParam is how long a wait may last: ?timeout= seconds, at most
// maxWait, which is also what no timeout means.
func (s *Server) waitParam(r *http.Request) (time.Duration, error) {
	raw := r.URL.Query().Get("timeout")
	if raw == "" {
		return s.maxWait(), nil
	}
	secs, err := strconv.ParseFloat(raw, 64)
	if err != nil || math.IsNaN(secs) || secs <= 0 {
		return 0, fmt.Errorf("give ?timeout= as a number of seconds above 0 (at most %d are waited)", int(s.maxWait().Seconds()))
	}
	if secs >= s.maxWait().Seconds() {
		return s.maxWait(), nil
	}
	return time.Duration(secs * float64(time.Second)), nil
}

// Arrivals is a page of new messages for a member's watch.
type Arrivals struct {
	Arrivals []store.Arrival `json:"arrivals"`
	// Newest is where the next page starts (its ?after=).
	Newest int64 `json:"newest"`
	// More says the next page has messages already.
	More bool `json:"more,omitempty"`
}

// arrivals lists the messages after ?after= (a message id; -1 only says
// where the newest is) that wait on the party, or with ?all=1 every one
// of its channels and items: never another channel's, and Newest names
// only messages the party can read.
func (s *Server) arrivals(w http.ResponseWriter, r *http.Request) {
	after, err := strconv.ParseInt(r.URL.Query().Get("after"), 10, 64)
	if err != nil || after < -1 {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "give ?after= as a message id (-1 for none)"})
		return
	}
	scope := store.WaitingOn
	switch r.URL.Query().Get("all") {
	case "", "0":
	case "1":
		scope = store.Readable
	default:
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "give ?all=1 for every message of your channels, or leave it out for those that wait on you"})
		return
	}
	id := store.Identity{Name: partyOf(r.Context()), Team: true}
	page, err := s.Read.ArrivalsFor(r.Context(), id, after, scope, maxArrivals)
	if err != nil {
		s.log().Warn("listing arrivals failed", "err", err)
		writeJSON(w, http.StatusServiceUnavailable, map[string]string{"error": "the hub could not read its store"})
		return
	}
	writeJSON(w, http.StatusOK, Arrivals{Arrivals: page.Arrivals, Newest: page.Newest, More: page.More})
}

// TokenInfo is what /v1/token tells a holder about its token.
type TokenInfo struct {
	ID      string    `json:"id"`
	Label   string    `json:"label"`
	Parties []string  `json:"parties"`
	Party   string    `json:"party"`
	Expires time.Time `json:"expires"`
}

func (s *Server) token(w http.ResponseWriter, r *http.Request) {
	tok := tokenOf(r.Context())
	writeJSON(w, http.StatusOK, TokenInfo{ID: tok.ID, Label: tok.Label, Parties: tok.Parties, Party: partyOf(r.Context()), Expires: tok.Expires})
}

func (s *Server) log() *slog.Logger {
	if s.Log != nil {
		return s.Log
	}
	return slog.Default()
}

// sdkLog is the log the MCP SDK's server writes to: its warnings and
// errors only. It logs every session's start and end at INFO, and on a
// stateless hub every request is a session: three lines a call.
func (s *Server) sdkLog() *slog.Logger {
	return slog.New(atLeast{s.log().Handler(), slog.LevelWarn})
}

// atLeast drops records below its level.
type atLeast struct {
	slog.Handler
	level slog.Level
}

func (h atLeast) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= h.level && h.Handler.Enabled(ctx, l)
}

func (h atLeast) WithAttrs(attrs []slog.Attr) slog.Handler {
	return atLeast{h.Handler.WithAttrs(attrs), h.level}
}

func (h atLeast) WithGroup(name string) slog.Handler {
	return atLeast{h.Handler.WithGroup(name), h.level}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

// generation is the hub's name for the store's state, moved at every
// change Changes reports: the store's own state (its change counter on
// PostgreSQL, the file's fingerprint on SQLite), so that replicas agree
// on it, read once per change rather than once per request. When the
// store cannot tell, a count of this process's wakes stands in.
type generation struct {
	boot  string
	state func() (string, bool)
	n     atomic.Int64
	name  atomic.Pointer[string]
	moved wake.Broadcast
}

// follow moves the state at every change until ctx ends. It looks only
// once it holds the channel for the following change: a change announced
// in between is then already committed when it looks, so whoever reads
// under the new name sees it.
func (g *generation) follow(ctx context.Context, changes Changes) {
	ch := changes.Next()
	for {
		select {
		case <-ch:
		case <-ctx.Done():
			return
		}
		ch = changes.Next()
		if g.look() {
			g.moved.Notify()
		}
	}
}

// settle is how long look waits for a state the store can vouch for: a
// SQLite file's fingerprint is not trusted for a few milliseconds after a
// write, and naming each wake of that moment anew would make every
// follower read again several times per write.
const settle = 100 * time.Millisecond

// look names the state as the store has it now, and reports whether the
// name moved: a wake that found the state as it was moves nothing.
func (g *generation) look() bool {
	fp, ok := g.state()
	for deadline := time.Now().Add(settle); !ok && time.Now().Before(deadline); {
		time.Sleep(5 * time.Millisecond)
		fp, ok = g.state()
	}
	name := fmt.Sprintf("%s-%d", g.boot, g.n.Add(1))
	if ok {
		sum := sha256.Sum256([]byte(fp))
		name = hex.EncodeToString(sum[:12])
	}
	old := g.name.Swap(&name)
	return old == nil || *old != name
}

// next is a channel closed at the next move: taken before a look, so that
// a move during the look is not missed.
func (g *generation) next() <-chan struct{} { return g.moved.Next() }

// current is the state's name now.
func (g *generation) current() string { return *g.name.Load() }

func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b) // never fails (crypto/rand)
	return hex.EncodeToString(b)
}

// Package hub is the team hub: sessions on other machines reach one store
// through it over HTTP, each with a token bound to its party. The hub is
// stateless (any replica answers any request, a restart strands nobody):
// MCP at /mcp, a summary for the hook at /v1/hook, a long-poll at /v1/wait,
// the token's own description at /v1/token, and /healthz. The member side
// (Client) is what a member machine's serve, call and hook use.
package hub

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
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

	mu      sync.Mutex
	parties map[string]*partyServer
	gen     generation
	// summaries holds each party's newest hook summary (summary).
	summaries sync.Map
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
	s.parties = map[string]*partyServer{}
	s.gen.boot = randomHex(4)
	s.gen.state = s.DB.State
	s.gen.look()
	go s.gen.follow(ctx, s.Changes)
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
	return mux
}

// serverFor is the party's MCP server, made at its first request.
func (s *Server) serverFor(party string) *partyServer {
	s.mu.Lock()
	defer s.mu.Unlock()
	if ps, ok := s.parties[party]; ok {
		return ps
	}
	svc := &tools.Service{DB: s.DB, Config: s.Config, Manifest: s.Manifest, Env: s.Env, Log: s.log(), Changes: s.Changes,
		Me: store.Identity{Name: party, Workspace: store.TeamWorkspace(party), Team: true}}
	srv := tools.NewMCPServer(svc, s.Version, s.sdkLog())
	srv.AddReceivingMiddleware(endWithRequest)
	ps := &partyServer{svc: svc, mcp: srv}
	s.parties[party] = ps
	return ps
}

// endWithRequest ends a call when its HTTP request ends (the client went
// away): the SDK ends a stateless request's call only with the protocol
// versions that say so, and a chat_wait nobody reads would otherwise
// hold the hub for its seconds.
func endWithRequest(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		httpCtx, ok := ctx.Value(requestKey).(context.Context)
		if !ok {
			return next(ctx, method, req)
		}
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		defer context.AfterFunc(httpCtx, cancel)()
		return next(ctx, method, req)
	}
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

// hook is the hook's summary of what waits on the party. Its ETag is the
// hub's view of the store's state, moved by every change it is told of:
// a poll that sends it back while nothing changed gets 304 without a read.
func (s *Server) hook(w http.ResponseWriter, r *http.Request) {
	party := partyOf(r.Context())
	tag := s.gen.etag(party)
	w.Header().Set("ETag", tag)
	w.Header().Set("Cache-Control", "no-cache")
	if r.Header.Get("If-None-Match") == tag {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	newest, _ := strconv.Atoi(r.URL.Query().Get("newest"))
	newest = max(newest, 1)
	key := fmt.Sprintf("%s\x00%d", party, newest)
	if m, ok := s.summaries.Load(key); ok && m.(summary).tag == tag {
		writeBody(w, m.(summary).body)
		return
	}
	p, err := s.Read.PendingFor(r.Context(), store.Identity{Name: party, Team: true}, newest)
	switch {
	case err == nil:
	case errors.Is(err, store.ErrUnknownParty):
		p = store.Pending{Party: party, Channels: []store.ChannelPending{}, WaitingOnMe: []store.WaitingOnMe{}, WaitingOnPeer: []store.WaitingOnPeer{}}
	default:
		s.log().Warn("the hook's summary failed", "party", party, "err", err)
		writeJSON(w, http.StatusServiceUnavailable, map[string]any{"error": "the hub could not read its store"})
		return
	}
	body, err := json.Marshal(p)
	if err != nil {
		writeJSON(w, http.StatusInternalServerError, map[string]any{"error": "the hub could not encode the summary"})
		return
	}
	s.summaries.Store(key, summary{tag: tag, body: body})
	writeBody(w, body)
}

// summary is the newest summary a party's hook got, and the state it was
// read at: every session of the party (each serve follows the hub) asks
// for it after each change, and all but the first get it from memory.
type summary struct {
	tag  string
	body []byte
}

func writeBody(w http.ResponseWriter, body []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.Write(body)
}

// waitHandler holds a request until the store changes (its ETag moves
// past the one sent in ?etag=) or ?timeout= seconds pass, and answers
// the ETag as it is then.
func (s *Server) waitHandler(ctx context.Context) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		party := partyOf(r.Context())
		limit := s.MaxWait
		if limit <= 0 {
			limit = DefaultMaxWait
		}
		secs, err := strconv.ParseFloat(r.URL.Query().Get("timeout"), 64)
		if err != nil || secs <= 0 {
			secs = limit.Seconds()
		}
		timer := time.NewTimer(min(time.Duration(secs*float64(time.Second)), limit))
		defer timer.Stop()
		for {
			next := s.gen.next()
			tag := s.gen.etag(party)
			if tag != r.URL.Query().Get("etag") {
				writeJSON(w, http.StatusOK, map[string]any{"etag": tag, "changed": true})
				return
			}
			select {
			case <-next:
			case <-timer.C:
				writeJSON(w, http.StatusOK, map[string]any{"etag": tag, "changed": false})
				return
			case <-r.Context().Done():
				return
			case <-ctx.Done():
				writeJSON(w, http.StatusOK, map[string]any{"etag": tag, "changed": false})
				return
			}
		}
	})
}

// Arrivals is a page of new messages for a member's watch.
type Arrivals struct {
	Arrivals []store.Arrival `json:"arrivals"`
	Newest   int64           `json:"newest"`
}

// arrivals lists the messages after ?after= (a message id; -1 only says
// where the newest is) that wait on the party, or with ?all=1 every one.
func (s *Server) arrivals(w http.ResponseWriter, r *http.Request) {
	after, err := strconv.ParseInt(r.URL.Query().Get("after"), 10, 64)
	if err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "give ?after= as a message id (-1 for none)"})
		return
	}
	id := store.Identity{Name: partyOf(r.Context()), Team: true}
	if r.URL.Query().Get("all") == "1" {
		id = store.Identity{}
	}
	found, newest, err := s.Read.ArrivalsFor(r.Context(), id, after)
	if err != nil {
		s.log().Warn("listing arrivals failed", "err", err)
		writeJSON(w, http.StatusServiceUnavailable, map[string]string{"error": "the hub could not read its store"})
		return
	}
	writeJSON(w, http.StatusOK, Arrivals{Arrivals: found, Newest: newest})
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

// etag names the state a party's summary was read at. It is quoted, as
// HTTP's entity tags are.
func (g *generation) etag(party string) string {
	return fmt.Sprintf("%q", *g.name.Load()+"-"+party)
}

func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b) // never fails (crypto/rand)
	return hex.EncodeToString(b)
}

package hub

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpp/mcpp-chat/internal/store"
)

// A revoke ends what its token holds open. A request's token is checked
// as its headers arrive, again once its body is in (guardAuthor), and
// again before its answer leaves (gate); a request still open when its
// token is revoked or expires ends at once, answering 401: the hub looks
// once a second whether any token was revoked (Tokens.Stamp, one read
// whatever is open), and only then checks the tokens of its open requests.

// revokeLook is how often a hub with requests open looks for a revoke.
const revokeLook = time.Second

// checkTimeout bounds a check of a token already verified.
const checkTimeout = 5 * time.Second

// openRequests are the requests under way, by their token's id.
type openRequests struct {
	mu      sync.Mutex
	byToken map[string]map[*openRequest]struct{}
}

type openRequest struct{ end context.CancelCauseFunc }

// add notes a request holding the token id, ended by end; the function
// it returns forgets it.
func (o *openRequests) add(id string, end context.CancelCauseFunc) func() {
	if id == "" {
		return func() {}
	}
	req := &openRequest{end: end}
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.byToken == nil {
		o.byToken = map[string]map[*openRequest]struct{}{}
	}
	if o.byToken[id] == nil {
		o.byToken[id] = map[*openRequest]struct{}{}
	}
	o.byToken[id][req] = struct{}{}
	return func() {
		o.mu.Lock()
		defer o.mu.Unlock()
		delete(o.byToken[id], req)
		if len(o.byToken[id]) == 0 {
			delete(o.byToken, id)
		}
	}
}

// tokens are the ids of the tokens open requests hold.
func (o *openRequests) tokens() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	ids := make([]string, 0, len(o.byToken))
	for id := range o.byToken {
		ids = append(ids, id)
	}
	return ids
}

// end ends every open request holding the token id, with cause.
func (o *openRequests) end(id string, cause error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for req := range o.byToken[id] {
		req.end(cause)
	}
}

// followRevokes ends the open requests whose token was revoked, until ctx
// ends. Each look costs one read while requests are open, none while
// none is: a request is noted before its token is checked, so one
// verified before a revoke is open at the first look after it, and that
// look's stamp differs from the one before the revoke.
func (s *Server) followRevokes(ctx context.Context) {
	tick := time.NewTicker(revokeLook)
	defer tick.Stop()
	last := ""
	for {
		select {
		case <-tick.C:
		case <-ctx.Done():
			return
		}
		last = s.endRevoked(ctx, last)
	}
}

// endRevoked ends the open requests whose token was revoked or expired,
// if the revokes' stamp moved past last; it returns the stamp now.
func (s *Server) endRevoked(ctx context.Context, last string) string {
	ids := s.open.tokens()
	if len(ids) == 0 {
		return last
	}
	stamp, err := s.Tokens.Stamp(ctx)
	if err != nil || stamp == last {
		return last // a store out of reach is logged by the requests that need it
	}
	for _, id := range ids {
		// An unknown id is a made-up token's, which its own check
		// refuses: ended now, its check would fail as if the store
		// were out of reach.
		if _, err := s.Tokens.Check(ctx, id); errors.Is(err, store.ErrTokenRevoked) || errors.Is(err, store.ErrTokenExpired) {
			s.open.end(id, err)
		}
	}
	return stamp
}

// tokenEnded is why the request's token no longer holds, when a revoke
// or its expiry ended the request; else nil.
func tokenEnded(a *authorised) error {
	if err := context.Cause(a.life); refusedToken(err) {
		return err
	}
	return nil
}

// stillValid is why the request's token no longer holds, or nil: the
// cause that ended the request, else the store's word now. A store out of
// reach lets the request go on (its token held when it came) and is
// logged.
func (s *Server) stillValid(a *authorised) error {
	if err := tokenEnded(a); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(a.life), checkTimeout)
	defer cancel()
	_, err := s.Tokens.Check(ctx, a.tok.ID)
	if refusedToken(err) {
		return err
	}
	if err != nil {
		s.log().Warn("a token could not be checked again", "token_id", a.tok.ID, "err", err)
	}
	return nil
}

// errTokenEnded is what a handler's write gets once its answer is refused.
var errTokenEnded = errors.New("the request's token no longer holds: its answer was refused")

// gate is the answer of a request with a valid token. The token is
// checked again before the first byte of the answer leaves; a request
// whose token no longer holds then, or that a revoke ended with nothing
// answered, answers 401 in place of what its handler would have, and
// nothing else leaves.
type gate struct {
	http.ResponseWriter
	s *Server
	r *http.Request

	mu      sync.Mutex
	begun   bool // the answer, or its refusal, has begun to leave
	refused bool
}

func (g *gate) WriteHeader(code int) {
	if g.pass() {
		g.ResponseWriter.WriteHeader(code)
	}
}

func (g *gate) Write(p []byte) (int, error) {
	if !g.pass() {
		return 0, errTokenEnded
	}
	return g.ResponseWriter.Write(p)
}

// FlushError is what http.ResponseController flushes: a flush sends the
// header, so it passes the gate first.
func (g *gate) FlushError() error {
	if !g.pass() {
		return errTokenEnded
	}
	return http.NewResponseController(g.ResponseWriter).Flush()
}

func (g *gate) Flush() { g.FlushError() }

// Unwrap lets http.ResponseController reach the connection's deadlines.
func (g *gate) Unwrap() http.ResponseWriter { return g.ResponseWriter }

// pass reports whether the answer may leave, checking the token before
// its first byte.
func (g *gate) pass() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.begun {
		return !g.refused
	}
	g.begun = true
	if err := g.s.stillValid(authOf(g.r.Context())); err != nil {
		g.refuseLocked(err)
		return false
	}
	return true
}

// refuse answers 401 for err in place of the answer, if none has begun;
// either way nothing more leaves.
func (g *gate) refuse(err error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.begun {
		g.refused = true
		return
	}
	g.begun = true
	g.refuseLocked(err)
}

func (g *gate) refuseLocked(err error) {
	g.refused = true
	// What the handler meant to send goes too (an ETag, say).
	clear(g.ResponseWriter.Header())
	g.s.refuse(g.ResponseWriter, g.r, http.StatusUnauthorized, tokenOf(g.r.Context()).ID, err.Error())
}

// end is the handler done: one that a revoke or the expiry ended before
// it answered (a wait) answers 401.
func (g *gate) end() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.begun {
		return
	}
	if err := tokenEnded(authOf(g.r.Context())); err != nil {
		g.begun = true
		g.refuseLocked(err)
	}
}

// final is why a call's answer may not leave, when the call's answer
// follows others on a stream that has begun (a chat_wait's progress): the
// stream's status left with the first of them, so the refusal goes as the
// call's error. Nil when the answer may leave, or when the gate checks it
// as it begins to leave.
func (g *gate) final() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.begun || g.refused {
		return nil
	}
	return g.s.stillValid(authOf(g.r.Context()))
}

// CodeTokenRefused is the JSON-RPC error code of a call whose token was
// revoked or expired after its answer's stream began (the HTTP status of
// which had left as 200): the member reads it as a 401.
const CodeTokenRefused = -32001

// endWithToken ends a call when its request does — the client went away,
// or its token was revoked or expired — and gives no answer but the
// token's refusal once its token no longer holds. (The SDK ends a
// stateless request's call only with the protocol versions that say so,
// and a chat_wait nobody reads would otherwise hold the hub for its
// seconds.)
func endWithToken(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		a, ok := ctx.Value(authKey{}).(*authorised)
		if !ok {
			return next(ctx, method, req)
		}
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		defer context.AfterFunc(a.life, cancel)()
		res, err := next(ctx, method, req)
		if refused := a.gate.final(); refused != nil {
			return nil, &jsonrpc.Error{Code: CodeTokenRefused, Message: refused.Error()}
		}
		return res, err
	}
}

package hub

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"

	"github.com/mcpp/mcpp-chat/internal/store"
)

// PartyHeader names the party a request acts for, one of its token's.
// A token bound to one party needs none.
const PartyHeader = "Mcpp-Party"

// authKey carries a request's authorised in its context.
type authKey struct{}

// authorised is what a request with a valid token acts with.
type authorised struct {
	party string
	tok   store.Token
	// life ends when the request's token does (revoked, expired) —
	// with that refusal as its cause — or when the client goes away.
	life context.Context
	// gate is the request's answer, the token checked again before it
	// leaves.
	gate *gate
}

func authOf(ctx context.Context) *authorised {
	a, _ := ctx.Value(authKey{}).(*authorised)
	if a == nil {
		return &authorised{life: context.Background()}
	}
	return a
}

func partyOf(ctx context.Context) string      { return authOf(ctx).party }
func tokenOf(ctx context.Context) store.Token { return authOf(ctx).tok }

// authed lets a request through only with a valid token, acting for one
// of the parties the token is bound to: 401 without a valid token, 403
// for a party the token does not hold. The token is checked against the
// store as the headers arrive, again before the answer leaves (gate), and
// a revoke or the expiry ends a request still open (openRequests).
func (s *Server) authed(next http.Handler) http.Handler { return s.auth(next, true) }

// tokenOnly is authed for a request that acts for no party: it needs a
// valid token, and checks a party it names.
func (s *Server) tokenOnly(next http.Handler) http.Handler { return s.auth(next, false) }

func (s *Server) auth(next http.Handler, needParty bool) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		secret, ok := bearer(r)
		if !ok {
			s.refuse(w, r, http.StatusUnauthorized, "", noToken)
			return
		}
		life, end := context.WithCancelCause(r.Context())
		defer end(nil)
		// Noted before the check: a revoke that the check comes too
		// early to see is then found by the hub's next look for revokes.
		defer s.open.add(store.TokenID(secret), end)()
		tok, err := s.Tokens.Verify(r.Context(), secret)
		switch {
		case refusedToken(err):
			s.refuse(w, r, http.StatusUnauthorized, tok.ID, err.Error())
			return
		case err != nil && r.Context().Err() != nil:
			return // the client went away while its token was checked
		case err != nil:
			s.log().Warn("a token could not be checked", "err", err)
			s.refuse(w, r, http.StatusServiceUnavailable, "", "the hub cannot reach its store to check the token — try again shortly")
			return
		}
		party, msg := actingParty(tok, r.Header.Get(PartyHeader))
		if msg != "" && (needParty || r.Header.Get(PartyHeader) != "") {
			s.refuse(w, r, http.StatusForbidden, tok.ID, msg)
			return
		}
		life, stop := context.WithDeadlineCause(life, tok.Expires, store.ErrTokenExpired)
		defer stop()
		a := &authorised{party: party, tok: tok, life: life}
		r = r.WithContext(context.WithValue(r.Context(), authKey{}, a))
		a.gate = &gate{ResponseWriter: w, s: s, r: r}
		next.ServeHTTP(a.gate, r)
		a.gate.end()
	})
}

// noToken is the answer to a request without a token.
const noToken = "no token: send the header Authorization: Bearer <token> (the hub's admin makes one with mcpp-chat hub token issue)"

// refusedToken reports whether err is the store's refusal of a token.
func refusedToken(err error) bool {
	return errors.Is(err, store.ErrTokenUnknown) || errors.Is(err, store.ErrTokenExpired) || errors.Is(err, store.ErrTokenRevoked)
}

// actingParty is the party a request with tok acts for, given the party
// header asked; msg says why it may not.
func actingParty(tok store.Token, asked string) (party, msg string) {
	asked = strings.TrimSpace(asked)
	switch {
	case asked == "" && len(tok.Parties) == 1:
		return tok.Parties[0], ""
	case asked == "":
		return "", fmt.Sprintf("this token acts for several parties (%s): name one in the %s header", strings.Join(tok.Parties, ", "), PartyHeader)
	case slices.Contains(tok.Parties, asked):
		return asked, ""
	}
	return "", fmt.Sprintf("this token is not bound to the party %q — it acts only for %s; use that party's token", asked, strings.Join(tok.Parties, ", "))
}

// bearer is the request's bearer token.
func bearer(r *http.Request) (string, bool) {
	scheme, token, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	token = strings.TrimSpace(token)
	return token, ok && strings.EqualFold(scheme, "Bearer") && token != ""
}

// refuse answers a refused request with one sentence, closing its
// connection (a refused client has nothing more to send on it), and logs
// it as a rate (refusalLog): the token's id at most, never its secret.
func (s *Server) refuse(w http.ResponseWriter, r *http.Request, status int, tokenID, msg string) {
	s.refusals.note(r.RemoteAddr, refusal{status: status, path: r.URL.Path, tokenID: tokenID, reason: msg})
	if status == http.StatusUnauthorized {
		w.Header().Set("WWW-Authenticate", `Bearer realm="mcpp-chat"`)
	}
	if r.ProtoMajor == 1 {
		w.Header().Set("Connection", "close")
	}
	writeJSON(w, status, map[string]string{"error": msg})
}

// authorArguments are argument names that would choose who writes. No
// tool declares one (a test keeps it so); a call that sends one is
// refused before it runs, whatever else it holds.
var authorArguments = []string{"author", "from", "party", "sender", "as", "on_behalf_of", "author_id", "party_id", "workspace"}

// maxBody is the largest request body the hub reads (the SDK's default).
const maxBody = 4 << 20

// guardAuthor refuses, with 403, a tools/call whose arguments try to name
// the author: a call acts as its token's party and nothing else. The
// refusal is logged with the token's id, as every refusal is.
func (s *Server) guardAuthor(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			next.ServeHTTP(w, r)
			return
		}
		body, err := io.ReadAll(io.LimitReader(r.Body, maxBody+1))
		if err != nil {
			writeJSON(w, http.StatusBadRequest, map[string]string{"error": "the request body could not be read"})
			return
		}
		if len(body) > maxBody {
			writeJSON(w, http.StatusRequestEntityTooLarge, map[string]string{"error": "the request is larger than 4 MiB — send less at once"})
			return
		}
		// The token again, now that the body is in: one revoked while it
		// came runs nothing.
		a := authOf(r.Context())
		if err := s.stillValid(a); err != nil {
			a.gate.refuse(err)
			return
		}
		if name := namedAuthor(body); name != "" {
			s.refuse(w, r, http.StatusForbidden, tokenOf(r.Context()).ID, fmt.Sprintf("the argument %q would choose who writes, but a call always acts as its token's party (%s) — leave it out", name, partyOf(r.Context())))
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		next.ServeHTTP(w, r)
	})
}

// namedAuthor is the first author-choosing argument of any tools/call in
// body (one JSON-RPC message or a batch), or "".
func namedAuthor(body []byte) string {
	var msgs []json.RawMessage
	if err := json.Unmarshal(body, &msgs); err != nil {
		msgs = []json.RawMessage{body}
	}
	for _, raw := range msgs {
		var m struct {
			Method string `json:"method"`
			Params struct {
				Arguments map[string]json.RawMessage `json:"arguments"`
			} `json:"params"`
		}
		if json.Unmarshal(raw, &m) != nil || m.Method != "tools/call" {
			continue
		}
		for _, name := range authorArguments {
			if _, ok := m.Params.Arguments[name]; ok {
				return name
			}
		}
	}
	return ""
}

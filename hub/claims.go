package hub

import (
	"context"
	"encoding/json"
	"net/http"
	"time"

	"github.com/mcpp/mcpp-chat/internal/store"
)

// The hub's endpoints for claims (internal/store/claims.go): what a party
// sees of them, and the renewal a member's running serve asks for, as a
// serve on the store's own host renews its party's claims.

// claims answers GET /v1/claims: the live claims the party sees and the
// claims that ended and concern it, as chat_claims answers, read without
// writing (a read renews nothing).
func (s *Server) claims(w http.ResponseWriter, r *http.Request) {
	l, err := s.Read.ClaimsOf(r.Context(), store.Identity{Name: partyOf(r.Context()), Team: true})
	if err != nil {
		if r.Context().Err() == nil {
			s.log().Warn("reading the claims failed", "err", err)
			writeJSON(w, http.StatusServiceUnavailable, map[string]string{"error": "the hub could not read its store — try again shortly"})
		}
		return
	}
	writeJSON(w, http.StatusOK, l)
}

// Renewal is the hub's answer to POST /v1/renew: when to ask again.
type Renewal struct {
	NextSeconds float64 `json:"next_seconds"`
}

// renew answers POST /v1/renew: the party's live claims are moved on, as
// while its session works (store.DB.RenewClaims).
func (s *Server) renew(w http.ResponseWriter, r *http.Request) {
	next, err := s.DB.RenewClaims(r.Context(), store.Identity{Name: partyOf(r.Context()), Team: true})
	if err != nil {
		if r.Context().Err() == nil {
			s.log().Warn("renewing the claims failed", "party", partyOf(r.Context()), "err", err)
			writeJSON(w, http.StatusServiceUnavailable, map[string]string{"error": "the hub could not renew the claims — try again shortly"})
		}
		return
	}
	writeJSON(w, http.StatusOK, Renewal{NextSeconds: next.Seconds()})
}

// Claims asks the hub what the party sees of the claims.
func (c *Client) Claims(ctx context.Context) (store.ClaimList, error) {
	var out store.ClaimList
	err := c.getJSON(ctx, "/v1/claims", &out)
	return out, err
}

// RenewClaims has the hub move on the party's live claims, and says when
// to ask again.
func (c *Client) RenewClaims(ctx context.Context) (time.Duration, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	req, err := c.request(ctx, http.MethodPost, "/v1/renew", nil)
	if err != nil {
		return 0, err
	}
	resp, err := c.do(req, http.StatusOK)
	if err != nil {
		return 0, err
	}
	defer release(resp.Body, cancel)
	var out Renewal
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		return 0, c.unreachable(ctx, err)
	}
	return time.Duration(out.NextSeconds * float64(time.Second)), nil
}

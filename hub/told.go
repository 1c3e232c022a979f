package hub

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/mcpp/mcpp-chat/internal/store"
)

// maxToldBody bounds a /v1/told request: store.MaxTellings tellings of a
// few hundred bytes each.
const maxToldBody = 1 << 20

// toldRequest is what a member's serve sends /v1/told: what its hook
// told the party's sessions (internal/told's journal).
type toldRequest struct {
	Tellings []store.Telling `json:"tellings"`
}

// told records that the request's party was told of messages; only its
// own tellings, never another party's (store.DB.RecordTold drops those of
// channels it never sat in).
func (s *Server) told(w http.ResponseWriter, r *http.Request) {
	var in toldRequest
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxToldBody)).Decode(&in); err != nil || len(in.Tellings) > store.MaxTellings {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": fmt.Sprintf(
			"send {\"tellings\": [...]} with at most %d tellings in at most %d bytes", store.MaxTellings, maxToldBody)})
		return
	}
	party := partyOf(r.Context())
	n, err := s.DB.RecordTold(r.Context(), store.Identity{Name: party, Workspace: store.TeamWorkspace(party), Team: true}, in.Tellings)
	if err != nil {
		s.log().Warn("recording what a party was told failed", "party", party, "err", err)
		writeJSON(w, http.StatusServiceUnavailable, map[string]string{"error": "the hub could not write its store — try again shortly"})
		return
	}
	writeJSON(w, http.StatusOK, map[string]int{"recorded": n})
}

// Told tells the hub what this party's hook told its sessions; it
// reports how many tellings were new.
func (c *Client) Told(ctx context.Context, list []store.Telling) (int, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	body, err := json.Marshal(toldRequest{Tellings: list})
	if err != nil {
		return 0, err
	}
	req, err := c.request(ctx, http.MethodPost, "/v1/told", bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.do(req, http.StatusOK)
	if err != nil {
		return 0, err
	}
	defer release(resp.Body, cancel)
	var out struct {
		Recorded int `json:"recorded"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		return 0, c.unreachable(ctx, err)
	}
	return out.Recorded, nil
}

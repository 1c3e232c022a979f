package hub

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mcpp/mcpp-chat/internal/store"
)

// A member's serve tells the hub what its hook told the party's sessions
// (/v1/told): the sender then sees told_to on its message and told_at in
// its inbox, on a database file and on a team store. A telling acts for
// the token's party only.
func TestToldThroughTheHub(t *testing.T) {
	for _, hub := range []struct {
		name  string
		start func(t *testing.T) *testHub
	}{{"sqlite", startHub}, {"postgres", startTeamHub}} {
		t.Run(hub.name, func(t *testing.T) {
			h := hub.start(t)
			dash := h.client(t, h.issue("dash", time.Hour, "node-dash"), "")
			call(t, dash, "chat_whoami", `{}`)
			gw := h.client(t, h.issue("gw", time.Hour, "mesh-gw"), "")
			call(t, gw, "chat_channel_new", `{"name":"gw--dash","parties":["node-dash"]}`)
			said := call(t, gw, "chat_say", `{"channel":"gw--dash","text":"is the enum closed?"}`)
			seq := int64(said["seq"].(float64))
			call(t, gw, "chat_read", `{"channel":"gw--dash","since":0,"peek":true}`)
			call(t, gw, "chat_inbox", `{}`)
			before, _, err := gw.Pending(context.Background(), "", 1)
			if err != nil {
				t.Fatal(err)
			}
			at := store.Timestamp(time.Now().Add(-time.Minute))
			n, err := dash.Told(context.Background(), []store.Telling{{Channel: "gw--dash", Seq: seq, At: at, Via: store.ViaWake}})
			if err != nil || n != 1 {
				t.Fatalf("told: %d, %v", n, err)
			}
			// mesh-gw's own token cannot say node-dash was told.
			if n, err := gw.Told(context.Background(), []store.Telling{{Channel: "gw--dash", Seq: seq, At: at, Via: store.ViaWake}}); err != nil || n != 0 {
				t.Fatalf("the author's telling of its own message: %d, %v", n, err)
			}
			// The sender's hook hears of it: its summary's state moved.
			for deadline := time.Now().Add(time.Minute); ; time.Sleep(20 * time.Millisecond) {
				s, changed, err := gw.Pending(context.Background(), before.ETag, 1)
				if err != nil {
					t.Fatal(err)
				}
				if changed && len(s.Pending.UnreadByPeers) == 1 && s.Pending.UnreadByPeers[0].ToldAt["node-dash"].Via == "wake" {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("mesh-gw's hook summary never showed the telling: %+v", s.Pending.UnreadByPeers)
				}
			}
			read := call(t, gw, "chat_read", `{"channel":"gw--dash","since":0,"peek":true}`)
			msg := read["messages"].([]any)[0].(map[string]any)
			told, _ := msg["told_to"].(map[string]any)
			if dashTold, _ := told["node-dash"].(map[string]any); dashTold["via"] != "wake" || dashTold["at"] != at {
				t.Fatalf("told_to = %v", msg["told_to"])
			}
			inbox := call(t, gw, "chat_inbox", `{}`)
			u := inbox["unread_by_peers"].([]any)[0].(map[string]any)
			if toldAt, _ := u["told_at"].(map[string]any); toldAt["node-dash"] == nil {
				t.Fatalf("unread_by_peers = %v", u)
			}
			req, _ := http.NewRequest(http.MethodPost, h.srv.URL+"/v1/told", strings.NewReader(`{"tellings":`+strings.Repeat(" ", maxToldBody)+`[]}`))
			req.Header.Set("Authorization", "Bearer "+dash.Token)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusBadRequest {
				t.Fatalf("an oversized request: %d", resp.StatusCode)
			}
		})
	}
}

package hub

import (
	"strings"
	"testing"
	"time"
)

// The raiser's answers to an overdue item work through the hub: an ask
// with a due time, chat_due, and chat_reassign, whose arguments name no
// author the hub's guard refuses (it refuses "from").
func TestDueAndReassignThroughTheHub(t *testing.T) {
	h := startHub(t)
	gw := h.client(t, h.issue("gw", time.Hour, "mesh-gw"), "")
	dash := h.client(t, h.issue("dash", time.Hour, "node-dash"), "")
	fw := h.client(t, h.issue("fw", time.Hour, "fw-core"), "")
	call(t, dash, "chat_whoami", `{}`)
	call(t, fw, "chat_whoami", `{}`)
	call(t, gw, "chat_channel_new", `{"name":"gw--dash","parties":["node-dash","fw-core"]}`)
	asked := call(t, gw, "chat_ask", `{"title":"Port?","body":"Which port?","slug":"port","consumers":["node-dash"],"due":"1h"}`)
	if due, _ := asked["due"].(string); due == "" {
		t.Fatalf("ask: %v", asked)
	}
	call(t, gw, "chat_due", `{"item":"port","due":"2h"}`)
	st := call(t, gw, "chat_reassign", `{"item":"port","consumer":"node-dash","to":"fw-core"}`)
	if got := st["awaiting_ack_from"]; len(got.([]any)) != 1 || got.([]any)[0] != "fw-core" {
		t.Errorf("after the reassignment: %v", st)
	}
	if strings.Contains(h.log.String(), "would choose who writes") {
		t.Errorf("the hub refused a call:\n%s", h.log)
	}
}

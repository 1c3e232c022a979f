package hub

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

// secret is in every text gamma writes in its own channel: a title (and
// so a slug), a body, a say, a reply. No answer to a party outside that
// channel may hold it.
const secret = "zebrasecret4711"

// aboutMark is gamma's channel's about: a channel's public description,
// which chat_channel_list(all=true) shows every party so that it can
// choose a channel to join (as on one host). Nothing else shows it.
const aboutMark = "aboutmark0815"

// leakyChat is a hub where gamma and delta talk in gamma--delta, with an
// item, a say and a reply holding the secret, and alpha sits in a
// channel of its own with delta. It returns alpha's token.
func leakyChat(t *testing.T, h *testHub) (alpha string) {
	t.Helper()
	alpha = h.issue("alpha", time.Hour, "alpha")
	a := h.client(t, alpha, "")
	gamma := h.client(t, h.issue("gamma", time.Hour, "gamma"), "")
	delta := h.client(t, h.issue("delta", time.Hour, "delta"), "")
	call(t, a, "chat_whoami", `{}`)
	call(t, delta, "chat_whoami", `{}`)
	call(t, gamma, "chat_channel_new", `{"name":"gamma--delta","about":"`+aboutMark+`","parties":["delta"]}`)
	call(t, gamma, "chat_say", `{"channel":"gamma--delta","text":"the `+secret+` say"}`)
	call(t, gamma, "chat_ask", `{"channel":"gamma--delta","title":"`+strings.ToUpper(secret)+` rollout","body":"when does `+secret+` ship?"}`)
	call(t, delta, "chat_reply", `{"item":"gamma--delta:2","text":"`+secret+` ships friday"}`)
	call(t, a, "chat_channel_new", `{"name":"alpha--delta","parties":["delta"]}`)
	call(t, delta, "chat_say", `{"channel":"alpha--delta","text":"hello alpha"}`)
	call(t, a, "chat_say", `{"channel":"alpha--delta","text":"hello delta"}`)
	call(t, gamma, "chat_say", `{"channel":"gamma--delta","text":"last `+secret+` word"}`)
	return alpha
}

// get asks the hub for path with token and returns the status and body.
func get(t *testing.T, h *testHub, token, path string, header ...string) (int, http.Header, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, h.srv.URL+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	return send(t, req)
}

// rpc posts one JSON-RPC request to /mcp with token and returns the
// whole answer, as text.
func rpc(t *testing.T, h *testHub, token, method, params string) string {
	t.Helper()
	body := fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":%q,"params":%s}`, method, params)
	req, err := http.NewRequest(http.MethodPost, h.srv.URL+"/mcp", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	status, _, text := send(t, req)
	if status != http.StatusOK {
		t.Fatalf("%s %s: status %d: %s", method, params, status, text)
	}
	return text
}

func send(t *testing.T, req *http.Request) (int, http.Header, string) {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, resp.Header, string(data)
}

// A party outside a channel learns nothing of what is said in it from any
// endpoint, in any form of query: not the arrivals of every message, not
// the hook's summary, not an error about one of its items.
func TestNoEndpointShowsAnotherChannelsMessages(t *testing.T) {
	t.Parallel()
	h := startHub(t)
	alpha := leakyChat(t, h)
	answers := map[string]string{}
	ask := func(name, answer string) { answers[name] = answer }

	_, _, page := get(t, h, alpha, "/v1/arrivals?after=-1&all=1")
	var start Arrivals
	if err := json.Unmarshal([]byte(page), &start); err != nil {
		t.Fatalf("arrivals: %s: %v", page, err)
	}
	for _, after := range []int64{-1, 0, 1, 2, start.Newest - 1, start.Newest} {
		for _, all := range []string{"", "&all=0", "&all=1"} {
			path := "/v1/arrivals?after=" + strconv.FormatInt(after, 10) + all
			_, _, body := get(t, h, alpha, path)
			ask(path, body)
		}
	}
	for _, n := range []string{"", "1", "3", strconv.Itoa(MaxNewest)} {
		_, hdr, body := get(t, h, alpha, "/v1/hook?newest="+n)
		ask("hook newest="+n, body)
		_, _, again := get(t, h, alpha, "/v1/hook?newest="+n, "If-None-Match", hdr.Get("ETag"))
		ask("hook newest="+n+" again", again)
	}
	_, _, wait := get(t, h, alpha, "/v1/wait?timeout=0.1")
	ask("wait", wait)
	ask("token", func() string { _, _, b := get(t, h, alpha, "/v1/token"); return b }())
	ask("healthz", func() string { _, _, b := get(t, h, alpha, "/healthz"); return b }())

	ask("tools/list", rpc(t, h, alpha, "tools/list", `{}`))
	for _, c := range []struct{ tool, args string }{
		{"chat_whoami", `{}`},
		{"chat_inbox", `{}`},
		{"chat_channel_list", `{}`},
		{"chat_read", `{}`},
		{"chat_read", `{"channel":"gamma--delta"}`},
		{"chat_read", `{"channel":"gamma--delta","since":0,"peek":true}`},
		{"chat_read", `{"channel":"gamma--delta","archived":true}`},
		{"chat_search", `{"query":"rollout"}`},
		{"chat_search", `{"query":"ships"}`},
		{"chat_search", `{"query":"word","channel":"gamma--delta"}`},
		{"chat_wait", `{"seconds":1}`},
		{"chat_wait", `{"seconds":1,"channel":"gamma--delta"}`},
		{"chat_reply", `{"item":"gamma--delta:2","text":"hi"}`},
		{"chat_reply", `{"item":"gamma--delta:#1","text":"hi"}`},
		{"chat_reply", `{"item":"gamma--delta:3","text":"hi"}`},
		{"chat_ack", `{"item":"gamma--delta:2"}`},
		{"chat_ack", `{"item":"gamma--delta:#1"}`},
		{"chat_resolve", `{"item":"gamma--delta:2","answered":true}`},
		{"chat_prune_ok", `{"item":"gamma--delta:2"}`},
		{"chat_ack", `{"item":"2"}`},
	} {
		ask(c.tool+" "+c.args, rpc(t, h, alpha, "tools/call", `{"name":"`+c.tool+`","arguments":`+c.args+`}`))
	}
	listAll := rpc(t, h, alpha, "tools/call", `{"name":"chat_channel_list","arguments":{"all":true}}`)

	for name, body := range answers {
		if strings.Contains(strings.ToLower(body), secret) {
			t.Errorf("%s shows gamma's text to alpha:\n%s", name, body)
		}
		if strings.Contains(body, aboutMark) {
			t.Errorf("%s shows gamma's channel's about to alpha:\n%s", name, body)
		}
	}
	if strings.Contains(strings.ToLower(listAll), secret) {
		t.Errorf("chat_channel_list(all=true) shows gamma's text to alpha:\n%s", listAll)
	}
	// The channel's name, parties and about are public: a party finds a
	// channel to join by them.
	for _, want := range []string{"gamma--delta", aboutMark} {
		if !strings.Contains(listAll, want) {
			t.Errorf("chat_channel_list(all=true) lacks %s:\n%s", want, listAll)
		}
	}
	// Alpha's own channel shows, or the test proves nothing.
	if all := answers["/v1/arrivals?after=0&all=1"]; !strings.Contains(all, "hello alpha") || !strings.Contains(all, "hello delta") {
		t.Errorf("alpha's arrivals (all) lack its own channel: %s", all)
	}
	if mine := answers["/v1/arrivals?after=0"]; !strings.Contains(mine, "hello alpha") || strings.Contains(mine, "hello delta") {
		t.Errorf("alpha's arrivals lack delta's message, or hold its own: %s", mine)
	}
}

// A party's ETag (its wait's and its hook's) moves at a change of what
// it sees, and not at a change in a channel it is not in: a wait tells
// it nothing of when others talk.
func TestWaitMovesOnlyForWhatThePartySees(t *testing.T) {
	t.Parallel()
	h := startHub(t)
	ctx := context.Background()
	alpha := h.client(t, h.issue("alpha", time.Hour, "alpha"), "")
	gamma := h.client(t, h.issue("gamma", time.Hour, "gamma"), "")
	delta := h.client(t, h.issue("delta", time.Hour, "delta"), "")
	call(t, alpha, "chat_whoami", `{}`)
	call(t, delta, "chat_whoami", `{}`)
	call(t, gamma, "chat_channel_new", `{"name":"gamma--delta","parties":["delta"]}`)
	call(t, alpha, "chat_channel_new", `{"name":"alpha--delta","parties":["delta"]}`)
	settled := func(c *Client) string { // the tag once the file watcher's echoes are over
		t.Helper()
		tag := ""
		for range 50 {
			now, err := c.Wait(ctx, tag, 300*time.Millisecond)
			if err != nil {
				t.Fatal(err)
			}
			if now == tag {
				return tag
			}
			tag = now
		}
		t.Fatal("the tag never settled")
		return ""
	}
	before, deltaBefore := settled(alpha), settled(delta)

	call(t, gamma, "chat_say", `{"channel":"gamma--delta","text":"between gamma and delta"}`)
	if tag, err := delta.Wait(ctx, deltaBefore, 10*time.Second); err != nil || tag == deltaBefore {
		t.Fatalf("delta's tag did not move at gamma's say: %v", err)
	}
	if tag, err := alpha.Wait(ctx, before, time.Second); err != nil || tag != before {
		t.Fatalf("alpha's tag moved at a say in a channel it is not in (%v)", err)
	}
	s, _, err := alpha.Pending(ctx, before, 3)
	if err != nil || s.ETag != before {
		t.Fatalf("alpha's hook tag moved: %q, %v", s.ETag, err)
	}

	call(t, delta, "chat_say", `{"channel":"alpha--delta","text":"to alpha"}`)
	if tag, err := alpha.Wait(ctx, before, 10*time.Second); err != nil || tag == before {
		t.Fatalf("alpha's tag did not move at a say in its channel: %v", err)
	}
}

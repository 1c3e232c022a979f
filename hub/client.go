package hub

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcpp/mcpp-chat/internal/redact"
	"github.com/mcpp/mcpp-chat/internal/store"
	"github.com/mcpp/mcpp-chat/tools"
)

// Client is a member machine's line to its hub: one token, acting for one
// party. Each call is one stateless request, so a hub restart or another
// replica answering costs nothing.
type Client struct {
	// Base is the hub's address without /mcp (https://chat.team.example).
	Base  string
	Token string
	Party string
	HTTP  *http.Client
	// Patience is how long past its own work a call waits for the hub's
	// answer; 0 means DefaultPatience.
	Patience time.Duration
	// Renew, if set, gives the token to use when the hub refuses the one
	// a request carried: a member saves a new one with mcpp-chat connect
	// while its serve and watch run on. "" or the same token: none newer.
	Renew func() string

	ids atomic.Int64
	mu  sync.Mutex // guards Token once requests are under way
}

// NewClient is a client of the hub at rawURL (with or without its /mcp).
func NewClient(rawURL, token, party string) (*Client, error) {
	u, err := url.Parse(strings.TrimSpace(rawURL))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("the hub's address %q is not an http:// or https:// URL — give it as the hub's admin wrote it, e.g. https://chat.team.example", redact.URL(rawURL))
	}
	u.Path = strings.TrimSuffix(strings.TrimSuffix(u.Path, "/"), "/mcp")
	u.RawQuery, u.Fragment = "", ""
	return &Client{Base: u.String(), Token: token, Party: party, HTTP: &http.Client{Transport: transport()}}, nil
}

// transport gives up on a hub that does not answer a connection within
// a few seconds; a call itself may take as long as a chat_wait.
func transport() *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.DialContext = (&net.Dialer{Timeout: 3 * time.Second, KeepAlive: 30 * time.Second}).DialContext
	t.TLSHandshakeTimeout = 3 * time.Second
	return t
}

// Where is the hub's address for messages and logs: without the password
// an address with user information holds.
func (c *Client) Where() string { return redact.URL(c.Base) }

func (c *Client) request(ctx context.Context, method, path string, body io.Reader) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, method, c.Base+path, body)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+c.token())
	if c.Party != "" {
		req.Header.Set(PartyHeader, c.Party)
	}
	return req, nil
}

func (c *Client) token() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.Token
}

// do sends req; an answer other than ok is an error that says what to do.
// A token the hub refuses is renewed, if Renew has a newer one, and the
// request sent again with it.
func (c *Client) do(req *http.Request, ok ...int) (*http.Response, error) {
	resp, err := c.HTTP.Do(req)
	if err == nil && resp.StatusCode == http.StatusUnauthorized {
		if again := c.renewed(req); again != nil {
			resp.Body.Close()
			resp, err = c.HTTP.Do(again)
		}
	}
	if err != nil {
		return nil, c.unreachable(req.Context(), err)
	}
	for _, code := range ok {
		if resp.StatusCode == code {
			return resp, nil
		}
	}
	defer resp.Body.Close()
	return nil, c.refused(resp)
}

// renewed is req with the token Renew gives, when it differs from the one
// req carried and req can be sent again; else nil.
func (c *Client) renewed(req *http.Request) *http.Request {
	if c.Renew == nil || (req.Body != nil && req.GetBody == nil) {
		return nil
	}
	fresh := c.Renew()
	if fresh == "" || req.Header.Get("Authorization") == "Bearer "+fresh {
		return nil
	}
	c.mu.Lock()
	c.Token = fresh
	c.mu.Unlock()
	again := req.Clone(req.Context())
	if req.GetBody != nil {
		body, err := req.GetBody()
		if err != nil {
			return nil
		}
		again.Body = body
	}
	again.Header.Set("Authorization", "Bearer "+fresh)
	return again
}

// Trouble tells, for a process that keeps at the hub (watch, serve), what
// kind of trouble err is — "token" when the hub refuses the token, "status
// N" for another refusal, "unreachable" for anything else — so that it can
// speak once per trouble rather than at each retry, and says it in a
// sentence without the advice meant for a single call.
func (c *Client) Trouble(err error) (kind, sentence string) {
	var refused *RefusedError
	if errors.As(err, &refused) {
		if refused.Status == http.StatusUnauthorized || refused.Status == http.StatusForbidden {
			return "token", refused.Msg
		}
		return fmt.Sprintf("status %d", refused.Status), fmt.Sprintf("the team hub at %s answers %d %s", c.Where(), refused.Status, http.StatusText(refused.Status))
	}
	cause := err
	var line *lineError
	if errors.As(err, &line) && line.cause != nil {
		cause = line.cause
	}
	var request *url.Error // names the request, which says nothing here
	if errors.As(cause, &request) {
		cause = request.Err
	}
	return "unreachable", fmt.Sprintf("the team hub at %s cannot be reached (%v)", c.Where(), cause)
}

// ErrUnreachable is a hub that could not be reached at all: nothing was
// sent to it.
var ErrUnreachable = errors.New("the team hub does not answer")

// lineError is a failure of the line to the hub, told in one sentence;
// errors.Is and As still see its cause.
type lineError struct {
	msg   string
	cause error
	none  bool // nothing reached the hub
}

func (e *lineError) Error() string { return e.msg }
func (e *lineError) Unwrap() error { return e.cause }
func (e *lineError) Is(target error) bool {
	return e.none && target == ErrUnreachable
}

// errTooSlow ends a call whose hub took longer than the call can.
var errTooSlow = errors.New("the team hub took too long")

func (c *Client) unreachable(ctx context.Context, err error) error {
	var op *net.OpError
	switch {
	case errors.Is(context.Cause(ctx), errTooSlow):
		return &lineError{msg: fmt.Sprintf("the team hub at %s did not answer in time — the call may or may not have landed: look with chat_read or chat_inbox before you retry it", c.Where()), cause: errTooSlow}
	case ctx.Err() != nil:
		return &lineError{msg: fmt.Sprintf("the call was stopped before the team hub at %s answered — it may or may not have landed: look with chat_read or chat_inbox before you retry it", c.Where()), cause: ctx.Err()}
	case errors.As(err, &op) && op.Op == "dial":
		return &lineError{msg: fmt.Sprintf("the team hub at %s does not answer (%v) — nothing was sent; check that it runs (mcpp-chat doctor shows it), then retry", c.Where(), op.Err), cause: err, none: true}
	}
	return &lineError{msg: fmt.Sprintf("the team hub at %s broke off the call (%v) — it may or may not have landed: look with chat_read or chat_inbox before you retry it", c.Where(), err), cause: err}
}

// RefusedError is the hub's refusal of a request: its status and sentence.
type RefusedError struct {
	Status int
	Msg    string
}

func (e *RefusedError) Error() string { return e.Msg }

// DefaultPatience is how long a call waits for a hub that does not
// answer: a hub's own call ends within its busy timeout.
const DefaultPatience = 30 * time.Second

// callTimeout bounds one call: a hub that accepted it but never answers
// (a frozen process, a black-holed network) must not hold the session.
// A chat_wait may take its seconds (at most 10 minutes) first.
func (c *Client) callTimeout(tool string, args json.RawMessage) time.Duration {
	margin := c.Patience
	if margin <= 0 {
		margin = DefaultPatience
	}
	if tool != "chat_wait" {
		return margin
	}
	var a struct {
		Seconds float64 `json:"seconds"`
	}
	json.Unmarshal(args, &a)
	return time.Duration(min(max(a.Seconds, 10), 600))*time.Second + margin
}

func (c *Client) refused(resp *http.Response) error {
	var body struct {
		Error string `json:"error"`
	}
	data, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	json.Unmarshal(data, &body)
	// what is the hub's (or a proxy's) own word, if it said one: after
	// the status, as ": what".
	what := body.Error
	if what == "" {
		what = strings.TrimSpace(string(data))
		if len(what) > 200 || strings.Contains(what, "<") || strings.EqualFold(what, resp.Status) {
			what = ""
		}
	}
	msg := what
	if msg == "" {
		msg = resp.Status
	}
	said := resp.Status
	if what != "" {
		said += ": " + what
	}
	switch resp.StatusCode {
	case http.StatusUnauthorized, http.StatusForbidden:
		return &RefusedError{resp.StatusCode, fmt.Sprintf("the team hub at %s refused this machine's token: %s", c.Where(), msg)}
	case http.StatusBadGateway, http.StatusGatewayTimeout:
		// A proxy in front of the hub says so (the hub never does): the
		// hub behind it may have run the call before the answer was lost.
		return &RefusedError{resp.StatusCode, fmt.Sprintf("the team hub at %s answered %s — the call may or may not have landed: look with chat_read or chat_inbox before you retry it", c.Where(), said)}
	}
	return &RefusedError{resp.StatusCode, fmt.Sprintf("the team hub at %s answered %s — nothing was written; retry shortly, and if it persists tell the hub's admin", c.Where(), said)}
}

// Call runs one tool on the hub and returns its answer as the hub gave
// it. A tool's own refusal is an error holding the hub's sentence.
func (c *Client) Call(ctx context.Context, tool string, args json.RawMessage, progress tools.Progress) (tools.Result, error) {
	id := c.ids.Add(1)
	params := map[string]any{"name": tool, "arguments": args}
	if len(args) == 0 {
		params["arguments"] = map[string]any{}
	}
	meta := tools.ChainOf(ctx)
	if progress != nil {
		if meta == nil {
			meta = map[string]any{}
		}
		meta["progressToken"] = id
	}
	if meta != nil {
		params["_meta"] = meta
	}
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params})
	ctx, cancel := context.WithTimeoutCause(ctx, c.callTimeout(tool, args), errTooSlow)
	defer cancel()
	req, err := c.request(ctx, http.MethodPost, "/mcp", bytes.NewReader(body))
	if err != nil {
		return tools.Result{}, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := c.do(req, http.StatusOK)
	if err != nil {
		return tools.Result{}, err
	}
	defer release(resp.Body, cancel)
	msg, err := c.answer(ctx, resp, progress)
	if err != nil {
		return tools.Result{}, err
	}
	if msg.Error != nil && msg.Error.Code == CodeTokenRefused {
		// A refusal that came after the answer's stream had begun.
		return tools.Result{}, &RefusedError{http.StatusUnauthorized, fmt.Sprintf("the team hub at %s refused this machine's token: %s", c.Where(), msg.Error.Message)}
	}
	return toolResult(msg)
}

// rpcMessage is a JSON-RPC message from the hub: the answer, or a
// progress notification before it.
type rpcMessage struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params struct {
		Progress float64 `json:"progress"`
		Total    float64 `json:"total"`
		Message  string  `json:"message"`
	} `json:"params"`
	Result *struct {
		Content []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"content"`
		IsError bool `json:"isError"`
	} `json:"result"`
	Error *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// answer reads the answer of a call: one JSON body, or a stream of
// events whose last is the answer (progress comes before it).
func (c *Client) answer(ctx context.Context, resp *http.Response, progress tools.Progress) (rpcMessage, error) {
	kind, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if kind == "application/json" {
		var m rpcMessage
		if err := json.NewDecoder(resp.Body).Decode(&m); err != nil {
			return m, c.unreachable(ctx, err)
		}
		return m, nil
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	var data []string
	for sc.Scan() {
		line := sc.Text()
		if rest, ok := strings.CutPrefix(line, "data:"); ok {
			data = append(data, strings.TrimPrefix(rest, " "))
			continue
		}
		if line != "" || len(data) == 0 {
			continue
		}
		var m rpcMessage
		err := json.Unmarshal([]byte(strings.Join(data, "\n")), &m)
		data = nil
		switch {
		case err != nil:
		case m.Method == "notifications/progress":
			if progress != nil {
				progress(ctx, m.Params.Progress, m.Params.Total, m.Params.Message)
			}
		case m.Method == "":
			return m, nil
		}
	}
	err := sc.Err()
	if err == nil {
		err = io.ErrUnexpectedEOF
	}
	return rpcMessage{}, c.unreachable(ctx, err)
}

// toolResult is the tools.Result a hub's answer carries: the display
// and the result JSON, as the hub's own server renders them.
func toolResult(m rpcMessage) (tools.Result, error) {
	switch {
	case m.Error != nil:
		return tools.Result{}, errors.New(m.Error.Message)
	case m.Result == nil:
		return tools.Result{}, errors.New("the team hub's answer held no result — retry once, then tell the user")
	case m.Result.IsError:
		var texts []string
		for _, t := range m.Result.Content {
			texts = append(texts, t.Text)
		}
		return tools.Result{}, errors.New(strings.Join(texts, "\n"))
	case len(m.Result.Content) != 2:
		return tools.Result{}, fmt.Errorf("the team hub's answer had %d parts, not 2 — is it another program? retry once, then tell the user", len(m.Result.Content))
	}
	raw := json.RawMessage(m.Result.Content[1].Text)
	return tools.Result{Display: m.Result.Content[0].Text, Value: raw, JSON: raw}, nil
}

// Summary is the hub's answer to a hook: what waits on the party, and
// the ETag it was read at.
type Summary struct {
	Pending store.Pending
	ETag    string
}

// Pending asks what waits on the party. With the ETag of an earlier
// answer, an unchanged state answers changed=false without a read.
func (c *Client) Pending(ctx context.Context, etag string, newest int) (s Summary, changed bool, err error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	req, err := c.request(ctx, http.MethodGet, "/v1/hook?newest="+strconv.Itoa(newest), nil)
	if err != nil {
		return Summary{}, false, err
	}
	if etag != "" {
		req.Header.Set("If-None-Match", etag)
	}
	resp, err := c.do(req, http.StatusOK, http.StatusNotModified)
	if err != nil {
		return Summary{}, false, err
	}
	defer release(resp.Body, cancel)
	s.ETag = resp.Header.Get("ETag")
	if resp.StatusCode == http.StatusNotModified {
		return s, false, nil
	}
	if err := json.NewDecoder(resp.Body).Decode(&s.Pending); err != nil {
		return Summary{}, false, c.unreachable(ctx, err)
	}
	return s, true, nil
}

// Wait holds until the hub sees the store change past etag, or timeout;
// it returns the ETag then.
func (c *Client) Wait(ctx context.Context, etag string, timeout time.Duration) (string, error) {
	q := url.Values{"etag": {etag}, "timeout": {strconv.FormatFloat(timeout.Seconds(), 'f', 3, 64)}}
	var out struct {
		ETag string `json:"etag"`
	}
	err := c.getJSON(ctx, "/v1/wait?"+q.Encode(), &out)
	return out.ETag, err
}

// TokenInfo asks the hub what the token is: its parties and expiry.
func (c *Client) TokenInfo(ctx context.Context) (TokenInfo, error) {
	var info TokenInfo
	err := c.getJSON(ctx, "/v1/token", &info)
	return info, err
}

// Arrivals lists the messages after message id after that wait on the
// party (all: every message of its channels and items), a page at a
// time (More: ask again from Newest); after < 0 only says where the
// newest is.
func (c *Client) Arrivals(ctx context.Context, after int64, all bool) (Arrivals, error) {
	q := url.Values{"after": {strconv.FormatInt(after, 10)}}
	if all {
		q.Set("all", "1")
	}
	var out Arrivals
	err := c.getJSON(ctx, "/v1/arrivals?"+q.Encode(), &out)
	return out, err
}

// getJSON asks the hub for path and decodes its answer into out.
func (c *Client) getJSON(ctx context.Context, path string, out any) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	req, err := c.request(ctx, http.MethodGet, path, nil)
	if err != nil {
		return err
	}
	resp, err := c.do(req, http.StatusOK)
	if err != nil {
		return err
	}
	defer release(resp.Body, cancel)
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		return c.unreachable(ctx, err)
	}
	return nil
}

// Health asks whether the hub runs and reaches its store.
func (c *Client) Health(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.Base+"/healthz", nil)
	if err != nil {
		return err
	}
	resp, err := c.do(req, http.StatusOK)
	if err != nil {
		return err
	}
	release(resp.Body, cancel)
	return nil
}

// release reads what is left of an answer's body (the end of its stream,
// a few bytes) and closes it, so that its connection serves the next
// request: a body closed before its end takes the connection along, and
// the next request dials the hub again — a TCP and TLS handshake each
// time, and for a test that plays a thousand members, a thousand dials
// at once. stop ends the request: a hub that does not end the body within
// drainTime, or sends more than maxDrain, loses the connection as before.
func release(body io.ReadCloser, stop context.CancelFunc) {
	t := time.AfterFunc(drainTime, stop)
	io.Copy(io.Discard, io.LimitReader(body, maxDrain))
	t.Stop()
	body.Close()
}

// drainTime and maxDrain bound release: the hub ends a body as soon as
// its answer is written.
const (
	drainTime = time.Second
	maxDrain  = 64 << 10
)

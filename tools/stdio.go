package tools

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// MaxLineBytes bounds one JSON-RPC message on stdin. A tool call carries at
// most a few chat.max_body_bytes texts; anything longer is answered with an
// error without being held in memory.
const MaxLineBytes = 16 << 20

// JSON-RPC error codes the guard answers with.
const (
	codeParseError     = -32700
	codeInvalidRequest = -32600
)

// GuardedStdio is the MCP stdio transport with a guard in front of the SDK:
// the SDK ends the session on the first line it cannot decode (a malformed
// line, a batch, an over-long line), so every line is checked here first and
// a bad one is answered with a JSON-RPC error and dropped. The server never
// stops over bad input. A request the client cancelled gets no response,
// and every other request read before stdin ended is answered before the
// session ends.
// atEOF, if set, is called once stdin has ended, before the answers still
// due are awaited.
func GuardedStdio(stdin io.Reader, stdout io.Writer, atEOF func()) mcp.Transport {
	ids := &standIns{}
	out := &lockedWriter{w: stdout, ids: ids}
	return &noCancelledAnswers{atEOF: atEOF, Transport: &mcp.IOTransport{
		Reader:        io.NopCloser(&lineGuard{in: bufio.NewReaderSize(stdin, 64<<10), out: out, max: MaxLineBytes, ids: ids}),
		Writer:        out,
		MaxLineLength: -1, // the guard enforces MaxLineBytes
	}}
}

// noCancelledAnswers keeps the answer to a cancelled request from the
// client: MCP says a request the client cancelled (notifications/cancelled)
// gets no response, while the SDK (v1.8.0) cancels the handler's context
// and still sends whatever the handler returns.
type noCancelledAnswers struct {
	mcp.Transport
	atEOF func()
}

func (t *noCancelledAnswers) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := t.Transport.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return newCancelAwareConn(c, t.atEOF), nil
}

func newCancelAwareConn(c mcp.Connection, atEOF func()) *cancelAwareConn {
	return &cancelAwareConn{Connection: c, inFlight: map[jsonrpc.ID]bool{}, cancelled: map[jsonrpc.ID]bool{},
		answer: make(chan struct{}), closed: make(chan struct{}), atEOF: atEOF}
}

// cancelAwareConn notes the client's requests and cancellations as they
// are read and drops a response to a cancelled request as it is written.
// At the end of stdin it holds the end back until every request read has
// been answered: the SDK ends the session at once and drops the answers
// still to come (`printf '<initialize>\n<tools/list>\n' | serve` printed
// only the first).
type cancelAwareConn struct {
	mcp.Connection
	mu        sync.Mutex
	inFlight  map[jsonrpc.ID]bool // requests read and not answered yet
	cancelled map[jsonrpc.ID]bool // of those, the ones the client cancelled
	answer    chan struct{}       // closed (and replaced) at each answer
	closed    chan struct{}
	closeOnce sync.Once
	atEOF     func()
	eofOnce   sync.Once
}

func (c *cancelAwareConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	msg, err := c.Connection.Read(ctx)
	if errors.Is(err, io.EOF) {
		if c.atEOF != nil {
			c.eofOnce.Do(c.atEOF)
		}
		c.drain(ctx)
	}
	if req, ok := msg.(*jsonrpc.Request); ok && err == nil {
		c.note(req)
	}
	return msg, err
}

// drain waits until no request is in flight, the connection closes (a
// shutdown) or ctx ends.
func (c *cancelAwareConn) drain(ctx context.Context) {
	for {
		c.mu.Lock()
		n, answer := len(c.inFlight), c.answer
		c.mu.Unlock()
		if n == 0 {
			return
		}
		select {
		case <-answer:
		case <-c.closed:
			return
		case <-ctx.Done():
			return
		}
	}
}

func (c *cancelAwareConn) Close() error {
	c.closeOnce.Do(func() { close(c.closed) })
	return c.Connection.Close()
}

func (c *cancelAwareConn) note(req *jsonrpc.Request) {
	if req.IsCall() {
		c.mu.Lock()
		c.inFlight[req.ID] = true
		c.mu.Unlock()
		return
	}
	if req.Method != "notifications/cancelled" {
		return
	}
	var p struct {
		RequestID any `json:"requestId"`
	}
	if json.Unmarshal(req.Params, &p) != nil {
		return
	}
	id, err := jsonrpc.MakeID(p.RequestID)
	if err != nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.inFlight[id] { // a request already answered cannot be taken back
		c.cancelled[id] = true
	}
}

func (c *cancelAwareConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	if resp, ok := msg.(*jsonrpc.Response); ok && c.answered(resp.ID) {
		return nil
	}
	return c.Connection.Write(ctx, msg)
}

// answered forgets the request id and reports whether it was cancelled.
func (c *cancelAwareConn) answered(id jsonrpc.ID) (cancelled bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	cancelled = c.cancelled[id]
	delete(c.inFlight, id)
	delete(c.cancelled, id)
	close(c.answer)
	c.answer = make(chan struct{})
	return cancelled
}

// lockedWriter keeps the guard's error replies and the SDK's messages from
// interleaving: each is written with one Write call. It puts back the ids
// the guard stood in for.
type lockedWriter struct {
	mu  sync.Mutex
	w   io.Writer
	ids *standIns
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, err := l.w.Write(l.ids.restore(p)); err != nil {
		return 0, err
	}
	return len(p), nil
}

func (l *lockedWriter) Close() error { return nil }

// lineGuard passes on only lines that decode as one JSON-RPC message.
type lineGuard struct {
	in      *bufio.Reader
	out     io.Writer
	max     int
	ids     *standIns // nil: ids pass as they are
	pending []byte
}

func (g *lineGuard) Read(p []byte) (int, error) {
	for len(g.pending) == 0 {
		line, err := g.nextLine()
		if len(line) > 0 {
			if reply, p := check(line); reply != nil {
				g.out.Write(reply)
			} else {
				g.pending = append(g.ids.standIn(line, p), '\n')
			}
		}
		if err != nil {
			if len(g.pending) > 0 {
				break // deliver the last line; the next Read reports err
			}
			return 0, err
		}
	}
	n := copy(p, g.pending)
	g.pending = g.pending[n:]
	return n, nil
}

// nextLine reads one line without its end; a line over max is skipped to
// its end and answered here.
func (g *lineGuard) nextLine() ([]byte, error) {
	var line []byte
	tooLong := false
	for {
		chunk, err := g.in.ReadSlice('\n')
		if !tooLong {
			if len(line)+len(chunk) > g.max+2 {
				tooLong, line = true, nil
			} else {
				line = append(line, chunk...)
			}
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if tooLong {
			g.out.Write(errorReply(nil, codeInvalidRequest, fmt.Sprintf("the message is over %d MiB — send smaller requests, one JSON-RPC object per line", g.max>>20)))
			if err != nil {
				return nil, err
			}
			return nil, nil
		}
		return bytes.TrimSpace(line), err
	}
}

// probe is what the guard reads of a message.
type probe struct {
	ID     json.RawMessage `json:"id"`
	Method json.RawMessage `json:"method"`
	Result json.RawMessage `json:"result"`
	Error  json.RawMessage `json:"error"`
}

// check returns the error reply for a line the SDK could not take, or nil
// and what it read of the message.
func check(line []byte) ([]byte, probe) {
	var p probe
	if !json.Valid(line) {
		return errorReply(nil, codeParseError, "parse error: the line is not valid JSON — send one JSON-RPC object per line"), p
	}
	if line[0] != '{' {
		return errorReply(nil, codeInvalidRequest, "invalid request: send one JSON-RPC object per line (batches are not supported)"), p
	}
	json.Unmarshal(line, &p) // valid JSON: only a field's type can fail, which DecodeMessage reports
	if _, err := jsonrpc.DecodeMessage(line); err != nil {
		return errorReply(validID(p.ID), codeInvalidRequest, "invalid request: "+err.Error()), p
	}
	if p.Method == nil && p.Result == nil && p.Error == nil {
		return errorReply(validID(p.ID), codeInvalidRequest, "invalid request: no method — name the method to call"), p
	}
	return nil, p
}

// validID echoes a request's id in the error reply when it is one JSON-RPC
// allows (a string or a number).
func validID(raw json.RawMessage) json.RawMessage {
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return nil
	}
	switch v.(type) {
	case string, float64:
		return raw
	}
	return nil
}

type rpcError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

type errorResponse struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Error   rpcError        `json:"error"`
}

func errorReply(id json.RawMessage, code int, msg string) []byte {
	if id == nil {
		id = json.RawMessage("null")
	}
	data, _ := json.Marshal(errorResponse{JSONRPC: "2.0", ID: id, Error: rpcError{code, msg}})
	return append(data, '\n')
}

// standIns lets every request id come back exactly as the client wrote it.
// The SDK reads a numeric id as a float64 and keeps its integer part:
// -1.5 would come back as -1, 9007199254740993 as …992,
// 12345678901234567890 as a negative number. The guard hands the SDK such a request under a
// stand-in string id and the writer puts the client's id back into the
// answer. Ids the SDK keeps exactly (strings, whole numbers within ±2^53
// written plainly) pass untouched, at no cost.
type standIns struct {
	mu     sync.Mutex
	next   int
	client map[string]json.RawMessage // stand-in → the client's id
	of     map[string]string          // the client's id → stand-in, for a cancellation
}

// standInPrefix starts every stand-in. A client's string id that starts
// with it gets a stand-in too, so a stand-in never equals a client's id.
const standInPrefix = "mcpp-chat:id:"

// standIn returns line with its id replaced by a stand-in where the SDK
// would change it, and a cancellation's requestId replaced likewise.
func (s *standIns) standIn(line []byte, p probe) []byte {
	if s == nil {
		return line
	}
	if p.ID != nil && changedBySDK(p.ID) {
		return withField(line, "id", s.newStandIn(p.ID))
	}
	if string(p.Method) == `"notifications/cancelled"` {
		return s.cancellation(line)
	}
	return line
}

// changedBySDK reports an id the SDK would not give back as written.
func changedBySDK(id json.RawMessage) bool {
	switch {
	case len(id) == 0:
		return false
	case id[0] == '"':
		var s string
		return json.Unmarshal(id, &s) == nil && strings.HasPrefix(s, standInPrefix)
	case id[0] == '-' || ('0' <= id[0] && id[0] <= '9'):
		n, err := strconv.ParseInt(string(id), 10, 64)
		return err != nil || strconv.FormatInt(n, 10) != string(id) || n > maxWhole || n < -maxWhole
	}
	return false
}

func (s *standIns) newStandIn(id json.RawMessage) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.client == nil {
		s.client, s.of = map[string]json.RawMessage{}, map[string]string{}
	}
	s.next++
	key := standInPrefix + strconv.Itoa(s.next)
	s.client[key] = append(json.RawMessage(nil), id...)
	s.of[string(id)] = key
	return key
}

// cancellation points a notifications/cancelled at the stand-in of the
// request it names.
func (s *standIns) cancellation(line []byte) []byte {
	var msg struct {
		Params struct {
			RequestID json.RawMessage `json:"requestId"`
		} `json:"params"`
	}
	if json.Unmarshal(line, &msg) != nil || msg.Params.RequestID == nil {
		return line
	}
	s.mu.Lock()
	key, ok := s.of[string(msg.Params.RequestID)]
	s.mu.Unlock()
	if !ok {
		return line
	}
	var whole map[string]json.RawMessage
	if json.Unmarshal(line, &whole) != nil {
		return line
	}
	whole["params"] = withField(whole["params"], "requestId", key)
	out, err := json.Marshal(whole)
	if err != nil {
		return line
	}
	return out
}

// withField returns the JSON object obj with field set to the string
// value, or obj as it is if it is not an object.
func withField(obj []byte, field, value string) []byte {
	var m map[string]json.RawMessage
	if json.Unmarshal(obj, &m) != nil || m == nil {
		return obj
	}
	m[field], _ = json.Marshal(value)
	out, err := json.Marshal(m)
	if err != nil {
		return obj
	}
	return out
}

// restore puts the client's id back into a message the SDK wrote with a
// stand-in. The SDK writes the id right after "jsonrpc"; a stand-in has no
// characters JSON escapes, and its quoted form cannot occur unescaped
// inside any string.
func (s *standIns) restore(msg []byte) []byte {
	if s == nil {
		return msg
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.client) == 0 {
		return msg
	}
	marker := []byte(`"id":"` + standInPrefix)
	at := bytes.Index(msg, marker)
	if at < 0 {
		return msg
	}
	start := at + len(`"id":`)
	end := bytes.IndexByte(msg[start+1:], '"')
	if end < 0 {
		return msg
	}
	end += start + 2 // past the closing quote
	key := string(msg[start+1 : end-1])
	id, ok := s.client[key]
	if !ok {
		return msg
	}
	// The answer goes once; forget the pair.
	delete(s.client, key)
	delete(s.of, string(id))
	out := make([]byte, 0, len(msg)+len(id))
	out = append(out, msg[:start]...)
	out = append(out, id...)
	return append(out, msg[end:]...)
}

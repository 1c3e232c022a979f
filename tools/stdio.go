package tools

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
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
	out := &lockedWriter{w: stdout}
	return &noCancelledAnswers{atEOF: atEOF, Transport: &mcp.IOTransport{
		Reader:        io.NopCloser(&lineGuard{in: bufio.NewReaderSize(stdin, 64<<10), out: out, max: MaxLineBytes}),
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
// interleaving: each is written with one Write call.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func (l *lockedWriter) Close() error { return nil }

// lineGuard passes on only lines that decode as one JSON-RPC message.
type lineGuard struct {
	in      *bufio.Reader
	out     io.Writer
	max     int
	pending []byte
}

func (g *lineGuard) Read(p []byte) (int, error) {
	for len(g.pending) == 0 {
		line, err := g.nextLine()
		if len(line) > 0 {
			if reply := check(line); reply != nil {
				g.out.Write(reply)
			} else {
				g.pending = append(line, '\n')
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

// check returns the error reply for a line the SDK could not take, or nil.
func check(line []byte) []byte {
	if !json.Valid(line) {
		return errorReply(nil, codeParseError, "parse error: the line is not valid JSON — send one JSON-RPC object per line")
	}
	if line[0] != '{' {
		return errorReply(nil, codeInvalidRequest, "invalid request: send one JSON-RPC object per line (batches are not supported)")
	}
	var probe struct {
		ID     json.RawMessage `json:"id"`
		Method json.RawMessage `json:"method"`
		Result json.RawMessage `json:"result"`
		Error  json.RawMessage `json:"error"`
	}
	json.Unmarshal(line, &probe) // valid JSON: only a field's type can fail, which DecodeMessage reports
	if _, err := jsonrpc.DecodeMessage(line); err != nil {
		return errorReply(validID(probe.ID), codeInvalidRequest, "invalid request: "+err.Error())
	}
	if probe.Method == nil && probe.Result == nil && probe.Error == nil {
		return errorReply(validID(probe.ID), codeInvalidRequest, "invalid request: no method — name the method to call")
	}
	return nil
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

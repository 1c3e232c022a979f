package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/mcpp/mcpp-chat/tools"
)

// streamRequest is one line of `call --stream`'s input.
type streamRequest struct {
	ID        json.RawMessage `json:"id"`
	Tool      string          `json:"tool"`
	Arguments json.RawMessage `json:"arguments"`
}

// streamReply is call's reply to one request, with the request's id.
type streamReply struct {
	ID json.RawMessage `json:"id"`
	callReply
}

// callStream is `call --stream`, the worker mcpptool.py keeps for a
// workspace: one process and one open database for many calls, and no MCP
// layer between them (over `serve`, the MCP SDK's decoding and encoding
// was most of a call's time). Its first line is {"ready": true}, or
// {"ready": false, "error": …} before it exits 1. Then it runs the calls
// read from stdin, one JSON object a line ({"id", "tool", "arguments"}),
// each in its own goroutine so that a chat_wait holds up no other call,
// and answers each as `call` does, with its id, in the order they finish.
// At the end of stdin it answers every call it read (a chat_wait at once,
// with the inbox as it is), then exits; SIGTERM or SIGINT ends the calls
// still running (their answers are still written).
func callStream(ctx context.Context, workspace string, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer) int {
	out := &replyWriter{enc: json.NewEncoder(stdout)}
	out.enc.SetEscapeHTML(false)
	in, err := locate(getenv, workspace)
	var svc *tools.Service
	if err == nil {
		svc, err = in.service(ctx, newLog(stderr))
	}
	if err != nil {
		out.write(struct {
			Ready bool   `json:"ready"`
			Error string `json:"error"`
		}{false, err.Error()})
		return exitError
	}
	defer svc.Close()
	if svc.DB != nil {
		// The worker serves an mcpp host as serve serves Claude Code: it
		// runs the escalation ladder's clock too.
		defer startClock(ctx, svc.DB, in.cfg, svc.Changes, newLog(stderr))()
		// The host's worker keeps its party's claims as serve does.
		defer keepClaims(ctx, claimRenewal(svc.DB, svc.Me, nil), svc.Changes, newLog(stderr))()
	}
	stopWaiting := make(chan struct{})
	svc.StopWaiting = stopWaiting
	out.write(struct {
		Ready bool `json:"ready"`
	}{true})

	var calls sync.WaitGroup
	defer calls.Wait()
	lines, readErr := readLines(stdin)
	for {
		select {
		case <-ctx.Done():
			return exitOK // the calls running end with ctx; their answers are still written
		case line, ok := <-lines:
			if !ok {
				close(stopWaiting) // the client sends nothing more: a chat_wait answers now
				if err := <-readErr; err != nil {
					fmt.Fprintf(stderr, "mcpp-chat call --stream: cannot read stdin: %v\n", err)
					return exitError
				}
				return exitOK
			}
			if line.tooLong {
				out.write(streamReply{ID: leadingID(line.text), callReply: callReply{Error: fmt.Sprintf(
					"the request is over %d MiB and was not run — send smaller requests, one JSON object a line", tools.MaxLineBytes>>20)}})
				continue
			}
			req, err := parseRequest(line.text)
			if err != nil {
				out.write(streamReply{ID: req.ID, callReply: callReply{Error: err.Error()}})
				continue
			}
			calls.Go(func() {
				r := callReply{Success: true}
				res, err := svc.Call(ctx, req.Tool, req.Arguments)
				if err != nil {
					r = callReply{Error: err.Error()}
				} else {
					r.Result, r.Display = res.JSON, res.Display
				}
				out.write(streamReply{ID: req.ID, callReply: r})
			})
		}
	}
}

// streamLine is a line of `call --stream`'s input: the whole of it, or
// the start of one over tools.MaxLineBytes (tooLong).
type streamLine struct {
	text    []byte
	tooLong bool
}

// readLines delivers stdin's non-empty lines until it ends, then its error
// (nil at the end of the input). A line over tools.MaxLineBytes is read
// to its end, only its start kept, and answered as serve answers one
// (tools/stdio.go): one bad request ends no session.
func readLines(r io.Reader) (<-chan streamLine, <-chan error) {
	lines, done := make(chan streamLine), make(chan error, 1)
	go func() {
		in := bufio.NewReaderSize(r, 64<<10)
		for {
			line, tooLong, err := nextLine(in, tools.MaxLineBytes)
			if tooLong || len(line) > 0 {
				lines <- streamLine{text: line, tooLong: tooLong}
			}
			if err != nil {
				if errors.Is(err, io.EOF) {
					err = nil
				}
				done <- err
				close(lines)
				return
			}
		}
	}()
	return lines, done
}

// nextLine reads one line, trimmed; of one over max (tooLong) it keeps
// the first 4 KiB, where the request's id is, and reads on to its end.
func nextLine(in *bufio.Reader, max int) (line []byte, tooLong bool, err error) {
	for {
		chunk, err := in.ReadSlice('\n')
		if !tooLong {
			if len(line)+len(chunk) > max+2 { // the line's end (\r\n) is not the request's
				tooLong = true
				line = bytes.Clone(append(line, chunk...)[:min(len(line)+len(chunk), 4<<10)])
			} else {
				line = append(line, chunk...)
			}
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		return bytes.TrimSpace(line), tooLong, err
	}
}

// leadingID is the id of a request cut short, when it comes first (as
// mcpptool.py writes it), so that its caller gets the refusal; else null.
func leadingID(start []byte) json.RawMessage {
	dec := json.NewDecoder(bytes.NewReader(start))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return json.RawMessage("null")
	}
	key, err := dec.Token()
	var id json.RawMessage
	if err != nil || key != "id" || dec.Decode(&id) != nil {
		return json.RawMessage("null")
	}
	switch id[0] {
	case '"', '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
		return id
	}
	return json.RawMessage("null")
}

func parseRequest(line []byte) (streamRequest, error) {
	var req streamRequest
	if err := json.Unmarshal(line, &req); err != nil || req.Tool == "" {
		return req, errors.New(`each line must be one JSON object {"id": …, "tool": "chat_…", "arguments": {…}}`)
	}
	if len(req.ID) == 0 {
		req.ID = json.RawMessage("null")
	}
	if len(req.Arguments) == 0 || string(req.Arguments) == "null" {
		req.Arguments = json.RawMessage("{}")
	}
	return req, nil
}

// replyWriter writes one JSON line at a time for concurrent calls.
type replyWriter struct {
	mu  sync.Mutex
	enc *json.Encoder
}

func (w *replyWriter) write(v any) {
	w.mu.Lock()
	defer w.mu.Unlock()
	_ = w.enc.Encode(v) // a reader that went away wants no answers
}

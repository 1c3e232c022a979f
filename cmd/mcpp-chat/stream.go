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
					fmt.Fprintf(stderr, "mcpp-chat call --stream: stdin: %v — send one request a line, each under %d MiB\n", err, tools.MaxLineBytes>>20)
					return exitError
				}
				return exitOK
			}
			req, err := parseRequest(line)
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

// readLines delivers stdin's non-empty lines until it ends, then its error
// (nil at the end of the input).
func readLines(r io.Reader) (<-chan []byte, <-chan error) {
	lines, done := make(chan []byte), make(chan error, 1)
	go func() {
		sc := bufio.NewScanner(r)
		sc.Buffer(make([]byte, 0, 64<<10), tools.MaxLineBytes)
		for sc.Scan() {
			if line := bytes.TrimSpace(sc.Bytes()); len(line) > 0 {
				lines <- bytes.Clone(line)
			}
		}
		done <- sc.Err()
		close(lines)
	}()
	return lines, done
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

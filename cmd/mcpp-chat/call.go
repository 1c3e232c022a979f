package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/mcpp/mcpp-chat/internal/text"
	"github.com/mcpp/mcpp-chat/tools"
)

// callReply is the mcpp module contract: one JSON object per call.
type callReply struct {
	Success bool   `json:"success"`
	Result  any    `json:"result,omitempty"`
	Display string `json:"display,omitempty"`
	Error   string `json:"error,omitempty"`
}

func call(ctx context.Context, args []string, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flags("call", "call [--workspace DIR] [--display] TOOL [ARGS_JSON | -]\n       call [--workspace DIR] --stream\n\nRuns one tool and prints {\"success\": true, \"result\": …, \"display\": \"…\"} or {\"success\": false, \"error\": \"…\"};\nwith --display, the display text as a person reads it (an error on stderr).\nARGS_JSON defaults to {}; - reads it from stdin. "+fmt.Sprintf("Exit %d on success, %d on a tool error, %d on a usage error.", exitOK, exitError, exitUsage)+"\nWith --stream: prints {\"ready\": true}, then runs one call per stdin line {\"id\", \"tool\", \"arguments\"}\nand prints each reply with its id, as the calls finish, until stdin ends (the mcpp bridge's worker).", stderr)
	workspace := fs.String("workspace", "", "start folder for identity (default: $MCPP_CHAT_WORKSPACE, $CLAUDE_PROJECT_DIR, cwd)")
	stream := fs.Bool("stream", false, "run the calls read from stdin, one JSON object a line, until it ends")
	display := fs.Bool("display", false, "print the answer as a person reads it (the display text; an error on stderr) instead of JSON")
	if code, done := parse(fs, args, stdout); done {
		return code
	}
	rest := fs.Args()
	printReply := printReply
	if *display {
		printReply = func(w io.Writer, r callReply, code int) int { return printDisplay(w, stderr, r, code) }
	}
	if *stream {
		if len(rest) != 0 || *display {
			fs.Usage()
			return exitUsage
		}
		return callStream(ctx, *workspace, getenv, stdin, stdout, stderr)
	}
	if len(rest) < 1 || len(rest) > 2 {
		fs.Usage()
		return exitUsage
	}
	tool, raw := rest[0], "{}"
	if len(rest) == 2 {
		raw = rest[1]
	}
	if raw == "-" {
		data, err := readArgs(ctx, stdin)
		if err != nil && ctx.Err() != nil {
			return printReply(stdout, callReply{Error: err.Error()}, exitError)
		}
		if err != nil {
			return printReply(stdout, callReply{Error: err.Error()}, exitUsage)
		}
		raw = string(data)
	}
	if strings.TrimSpace(raw) == "" {
		raw = "{}"
	}
	in, err := locate(getenv, *workspace)
	if err != nil {
		return printReply(stdout, callReply{Error: err.Error()}, exitError)
	}
	svc, err := in.service(ctx, newLog(stderr))
	if err != nil {
		return printReply(stdout, callReply{Error: err.Error()}, exitError)
	}
	defer svc.Close()
	res, err := svc.Call(ctx, tool, json.RawMessage(raw))
	if errors.Is(err, tools.ErrUnknownTool) {
		return printReply(stdout, callReply{Error: err.Error()}, exitUsage)
	}
	if err != nil {
		return printReply(stdout, callReply{Error: err.Error()}, exitError)
	}
	return printReply(stdout, callReply{Success: true, Result: res.JSON, Display: res.Display}, exitOK)
}

// printDisplay is call --display: the display text as the client shows it
// to a person, or the error on stderr.
func printDisplay(stdout, stderr io.Writer, r callReply, code int) int {
	if !r.Success {
		fmt.Fprintf(stderr, "mcpp-chat call: %s\n", text.Clean(r.Error))
		return code
	}
	if _, err := fmt.Fprintln(stdout, strings.TrimRight(r.Display, "\n")); err != nil {
		return exitError
	}
	return code
}

// readArgs reads the arguments from stdin, at most tools.MaxLineBytes (a
// request's limit over MCP too): stdin fed from /dev/zero must not take
// all memory. A signal ends the wait for a stdin that never ends.
func readArgs(ctx context.Context, stdin io.Reader) ([]byte, error) {
	type read struct {
		data []byte
		err  error
	}
	got := make(chan read, 1)
	go func() {
		data, err := io.ReadAll(io.LimitReader(stdin, tools.MaxLineBytes+1))
		got <- read{data, err}
	}()
	var r read
	select {
	case r = <-got:
	case <-ctx.Done():
		return nil, errors.New("stopped while waiting for the arguments on stdin — nothing was done; pipe them in and close stdin, or pass them as ARGS_JSON")
	}
	if r.err != nil {
		return nil, fmt.Errorf("cannot read the arguments from stdin: %v — pass them as ARGS_JSON instead", r.err)
	}
	if len(r.data) > tools.MaxLineBytes {
		return nil, fmt.Errorf("the arguments on stdin are over %d MiB — send one JSON object of at most that size", tools.MaxLineBytes>>20)
	}
	return r.data, nil
}

func printReply(w io.Writer, r callReply, code int) int {
	// An error may name a folder or a file from a repository, which a
	// host may print to a terminal.
	r.Error = text.Clean(r.Error)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(r); err != nil {
		return exitError
	}
	return code
}

package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"
)

// server is a running `mcpp-chat serve` driven with raw JSON-RPC lines over
// its stdin and stdout, so that a measured round trip holds no client
// library work beyond writing one line and reading one.
type server struct {
	cmd    *exec.Cmd
	in     io.WriteCloser
	out    *bufio.Reader
	nextID int
}

// startServe starts serve for the party rooted at dir; it returns once the
// process runs, before the MCP handshake.
func startServe(bin, dir string, env []string) (*server, error) {
	cmd := exec.Command(bin, "serve")
	cmd.Dir = dir
	cmd.Env = env
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	return &server{cmd: cmd, in: in, out: bufio.NewReaderSize(out, 1<<20)}, nil
}

// handshake is the MCP initialize exchange a client makes first.
func (s *server) handshake() error {
	if _, err := s.request("initialize", map[string]any{
		"protocolVersion": "2025-06-18",
		"capabilities":    map[string]any{},
		"clientInfo":      map[string]any{"name": "bench", "version": "1"},
	}); err != nil {
		return err
	}
	return s.notify("notifications/initialized")
}

func (s *server) notify(method string) error {
	_, err := fmt.Fprintf(s.in, `{"jsonrpc":"2.0","method":%q}`+"\n", method)
	return err
}

type rpcReply struct {
	ID     json.RawMessage `json:"id"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Message string `json:"message"`
	} `json:"error"`
}

// request sends one request and reads lines until its answer; a server's
// own notifications and requests in between are skipped.
func (s *server) request(method string, params any) (json.RawMessage, error) {
	s.nextID++
	id := s.nextID
	line, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
	if err != nil {
		return nil, err
	}
	if _, err := s.in.Write(append(line, '\n')); err != nil {
		return nil, err
	}
	want := strconv.Itoa(id)
	for {
		data, err := s.out.ReadBytes('\n')
		if err != nil {
			return nil, fmt.Errorf("%s: read the answer: %w", method, err)
		}
		var r rpcReply
		if err := json.Unmarshal(data, &r); err != nil {
			return nil, fmt.Errorf("%s: not JSON-RPC: %q", method, data)
		}
		if string(r.ID) != want {
			continue
		}
		if r.Error != nil {
			return nil, fmt.Errorf("%s: %s", method, r.Error.Message)
		}
		return r.Result, nil
	}
}

type toolResult struct {
	IsError bool `json:"isError"`
	Content []struct {
		Text string `json:"text"`
	} `json:"content"`
}

// call runs a tool and returns its result JSON; a tool error is an error.
func (s *server) call(tool string, args any) (json.RawMessage, error) {
	raw, err := s.request("tools/call", map[string]any{"name": tool, "arguments": args})
	if err != nil {
		return nil, err
	}
	var r toolResult
	if err := json.Unmarshal(raw, &r); err != nil {
		return nil, err
	}
	if r.IsError || len(r.Content) != 2 {
		text := ""
		if len(r.Content) > 0 {
			text = r.Content[0].Text
		}
		return nil, fmt.Errorf("%s: %s", tool, text)
	}
	return json.RawMessage(r.Content[1].Text), nil
}

// rss reads the process's resident set size (VmRSS) in KiB.
func (s *server) rss() (int, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", s.cmd.Process.Pid))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			return strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")))
		}
	}
	return 0, errors.New("no VmRSS line in /proc status")
}

// cpu reads the process's user plus system CPU time so far.
func (s *server) cpu() (time.Duration, error) { return cpuOf(s.cmd.Process.Pid) }

// cpuOf reads a process's user plus system CPU time so far.
func cpuOf(pid int) (time.Duration, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The fields after the command name, which is in parentheses.
	f := strings.Fields(string(data[strings.LastIndexByte(string(data), ')')+1:]))
	if len(f) < 13 {
		return 0, errors.New("short /proc stat line")
	}
	utime, _ := strconv.ParseInt(f[11], 10, 64)
	stime, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(utime+stime) * 10 * time.Millisecond, nil // USER_HZ is 100 on Linux
}

// stop closes stdin (a client leaving) and waits for the process to end.
func (s *server) stop() {
	s.in.Close()
	done := make(chan struct{})
	go func() { s.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		s.cmd.Process.Kill()
		<-done
	}
}

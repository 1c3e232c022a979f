package tools

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpp/mcpp-chat/internal/config"
	"github.com/mcpp/mcpp-chat/internal/store"
)

// The tool layer's share of a call — argument checks, the store, display
// and JSON, and the MCP server over an in-memory pipe — on the benchmark
// conversation with a small history:
//   go test -run '^$' -bench . ./tools/
// go run ./tests/bench times the same over real stdio against built binaries.

func benchService(b *testing.B) *Service {
	b.Helper()
	parties := make([]store.Identity, 10)
	for i := range parties {
		name := fmt.Sprintf("party-%02d", i)
		parties[i] = store.Identity{Name: name, Workspace: "/srv/" + name}
	}
	db, err := store.Open(context.Background(), filepath.Join(b.TempDir(), "chat.db"))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { db.Close() })
	if _, err := db.Seed(context.Background(), store.BenchSpec(parties, 1000)); err != nil {
		b.Fatal(err)
	}
	manifest, err := LoadManifest()
	if err != nil {
		b.Fatal(err)
	}
	return &Service{DB: db, Config: config.Defaults(), Manifest: manifest, Me: parties[0]}
}

var benchCalls = []struct {
	tool string
	args string
}{
	{"chat_inbox", `{}`},
	{"chat_whoami", `{}`},
	{"chat_read", `{"channel":"ch-00","peek":true}`},
	{"chat_channel_list", `{}`},
	{"chat_say", `{"channel":"ch-00","text":"benchmark status: all green"}`},
}

func BenchmarkServiceCall(b *testing.B) {
	s := benchService(b)
	for _, c := range benchCalls {
		b.Run(c.tool, func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				if _, err := s.Call(context.Background(), c.tool, json.RawMessage(c.args)); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkMCPCall(b *testing.B) {
	s := benchService(b)
	ctx := context.Background()
	srv := NewMCPServer(s, "bench", nil)
	st, ct := mcp.NewInMemoryTransports()
	ss, err := srv.Connect(ctx, st, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer ss.Close()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer cs.Close()
	for _, c := range benchCalls {
		var args map[string]any
		if err := json.Unmarshal([]byte(c.args), &args); err != nil {
			b.Fatal(err)
		}
		b.Run(c.tool, func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: c.tool, Arguments: args})
				if err != nil || res.IsError {
					b.Fatalf("%v %+v", err, res)
				}
			}
		})
	}
}

// BenchmarkStdioCall is the server's side of a call as serve runs it: the
// guarded stdio transport over pipes, with a raw client that writes request
// lines and reads answer lines (no client library to pay for).
func BenchmarkStdioCall(b *testing.B) {
	s := benchService(b)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	inR, inW := io.Pipe()
	defer inW.Close() // the server's end of stdin: it stops
	outR, outW := io.Pipe()
	go Serve(ctx, NewMCPServer(s, "bench", nil), GuardedStdio(inR, outW, nil))
	answers := bufio.NewReaderSize(outR, 1<<20)
	send := func(line string) {
		if _, err := io.WriteString(inW, line+"\n"); err != nil {
			b.Fatal(err)
		}
	}
	receive := func() {
		if _, err := answers.ReadSlice('\n'); err != nil { // answers are < 1 MiB
			b.Fatal(err)
		}
	}
	send(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}}`)
	receive()
	send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	for _, c := range benchCalls {
		line := fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":%q,"arguments":%s}}`, c.tool, c.args)
		b.Run(c.tool, func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				send(line)
				receive()
			}
		})
	}
}

// BenchmarkAnswerSize reports the characters an answer costs a client (the
// budget's measure: display bytes + JSON as json.dumps writes it) at 10,
// 100 and 1,000 live items, next to the same answer with no budget — the
// whole state, as the Python edition and our earlier releases answered:
//
//	go test -run '^$' -bench AnswerSize -benchtime 1x ./tools/
func BenchmarkAnswerSize(b *testing.B) {
	parties := make([]store.Identity, 10)
	for i := range parties {
		name := fmt.Sprintf("party-%02d", i)
		parties[i] = store.Identity{Name: name, Workspace: "/srv/" + name}
	}
	for _, live := range []int{10, 100, 1000} {
		db, err := store.Open(context.Background(), filepath.Join(b.TempDir(), "chat.db"))
		if err != nil {
			b.Fatal(err)
		}
		spec := store.BenchSpec(parties, 1000)
		spec.LiveItems = live
		if _, err := db.Seed(context.Background(), spec); err != nil {
			b.Fatal(err)
		}
		manifest, err := LoadManifest()
		if err != nil {
			b.Fatal(err)
		}
		bounded := &Service{DB: db, Config: config.Defaults(), Manifest: manifest, Me: parties[0]}
		unbounded := &Service{DB: db, Config: config.Defaults(), Manifest: manifest, Me: parties[0]}
		unbounded.Config.Chat.AnswerBudget = math.MaxInt32
		for _, c := range []struct{ tool, args string }{
			{"chat_inbox", `{}`},
			{"chat_whoami", `{}`},
			{"chat_read", `{"channel":"ch-00","peek":true,"since":0}`},
		} {
			b.Run(fmt.Sprintf("%s/live=%d", c.tool, live), func(b *testing.B) {
				var size, whole int
				for i := 0; i < b.N; i++ {
					res, err := bounded.Call(context.Background(), c.tool, json.RawMessage(c.args))
					if err != nil {
						b.Fatal(err)
					}
					all, err := unbounded.Call(context.Background(), c.tool, json.RawMessage(c.args))
					if err != nil {
						b.Fatal(err)
					}
					size, whole = answerSize(res.Display, res.JSON), answerSize(all.Display, all.JSON)
				}
				b.ReportMetric(float64(size), "chars/answer")
				b.ReportMetric(float64(whole), "unbounded-chars")
			})
		}
		db.Close()
	}
}

package tools

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// ProtocolVersions are the MCP versions the server speaks, newest first.
var ProtocolVersions = []string{"2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"}

// NewMCPServer serves every tool of the manifest over MCP. Each success is
// two text contents (display for the user, result JSON for the assistant);
// each tool error is an isError result with one sentence.
func NewMCPServer(s *Service, version string, log *slog.Logger) *mcp.Server {
	srv := mcp.NewServer(&mcp.Implementation{Name: "mcpp-chat", Title: "mcpp-chat", Version: version}, &mcp.ServerOptions{
		Instructions:              s.Instructions(),
		SupportedProtocolVersions: ProtocolVersions,
		Logger:                    log,
	})
	for _, t := range s.Manifest.Tools {
		name := t.Name
		srv.AddTool(&mcp.Tool{Name: name, Description: t.Description, InputSchema: t.SchemaJSON()},
			func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				ctx = chainFromMeta(withProgress(ctx, req), req.Params.GetMeta())
				res, err := s.Call(ctx, name, req.Params.Arguments)
				if err != nil {
					return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: err.Error()}}}, nil
				}
				return success(res)
			})
	}
	srv.AddReceivingMiddleware(unknownTools(s))
	return srv
}

// unknownTools answers a call to a tool the manifest does not declare with
// the JSON-RPC error the SDK would send, in our sentence: clients of the
// Python edition match on "Unknown tool", and ours names the tools there are.
func unknownTools(s *Service) mcp.Middleware {
	return func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			call, ok := req.(*mcp.CallToolRequest)
			if !ok || method != "tools/call" {
				return next(ctx, method, req)
			}
			if _, declared := s.Manifest.Tool(call.Params.Name); declared {
				return next(ctx, method, req)
			}
			_, err := s.Call(ctx, call.Params.Name, nil)
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: shown(err).Error()}
		}
	}
}

// Serve runs srv over t until the client closes the connection (the end of
// stdin) or ctx ends (SIGTERM, SIGINT): both are a normal end, reported as
// nil. The SDK's Server.Run logs the second at ERROR level, on every
// shutdown a client makes. Calls still running when ctx ends are ended too.
func Serve(ctx context.Context, srv *mcp.Server, t mcp.Transport) error {
	srv.AddReceivingMiddleware(endWith(ctx))
	ss, err := srv.Connect(ctx, t, nil)
	if err != nil {
		return fmt.Errorf("connect the MCP session: %w", err)
	}
	ended := make(chan error, 1)
	go func() { ended <- ss.Wait() }()
	select {
	case <-ctx.Done():
		ss.Close()
		<-ended
		return nil
	case err := <-ended:
		if errors.Is(err, io.EOF) {
			return nil
		}
		return err
	}
}

// endWith ends each request's context when ctx ends. The SDK ends a
// handler's context only with its request, and closing the session waits
// for the handlers: without this a shutdown would wait out a chat_wait.
func endWith(ctx context.Context) mcp.Middleware {
	return func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(rctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			rctx, cancel := context.WithCancel(rctx)
			defer cancel()
			defer context.AfterFunc(ctx, cancel)()
			return next(rctx, method, req)
		}
	}
}

func success(res Result) (*mcp.CallToolResult, error) {
	return &mcp.CallToolResult{Content: []mcp.Content{
		&mcp.TextContent{Text: res.Display, Annotations: &mcp.Annotations{Audience: []mcp.Role{"user"}}},
		&mcp.TextContent{Text: string(res.JSON), Annotations: &mcp.Annotations{Audience: []mcp.Role{"assistant"}}},
	}}, nil
}

type progressKey struct{}

// Progress tells the client that a long call is still alive.
type Progress func(ctx context.Context, done, total float64, msg string)

type progressFunc = Progress

// withProgress carries the client's progress token, if it sent one, to the
// tool so a long wait can report that it is alive.
func withProgress(ctx context.Context, req *mcp.CallToolRequest) context.Context {
	token := req.Params.GetProgressToken()
	if token == nil || req.Session == nil {
		return ctx
	}
	notify := progressFunc(func(ctx context.Context, done, total float64, msg string) {
		_ = req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: token, Progress: done, Total: total, Message: msg})
	})
	return context.WithValue(ctx, progressKey{}, notify)
}

func progressFrom(ctx context.Context) progressFunc {
	f, _ := ctx.Value(progressKey{}).(progressFunc)
	return f
}

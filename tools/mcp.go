package tools

import (
	"context"
	"log/slog"

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
				ctx = withProgress(ctx, req)
				res, err := s.Call(ctx, name, req.Params.Arguments)
				if err != nil {
					return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: err.Error()}}}, nil
				}
				return success(res)
			})
	}
	return srv
}

func success(res Result) (*mcp.CallToolResult, error) {
	return &mcp.CallToolResult{Content: []mcp.Content{
		&mcp.TextContent{Text: res.Display, Annotations: &mcp.Annotations{Audience: []mcp.Role{"user"}}},
		&mcp.TextContent{Text: string(res.JSON), Annotations: &mcp.Annotations{Audience: []mcp.Role{"assistant"}}},
	}}, nil
}

type progressKey struct{}

type progressFunc func(ctx context.Context, done, total float64, msg string)

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

package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/mcpp/mcpp-chat/internal/config"
	"github.com/mcpp/mcpp-chat/internal/store"
	safe "github.com/mcpp/mcpp-chat/internal/text"
)

// Service answers tool calls for one party on one database.
type Service struct {
	DB       *store.DB
	Config   config.Config
	Paths    config.Paths
	Me       store.Identity
	Manifest Manifest
	// PartyName is the name the instructions give: the one Me has on the
	// chat, or will get at its first call; "" means Me.Name.
	PartyName string
	// Env reads MCPP_TIMEOUT_SECONDS for chat_wait's clamp.
	Env config.Env
	// Changed blocks until the database may have changed or ctx ends.
	// nil means poll once a second.
	Changed func(ctx context.Context) error
	// StopWaiting, once closed, makes chat_wait answer at once with the
	// inbox as it is: the client closed its end (stdin) and sends nothing
	// more, but reads the answers to what it sent. nil: never.
	StopWaiting <-chan struct{}

	// last is the newest inbox or whoami answer, with the call and the
	// database state it answered (see sameAnswer).
	last atomic.Pointer[lastAnswer]
}

// lastAnswer is a finished answer and what it answered.
type lastAnswer struct {
	key string
	res Result
}

// sameAnswer gives a read-only call on a known database state
// (store.Inbox.State) the answer the same call got on that state last
// time, instead of cutting and rendering it again; build makes it
// otherwise. An agent asks for its inbox far more often than anyone writes.
func (s *Service) sameAnswer(tool string, args json.RawMessage, state string, build func() Result) (Result, error) {
	if state == "" {
		return build(), nil
	}
	key := tool + "\x00" + string(args) + "\x00" + state
	if last := s.last.Load(); last != nil && last.key == key {
		return last.res, nil
	}
	res, err := s.finish(build())
	if err != nil {
		return Result{}, err
	}
	s.last.Store(&lastAnswer{key: key, res: res})
	return res, nil
}

// Result is a successful call: display markdown for the user and the
// result value (JSON) for the assistant.
type Result struct {
	Display string
	Value   any
	// JSON is Value encoded as the client receives it, set by Call once
	// the answer is known to fit the budget.
	JSON json.RawMessage
}

// handler runs one tool with its checked arguments.
type handler func(ctx context.Context, s *Service, args json.RawMessage) (Result, error)

// handlers maps every declared tool to its code; a test keeps it equal to
// module.yaml's tool list.
var handlers = map[string]handler{
	"chat_whoami":        whoami,
	"chat_channel_new":   channelNew,
	"chat_channel_list":  channelList,
	"chat_channel_join":  channelJoin,
	"chat_channel_leave": channelLeave,
	"chat_say":           say,
	"chat_ask":           ask,
	"chat_reply":         reply,
	"chat_ack":           ack,
	"chat_resolve":       resolve,
	"chat_prune_ok":      pruneOK,
	"chat_read":          read,
	"chat_search":        chatSearch,
	"chat_inbox":         inbox,
	"chat_wait":          wait,
}

// ErrUnknownTool is a call to a tool module.yaml does not declare.
// Its sentence starts "Unknown tool", which clients of the Python edition
// match on.
var ErrUnknownTool = errors.New("Unknown tool")

// Call checks the arguments and runs the tool. Every error it returns is
// one sentence that says what to do.
func (s *Service) Call(ctx context.Context, name string, raw json.RawMessage) (Result, error) {
	res, err := s.call(ctx, name, raw)
	if err != nil {
		return Result{}, shown(err)
	}
	return s.finish(res)
}

func (s *Service) call(ctx context.Context, name string, raw json.RawMessage) (Result, error) {
	t, ok := s.Manifest.Tool(name)
	h, ok2 := handlers[name]
	if !ok || !ok2 {
		return Result{}, fmt.Errorf("%w %q — the tools are: %s", ErrUnknownTool, name, strings.Join(s.toolNames(), ", "))
	}
	args, err := checkArgs(t, raw, s.Config.Chat.MaxBodyBytes)
	if err != nil {
		return Result{}, err
	}
	res, err := h(ctx, s, args)
	if err != nil {
		return Result{}, explain(name, err)
	}
	return res, nil
}

// shownError is an error as the client sees it: cleaned of escapes and
// invisible characters (it may echo a peer's name or an argument) and cut
// when too long (it may echo a long argument); errors.Is and As still see
// the original.
type shownError struct{ err error }

func (e shownError) Error() string { return capError(safe.Clean(e.err.Error())) }
func (e shownError) Unwrap() error { return e.err }

func shown(err error) error {
	if msg := err.Error(); len(msg) <= maxErrorChars && safe.Clean(msg) == msg {
		return err
	}
	return shownError{err}
}

func (s *Service) toolNames() []string {
	names := make([]string, len(s.Manifest.Tools))
	for i, t := range s.Manifest.Tools {
		names[i] = t.Name
	}
	return names
}

// explain keeps user-facing errors as they are and phrases the rest.
func explain(tool string, err error) error {
	var ue *store.UserError
	var ae *ArgError
	var se *store.StorageError
	switch {
	case errors.As(err, &ue), errors.As(err, &ae), errors.As(err, &se), errors.Is(err, store.ErrBusy):
		return err
	case errors.Is(err, context.Canceled):
		return fmt.Errorf("%s was cancelled before it finished — nothing was written; call it again if you still need it", tool)
	}
	return fmt.Errorf("%s failed: %v", tool, err)
}

// decode fills a tool's argument struct from checked arguments.
func decode(args json.RawMessage, v any) error {
	if err := json.Unmarshal(args, v); err != nil {
		return argErrorf("the arguments do not fit: %v", err)
	}
	return nil
}

// waitBounds returns chat_wait's ceiling: wait_max_seconds, and
// MCPP_TIMEOUT_SECONDS − 5 so an mcpp host's per-call timeout never fires first.
func (s *Service) waitBounds() int {
	limit := s.Config.Chat.WaitMaxSeconds
	if s.Env != nil {
		if v, err := strconv.Atoi(strings.TrimSpace(s.Env("MCPP_TIMEOUT_SECONDS"))); err == nil {
			limit = min(limit, v-5)
		}
	}
	return max(limit, 1)
}

// changed waits for a possible change, by notification or by polling.
func (s *Service) changed(ctx context.Context) error {
	if s.Changed != nil {
		return s.Changed(ctx)
	}
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(time.Second):
		return nil
	}
}

package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"strconv"
	"strings"
	"sync/atomic"

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
	// Changes tells chat_wait when the database may have changed: Next
	// returns a channel closed at the next change (a wake.Watcher, which
	// also polls where notifications do not reach). nil: chat_wait looks
	// when it starts and when its time is up, not in between.
	Changes interface{ Next() <-chan struct{} }
	// Log receives what the agent is not shown: a failure inside the
	// server, in full. nil means slog's default logger (stderr).
	Log *slog.Logger
	// StopWaiting, once closed, makes chat_wait answer at once with the
	// inbox as it is: the client closed its end (stdin) and sends nothing
	// more, but reads the answers to what it sent. nil: never.
	StopWaiting <-chan struct{}

	// Remote, when set, answers every call in place of the store: a
	// member machine's front for its team hub. The arguments are checked
	// here first, so a wrong call costs no round trip; progress is the
	// client's, nil when it asked for none. Its errors are sentences for
	// the agent, shown as they are.
	Remote func(ctx context.Context, tool string, args json.RawMessage, progress Progress) (Result, error)

	// Turn, when set, is the chain of the session's current turn, which
	// its posts carry (chain.go); ok is false outside any known turn.
	Turn func() (c store.Chain, ok bool)

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
func (s *Service) sameAnswer(tool string, args any, state string, build func() Result) (Result, error) {
	if state == "" {
		return build(), nil
	}
	data, _ := json.Marshal(args) // a struct of strings, numbers and bools
	key := tool + "\x00" + string(data) + "\x00" + state
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

// handler is one tool's code, bound to its argument struct by bind.
type handler struct {
	// args is the tool's argument struct: a test keeps its fields' JSON
	// names equal to the properties of the tool's inputSchema, so that no
	// declared argument is checked and then dropped.
	args reflect.Type
	run  func(ctx context.Context, s *Service, args json.RawMessage) (Result, error)
}

// bind makes a tool's code a handler: the checked arguments are decoded
// into A here, once for every tool, and A's own check (checker), if it has
// one, runs before the code does.
func bind[A any](run func(ctx context.Context, s *Service, a A) (Result, error)) handler {
	return handler{
		args: reflect.TypeFor[A](),
		run: func(ctx context.Context, s *Service, raw json.RawMessage) (Result, error) {
			var a A
			if err := json.Unmarshal(raw, &a); err != nil {
				// checkArgs passed them, so A and the schema disagree: a bug.
				return Result{}, fmt.Errorf("decode the checked arguments: %w", err)
			}
			if c, ok := any(a).(checker); ok {
				if err := c.check(); err != nil {
					return Result{}, err
				}
			}
			return run(ctx, s, a)
		},
	}
}

// checker is an argument struct with rules the schema cannot state (a
// text that must not be blank); check returns an ArgError.
type checker interface{ check() error }

// handlers maps every declared tool to its code; a test keeps it equal to
// module.yaml's tool list.
var handlers = map[string]handler{
	"chat_whoami":        bind(whoami),
	"chat_channel_new":   bind(channelNew),
	"chat_channel_list":  bind(channelList),
	"chat_channel_join":  bind(channelJoin),
	"chat_channel_leave": bind(channelLeave),
	"chat_say":           bind(say),
	"chat_ask":           bind(ask),
	"chat_reply":         bind(reply),
	"chat_ack":           bind(ack),
	"chat_resolve":       bind(resolve),
	"chat_prune_ok":      bind(pruneOK),
	"chat_due":           bind(due),
	"chat_reassign":      bind(reassign),
	"chat_read":          bind(read),
	"chat_search":        bind(chatSearch),
	"chat_inbox":         bind(inbox),
	"chat_wait":          bind(wait),
	"chat_claim":         bind(claim),
	"chat_release":       bind(release),
	"chat_claims":        bind(claims),
	"chat_attention":     bind(attention),
}

// ErrUnknownTool is a call to a tool module.yaml does not declare.
// Its sentence starts "Unknown tool", which clients of the Python edition
// match on.
var ErrUnknownTool = errors.New("Unknown tool")

// Call checks the arguments and runs the tool. Every error it returns is
// one sentence that says what to do.
func (s *Service) Call(ctx context.Context, name string, raw json.RawMessage) (Result, error) {
	res, err := s.call(s.withChain(ctx, name), name, raw)
	if err != nil {
		return Result{}, shown(err)
	}
	if s.Remote != nil {
		// The hub fitted the answer to its budget; cutting it again here
		// would drop messages a read has already marked read.
		return res, nil
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
	if s.Remote != nil {
		if name == "chat_wait" && s.StopWaiting != nil {
			return s.remoteWait(ctx, args)
		}
		return s.Remote(ctx, name, args, progressFrom(ctx))
	}
	res, err := s.run(ctx, name, h, args)
	if err != nil {
		return Result{}, s.explain(name, err)
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

// explain keeps the errors written for the agent as they are: a refusal
// (store.UserError, ArgError), a state of the database the user must fix
// (store.StorageError), the retryable store.ErrBusy. Anything else is a
// failure inside the server: the driver's text would tell the agent
// nothing it can act on, so it is logged in full and the agent gets one
// sentence that says what to do. A call fails before its transaction
// commits, so either way nothing was written.
func (s *Service) explain(tool string, err error) error {
	var ue *store.UserError
	var ae *ArgError
	var se *store.StorageError
	switch {
	case errors.As(err, &ue), errors.As(err, &ae), errors.As(err, &se), errors.Is(err, store.ErrBusy):
		return err
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return &toolError{err: err, msg: tool + " was cancelled before it finished — nothing was written; call it again if you still need it"}
	}
	s.log().Error("a tool call failed inside the server", "tool", tool, "party", s.Me.Name, "err", err)
	return &toolError{err: err, msg: tool + " failed inside the server (details in its log); nothing was written; retry once, then tell the user"}
}

// toolError is a failure the agent is told about in a sentence of ours;
// errors.Is and As still see the error behind it.
type toolError struct {
	msg string
	err error
}

func (e *toolError) Error() string { return e.msg }
func (e *toolError) Unwrap() error { return e.err }

func (s *Service) log() *slog.Logger {
	if s.Log != nil {
		return s.Log
	}
	return slog.Default()
}

// DefaultWaitSeconds is chat_wait's seconds when none are given (within
// its ceiling).
const DefaultWaitSeconds = 10

// HostTimeoutMargin is how much sooner than an mcpp host's per-call timeout
// (MCPP_TIMEOUT_SECONDS) a chat_wait ends, so that the host's never fires
// first.
const HostTimeoutMargin = 5

// WaitCeiling is chat_wait's longest wait in seconds: chat.wait_max_seconds,
// and MCPP_TIMEOUT_SECONDS − HostTimeoutMargin when env sets it; at least 1.
func WaitCeiling(cfg config.Config, env config.Env) int {
	limit := cfg.Chat.WaitMaxSeconds
	if env != nil {
		if v, err := strconv.Atoi(strings.TrimSpace(env("MCPP_TIMEOUT_SECONDS"))); err == nil {
			limit = min(limit, v-HostTimeoutMargin)
		}
	}
	return max(limit, 1)
}

// keyedChanges is a Changes that can wake a waiter only at the changes
// that concern it (listen.Listener on a team store).
type keyedChanges interface {
	NextOf(keys []int64) (<-chan struct{}, func())
}

// nextChange is a channel closed at the next change of the database that
// may concern the caller, taken before a look so that a change during the
// look is not missed, and a stop to call once done waiting on it.
func (s *Service) nextChange(ctx context.Context) (<-chan struct{}, func()) {
	if s.Changes == nil {
		return nil, func() {} // never closes
	}
	if keyed, ok := s.Changes.(keyedChanges); ok && s.DB != nil {
		// The keys are read at every look: a channel the party was
		// seated in since wakes it through its own key (store.WaitKeys).
		if keys, err := s.DB.WaitKeys(ctx, s.Me); err == nil && keys != nil {
			return keyed.NextOf(keys)
		}
	}
	return s.Changes.Next(), func() {}
}

// remoteWait is a member's chat_wait: when the client closes its end
// (StopWaiting) the wait on the hub is ended and asked again for one
// second, so that the answer comes at once, as on a single host.
func (s *Service) remoteWait(ctx context.Context, args json.RawMessage) (Result, error) {
	waiting, stop := context.WithCancel(ctx)
	defer stop()
	stopped := make(chan struct{})
	go func() {
		select {
		case <-s.StopWaiting:
			close(stopped)
			stop()
		case <-waiting.Done():
		}
	}()
	res, err := s.Remote(waiting, "chat_wait", args, progressFrom(ctx))
	if err == nil {
		return res, nil
	}
	select {
	case <-stopped:
		if ctx.Err() == nil {
			var a map[string]any
			json.Unmarshal(args, &a) // checked against the schema already
			if a == nil {
				a = map[string]any{}
			}
			a["seconds"] = 1
			again, _ := json.Marshal(a)
			return s.Remote(ctx, "chat_wait", again, nil)
		}
	default:
	}
	return res, err
}

// Close closes the service's store; a member's front has none.
func (s *Service) Close() error {
	if s.DB == nil {
		return nil
	}
	return s.DB.Close()
}

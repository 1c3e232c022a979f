package scripted

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"time"
)

// Limits bound a server. Zero fields take the defaults.
type Limits struct {
	Requests int           // requests served before it refuses the rest (default 300)
	Lifetime time.Duration // it closes itself this long after Start (default 5 minutes)
	BodySize int64         // largest request body read (default 32 MiB)
}

func (l Limits) withDefaults() Limits {
	if l.Requests == 0 {
		l.Requests = 300
	}
	if l.Lifetime == 0 {
		l.Lifetime = 5 * time.Minute
	}
	if l.BodySize == 0 {
		l.BodySize = 32 << 20
	}
	return l
}

// Exchange is one request the server received and what it made of it.
type Exchange struct {
	Method, Path string
	At           time.Time // when the request arrived, before its body was read
	Body         []byte
	Kind         Kind
	Step         int // the script step that answered it (Kind TurnRequest), else 0
}

// Parsed is the exchange's request as a Turn (nil for other than a
// conversation request): a test looks at what reached the model.
func (e Exchange) Parsed() *Turn {
	switch e.Path {
	case "/v1/messages":
		var req anthropicRequest
		if json.Unmarshal(e.Body, &req) != nil {
			return nil
		}
		return anthropicTurn(&req, e.Body)
	case "/v1/responses":
		var req openaiRequest
		if json.Unmarshal(e.Body, &req) != nil {
			return nil
		}
		return openaiTurn(&req, e.Body)
	}
	return nil
}

// Kind tells what a request was for.
type Kind string

const (
	TurnRequest Kind = "turn"      // a turn of the main conversation: the script answered it
	SideRequest Kind = "side"      // a side call (a title, a summary, a probe): answered without the script
	Extra       Kind = "extra"     // a main turn after the script ran out: ended with a fixed text
	Refused     Kind = "refused"   // over the request limit, or not understood
	InFlight    Kind = "in flight" // still being answered
)

// ExhaustedText ends every turn that comes after the last step.
const ExhaustedText = "(the scripted model has no more steps)"

// Server is a running scripted model. Its methods are safe for
// concurrent use.
type Server struct {
	URL string // http://127.0.0.1:PORT, without a path

	limits Limits
	http   *http.Server
	ln     net.Listener
	timer  *time.Timer
	done   chan struct{}

	closing   chan struct{} // closed when Close begins: held answers go out
	closeOnce sync.Once

	mu       sync.Mutex
	steps    []Step
	next     int // the next step to run
	log      []Exchange
	changed  chan struct{} // closed and replaced whenever log grows
	problems []string
	pending  *Reply // a step's reply held back while its tools load
}

// Start serves steps on a free loopback port until Close, or until the
// lifetime runs out.
func Start(limits Limits, steps ...Step) (*Server, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	s := &Server{
		URL:     "http://" + ln.Addr().String(),
		limits:  limits.withDefaults(),
		ln:      ln,
		done:    make(chan struct{}),
		closing: make(chan struct{}),
		steps:   steps,
		changed: make(chan struct{}),
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/messages", s.guard(s.anthropicMessages))
	mux.HandleFunc("POST /v1/messages/count_tokens", s.guard(s.anthropicCountTokens))
	mux.HandleFunc("GET /v1/models", s.guard(s.models))
	mux.HandleFunc("GET /v1/models/{id...}", s.guard(s.model))
	mux.HandleFunc("POST /v1/responses", s.guard(s.openaiResponses))
	mux.HandleFunc("/", s.guard(s.unknown))
	s.http = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	s.timer = time.AfterFunc(s.limits.Lifetime, func() {
		s.problem("lifetime of %v ran out; closed", s.limits.Lifetime)
		s.Close()
	})
	go func() {
		s.http.Serve(ln)
		close(s.done)
	}()
	return s, nil
}

// Close stops the server and ends requests in flight. It may be called
// more than once.
func (s *Server) Close() {
	s.closeOnce.Do(func() { close(s.closing) })
	s.timer.Stop()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if s.http.Shutdown(ctx) != nil {
		s.http.Close()
	}
	<-s.done
}

// Exchanges returns every request received so far, in order of arrival.
func (s *Server) Exchanges() []Exchange {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Exchange(nil), s.log...)
}

// Turns returns the main-conversation requests (turns and extras).
func (s *Server) Turns() []Exchange {
	var out []Exchange
	for _, e := range s.Exchanges() {
		if e.Kind == TurnRequest || e.Kind == Extra {
			out = append(out, e)
		}
	}
	return out
}

// StepsRun is how many steps of the script have answered a turn.
func (s *Server) StepsRun() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.next
}

// Problems lists what went wrong on the server's side: refused requests,
// bodies it could not parse, the lifetime running out. A test fails on
// them with Err.
func (s *Server) Problems() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.problems...)
}

// Err is the problems as one error, or nil.
func (s *Server) Err() error {
	if p := s.Problems(); len(p) > 0 {
		return fmt.Errorf("scripted model: %v", p)
	}
	return nil
}

// Await blocks until ok holds for the exchanges so far, ctx ends, or the
// server closes. It reports whether ok held.
func (s *Server) Await(ctx context.Context, ok func([]Exchange) bool) bool {
	for {
		s.mu.Lock()
		log, changed := append([]Exchange(nil), s.log...), s.changed
		s.mu.Unlock()
		if ok(log) {
			return true
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return false
		case <-s.done:
			return ok(s.Exchanges())
		}
	}
}

// AwaitSteps blocks until n steps have run (see Await).
func (s *Server) AwaitSteps(ctx context.Context, n int) bool {
	return s.Await(ctx, func([]Exchange) bool { return s.StepsRun() >= n })
}

func (s *Server) problem(format string, args ...any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.problems = append(s.problems, fmt.Sprintf(format, args...))
}

// changedNow wakes Await.
func (s *Server) changedNow() {
	s.mu.Lock()
	defer s.mu.Unlock()
	close(s.changed)
	s.changed = make(chan struct{})
}

// request is one request being answered; n is its number (from 1, in
// order of arrival).
type request struct {
	*http.Request
	body []byte
	n    int
}

// guard reads the body within the size limit, logs the request as it
// arrives (so that the log keeps the order of arrival, and Await sees a
// request at once), and refuses requests over the count limit, so that a
// CLI stuck in a loop ends instead of running until the lifetime does.
// The handler answers and says what kind of request it was.
func (s *Server) guard(h func(http.ResponseWriter, *request) Exchange) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		at := time.Now()
		body, err := io.ReadAll(io.LimitReader(r.Body, s.limits.BodySize+1))
		if err == nil && int64(len(body)) > s.limits.BodySize {
			err = errors.New("body over the size limit")
		}
		s.mu.Lock()
		n := len(s.log) + 1
		s.log = append(s.log, Exchange{Method: r.Method, Path: r.URL.Path, At: at, Body: body, Kind: InFlight})
		s.mu.Unlock()
		s.changedNow()
		e := Exchange{Kind: Refused}
		switch {
		case err != nil:
			s.problem("%s %s: %v", r.Method, r.URL.Path, err)
			http.Error(w, err.Error(), http.StatusBadRequest)
		case n > s.limits.Requests:
			s.problem("%s %s: over the limit of %d requests", r.Method, r.URL.Path, s.limits.Requests)
			// 400, not 429 or 5xx, which the CLIs retry.
			http.Error(w, `{"type":"error","error":{"type":"invalid_request_error","message":"scripted model: request limit reached"}}`, http.StatusBadRequest)
		default:
			e = h(w, &request{Request: r, body: body, n: n})
		}
		s.mu.Lock()
		s.log[n-1].Kind, s.log[n-1].Step = e.Kind, e.Step
		s.mu.Unlock()
		s.changedNow()
	}
}

// answer runs the next step for t. When its calls name tools the CLI
// has not loaded yet, load (the adapter's) returns the tool search that
// loads them: that is the answer now, and the step's reply is kept for
// the next turn, so that a step runs once and sees the results of the
// calls before it. It returns the reply and the exchange's kind.
func (s *Server) answer(t *Turn, load func(*Turn, Reply) (Reply, bool)) (Reply, Kind) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t.N = s.next
	if s.pending != nil {
		r := *s.pending
		s.pending = nil
		return r, TurnRequest
	}
	if s.next >= len(s.steps) {
		return Reply{Text: ExhaustedText}, Extra
	}
	step := s.steps[s.next]
	s.next++
	t.N = s.next
	// Steps run under the lock: one turn at a time, in order. A step
	// must not call the server's methods.
	r := step(t)
	if r.Again {
		s.next--
	}
	if search, ok := load(t, r); ok {
		s.pending = &r
		return search, TurnRequest
	}
	return r, TurnRequest
}

// hold keeps a reply back while its Hold is open (Reply.Hold), outside
// the lock, so that the server answers other requests meanwhile.
func (s *Server) hold(r *request, reply Reply) {
	if reply.Hold == nil {
		return
	}
	select {
	case <-reply.Hold:
	case <-r.Context().Done():
	case <-s.closing:
	}
}

func (s *Server) unknown(w http.ResponseWriter, r *request) Exchange {
	s.problem("unexpected request %s %s", r.Method, r.URL.Path)
	http.Error(w, `{"type":"error","error":{"type":"not_found_error","message":"scripted model: no such endpoint"}}`, http.StatusNotFound)
	return Exchange{Kind: Refused}
}

package hook

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/mcpp/mcpp-chat/internal/config"
	"github.com/mcpp/mcpp-chat/internal/store"
	"github.com/mcpp/mcpp-chat/internal/told"
)

// brokenPipe is a client that went away: nothing written reaches it.
type brokenPipe struct{}

func (brokenPipe) Write([]byte) (int, error) { return 0, errors.New("broken pipe") }

// journalOf is node-dash's journal of what its hook told.
func (f *fixture) journalOf(t *testing.T) string {
	t.Helper()
	paths, _, err := config.Resolve(f.env, "")
	if err != nil {
		t.Fatal(err)
	}
	return told.Dir(paths, f.dashRoot)
}

// fold records node-dash's journal in the store, as its serve does, and
// returns how many tellings it held.
func (f *fixture) fold(t *testing.T) int {
	t.Helper()
	n, err := told.Fold(f.journalOf(t), time.Now(), func(list []store.Telling) error {
		_, err := f.db.RecordTold(context.Background(), f.dash, list)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// toldTo is who was told of mesh-gw's message seq, as mesh-gw reads it.
func (f *fixture) toldTo(t *testing.T, seq int64) map[string]store.Told {
	t.Helper()
	zero := int64(0)
	r, err := f.db.Read(context.Background(), f.gw, store.ReadArgs{Channel: "gw--dash", Limit: 50, Since: &zero, Peek: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range r.Messages {
		if m.Seq == seq {
			return m.ToldTo
		}
	}
	t.Fatalf("no message #%d", seq)
	return nil
}

// The hook records that it told a session of a message only once its
// output reached the client: printed whole, then journalled with the
// event; serve folds the journal into the store, and the sender sees
// told_to. Output that could not be written records nothing, and neither
// does a run with nothing to say.
func TestHookRecordsOnlyWhatReachedTheClient(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	said, err := f.db.Say(ctx, f.gw, store.SayArgs{Text: "is the enum closed?", Channel: "gw--dash"})
	if err != nil {
		t.Fatal(err)
	}
	run := func(event, session string, out interface{ Write([]byte) (int, error) }) {
		t.Helper()
		Run(ctx, Options{Event: event, Env: f.env, Stdin: strings.NewReader(`{"session_id":"` + session + `"}`), Stdout: out, Stderr: &syncBuffer{}})
	}

	run(UserPromptSubmit, "lost", brokenPipe{})
	if n := f.fold(t); n != 0 {
		t.Fatalf("output that never reached the client recorded %d tellings", n)
	}
	if got := f.toldTo(t, said.Seq); got != nil {
		t.Fatalf("told_to = %v before anything reached node-dash", got)
	}

	var out syncBuffer
	run(UserPromptSubmit, "s1", &out)
	mustContain(t, out.String(), "is the enum closed?")
	if n := f.fold(t); n != 1 {
		t.Fatalf("folded %d tellings, want 1", n)
	}
	if got := f.toldTo(t, said.Seq)["node-dash"]; got.Via != store.ViaUserPromptSubmit || got.At == "" {
		t.Fatalf("told_to node-dash = %+v, want by UserPromptSubmit", got)
	}

	var quiet syncBuffer
	run(UserPromptSubmit, "s1", &quiet) // nothing new to say
	if quiet.String() != "" || f.fold(t) != 0 {
		t.Fatalf("a run with nothing to say journalled: %q", quiet.String())
	}

	asked, err := f.db.Ask(ctx, f.gw, store.AskArgs{Title: "Which port?", Body: "Which port does node-dash serve on?", Channel: "gw--dash"})
	if err != nil {
		t.Fatal(err)
	}
	var stop syncBuffer
	run(Stop, "s2", &stop)
	mustContain(t, stop.String(), `"decision":"block"`)
	if n := f.fold(t); n != 2 {
		t.Fatalf("a Stop block folded %d tellings, want the say and the ask", n)
	}
	if got := f.toldTo(t, asked.Seq)["node-dash"]; got.Via != store.ViaStop {
		t.Fatalf("the ask's told_to = %+v, want by Stop", got)
	}
	if got := f.toldTo(t, said.Seq)["node-dash"]; got.Via != store.ViaUserPromptSubmit {
		t.Fatalf("the say's first telling %+v was replaced", got)
	}
	if entries, _ := os.ReadDir(f.journalOf(t)); len(entries) != 0 {
		t.Fatalf("the fold left %d journal files", len(entries))
	}

	// mesh-gw's own hook says who was told of what it has not read yet.
	gwEnv := func(k string) string {
		if k == "CLAUDE_PROJECT_DIR" {
			return f.gw.Workspace
		}
		return f.env(k)
	}
	var sender syncBuffer
	Run(ctx, Options{Event: SessionStart, Env: gwEnv, Stdin: strings.NewReader(`{"session_id":"gw"}`), Stdout: &sender, Stderr: &syncBuffer{}})
	mustContain(t, sender.String(), "[which-port], ", "not yet read by node-dash (told ", " by Stop)")
}

// A wake records its telling once it is on stderr, by "wake".
func TestWakeRecordsItsTelling(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	w := f.waiter(ctx, "s1", time.Minute)
	w.waitLook(t)
	asked, err := f.db.Ask(ctx, f.gw, store.AskArgs{Title: "Is the enum closed?", Body: "I need FRAME_AUX.", Slug: "chunk-api"})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case code := <-w.done:
		if code != ExitWake {
			t.Fatalf("exit %d", code)
		}
	case <-time.After(time.Minute):
		t.Fatal("the waiter did not wake")
	}
	if n := f.fold(t); n != 1 {
		t.Fatalf("the wake folded %d tellings, want 1", n)
	}
	if got := f.toldTo(t, asked.Seq)["node-dash"]; got.Via != store.ViaWake {
		t.Fatalf("told_to node-dash = %+v, want by wake", got)
	}
}

package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"strings"

	"github.com/mcpp/mcpp-chat/hub"
	"github.com/mcpp/mcpp-chat/internal/store"
	"github.com/mcpp/mcpp-chat/tools"
)

const watchSynopsis = `watch [--mine] [--workspace DIR] [--exec CMD]

Prints one line per change as it happens: the tick line
"<time> <channel> <seq> <author>". A burst of changes may show as its newest
line; --mine lists every message. With --mine, only what waits on this
repository's party (a peer's message in your channels, an item for you),
followed by its kind and first words. Waits for the database and the tick
file if they do not exist yet. Stops on Ctrl-C or SIGTERM.

It starts by saying on stderr what it watches (the file, the database, the
party for --mine), so that standard output holds only the change lines.`

func watch(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	fs := flags("watch", watchSynopsis, stderr)
	mine := fs.Bool("mine", false, "only changes that wait on this repository's party")
	workspace := fs.String("workspace", "", "start folder for identity (default: $MCPP_CHAT_WORKSPACE, $CLAUDE_PROJECT_DIR, cwd)")
	command := fs.String("exec", "", "run `CMD` with sh -c for each change, the line in $MCPP_CHAT_EVENT, instead of printing it")
	if code, done := parse(fs, args, stdout); done {
		return code
	}
	if fs.NArg() > 0 {
		fs.Usage()
		return exitUsage
	}
	in, err := locate(getenv, *workspace)
	if err != nil {
		fmt.Fprintf(stderr, "mcpp-chat watch: %v\n", err)
		return exitError
	}
	w, err := in.changes()
	if err != nil {
		fmt.Fprintf(stderr, "mcpp-chat watch: %v\n", err)
		return exitError
	}
	defer w.Close()
	var src changeSource = &tickSource{path: in.paths.Tick}
	var db *dbSource
	var report func(error)
	if hw, ok := w.(*hub.Watcher); ok {
		c, err := in.hubClient()
		if err != nil {
			fmt.Fprintf(stderr, "mcpp-chat watch: %v\n", err)
			return exitError
		}
		src = &hubArrivals{c: c, all: !*mine}
		status := &hubStatus{c: c, w: stderr, command: "watch", meanwhile: "nothing shows here until it answers", back: "the watch goes on"}
		hw.OnError, report = status.trouble, status.trouble
		hw.OnPoll = func(string, bool) { status.fine() }
	} else if *mine || in.paths.Tick == "" {
		db = &dbSource{in: in}
		if *mine {
			db.workspace = in.party.Root
		}
		defer db.close()
		src = db
	}
	changed := w.Next() // before src.start: every change after it shows
	startErr := src.start(ctx)
	fmt.Fprintln(stderr, watchBanner(ctx, in, db, *mine, *command))
	emit := func(line string) error {
		_, err := fmt.Fprintln(stdout, line)
		return err
	}
	if *command != "" {
		emit = func(line string) error {
			// A failing command is the user's to fix; the watch goes on.
			if err := runExec(ctx, *command, line, stdout, stderr); err != nil && ctx.Err() == nil {
				fmt.Fprintf(stderr, "mcpp-chat watch: %v\n", err)
			}
			return nil
		}
	}
	if report == nil {
		report = onceEach(ctx, stderr)
	}
	return follow(ctx, w, changed, src, startErr, emit, report, stderr)
}

// onceEach reports each new trouble once: a database mid-creation or busy
// is normal.
func onceEach(ctx context.Context, stderr io.Writer) func(error) {
	lastErr := ""
	return func(err error) {
		if err != nil && ctx.Err() == nil && err.Error() != lastErr {
			lastErr = err.Error()
			fmt.Fprintf(stderr, "mcpp-chat watch: %v\n", err)
		}
	}
}

// watchBanner says what the watch follows: on stderr, the first line a
// person sees, while standard output stays the change lines alone.
func watchBanner(ctx context.Context, in install, db *dbSource, mine bool, command string) string {
	var b strings.Builder
	b.WriteString("mcpp-chat watch: ")
	switch {
	case in.onHub() && mine:
		fmt.Fprintf(&b, "watching the team hub %s for what waits on %s", in.where(), in.party.Name)
	case in.onHub():
		fmt.Fprintf(&b, "watching the team hub %s (a line per new message in %s's channels)", in.where(), in.party.Name)
	case db == nil:
		fmt.Fprintf(&b, "watching the tick file %s (a line per change to %s)", in.paths.Tick, in.paths.DB)
	case in.onPostgres() && db.workspace == "":
		fmt.Fprintf(&b, "watching the team store %s (a line per new message)", in.where())
	case db.workspace == "":
		fmt.Fprintf(&b, "watching the database %s (a line per new message; chat.tick_file is off)", in.paths.DB)
	default:
		fmt.Fprintf(&b, "watching %s for what waits on %s", in.where(), db.partyName(ctx, in))
	}
	if _, err := os.Stat(in.paths.DB); errors.Is(err, fs.ErrNotExist) && !in.onPostgres() && !in.onHub() {
		b.WriteString("; the database does not exist yet, the watch waits for it")
	}
	if command != "" {
		fmt.Fprintf(&b, "; runs %q for each", command)
	}
	b.WriteString(". Ctrl-C stops it.")
	return b.String()
}

// changeSource turns "something changed" into the lines to report.
type changeSource interface {
	// start notes where things are now, so that only later changes show.
	start(ctx context.Context) error
	next(ctx context.Context) ([]string, error)
}

// follow reports src's lines after each change, from the one changed
// reports on; started is what src.start said.
func follow(ctx context.Context, w watcher, changed <-chan struct{}, src changeSource, started error, emit func(string) error, report func(error), stderr io.Writer) int {
	if started != nil {
		report(started)
	}
	for {
		select {
		case <-changed:
		case <-ctx.Done():
			return exitOK
		}
		changed = w.Next()
		lines, err := src.next(ctx)
		if err != nil && ctx.Err() == nil {
			report(err)
		}
		for _, line := range lines {
			if err := emit(line); err != nil {
				if ctx.Err() != nil {
					return exitOK
				}
				fmt.Fprintf(stderr, "mcpp-chat watch: %v\n", err)
				return exitError
			}
		}
	}
}

// runExec runs the --exec command for one change and waits for it, so that
// lines arrive in order.
func runExec(ctx context.Context, command, line string, stdout, stderr io.Writer) error {
	cmd := exec.CommandContext(ctx, "sh", "-c", command)
	cmd.Env = append(os.Environ(), "MCPP_CHAT_EVENT="+line)
	cmd.Stdout, cmd.Stderr = stdout, stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("--exec %q for %q: %w", command, line, err)
	}
	return nil
}

// tickSource reports each new line of the tick file.
type tickSource struct {
	path string
	last string
}

func (s *tickSource) start(context.Context) error {
	s.last, _ = readTick(s.path)
	return nil
}

func (s *tickSource) next(context.Context) ([]string, error) {
	line, err := readTick(s.path)
	if err != nil || line == s.last {
		return nil, err
	}
	s.last = line
	if line == "" {
		return nil, nil
	}
	return []string{line}, nil
}

// readTick reads the tick file's line; a missing file is "".
func readTick(path string) (string, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	return tools.OneLine(string(data), 300), nil
}

// dbSource reports new messages from the database: every one (when the
// tick file is disabled) or, with a workspace, those that wait on its party.
// It reads through the read-only handle: a watch never creates, migrates
// or writes the database, and never makes a party.
type dbSource struct {
	in        install
	workspace string
	db        *store.ReadOnly
	after     int64
}

func (s *dbSource) start(ctx context.Context) error {
	s.after = 0 // a database that appears later is all news
	if err := s.open(ctx); err != nil || s.db == nil {
		return err
	}
	_, newest, err := s.db.Arrivals(ctx, s.workspace, -1)
	s.after = newest
	return err
}

// open opens the database once the first call has made it a chat
// database; until then there is nothing to report, and no error.
func (s *dbSource) open(ctx context.Context) error {
	if s.db != nil {
		return nil
	}
	if info, err := os.Stat(s.in.paths.DB); !s.in.onPostgres() && (errors.Is(err, fs.ErrNotExist) || (err == nil && info.Size() == 0)) {
		return nil // none yet, or one being created
	}
	db, err := s.in.openReadOnly(ctx)
	if errors.Is(err, store.ErrNoDatabase) {
		return nil
	}
	if err != nil {
		return err
	}
	if version, err := db.Version(ctx); err != nil || version == 0 {
		db.Close() // no schema yet: its first call is still creating it
		return err
	}
	s.db = db
	return nil
}

func (s *dbSource) next(ctx context.Context) ([]string, error) {
	if err := s.open(ctx); err != nil || s.db == nil {
		return nil, err
	}
	found, newest, err := s.db.Arrivals(ctx, s.workspace, s.after)
	if err != nil {
		s.close() // opened afresh at the next change, whatever the file became
		return nil, err
	}
	s.after = newest
	lines := make([]string, len(found))
	for i, a := range found {
		lines[i] = arrivalLine(a, s.workspace != "")
	}
	return lines, nil
}

// arrivalLine is the tick line for a message; for a party's watch (mine),
// the kind and the first words follow.
func arrivalLine(a store.Arrival, mine bool) string {
	// Channel and author come from the database, which any process of
	// the user can write: the line goes to a terminal or a command.
	head := tools.OneLine(fmt.Sprintf("%s %s %d %s", a.At, a.Channel, a.Seq, a.Author), 300)
	if !mine {
		return head
	}
	text := a.Body
	if a.Title != "" {
		text = a.Title
	}
	return fmt.Sprintf("%s %s: %s", head, a.Kind, tools.OneLine(firstWords(text, 12), 100))
}

func firstWords(s string, n int) string {
	words := strings.Fields(s)
	if len(words) <= n {
		return strings.Join(words, " ")
	}
	return strings.Join(words[:n], " ") + " …"
}

// partyName names the party watched: as the chat knows it, else as it
// will be named at its first call.
func (s *dbSource) partyName(ctx context.Context, in install) string {
	name, known := in.party.Name, false
	if s.db != nil {
		if n, ok, err := s.db.NameFor(ctx, in.identity()); err == nil {
			name, known = n, ok
		}
	}
	if !known {
		return fmt.Sprintf("%s (%s; no call from there yet)", name, in.party.Root)
	}
	return fmt.Sprintf("%s (%s)", name, in.party.Root)
}

func (s *dbSource) close() {
	if s.db != nil {
		s.db.Close()
		s.db = nil
	}
}

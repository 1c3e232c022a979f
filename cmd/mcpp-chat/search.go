package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/mcpp/mcpp-chat/internal/store"
	safe "github.com/mcpp/mcpp-chat/internal/text"
	"github.com/mcpp/mcpp-chat/internal/transcript"
)

const searchSynopsis = `search QUERY... [--channel C] [--archived] [--limit N] [--color auto|always|never]

Full-text search of every channel, live and archived: the bodies, item
titles and slugs, best match first, each hit with its channel, seq and the
matching passage. Every word must appear; "quoted words" match as a phrase,
word* as a prefix; at most 64 of them (a phrase counts as one) in at most
1,000 characters. --archived searches only the archived threads. It only
reads the chat (its index is a file of its own beside the database,
<db>.search, made and brought up to date by the search; a first search of
a long history builds it for some seconds and says so on stderr).`

func searchCmd(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	fs := flags("search", searchSynopsis, stderr)
	channel := fs.String("channel", "", "search only channel `C`")
	archived := fs.Bool("archived", false, "search only the archived threads")
	limit := fs.Int("limit", 20, "show at most `N` hits")
	color := colorFlag(fs)
	words, code, done := parseAll(fs, args, stdout)
	if done {
		return code
	}
	if len(words) == 0 {
		fmt.Fprintln(stderr, "mcpp-chat search: nothing to search for — give the words to find, e.g. mcpp-chat search chunk header")
		return exitUsage
	}
	st, err := style(*color, stdout, getenv)
	if err != nil {
		fmt.Fprintf(stderr, "mcpp-chat search: %v\n", err)
		return exitUsage
	}
	a := store.SearchArgs{Query: strings.Join(words, " "), Channel: *channel, Limit: max(*limit, 1)}
	if *archived {
		a.Archived = archived
	}
	progress := &progressLine{out: stderr, tty: isTerminal(stderr)}
	a.Progress, a.ProgressAfter = progress.show, indexProgressAfter
	err = runSearch(ctx, getenv, a, st, stdout)
	progress.end()
	if err != nil {
		fmt.Fprintf(stderr, "mcpp-chat search: %v\n", err)
		return exitError
	}
	return exitOK
}

// indexProgressAfter is how long a search builds its index before it says
// so on the terminal, and then how often. (A variable for the tests.)
var indexProgressAfter = time.Second

// progressLine shows the index's progress on out: one line rewritten in
// place on a terminal, a line each time elsewhere.
type progressLine struct {
	out        io.Writer
	tty, shown bool
}

func (l *progressLine) show(p store.IndexProgress) {
	line := "mcpp-chat search: " + store.IndexProgressLine(p)
	l.shown = true
	if l.tty {
		fmt.Fprint(l.out, "\r\x1b[K"+line)
		return
	}
	fmt.Fprintln(l.out, line)
}

// end ends a line rewritten in place, before the answer.
func (l *progressLine) end() {
	if l.tty && l.shown {
		fmt.Fprintln(l.out)
	}
}

func runSearch(ctx context.Context, getenv func(string) string, a store.SearchArgs, st transcript.Style, out io.Writer) error {
	in, err := locate(getenv, "")
	if err != nil {
		return err
	}
	r, err := openWhenThere(ctx, in, nil, "")
	if err != nil {
		return err
	}
	defer r.Close()
	res, err := r.Search(ctx, a)
	if err != nil {
		return err
	}
	_, err = io.WriteString(out, renderHits(res, a, st))
	return err
}

// renderHits is a search's answer for a person: how many, then each hit
// with where it is, what it is and its passage.
func renderHits(res store.SearchResult, a store.SearchArgs, st transcript.Style) string {
	var b strings.Builder
	// The query as typed, quotes and all: %q would escape them.
	query := safe.OneLine(a.Query, 200)
	if res.Total == 0 {
		fmt.Fprintf(&b, "Nothing matches: %s\n", query)
		return b.String()
	}
	fmt.Fprintf(&b, "%s, best first, for: %s\n", safe.Count(res.Total, "hit"), query)
	for _, h := range res.Hits {
		b.WriteString("\n" + hitLine(h, st) + "\n    " + marked(h.Snippet, st) + "\n")
	}
	if more := res.Total - len(res.Hits); more > 0 {
		fmt.Fprintf(&b, "\n%d more — narrow the search, or pass --limit %d.\n", more, res.Total)
	}
	return b.String()
}

func hitLine(h store.Hit, st transcript.Style) string {
	line := fmt.Sprintf("#%s #%d  %s  %s", safe.OneLine(h.Channel, 64), h.Seq, st.When(h.At), safe.OneLine(h.From, 64))
	switch {
	case h.Kind == "ask":
		line += fmt.Sprintf("  [%s] %s · %s", safe.OneLine(h.Slug, 80), safe.OneLine(h.Title, 200), strings.ToUpper(h.Status))
	case h.Re != "":
		line += "  ↳ re " + safe.OneLine(h.Re, 80)
	}
	if h.Archived {
		line += "  (archived)"
	}
	if st.Color {
		line = "\x1b[1m" + line + "\x1b[0m"
	}
	return line
}

// marked renders a search snippet: its matched words bold on a terminal;
// in plain text (a pipe, a file) the words alone — a mark could fall
// inside a word (FRAME_AUX is two to the index) and would read as text.
func marked(snippet string, s transcript.Style) string {
	open, shut := "", ""
	if s.Color {
		open, shut = "\x1b[1;33m", "\x1b[0m"
	}
	var b strings.Builder
	for _, part := range strings.SplitAfter(snippet, store.MarkEnd) {
		before, match, _ := strings.Cut(strings.TrimSuffix(part, store.MarkEnd), store.MarkStart)
		b.WriteString(flat(before))
		if match != "" {
			b.WriteString(open + flat(match) + shut)
		}
	}
	return b.String()
}

// flat is peer text cleaned of escapes and folded onto the line, its
// spaces kept (a snippet's pieces join on them).
func flat(s string) string {
	return strings.NewReplacer("\n", " ", "\t", " ").Replace(safe.Clean(s))
}

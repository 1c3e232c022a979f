package transcript

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/mcpp/mcpp-chat/internal/store"
	safe "github.com/mcpp/mcpp-chat/internal/text"
)

// Style is how the text is written: with colour for a terminal, plain for
// a pipe or a file, and times in which zone.
type Style struct {
	Color bool
	Loc   *time.Location
}

// The colours are ours alone: every text from the database is cleaned of
// escapes first (internal/text), so none of a peer's reach the terminal.
const (
	reset   = "\x1b[0m"
	bold    = "\x1b[1m"
	dim     = "\x1b[2m"
	red     = "\x1b[31m"
	green   = "\x1b[32m"
	yellow  = "\x1b[33m"
	blue    = "\x1b[34m"
	magenta = "\x1b[35m"
	cyan    = "\x1b[36m"
)

func (s Style) paint(code, text string) string {
	if !s.Color || text == "" {
		return text
	}
	return code + text + reset
}

// When is a stored time as a person reads it, in the style's zone.
func (s Style) When(at string) string {
	t, err := time.Parse(time.RFC3339Nano, at)
	if err != nil {
		return safe.OneLine(at, 40)
	}
	loc := s.Loc
	if loc == nil {
		loc = time.Local
	}
	return t.In(loc).Format("2006-01-02 15:04")
}

// Heading is a channel's first lines: its name and about, who sits there
// with how much each has not read, and its live items.
func Heading(c store.ChannelView, archived bool, s Style) string {
	var b strings.Builder
	name := "#" + safe.OneLine(c.Name, 64)
	if archived {
		name += " — archived threads"
	}
	b.WriteString(s.paint(bold+cyan, "━━ "+name))
	if c.About != "" {
		b.WriteString(s.paint(cyan, " — "+safe.OneLine(c.About, 200)))
	}
	b.WriteString("\n   ")
	var seats []string
	for _, seat := range c.Seats {
		seats = append(seats, fmt.Sprintf("%s %s unread", safe.OneLine(seat.Party, 64), unread(seat)))
	}
	if len(seats) == 0 {
		seats = append(seats, "nobody sits here")
	}
	fmt.Fprintf(&b, "%s · %s", strings.Join(seats, " · "), items(c.LiveItems))
	if c.Closed {
		b.WriteString(" · closed")
	}
	return b.String() + "\n"
}

func unread(s store.Seat) string {
	if s.Over {
		return fmt.Sprintf("%d+", s.Unread)
	}
	return fmt.Sprint(s.Unread)
}

func items(n int) string {
	if n == 1 {
		return "1 live item"
	}
	return fmt.Sprintf("%d live items", n)
}

// Write writes threads, each message under its heading line, replies
// indented under what they answer.
func Write(w io.Writer, threads []*Thread, s Style) error {
	var b strings.Builder
	for _, th := range threads {
		b.WriteString("\n")
		writeThread(&b, th, 0, s)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// Post is one message on its own, as --follow shows what arrives: a reply
// says what it answers, since its thread was written before. It has no
// receipt: nobody has read what has just arrived.
func Post(m store.Message, s Style) string {
	var b strings.Builder
	writeMessage(&b, m, 0, true, s)
	return b.String()
}

// maxDepth is how far replies to replies are indented; deeper ones stay there.
const maxDepth = 4

func writeThread(b *strings.Builder, th *Thread, depth int, s Style) {
	writeMessage(b, th.Message, depth, false, s)
	if th.Receipt != "" {
		fmt.Fprintf(b, "%s    %s\n", strings.Repeat("    ", depth), s.paint(dim, th.Receipt))
	}
	for _, r := range th.Replies {
		writeThread(b, r, min(depth+1, maxDepth), s)
	}
}

// writeMessage writes a message's heading line, an item's state, and its
// body; alone says that its parent is not above it.
func writeMessage(b *strings.Builder, m store.Message, depth int, alone bool, s Style) {
	pad := strings.Repeat("    ", depth)
	head := pad
	if depth > 0 {
		head = pad[:len(pad)-2] + "↳ "
	}
	seq := s.paint(dim, fmt.Sprintf("#%d", m.Seq))
	at := s.paint(dim, s.When(m.At))
	from := safe.OneLine(m.From, 64)
	if m.Kind == "event" {
		fmt.Fprintf(b, "%s%s  %s  %s\n", head, seq, at, s.paint(dim, "· "+safe.OneLine(m.Body, 300)))
		return
	}
	fmt.Fprintf(b, "%s%s  %s  %s", head, seq, at, s.paint(bold, from))
	switch {
	case m.Kind == "ask":
		fmt.Fprintf(b, "  %s %s", s.paint(magenta, "["+safe.OneLine(m.Slug, 80)+"]"), s.paint(bold, safe.OneLine(m.Title, 200)))
	case m.Re != "" && (alone || depth == 0):
		fmt.Fprintf(b, "  %s", s.paint(dim, "↳ re "+safe.OneLine(m.Re, 80)))
	}
	if len(m.To) > 0 {
		fmt.Fprintf(b, "  %s", s.paint(dim, "→ "+safe.OneLine(strings.Join(m.To, ", "), 200)))
	}
	if m.Ref != "" {
		fmt.Fprintf(b, "  %s", s.paint(dim, "(ref "+safe.OneLine(m.Ref, 80)+")"))
	}
	b.WriteString("\n")
	body := pad + "    "
	if state := State(m); state != "" {
		fmt.Fprintf(b, "%s%s\n", body, s.paint(stateColour(m), state))
	}
	writeDue(b, m, body, s)
	for _, line := range strings.Split(strings.TrimRight(safe.Clean(m.Body), "\n"), "\n") {
		b.WriteString(strings.TrimRight(body+line, " ") + "\n")
	}
}

// stateColour tells the states apart at a glance: open waits on someone,
// acked waits on its raiser, done waits on prune-oks, archived is over.
func stateColour(m store.Message) string {
	switch {
	case m.Archived != nil && *m.Archived:
		return dim
	case m.Status == "open":
		return yellow
	case m.Status == "ack":
		return blue
	case m.Status == "done":
		return green
	}
	return red
}

package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/mcpp/mcpp-chat/internal/transcript"
)

// What log, search and ui share: they are the person's view of the chat,
// through the read-only handle, so none of them moves a cursor, makes a
// party or writes a byte of the database.

// parseAll parses flags that may come before, between or after the
// positional arguments (mcpp-chat log gw--dash --follow), which the flag
// package alone stops parsing at the first of them.
func parseAll(fs *flag.FlagSet, args []string, stdout io.Writer) (positional []string, code int, done bool) {
	for {
		if code, done := parse(fs, args, stdout); done {
			return nil, code, true
		}
		if fs.NArg() == 0 {
			return positional, 0, false
		}
		args = fs.Args()
		if args[0] == "--" {
			return append(positional, args[1:]...), 0, false
		}
		positional = append(positional, args[0])
		args = args[1:]
	}
}

// colorFlag adds --color; style then decides for the output at hand.
func colorFlag(fs *flag.FlagSet) *string {
	return fs.String("color", "auto", "colour the output: `auto` (on a terminal, unless NO_COLOR is set), always or never")
}

// style is how to write for out: colour on a terminal (or when asked),
// plain text for a pipe or a file, times in the local zone.
func style(mode string, out io.Writer, getenv func(string) string) (transcript.Style, error) {
	s := transcript.Style{Loc: time.Local}
	switch mode {
	case "always":
		s.Color = true
	case "never":
	case "auto", "":
		s.Color = isTerminal(out) && getenv("NO_COLOR") == "" && getenv("TERM") != "dumb"
	default:
		return s, fmt.Errorf("--color %q is not one of auto, always, never — pick one of those", mode)
	}
	return s, nil
}

// isTerminal reports whether out is a terminal (a character device).
func isTerminal(out io.Writer) bool {
	f, ok := out.(*os.File)
	if !ok {
		return false
	}
	info, err := f.Stat()
	return err == nil && info.Mode()&os.ModeCharDevice != 0
}

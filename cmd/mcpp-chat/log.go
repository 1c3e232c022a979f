package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/mcpp/mcpp-chat/internal/store"
	"github.com/mcpp/mcpp-chat/internal/transcript"
)

const logSynopsis = `log [CHANNEL] [--all] [--since SEQ] [--archived] [--follow] [--color auto|always|never]

The conversation as a person reads it: who said what, replies under what
they answer, each item's state and who it waits on. Without CHANNEL: the
only channel there is, else the channels this folder's party sits in;
--all shows every channel. --archived shows the archived threads instead
of the live messages; --follow goes on printing what arrives (woken like
watch) until Ctrl-C. It only reads: no cursor moves, no party is made,
nothing is written.`

// logArgs are log's choices after parsing.
type logArgs struct {
	channel  string
	all      bool
	since    int64
	archived bool
	follow   bool
	style    transcript.Style
}

func logCmd(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	fs := flags("log", logSynopsis, stderr)
	var a logArgs
	fs.BoolVar(&a.all, "all", false, "every channel")
	fs.Int64Var(&a.since, "since", 0, "only messages after `SEQ` (in each channel)")
	fs.BoolVar(&a.archived, "archived", false, "the archived threads instead of the live messages")
	fs.BoolVar(&a.follow, "follow", false, "go on printing what arrives, until Ctrl-C")
	color := colorFlag(fs)
	rest, code, done := parseAll(fs, args, stdout)
	if done {
		return code
	}
	if err := a.check(rest); err != nil {
		fmt.Fprintf(stderr, "mcpp-chat log: %v\n", err)
		return exitUsage
	}
	var err error
	if a.style, err = style(*color, stdout, getenv); err != nil {
		fmt.Fprintf(stderr, "mcpp-chat log: %v\n", err)
		return exitUsage
	}
	in, err := locate(getenv, "")
	if err == nil {
		err = runLog(ctx, in, a, stdout)
	}
	if err != nil && ctx.Err() == nil {
		fmt.Fprintf(stderr, "mcpp-chat log: %v\n", err)
		return exitError
	}
	return exitOK
}

// check takes the channel from the positional arguments and refuses the
// combinations that mean nothing.
func (a *logArgs) check(rest []string) error {
	switch {
	case len(rest) > 1:
		return fmt.Errorf("one channel at most, got %s — name one, or pass --all for every channel", strings.Join(rest, " "))
	case len(rest) == 1 && a.all:
		return fmt.Errorf("a channel and --all — name the channel, or pass --all alone")
	case a.follow && a.archived:
		return fmt.Errorf("--follow prints live messages as they arrive, and the archive only grows by archiving them — drop one of --follow and --archived")
	}
	if len(rest) == 1 {
		a.channel = rest[0]
	}
	return nil
}

func runLog(ctx context.Context, in install, a logArgs, out io.Writer) error {
	var w watcher
	if a.follow {
		var err error
		if w, err = in.changes(); err != nil {
			return err
		}
		defer w.Close()
	}
	r, err := openWhenThere(ctx, in, w, ", or pass --follow to wait for it")
	if err != nil {
		return err
	}
	defer r.Close()
	chans, err := logChannels(ctx, r, in, a)
	if err != nil {
		return err
	}
	claims, err := r.AllClaims(ctx)
	if err != nil {
		return err
	}
	last := map[string]int64{}
	for i, name := range chans {
		if i > 0 {
			fmt.Fprintln(out)
		}
		if last[name], err = writeChannel(ctx, r, name, a, claims, out); err != nil {
			return err
		}
	}
	if !a.follow {
		return nil
	}
	return followLog(ctx, w, r, in, a, last, out)
}

// openWhenThere opens the database read-only; with a watcher (--follow) it
// waits for a database that does not exist yet, and never creates it.
// hint ends the sentence when there is none.
func openWhenThere(ctx context.Context, in install, w watcher, hint string) (*store.ReadOnly, error) {
	for {
		var next <-chan struct{}
		if w != nil {
			next = w.Next() // before the look, so a database made during it wakes us
		}
		r, err := in.openReadOnly(ctx)
		if !errors.Is(err, store.ErrNoDatabase) || w == nil {
			if errors.Is(err, store.ErrNoDatabase) {
				if in.onPostgres() {
					return nil, fmt.Errorf("the team store %s has no chat yet — nobody has chatted there; check MCPP_CHAT_STORE%s", in.where(), hint)
				}
				return nil, fmt.Errorf("there is no chat database at %s yet — nobody has chatted there; check MCPP_CHAT_DB%s", in.paths.DB, hint)
			}
			return r, err
		}
		select {
		case <-next:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// logChannels are the channels to show: the one named, every one, or
// without either the only one there is, else the seats of this folder's
// party.
func logChannels(ctx context.Context, r *store.ReadOnly, in install, a logArgs) ([]string, error) {
	if a.channel != "" {
		return []string{a.channel}, nil
	}
	all, err := r.Channels(ctx)
	if err != nil {
		return nil, err
	}
	names := make([]string, len(all))
	for i, c := range all {
		names[i] = c.Name
	}
	if a.all || len(names) == 1 || (len(names) == 0 && a.follow) {
		return names, nil
	}
	if len(names) == 0 {
		return nil, errors.New("there is no channel yet — a session makes one with chat_channel_new")
	}
	p, err := r.Pending(ctx, in.party.Root, 0)
	if err == nil && len(p.Channels) > 0 {
		mine := make([]string, len(p.Channels))
		for i, c := range p.Channels {
			mine[i] = c.Channel
		}
		return mine, nil
	}
	if err != nil && !errors.Is(err, store.ErrUnknownParty) {
		return nil, err
	}
	return nil, fmt.Errorf("this folder's party (%s) sits in no channel — name one of %s, or pass --all", in.party.Name, strings.Join(names, ", "))
}

// writeChannel writes a channel's heading (with the live claims of the
// parties seated there) and threads, and returns the seq of its newest
// row shown.
func writeChannel(ctx context.Context, r *store.ReadOnly, name string, a logArgs, claims []store.Claim, out io.Writer) (int64, error) {
	conv, err := r.Conversation(ctx, store.ConversationArgs{Channel: name, Since: a.since, Archived: a.archived})
	if err != nil {
		return 0, err
	}
	head := transcript.Heading(conv.Channel, a.archived, a.style)
	if !a.archived {
		head += transcript.Claims(conv.Channel, claims, a.style)
	}
	if _, err := io.WriteString(out, head); err != nil {
		return 0, err
	}
	if len(conv.Messages) == 0 {
		fmt.Fprintln(out, "\n   (nothing here yet)")
	}
	if err := transcript.Write(out, transcript.Threads(conv.Messages), a.style); err != nil {
		return 0, err
	}
	return max(a.since, conv.Channel.Newest), nil
}

// followLog prints each message that arrives, in the channels shown (with
// --all, in channels made later too), after each wake-up like watch's.
func followLog(ctx context.Context, w watcher, r *store.ReadOnly, in install, a logArgs, last map[string]int64, out io.Writer) error {
	shown := ""
	next := w.Next()
	for {
		select {
		case <-next:
		case <-ctx.Done():
			return ctx.Err()
		}
		next = w.Next() // before the look, so a message during it wakes us again
		chans := make([]string, 0, len(last))
		for name := range last {
			chans = append(chans, name)
		}
		if a.all || a.channel == "" {
			if all, err := logChannels(ctx, r, in, a); err == nil {
				chans = all
			}
		}
		for _, name := range chans {
			conv, err := r.Conversation(ctx, store.ConversationArgs{Channel: name, Since: last[name]})
			if err != nil {
				return err
			}
			for _, m := range conv.Messages {
				if name != shown && (len(chans) > 1 || shown != "") {
					fmt.Fprintf(out, "\n%s", transcript.Heading(conv.Channel, false, a.style))
				}
				shown = name
				if _, err := fmt.Fprintf(out, "\n%s", transcript.Post(m, a.style)); err != nil {
					return err
				}
				last[name] = m.Seq
			}
		}
	}
}

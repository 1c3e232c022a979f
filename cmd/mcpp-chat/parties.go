package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/mcpp/mcpp-chat/internal/config"
	"github.com/mcpp/mcpp-chat/internal/store"
	"github.com/mcpp/mcpp-chat/internal/text"
)

const partiesSynopsis = `parties [list] [--json]
       mcpp-chat parties move NAME FOLDER [--merge]
       mcpp-chat parties forget NAME [--force]
       mcpp-chat parties reset-cursor NAME CHANNEL [--to SEQ]

For the person who runs the chat, not for agents (no tool does this):
  list          every party with its folder, its last activity, its channels and
                what waits on it
  move          the repository of party NAME now lives in FOLDER (a moved checkout
                otherwise becomes NAME~2 and its items wait on NAME forever); the
                party of FOLDER is found as a session there would find it. If a
                party already lives there (NAME~2), --merge folds it into NAME
  forget        remove a party that wrote nothing (a folder that only probed the
                server); refused while live items wait on it, unless --force,
                which drops it from those items
  reset-cursor  set NAME's read position in CHANNEL (default 0: every message
                unread again)
Each change is one transaction; a refused command writes nothing.`

func parties(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	sub, rest := "list", args
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		sub, rest = args[0], args[1:]
	}
	cmds := map[string]func(context.Context, []string, func(string) string, io.Writer, io.Writer) int{
		"list": partiesList, "move": partiesMove, "forget": partiesForget, "reset-cursor": partiesResetCursor,
	}
	cmd, ok := cmds[sub]
	if !ok {
		fmt.Fprintf(stderr, "mcpp-chat parties: unknown subcommand %q — use list, move, forget or reset-cursor\n\nUsage: mcpp-chat %s\n", sub, partiesSynopsis)
		return exitUsage
	}
	return cmd(ctx, rest, getenv, stdout, stderr)
}

// partiesFlags parses a subcommand's flags, which may come before or after
// its words, and checks it got want words.
func partiesFlags(fs *flag.FlagSet, args []string, stdout io.Writer, want int, words string) (pos []string, code int, done bool) {
	for {
		if code, done := parse(fs, args, stdout); done {
			return nil, code, true
		}
		rest := fs.Args()
		if len(rest) == 0 || strings.HasPrefix(rest[0], "-") {
			break
		}
		pos, args = append(pos, rest[0]), rest[1:]
	}
	if len(pos) != want {
		fmt.Fprintf(fs.Output(), "mcpp-chat parties: give %s\n", words)
		return nil, exitUsage, true
	}
	return pos, 0, false
}

// checkNamed refuses a NAME that no party may have (config.CheckPartyName,
// the rule every way a name comes in keeps to), before anything is opened.
func checkNamed(name string, stderr io.Writer) bool {
	if err := config.CheckPartyName(name); err != nil {
		fmt.Fprintf(stderr, "mcpp-chat parties: %v (mcpp-chat parties lists them)\n", err)
		return false
	}
	return true
}

// openExisting opens the install's database, which a parties command never
// creates: a missing file means a wrong MCPP_CHAT_DB or no chat yet.
func openExisting(ctx context.Context, getenv func(string) string, stderr io.Writer) (*store.DB, install, bool) {
	in, err := locate(getenv, "")
	if err != nil {
		fmt.Fprintf(stderr, "mcpp-chat parties: %v\n", err)
		return nil, in, false
	}
	if in.onHub() {
		fmt.Fprintf(stderr, "mcpp-chat parties: %v\n", in.errMember("parties"))
		return nil, in, false
	}
	if _, err := os.Stat(in.paths.DB); errors.Is(err, fs.ErrNotExist) && !in.onPostgres() {
		fmt.Fprintf(stderr, "mcpp-chat parties: there is no chat database at %s — no session has made a call yet, or MCPP_CHAT_DB names another file\n", in.paths.DB)
		return nil, in, false
	}
	db, err := in.open(ctx)
	if err != nil {
		fmt.Fprintf(stderr, "mcpp-chat parties: %v\n", err)
		return nil, in, false
	}
	return db, in, true
}

// partyFolder is a party as list --json prints it.
type partyFolder struct {
	store.PartyRecord
	FolderExists bool `json:"folder_exists"`
}

func partiesList(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	fs := flags("parties list", partiesSynopsis, stderr)
	asJSON := fs.Bool("json", false, "print the list as JSON")
	if _, code, done := partiesFlags(fs, args, stdout, 0, "no words after list"); done {
		return code
	}
	db, in, ok := openExisting(ctx, getenv, stderr)
	if !ok {
		return exitError
	}
	defer db.Close()
	list, err := db.Parties(ctx)
	if err != nil {
		fmt.Fprintf(stderr, "mcpp-chat parties: %v\n", err)
		return exitError
	}
	out := make([]partyFolder, len(list))
	for i, p := range list {
		info, err := os.Stat(p.Workspace)
		out[i] = partyFolder{PartyRecord: p, FolderExists: err == nil && info.IsDir()}
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		enc.Encode(out)
		return exitOK
	}
	if len(out) == 0 {
		fmt.Fprintln(stdout, "no parties yet: a party appears when a session in its repository calls a chat tool")
		return exitOK
	}
	for _, p := range out {
		printParty(stdout, p, in.onPostgres(), time.Now())
	}
	return exitOK
}

// printParty writes a party's line and, indented, what ties it to the
// chat. Names and folders come from other sessions: cleaned for a terminal.
// On a team store a folder missing here is most likely another machine's,
// and a hub's party has no folder at all (team:NAME): neither is "moved".
func printParty(w io.Writer, p partyFolder, team bool, now time.Time) {
	gone := ""
	switch {
	case p.FolderExists || strings.HasPrefix(p.Workspace, store.TeamWorkspace("")):
	case team:
		gone = "  (not a folder on this machine)"
	default:
		gone = "  (no such folder here: moved? mcpp-chat parties move)"
	}
	fmt.Fprintf(w, "%s  last active %s  %s%s\n", text.OneLine(p.Name, 80), ago(p.LastSeen, now), text.OneLine(p.Workspace, 300), gone)
	var facts []string
	if len(p.Channels) > 0 {
		facts = append(facts, "in "+text.OneLine(strings.Join(p.Channels, ", "), 300))
	}
	facts = append(facts, "wrote "+text.Count(p.Wrote, "message"))
	if len(p.Owes) > 0 {
		facts = append(facts, "owes "+text.OneLine(strings.Join(p.Owes, "; "), 500))
	}
	fmt.Fprintf(w, "    %s\n", strings.Join(facts, "; "))
}

// ago is a stored time as a person reads it: the UTC time and how long ago.
func ago(stamp string, now time.Time) string {
	t, err := time.Parse(time.RFC3339Nano, stamp)
	if err != nil {
		return text.OneLine(stamp, 40)
	}
	d := now.Sub(t).Round(time.Minute)
	when := "just now"
	switch {
	case d >= 48*time.Hour:
		when = fmt.Sprintf("%d days ago", int(d.Hours()/24))
	case d >= time.Hour:
		when = fmt.Sprintf("%dh ago", int(d.Hours()))
	case d >= time.Minute:
		when = fmt.Sprintf("%dmin ago", int(d.Minutes()))
	}
	return fmt.Sprintf("%s (%s)", t.UTC().Format("2006-01-02 15:04 UTC"), when)
}

func partiesMove(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	fs := flags("parties move", partiesSynopsis, stderr)
	merge := fs.Bool("merge", false, "fold the party that already lives in FOLDER (e.g. NAME~2) into NAME")
	pos, code, done := partiesFlags(fs, args, stdout, 2, "a party's name and its new folder: mcpp-chat parties move NAME FOLDER")
	if done {
		return code
	}
	name, folder := pos[0], pos[1]
	if !checkNamed(name, stderr) {
		return exitUsage
	}
	if info, err := os.Stat(folder); err != nil || !info.IsDir() {
		fmt.Fprintf(stderr, "mcpp-chat parties: %s is not a folder on this host — give the folder the repository lives in now; nothing was changed\n", folder)
		return exitError
	}
	db, in, ok := openExisting(ctx, getenv, stderr)
	if !ok {
		return exitError
	}
	defer db.Close()
	// The folder a session there resolves to: the same function as serve.
	there, err := config.Identify(folder, in.cfg.Identity.GitRoot)
	if err != nil {
		fmt.Fprintf(stderr, "mcpp-chat parties: %v\n", err)
		return exitError
	}
	res, err := db.MoveParty(ctx, name, there.Root, *merge)
	if err != nil {
		fmt.Fprintf(stderr, "mcpp-chat parties: %v\n", err)
		return exitError
	}
	fmt.Fprintf(stdout, "%s now lives at %s (was %s)\n", res.Name, text.OneLine(res.To, 300), text.OneLine(res.From, 300))
	if abs, _ := filepath.Abs(folder); abs != there.Root {
		fmt.Fprintf(stdout, "(%s is inside that repository: a session there is its party)\n", text.OneLine(folder, 300))
	}
	if res.Merged != "" {
		fmt.Fprintf(stdout, "%s, which lived there, is folded into %s: its messages, seats and items are %s's\n", res.Merged, res.Name, res.Name)
	}
	if there.Name != res.Name {
		fmt.Fprintf(stdout, "sessions there are %s, not %s: a party keeps its name\n", res.Name, there.Name)
	}
	return exitOK
}

func partiesForget(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	fs := flags("parties forget", partiesSynopsis, stderr)
	force := fs.Bool("force", false, "also when live items wait on it: drop it from them")
	pos, code, done := partiesFlags(fs, args, stdout, 1, "the name of one party: mcpp-chat parties forget NAME")
	if done {
		return code
	}
	if !checkNamed(pos[0], stderr) {
		return exitUsage
	}
	db, _, ok := openExisting(ctx, getenv, stderr)
	if !ok {
		return exitError
	}
	defer db.Close()
	res, err := db.ForgetParty(ctx, pos[0], *force)
	if err != nil {
		fmt.Fprintf(stderr, "mcpp-chat parties: %v\n", err)
		return exitError
	}
	fmt.Fprintf(stdout, "forgot %s (%s): it left %s\n", res.Name, text.OneLine(res.Workspace, 300), text.Count(res.Seats, "seat"))
	for _, item := range res.Released {
		fmt.Fprintf(stdout, "no longer owed: %s\n", text.OneLine(item, 300))
	}
	fmt.Fprintln(stdout, "a session in that folder becomes a new party at its next call")
	return exitOK
}

func partiesResetCursor(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	fs := flags("parties reset-cursor", partiesSynopsis, stderr)
	to := fs.String("to", "0", "the `SEQ` of the last message to count as read (0: none)")
	pos, code, done := partiesFlags(fs, args, stdout, 2, "a party's name and a channel: mcpp-chat parties reset-cursor NAME CHANNEL [--to SEQ]")
	if done {
		return code
	}
	if !checkNamed(pos[0], stderr) {
		return exitUsage
	}
	seq, err := strconv.ParseInt(*to, 10, 64)
	if err != nil {
		fmt.Fprintf(stderr, "mcpp-chat parties: --to %q is not a whole number — give a message's seq, or 0 for none read\n", *to)
		return exitUsage
	}
	db, _, ok := openExisting(ctx, getenv, stderr)
	if !ok {
		return exitError
	}
	defer db.Close()
	res, err := db.SetCursor(ctx, pos[0], pos[1], seq)
	if err != nil {
		fmt.Fprintf(stderr, "mcpp-chat parties: %v\n", err)
		return exitError
	}
	fmt.Fprintf(stdout, "%s's cursor in #%s: %d → %d (newest %d); %s unread\n", res.Party, res.Channel, res.From, res.To, res.Newest, text.Count(res.Unread, "message"))
	return exitOK
}

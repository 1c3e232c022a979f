package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"regexp"
	"strings"
	"time"

	"github.com/mcpp/mcpp-chat/hub"
	"github.com/mcpp/mcpp-chat/internal/config"
	"github.com/mcpp/mcpp-chat/internal/listen"
	"github.com/mcpp/mcpp-chat/internal/redact"
	"github.com/mcpp/mcpp-chat/internal/store"
	"github.com/mcpp/mcpp-chat/internal/wake"
	"github.com/mcpp/mcpp-chat/tools"
)

// install is what every command resolves first: paths, config and party.
type install struct {
	paths config.Paths
	cfg   config.Config
	party config.Party
	env   config.Env
	// start is the folder identity started from and what chose it.
	start, startFrom string
}

// locate finds the install's paths and config and the party of the start
// folder (workspace, else the environment's, else the working directory),
// as the hook's locate does.
func locate(getenv func(string) string, workspace string) (install, error) {
	exe, _ := os.Executable()
	env := config.Env(getenv)
	paths, cfg, err := config.Resolve(env, exe)
	if err != nil {
		return install{}, err
	}
	start, from := config.StartFrom(env, workspace, "")
	party, err := config.Identify(start, cfg.Identity.GitRoot)
	if err != nil {
		return install{}, err
	}
	return install{paths: paths, cfg: cfg, party: party, env: env, start: start, startFrom: from}, nil
}

func (in install) identity() store.Identity {
	return store.Identity{Name: in.party.Name, Workspace: in.party.Root, OSUser: config.OSUser(in.env)}
}

// open opens the install's store for writing, with the configured busy
// timeout: the database file (made if needed), or the team store on
// PostgreSQL.
func (in install) open(ctx context.Context) (*store.DB, error) {
	if in.onHub() {
		return nil, in.errMember("this")
	}
	o := storeOptions(in.cfg)
	if in.onPostgres() {
		return store.OpenPostgres(ctx, in.paths.Store, o)
	}
	if in.paths.Moved != "" && !fileExists(in.paths.DB) {
		// Not a new, empty chat beside the one the sessions used so far.
		return nil, errors.New(in.paths.MovedChat())
	}
	return store.OpenWith(ctx, in.paths.DB, o)
}

// newLog is a command's logger: warnings and failures, on stderr, which
// an MCP client keeps as the server's log.
func newLog(stderr io.Writer) *slog.Logger {
	return slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
}

// service opens the database and wires the tool service for this party;
// log gets what the agent is not shown.
func (in install) service(ctx context.Context, log *slog.Logger) (*tools.Service, error) {
	if err := config.CheckStart(in.start, in.startFrom); err != nil {
		return nil, err // the first call would make a party for it
	}
	manifest, err := tools.LoadManifest()
	if err != nil {
		return nil, err
	}
	if in.onHub() {
		return in.memberService(manifest, log)
	}
	db, err := in.open(ctx)
	if err != nil {
		return nil, err
	}
	if in.cfg.Storage.DailyBackup && !in.onPostgres() {
		db.DailyBackup(in.paths.Backups, in.cfg.Storage.BackupRetainDays, func(err error) {
			log.Warn("the daily backup failed (the call itself succeeded)", "err", err)
		})
	}
	if in.paths.Tick != "" {
		db.OnCommit = tickWriter(in.paths.Tick)
	}
	changes, err := in.changes()
	if err != nil {
		db.Close()
		return nil, err
	}
	context.AfterFunc(ctx, func() { changes.Close() })
	return &tools.Service{DB: db, Config: in.cfg, Paths: in.paths, Me: in.identity(), Manifest: manifest, Env: in.env,
		Log: log, Changes: changes}, nil
}

// memberService is a member machine's front for its team hub: the same
// tools, checked here and answered by the hub as this folder's party.
func (in install) memberService(manifest tools.Manifest, log *slog.Logger) (*tools.Service, error) {
	c, err := in.hubClient()
	if err != nil {
		return nil, err
	}
	me := in.identity()
	me.Team = true
	return &tools.Service{Config: in.cfg, Paths: in.paths, Me: me, PartyName: me.Name, Manifest: manifest, Env: in.env,
		Log: log, Remote: c.Call}, nil
}

// hubClient is this machine's line to its team hub, acting for the start
// folder's party.
func (in install) hubClient() (*hub.Client, error) {
	c, err := memberClient(in.env, in.paths, in.party.Name)
	if err != nil {
		return nil, fmt.Errorf("%w — run mcpp-chat connect %s --token TOKEN, or set MCPP_CHAT_TOKEN", err, in.where())
	}
	return c, nil
}

// errMember is a command that reads the store itself, run on a member
// machine, whose chat is the hub's.
func (in install) errMember(command string) error {
	return fmt.Errorf("this machine is a member of the team hub %s: its chat lives there — run mcpp-chat %s on the hub's machine (with the hub's store), or use the chat tools here", in.where(), command)
}

// openReadOnly opens the install's store for reading only.
func (in install) openReadOnly(ctx context.Context) (*store.ReadOnly, error) {
	if in.onHub() {
		return nil, in.errMember("log, search or ui")
	}
	if in.onPostgres() {
		r, err := store.OpenReadOnlyPostgres(ctx, in.paths.Store)
		if err == nil {
			r.SetMaxConns(in.cfg.Storage.MaxConnections)
		}
		return r, err
	}
	return store.OpenReadOnly(ctx, in.paths.DB)
}

// where names the install's store for messages: the database file, or
// the team store's URL without its password.
func (in install) where() string {
	if in.onPostgres() || in.onHub() {
		return redact.URL(in.paths.Store)
	}
	return in.paths.DB
}

// onHub reports a member machine: its store is a team hub.
func (in install) onHub() bool { return config.IsHub(in.paths.Store) }

// onPostgres reports an install whose store is a team store on PostgreSQL.
func (in install) onPostgres() bool { return config.IsPostgres(in.paths.Store) }

// watcher says when the store may have changed: Next is a channel closed
// at the next change (wake.Watcher for a database file, listen.Listener
// for a team store).
type watcher interface {
	Next() <-chan struct{}
	Close() error
}

// changes is what wakes chat_wait, watch, log --follow and the page: the
// watcher of the database's files, or a team store's notifications. It
// starts at the first Next.
func (in install) changes() (watcher, error) {
	if in.onHub() {
		c, err := in.hubClient()
		if err != nil {
			return nil, err
		}
		return c.Watch(), nil
	}
	if in.onPostgres() {
		return listen.New(in.paths.Store), nil
	}
	return wake.Watch(in.paths.DB, in.paths.Tick)
}

// flags builds a subcommand's flag set whose --help prints usage to stdout
// and whose errors go to stderr.
func flags(name, synopsis string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: mcpp-chat %s\n", synopsis)
		fs.PrintDefaults()
	}
	return fs
}

// parse parses flags; done reports that the command should stop with code.
// The usage is printed once: on stdout for --help, on stderr after a
// wrong flag (the flag package would print it itself, to stderr, before
// parse could print it to stdout too).
func parse(fs *flag.FlagSet, args []string, stdout io.Writer) (code int, done bool) {
	usage, stderr := fs.Usage, fs.Output()
	fs.Usage = func() {}
	fs.SetOutput(io.Discard) // the flag package's own words: flagError says it better
	err := fs.Parse(args)
	fs.Usage = usage
	fs.SetOutput(stderr)
	switch {
	case errors.Is(err, flag.ErrHelp):
		fs.SetOutput(stdout)
		fs.Usage()
		fs.SetOutput(stderr)
		return exitOK, true
	case err != nil:
		fmt.Fprintf(stderr, "mcpp-chat %s: %s\n", fs.Name(), flagError(fs, err))
		return exitUsage, true
	}
	return 0, false
}

// invalidValue is the flag package's error for a value a flag refused.
var invalidValue = regexp.MustCompile(`^invalid (?:boolean )?value "(.*)" for (?:flag )?-(\S+): (.*)$`)

// flagError is a command line's wrong flag as one sentence with its fix,
// instead of the flag package's words and the whole usage.
func flagError(fs *flag.FlagSet, err error) string {
	help := fmt.Sprintf("mcpp-chat %s --help says what each flag takes", fs.Name())
	msg := err.Error()
	if name, ok := strings.CutPrefix(msg, "flag provided but not defined: "); ok {
		return fmt.Sprintf("there is no flag --%s — %s", strings.TrimLeft(name, "-"), help)
	}
	if name, ok := strings.CutPrefix(msg, "flag needs an argument: "); ok {
		f := fs.Lookup(strings.TrimLeft(name, "-"))
		if kind := valueKind(f); kind != "" {
			return fmt.Sprintf("%s needs a value, %s — %s", flagWithValue(f), kind, help)
		}
		return fmt.Sprintf("%s needs a value — %s", flagWithValue(f), help)
	}
	m := invalidValue.FindStringSubmatch(msg)
	if m == nil {
		return msg + " — " + help
	}
	value, name, why := m[1], m[2], m[3]
	if why != "parse error" && !strings.HasPrefix(why, "strconv.") {
		return fmt.Sprintf("--%s %q: %s", name, value, why) // a flag of ours said why
	}
	f := fs.Lookup(name)
	kind := valueKind(f)
	if kind == "" {
		kind = "another value"
	}
	return fmt.Sprintf("%s takes %s, not %q — %s", flagWithValue(f), kind, value, help)
}

// flagWithValue is a flag as its usage writes it: --since SEQ.
func flagWithValue(f *flag.Flag) string {
	name, _ := flag.UnquoteUsage(f)
	if name == "" || name == "value" || name == "string" || name == "int" || name == "uint" || name == "float" || name == "duration" {
		return "--" + f.Name
	}
	return "--" + f.Name + " " + name
}

// valueKind says what a flag's value is, as a person would ("" for text).
func valueKind(f *flag.Flag) string {
	getter, ok := f.Value.(flag.Getter)
	if !ok {
		return ""
	}
	switch getter.Get().(type) {
	case int, int64, uint, uint64:
		return "a whole number"
	case bool:
		return "true or false"
	case float64:
		return "a number"
	case time.Duration:
		return "a duration such as 30s, 5m or 2h"
	}
	return ""
}

// storeOptions are the store's options the config sets.
func storeOptions(cfg config.Config) store.Options {
	return store.Options{BusyTimeout: cfg.BusyTimeout(), MaxConns: cfg.Storage.MaxConnections, Attention: attentionOf(cfg)}
}

// attentionOf are the store's rules of attention the config sets.
func attentionOf(cfg config.Config) *store.Attention {
	a := cfg.Attention
	return &store.Attention{MaxBroadcast: a.MaxBroadcast, DefaultAbove: a.DefaultAbove, MaxHops: a.MaxHops}
}

// Package config resolves where mcpp-chat keeps its files, decodes
// config.yaml, and works out which party a session is.
package config

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"time"

	"github.com/mcpp/mcpp-chat/internal/redact"
	"gopkg.in/yaml.v3"
)

// Config is config.yaml. The embedded config.yaml documents the defaults;
// Defaults holds the same values as Go, and a test keeps the two equal.
type Config struct {
	Identity struct {
		GitRoot bool `yaml:"git_root"`
	} `yaml:"identity"`
	Chat struct {
		DefaultChannel string `yaml:"default_channel"`
		WaitMaxSeconds int    `yaml:"wait_max_seconds"`
		ReadLimit      int    `yaml:"read_limit"`
		TickFile       string `yaml:"tick_file"`
		MaxBodyBytes   int    `yaml:"max_body_bytes"`
		AnswerBudget   int    `yaml:"answer_budget_chars"`
		WaitProgressMS int    `yaml:"wait_progress_ms"`
	} `yaml:"chat"`
	Storage struct {
		URL              string `yaml:"url"`
		DBPath           string `yaml:"db_path"`
		DailyBackup      bool   `yaml:"daily_backup"`
		BackupRetainDays int    `yaml:"backup_retain_days"`
		BusyTimeoutMS    int    `yaml:"busy_timeout_ms"`
		MaxConnections   int    `yaml:"max_connections"`
	} `yaml:"storage"`
	// Escalation and Notify are the ladder of an overdue item
	// (escalation.go).
	Escalation struct {
		RaiserAfter string `yaml:"raiser_after"`
		PersonAfter string `yaml:"person_after"`
	} `yaml:"escalation"`
	Notify struct {
		Command []string `yaml:"command"`
		Webhook string   `yaml:"webhook"`
	} `yaml:"notify"`
	Claims struct {
		MaxLifetime string `yaml:"max_lifetime"`
		Enforce     string `yaml:"enforce"`
	} `yaml:"claims"`
	Attention struct {
		MaxBroadcast int `yaml:"max_broadcast"`
		DefaultAbove int `yaml:"default_above"`
		MaxHops      int `yaml:"max_hops"`
		WakesPer10m  int `yaml:"wakes_per_10m"`
	} `yaml:"attention"`
}

// Defaults is the configuration when no file says otherwise: the embedded
// config.yaml's values, written out so that a process with no config file
// decodes no YAML (a first decode costs about 1 ms, on every hook run).
// TestDefaultsAreTheEmbeddedFile fails when the two differ.
func Defaults() Config {
	var c Config
	c.Identity.GitRoot = true
	c.Chat.DefaultChannel = ""
	c.Chat.WaitMaxSeconds = 20
	c.Chat.ReadLimit = 50
	c.Chat.TickFile = ".tick"
	c.Chat.MaxBodyBytes = 65536
	c.Chat.AnswerBudget = 32000
	c.Storage.URL = ""
	c.Chat.WaitProgressMS = 5000
	c.Storage.DBPath = ""
	c.Storage.DailyBackup = true
	c.Storage.BackupRetainDays = 7
	c.Storage.BusyTimeoutMS = 5000
	c.Storage.MaxConnections = 8
	c.Escalation.RaiserAfter = "15m"
	c.Escalation.PersonAfter = "1h"
	c.Notify.Command = []string{}
	c.Notify.Webhook = ""
	c.Claims.MaxLifetime = "8h"
	c.Claims.Enforce = EnforceDeny
	c.Attention.MaxBroadcast = 8
	c.Attention.DefaultAbove = 3
	c.Attention.MaxHops = 6
	c.Attention.WakesPer10m = 6
	return c
}

// MaxReadLimit is the largest chat.read_limit, and the largest limit
// chat_read's schema takes (tools.yaml; a test holds the two equal).
const MaxReadLimit = 500

// MinAnswerBudget is the smallest chat.answer_budget_chars: room for an
// answer's fixed lines, its cut notice and a part of one message.
const MinAnswerBudget = 4000

// Parse decodes a config file over the defaults. Unknown keys are errors.
func Parse(data []byte) (Config, error) {
	c := Defaults()
	if err := decode(data, &c); err != nil {
		return c, err
	}
	return c, c.validate()
}

// decode reads the YAML once, checks its keys against Config (naming an
// unknown one as the file spells it, never as a Go type), then fills c.
func decode(data []byte, c *Config) error {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return err
	}
	if len(doc.Content) == 0 { // empty, or only comments
		return nil
	}
	if err := checkKeys(doc.Content[0], reflect.TypeFor[Config](), ""); err != nil {
		return err
	}
	err := doc.Content[0].Decode(c)
	var te *yaml.TypeError
	if errors.As(err, &te) { // one line, not the decoder's list
		return errors.New(strings.Join(te.Errors, "; "))
	}
	return err
}

// checkKeys finds the first key Config does not have, or a section given
// a single value, and names it with its line and the keys there are.
func checkKeys(n *yaml.Node, t reflect.Type, prefix string) error {
	if t.Kind() != reflect.Struct {
		return nil // a value: the decoder checks its type
	}
	if n.Kind != yaml.MappingNode {
		where := "the file"
		if prefix != "" {
			where = fmt.Sprintf("%s (line %d)", strings.TrimSuffix(prefix, "."), n.Line)
		}
		return fmt.Errorf("%s holds a single value where keys belong (the keys are %s)", where, strings.Join(configKeys(t, prefix), ", "))
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		key, value := n.Content[i], n.Content[i+1]
		field, ok := fieldByKey(t, key.Value)
		if !ok {
			return fmt.Errorf("unknown key %s%s on line %d (the keys are %s)", prefix, key.Value, key.Line, strings.Join(configKeys(reflect.TypeFor[Config](), ""), ", "))
		}
		if err := checkKeys(value, field.Type, prefix+key.Value+"."); err != nil {
			return err
		}
	}
	return nil
}

func fieldByKey(t reflect.Type, key string) (reflect.StructField, bool) {
	for i := range t.NumField() {
		if f := t.Field(i); f.Tag.Get("yaml") == key {
			return f, true
		}
	}
	return reflect.StructField{}, false
}

// configKeys lists the keys of config.yaml, dotted: chat.read_limit, ...
func configKeys(t reflect.Type, prefix string) []string {
	var keys []string
	for i := range t.NumField() {
		f := t.Field(i)
		key := prefix + f.Tag.Get("yaml")
		if f.Type.Kind() == reflect.Struct {
			keys = append(keys, configKeys(f.Type, key+".")...)
		} else {
			keys = append(keys, key)
		}
	}
	return keys
}

func (c Config) validate() error {
	switch {
	case c.Chat.ReadLimit < 1 || c.Chat.ReadLimit > MaxReadLimit:
		return fmt.Errorf("chat.read_limit is %d — set it from 1 to %d", c.Chat.ReadLimit, MaxReadLimit)
	case c.Chat.WaitMaxSeconds < 1:
		return fmt.Errorf("chat.wait_max_seconds is %d — set it to 1 or more", c.Chat.WaitMaxSeconds)
	case c.Chat.MaxBodyBytes < 1:
		return fmt.Errorf("chat.max_body_bytes is %d — set it to 1 or more", c.Chat.MaxBodyBytes)
	case c.Chat.AnswerBudget < MinAnswerBudget:
		return fmt.Errorf("chat.answer_budget_chars is %d — set it to %d or more", c.Chat.AnswerBudget, MinAnswerBudget)
	case c.Storage.BackupRetainDays < 1:
		return fmt.Errorf("storage.backup_retain_days is %d — set it to 1 or more", c.Storage.BackupRetainDays)
	case c.Chat.WaitProgressMS < 1:
		return fmt.Errorf("chat.wait_progress_ms is %d — set it to 1 or more", c.Chat.WaitProgressMS)
	case c.Storage.BusyTimeoutMS < 1:
		return fmt.Errorf("storage.busy_timeout_ms is %d — set it to 1 or more", c.Storage.BusyTimeoutMS)
	case c.Storage.MaxConnections < 1 || c.Storage.MaxConnections > MaxConnections:
		return fmt.Errorf("storage.max_connections is %d — set it from 1 to %d", c.Storage.MaxConnections, MaxConnections)
	case c.Claims.Enforce != EnforceDeny && c.Claims.Enforce != EnforceAsk && c.Claims.Enforce != EnforceOff:
		return fmt.Errorf("claims.enforce is %q — set it to %s, %s or %s", c.Claims.Enforce, EnforceDeny, EnforceAsk, EnforceOff)
	case c.Attention.MaxBroadcast < 1:
		return fmt.Errorf("attention.max_broadcast is %d — set it to 1 or more", c.Attention.MaxBroadcast)
	case c.Attention.DefaultAbove < 0:
		return fmt.Errorf("attention.default_above is %d — set it to 0 or more (0: mentions in every channel)", c.Attention.DefaultAbove)
	case c.Attention.MaxHops < 1:
		return fmt.Errorf("attention.max_hops is %d — set it to 1 or more", c.Attention.MaxHops)
	case c.Attention.WakesPer10m < 1:
		return fmt.Errorf("attention.wakes_per_10m is %d — set it to 1 or more", c.Attention.WakesPer10m)
	}
	if _, err := maxLifetime(c.Claims.MaxLifetime); err != nil {
		return err
	}
	return c.validateEscalation()
}

// What the hook does with an edit of a path another party claimed
// (claims.enforce): stop it, saying who holds it; ask the person; or
// nothing.
const (
	EnforceDeny = "deny"
	EnforceAsk  = "ask"
	EnforceOff  = "off"
)

// Bounds of claims.max_lifetime: a claim lives at least its shortest
// time to live, and a forgotten one no longer than a month.
const (
	minClaimLifetime = 10 * time.Second
	maxClaimLifetime = 30 * 24 * time.Hour
)

// ClaimMaxLifetime is claims.max_lifetime: how long after a claim was made
// it may still be renewed.
func (c Config) ClaimMaxLifetime() time.Duration {
	d, _ := maxLifetime(c.Claims.MaxLifetime) // checked by validate
	return d
}

func maxLifetime(raw string) (time.Duration, error) {
	d, err := time.ParseDuration(strings.TrimSpace(raw))
	if err != nil || d < minClaimLifetime || d > maxClaimLifetime {
		return 0, fmt.Errorf("claims.max_lifetime is %q — set it to a duration from %v to %v, such as 8h", raw, minClaimLifetime, maxClaimLifetime)
	}
	return d, nil
}

// WaitProgress is chat.wait_progress_ms as a duration.
func (c Config) WaitProgress() time.Duration {
	return time.Duration(c.Chat.WaitProgressMS) * time.Millisecond
}

// MaxConnections bounds storage.max_connections: PostgreSQL's own default
// limit is 100 connections for every client of the server together.
const MaxConnections = 1000

// BusyTimeout is storage.busy_timeout_ms as a duration.
func (c Config) BusyTimeout() time.Duration {
	return time.Duration(c.Storage.BusyTimeoutMS) * time.Millisecond
}

// Load reads the config file at path; a missing file means the defaults.
func Load(path string) (Config, error) {
	data, err := ReadSmallFile(path, MaxConfigBytes)
	if errors.Is(err, fs.ErrNotExist) {
		return Defaults(), nil
	}
	if errors.Is(err, ErrNotRegular) || errors.Is(err, ErrTooLarge) {
		return Config{}, fmt.Errorf("config %w — point MCPP_CHAT_CONFIG at a YAML file, or remove it to use the defaults", err)
	}
	if err != nil {
		return Config{}, fmt.Errorf("cannot read the config %s: %w — check its permissions, or point MCPP_CHAT_CONFIG elsewhere", path, err)
	}
	c, err := Parse(data)
	if err != nil {
		return c, fmt.Errorf("config %s: %w — fix the file or delete it to use the defaults", path, err)
	}
	return c, nil
}

// Paths are the files one install uses.
type Paths struct {
	ModuleDir string // the "channel": everyone sharing it shares one universe
	Config    string // config file (may not exist)
	// Store is the store's URL: sqlite:<DB> for the embedded database,
	// or postgres://… for a team store on PostgreSQL.
	Store   string
	DB      string
	Tick    string // "" when disabled
	Backups string
	// Hub is where connect saves a member machine's hub (hub.json).
	Hub string
	// Moved is the checkout this binary was built in, when that folder
	// holds no checkout any more and nothing else (MCPP_CHAT_HOME,
	// MCPP_CHAT_DB, MCPP_CHAT_STORE, a config, a hub) names the chat: DB is
	// then the data folder's, not the one the binary used so far.
	Moved string
}

// Env reads environment variables; tests pass a map's lookup.
type Env func(string) string

// Resolve works out every path and loads the config (the order is in the
// README, Storage): the module folder, the database, config.yaml, the tick
// file and the backups folder. exe is the running executable (its folder
// locates a checkout's module dir).
func Resolve(env Env, exe string) (Paths, Config, error) {
	var p Paths
	var lost string
	p.ModuleDir, lost = moduleDir(env, exe)
	p.Config = env("MCPP_CHAT_CONFIG")
	if p.Config == "" {
		p.Config = filepath.Join(p.ModuleDir, "config.yaml")
	}
	cfg, err := Load(p.Config)
	if err != nil {
		return p, cfg, err
	}
	// MCPP_CHAT_STORE › MCPP_CHAT_DB › the hub connect saved ›
	// storage.url › storage.db_path. A MCPP_CHAT_DB naming this install's
	// own database file (what `setup` pins for clients that would not
	// find it: Codex passes a server no variable of the user's) gives way
	// to the hub and to storage.url: this install's chat is there now, and
	// a client set up before must not keep talking to the file alone.
	p.Store = env("MCPP_CHAT_STORE")
	p.Hub = HubFile(env, p.ModuleDir)
	if db := env("MCPP_CHAT_DB"); p.Store == "" && (db == "" || absClean(db) == ownDB(p.ModuleDir, cfg)) {
		hub, ok, err := LoadHub(p.Hub)
		if err != nil {
			return p, cfg, err
		}
		p.Store = cfg.Storage.URL
		if ok {
			p.Store = hub.URL
		}
	}
	switch {
	case p.Store == "":
	case strings.HasPrefix(p.Store, "sqlite:"):
		p.DB = strings.TrimPrefix(p.Store, "sqlite:")
		if p.DB != "" && !filepath.IsAbs(p.DB) {
			p.DB = filepath.Join(p.ModuleDir, p.DB)
		}
	case IsHub(p.Store):
		// A member of a team hub: the chat is the hub's; serve keeps
		// the tick file here, for watchers on this machine.
	case IsPostgres(p.Store):
		// The team store: no file of ours holds the chat, so there is
		// no tick file and no daily copy; DB stays the default path,
		// which `mcpp-chat migrate` copies from.
	default:
		return p, cfg, fmt.Errorf("the store URL %q (MCPP_CHAT_STORE or storage.url) is neither sqlite:PATH, postgres://… nor a hub's https://… — use one of those, or leave it empty for the database file", redact.URL(p.Store))
	}
	if p.DB == "" {
		p.DB = env("MCPP_CHAT_DB")
	}
	if p.DB == "" && cfg.Storage.DBPath != "" {
		p.DB = cfg.Storage.DBPath
		if !filepath.IsAbs(p.DB) {
			p.DB = filepath.Join(p.ModuleDir, p.DB)
		}
	}
	if p.DB == "" {
		p.DB = filepath.Join(p.ModuleDir, "chat.db")
	}
	if abs, err := filepath.Abs(p.DB); err == nil {
		p.DB = abs
	}
	if !IsPostgres(p.Store) && !IsHub(p.Store) {
		p.Store = "sqlite:" + p.DB
	}
	dbDir := filepath.Dir(p.DB)
	if cfg.Chat.TickFile != "" && !IsPostgres(p.Store) {
		p.Tick = cfg.Chat.TickFile
		if !filepath.IsAbs(p.Tick) {
			p.Tick = filepath.Join(dbDir, p.Tick)
		}
	}
	p.Backups = filepath.Join(dbDir, ".backups")
	if lost != "" && env("MCPP_CHAT_DB") == "" && env("MCPP_CHAT_STORE") == "" && cfg.Storage.URL == "" && cfg.Storage.DBPath == "" &&
		p.Store == "sqlite:"+filepath.Join(p.ModuleDir, "chat.db") {
		p.Moved = lost
	}
	return p, cfg, nil
}

// MovedChat says, for a binary whose checkout is gone (Paths.Moved), where
// its chat was and how to point at it again.
func (p Paths) MovedChat() string {
	now := "would now start an empty one in " + p.DB
	if isFile(p.DB) {
		now = "and it uses " + p.DB + " instead"
	}
	return fmt.Sprintf("this binary was built in %s, which holds no checkout any more: the chat it used was %s, %s — "+
		"if you moved the checkout, point at it: set MCPP_CHAT_HOME to its new folder (or MCPP_CHAT_DB to the chat.db there), "+
		"or write storage.db_path: <its new folder>/chat.db into %s, or run make install in it again",
		p.Moved, filepath.Join(p.Moved, "chat.db"), now, p.Config)
}

// ownDB is the install's database file when no variable names one.
func ownDB(moduleDir string, cfg Config) string {
	if path, ok := strings.CutPrefix(cfg.Storage.URL, "sqlite:"); ok && path != "" {
		if filepath.IsAbs(path) {
			return absClean(path)
		}
		return absClean(filepath.Join(moduleDir, path))
	}
	if cfg.Storage.DBPath == "" {
		return filepath.Join(moduleDir, "chat.db")
	}
	if filepath.IsAbs(cfg.Storage.DBPath) {
		return absClean(cfg.Storage.DBPath)
	}
	return absClean(filepath.Join(moduleDir, cfg.Storage.DBPath))
}

// IsPostgres reports a store URL of a PostgreSQL store.
func IsPostgres(url string) bool {
	return strings.HasPrefix(url, "postgres://") || strings.HasPrefix(url, "postgresql://")
}

// BuildCheckout is the checkout `make build` ran in, recorded in the binary
// (-ldflags -X). A copy installed elsewhere (make install PREFIX=~/.local)
// finds no module.yaml above itself; through this it still uses the
// checkout's database and config, the same as the checkout's bin/ — one
// chat, not two. Empty in a binary built otherwise (go build, go test).
var BuildCheckout string

// moduleDir: MCPP_CHAT_HOME › the folder holding module.yaml at or above the
// executable's folder (a checkout's bin/) › the checkout the binary was
// built in, while it still holds module.yaml › $XDG_DATA_HOME/mcpp-chat;
// lost is the recorded checkout when it was passed over for being gone.
func moduleDir(env Env, exe string) (dir, lost string) {
	if home := env("MCPP_CHAT_HOME"); home != "" {
		return absClean(home), ""
	}
	if exe != "" {
		if real, err := filepath.EvalSymlinks(exe); err == nil {
			exe = real
		}
		for dir := filepath.Dir(exe); ; dir = filepath.Dir(dir) {
			if isFile(filepath.Join(dir, "module.yaml")) {
				return dir, ""
			}
			if dir == filepath.Dir(dir) {
				break
			}
		}
	}
	if BuildCheckout == "" {
		return DataDir(env), ""
	}
	if isFile(filepath.Join(BuildCheckout, "module.yaml")) {
		return BuildCheckout, ""
	}
	return DataDir(env), BuildCheckout
}

// DataDir is the module folder of a binary that belongs to no checkout:
// $XDG_DATA_HOME/mcpp-chat (~/.local/share/mcpp-chat).
func DataDir(env Env) string {
	data := env("XDG_DATA_HOME")
	if data == "" {
		home := env("HOME")
		if home == "" {
			home, _ = os.UserHomeDir()
		}
		data = filepath.Join(home, ".local", "share")
	}
	return filepath.Join(absClean(data), "mcpp-chat")
}

func isFile(path string) bool {
	info, err := os.Stat(path)
	return err == nil && !info.IsDir()
}

func absClean(path string) string {
	if abs, err := filepath.Abs(path); err == nil {
		return abs
	}
	return filepath.Clean(path)
}

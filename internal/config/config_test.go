package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	mcppchat "github.com/mcpp/mcpp-chat"
)

func TestDefaultsAreTheDocumentedFile(t *testing.T) {
	c := Defaults()
	if !c.Identity.GitRoot || c.Chat.WaitMaxSeconds != 20 || c.Chat.ReadLimit != 50 || c.Chat.TickFile != ".tick" ||
		c.Chat.MaxBodyBytes != 65536 || c.Chat.DefaultChannel != "" || c.Storage.DBPath != "" ||
		!c.Storage.DailyBackup || c.Storage.BackupRetainDays != 7 {
		t.Fatalf("defaults = %+v", c)
	}
}

// The defaults written as Go are the documented file's: decoding the
// embedded config.yaml over nothing gives exactly Defaults().
func TestDefaultsAreTheEmbeddedFile(t *testing.T) {
	var c Config
	if err := decode(mcppchat.ConfigYAML, &c); err != nil {
		t.Fatal(err)
	}
	if !c.Equal(Defaults()) {
		t.Fatalf("config.yaml says %+v, Defaults() %+v — change both together", c, Defaults())
	}
}

func TestEmptyOrMissingFileMeansDefaults(t *testing.T) {
	for _, body := range []string{"", "{}", "# only a comment\n"} {
		c, err := Parse([]byte(body))
		if err != nil || !c.Equal(Defaults()) {
			t.Errorf("Parse(%q) = %+v, %v", body, c, err)
		}
	}
	c, err := Load(filepath.Join(t.TempDir(), "absent.yaml"))
	if err != nil || !c.Equal(Defaults()) {
		t.Fatalf("missing file: %+v %v", c, err)
	}
}

func TestOverridesAndDisabledTick(t *testing.T) {
	c, err := Parse([]byte("chat:\n  tick_file: \"\"\n  read_limit: 10\n"))
	if err != nil || c.Chat.TickFile != "" || c.Chat.ReadLimit != 10 || c.Chat.WaitMaxSeconds != 20 {
		t.Fatalf("override = %+v %v", c, err)
	}
}

func TestUnknownKeyIsNamed(t *testing.T) {
	for body, key := range map[string]string{
		"chat:\n  read_limt: 5\n": "read_limt",
		"colour: blue\n":          "colour",
	} {
		_, err := Parse([]byte(body))
		if err == nil || !strings.Contains(err.Error(), key) {
			t.Errorf("Parse(%q) error %v does not name %q", body, err, key)
		}
	}
	// Named as written in the file, with its line and the keys there are;
	// never as a Go struct type, which says nothing to whoever edits it.
	_, err := Parse([]byte("# comment\nchat:\n  read_limit: 5\n  foo: 1\n"))
	if err == nil || !strings.Contains(err.Error(), "unknown key chat.foo on line 4") || !strings.Contains(err.Error(), "chat.read_limit, chat.tick_file") || strings.Contains(err.Error(), "struct") {
		t.Errorf("unknown chat.foo: %v", err)
	}
	_, err = Parse([]byte("chat: 5\n"))
	if err == nil || strings.Contains(err.Error(), "struct") {
		t.Errorf("chat: 5 — %v", err)
	}
	_, err = Parse([]byte("chat:\n  read_limit: 900\n"))
	if err == nil || !strings.Contains(err.Error(), "chat.read_limit") {
		t.Fatalf("out-of-range read_limit: %v", err)
	}
}

func env(m map[string]string) Env {
	return func(k string) string { return m[k] }
}

func TestResolvePaths(t *testing.T) {
	dir := t.TempDir()
	// A checkout: module.yaml above the executable's bin/.
	checkout := filepath.Join(dir, "checkout")
	os.MkdirAll(filepath.Join(checkout, "bin"), 0o755)
	os.WriteFile(filepath.Join(checkout, "module.yaml"), []byte("name: chat\n"), 0o644)
	exe := filepath.Join(checkout, "bin", "mcpp-chat")

	p, _, err := Resolve(env(map[string]string{"HOME": dir}), exe)
	if err != nil || p.ModuleDir != checkout || p.DB != filepath.Join(checkout, "chat.db") || p.Tick != filepath.Join(checkout, ".tick") || p.Config != filepath.Join(checkout, "config.yaml") {
		t.Fatalf("checkout paths = %+v %v", p, err)
	}
	p, _, _ = Resolve(env(map[string]string{"HOME": dir}), filepath.Join(dir, "elsewhere", "mcpp-chat"))
	if p.ModuleDir != filepath.Join(dir, ".local", "share", "mcpp-chat") {
		t.Fatalf("installed binary module dir = %s", p.ModuleDir)
	}
	p, _, _ = Resolve(env(map[string]string{"XDG_DATA_HOME": filepath.Join(dir, "xdg")}), "")
	if p.ModuleDir != filepath.Join(dir, "xdg", "mcpp-chat") {
		t.Fatalf("XDG module dir = %s", p.ModuleDir)
	}
	home := filepath.Join(dir, "home")
	p, _, _ = Resolve(env(map[string]string{"MCPP_CHAT_HOME": home, "MCPP_CHAT_DB": filepath.Join(dir, "db", "x.db")}), exe)
	if p.ModuleDir != home || p.DB != filepath.Join(dir, "db", "x.db") || p.Tick != filepath.Join(dir, "db", ".tick") || p.Backups != filepath.Join(dir, "db", ".backups") {
		t.Fatalf("env paths = %+v", p)
	}
	cfg := filepath.Join(dir, "c.yaml")
	os.WriteFile(cfg, []byte("storage:\n  db_path: data/chat.db\nchat:\n  tick_file: \"\"\n"), 0o644)
	p, _, err = Resolve(env(map[string]string{"MCPP_CHAT_HOME": home, "MCPP_CHAT_CONFIG": cfg}), exe)
	if err != nil || p.DB != filepath.Join(home, "data", "chat.db") || p.Tick != "" {
		t.Fatalf("config paths = %+v %v", p, err)
	}
	os.WriteFile(cfg, []byte("bogus: 1\n"), 0o644)
	if _, _, err := Resolve(env(map[string]string{"MCPP_CHAT_CONFIG": cfg}), exe); err == nil || !strings.Contains(err.Error(), "bogus") {
		t.Fatalf("bad config: %v", err)
	}
}

// The store URL picks the engine: MCPP_CHAT_STORE, then MCPP_CHAT_DB,
// then storage.url, then storage.db_path. A PostgreSQL store has no tick
// file; an unknown scheme is refused with what to write instead.
func TestResolveStore(t *testing.T) {
	dir := t.TempDir()
	home := filepath.Join(dir, "home")
	cfg := filepath.Join(dir, "c.yaml")
	os.WriteFile(cfg, []byte("storage:\n  url: sqlite:team/chat.db\n"), 0o644)
	pg := "postgres://chat@db.example/chat"
	team := filepath.Join(dir, "team.yaml")
	os.WriteFile(team, []byte("storage:\n  url: "+pg+"\n"), 0o644)
	for _, c := range []struct {
		env       map[string]string
		store, db string
		tick      bool
	}{
		{map[string]string{"MCPP_CHAT_HOME": home}, "sqlite:" + filepath.Join(home, "chat.db"), filepath.Join(home, "chat.db"), true},
		{map[string]string{"MCPP_CHAT_HOME": home, "MCPP_CHAT_CONFIG": cfg}, "sqlite:" + filepath.Join(home, "team", "chat.db"), filepath.Join(home, "team", "chat.db"), true},
		{map[string]string{"MCPP_CHAT_HOME": home, "MCPP_CHAT_CONFIG": cfg, "MCPP_CHAT_DB": "/x/y.db"}, "sqlite:/x/y.db", "/x/y.db", true},
		{map[string]string{"MCPP_CHAT_HOME": home, "MCPP_CHAT_CONFIG": cfg, "MCPP_CHAT_DB": "/x/y.db", "MCPP_CHAT_STORE": pg}, pg, "/x/y.db", false},
		{map[string]string{"MCPP_CHAT_HOME": home, "MCPP_CHAT_STORE": "postgresql:///chat?host=/run/pg"}, "postgresql:///chat?host=/run/pg", filepath.Join(home, "chat.db"), false},
		{map[string]string{"MCPP_CHAT_HOME": home, "MCPP_CHAT_STORE": "sqlite:/srv/chat.db"}, "sqlite:/srv/chat.db", "/srv/chat.db", true},
		// What setup pinned for a client — this install's own file — gives
		// way to storage.url (a Codex table written before the team store).
		{map[string]string{"MCPP_CHAT_HOME": home, "MCPP_CHAT_CONFIG": team, "MCPP_CHAT_DB": filepath.Join(home, "chat.db")}, pg, filepath.Join(home, "chat.db"), false},
		{map[string]string{"MCPP_CHAT_HOME": home, "MCPP_CHAT_CONFIG": cfg, "MCPP_CHAT_DB": filepath.Join(home, "team", "chat.db")}, "sqlite:" + filepath.Join(home, "team", "chat.db"), filepath.Join(home, "team", "chat.db"), true},
		{map[string]string{"MCPP_CHAT_HOME": home, "MCPP_CHAT_CONFIG": team, "MCPP_CHAT_DB": "/x/y.db"}, "sqlite:/x/y.db", "/x/y.db", true},
	} {
		p, _, err := Resolve(env(c.env), "")
		if err != nil || p.Store != c.store || p.DB != c.db || (p.Tick != "") != c.tick {
			t.Errorf("%v: store %q db %q tick %q, %v; want store %q db %q tick %v", c.env, p.Store, p.DB, p.Tick, err, c.store, c.db, c.tick)
		}
	}
	_, _, err := Resolve(env(map[string]string{"MCPP_CHAT_STORE": "mysql://chat"}), "")
	if err == nil || !strings.Contains(err.Error(), "neither sqlite:PATH, postgres://") {
		t.Errorf("an unknown scheme: %v", err)
	}
}

// A connected member's store is its hub, unless the environment names a
// store; the settings are saved owner-only.
func TestResolveHub(t *testing.T) {
	home := t.TempDir()
	if err := SaveHub(filepath.Join(home, "hub.json"), Hub{URL: "https://chat.team.example", Token: "mcc_x_y"}); err != nil {
		t.Fatal(err)
	}
	info, err := os.Stat(filepath.Join(home, "hub.json"))
	if err != nil || info.Mode().Perm() != 0o600 {
		t.Fatalf("hub.json: %v, %v; want mode 0600", info.Mode(), err)
	}
	p, _, err := Resolve(env(map[string]string{"MCPP_CHAT_HOME": home}), "")
	if err != nil || p.Store != "https://chat.team.example" || p.Tick == "" {
		t.Fatalf("connected: store %q tick %q, %v", p.Store, p.Tick, err)
	}
	p, _, err = Resolve(env(map[string]string{"MCPP_CHAT_HOME": home, "MCPP_CHAT_DB": "/x/y.db"}), "")
	if err != nil || p.Store != "sqlite:/x/y.db" {
		t.Fatalf("MCPP_CHAT_DB set: store %q, %v", p.Store, err)
	}
	// What setup pins for a client — this install's own file — gives way.
	p, _, err = Resolve(env(map[string]string{"MCPP_CHAT_HOME": home, "MCPP_CHAT_DB": filepath.Join(home, "chat.db")}), "")
	if err != nil || p.Store != "https://chat.team.example" {
		t.Fatalf("MCPP_CHAT_DB pinned to the install's own file: store %q, %v", p.Store, err)
	}
	os.WriteFile(filepath.Join(home, "hub.json"), []byte("{"), 0o600)
	if _, _, err := Resolve(env(map[string]string{"MCPP_CHAT_HOME": home}), ""); err == nil || !strings.Contains(err.Error(), "connect again") {
		t.Fatalf("damaged settings: %v", err)
	}
	if got := HubToken(env(map[string]string{"MCPP_CHAT_TOKEN": " mcc_env "}), Hub{Token: "mcc_saved"}); got != "mcc_env" {
		t.Fatalf("HubToken = %q", got)
	}
}

// The embedded config.yaml is the file users copy: it must stay valid.
func TestShippedConfigParses(t *testing.T) {
	data, err := os.ReadFile("../../config.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Parse(data); err != nil {
		t.Fatal(err)
	}
}

// A copy of the binaries installed outside the checkout (make install
// PREFIX=...) uses the checkout make build recorded: one chat database for
// the checkout's bin/ and the copy. Once that checkout is gone, the data
// folder.
func TestResolveUsesTheRecordedCheckout(t *testing.T) {
	dir := t.TempDir()
	checkout := filepath.Join(dir, "checkout")
	os.MkdirAll(checkout, 0o755)
	os.WriteFile(filepath.Join(checkout, "module.yaml"), []byte("name: chat\n"), 0o644)
	old := BuildCheckout
	BuildCheckout = checkout
	t.Cleanup(func() { BuildCheckout = old })

	installed := filepath.Join(dir, "prefix", "bin", "mcpp-chat")
	p, _, err := Resolve(env(map[string]string{"HOME": dir}), installed)
	if err != nil || p.ModuleDir != checkout || p.DB != filepath.Join(checkout, "chat.db") {
		t.Fatalf("installed copy: %+v %v", p, err)
	}
	other := filepath.Join(dir, "other")
	os.MkdirAll(filepath.Join(other, "bin"), 0o755)
	os.WriteFile(filepath.Join(other, "module.yaml"), []byte("name: chat\n"), 0o644)
	if p, _, _ := Resolve(env(map[string]string{"HOME": dir}), filepath.Join(other, "bin", "mcpp-chat")); p.ModuleDir != other {
		t.Errorf("a binary inside a checkout uses that checkout, not the recorded one: %s", p.ModuleDir)
	}
	if p.Moved != "" {
		t.Errorf("the checkout is there, yet Moved = %q", p.Moved)
	}
	os.Remove(filepath.Join(checkout, "module.yaml"))
	p, _, _ = Resolve(env(map[string]string{"HOME": dir}), installed)
	if p.ModuleDir != filepath.Join(dir, ".local", "share", "mcpp-chat") || p.Moved != checkout {
		t.Errorf("with the checkout gone: %s, Moved %q", p.ModuleDir, p.Moved)
	}
	// A chat named otherwise is where the person wants it.
	for _, named := range []map[string]string{{"MCPP_CHAT_DB": filepath.Join(dir, "x.db")}, {"MCPP_CHAT_HOME": other}, {"MCPP_CHAT_STORE": "sqlite:" + filepath.Join(dir, "y.db")}} {
		named["HOME"] = dir
		if p, _, _ := Resolve(env(named), installed); p.Moved != "" {
			t.Errorf("%v names the chat, yet Moved = %q", named, p.Moved)
		}
	}
}

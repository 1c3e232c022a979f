package config

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// An install in a folder of its own: module.yaml, and the binary in bin/.
func testInstall(t *testing.T) (dir, exe string) {
	t.Helper()
	dir = t.TempDir()
	exe = filepath.Join(dir, "bin", "mcpp-chat")
	writeTestFile(t, filepath.Join(dir, "module.yaml"), "")
	writeTestFile(t, exe, "")
	return dir, exe
}

func writeTestFile(t *testing.T, path, data string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
}

// EntryEnv picks the fewest variables with which a client's entry, given
// only HOME and PATH besides them, opens the chat the environment names —
// and each pick is checked by resolving it so.
func TestEntryEnvGivesAnEntryTheChat(t *testing.T) {
	dir, exe := testInstall(t)
	home := t.TempDir()
	other := t.TempDir()
	writeTestFile(t, filepath.Join(other, "config.yaml"), "identity:\n  git_root: false\n")
	team := filepath.Join(t.TempDir(), "team.yaml")
	writeTestFile(t, team, "storage:\n  url: postgres://chat@db.example/chat\n")
	member := t.TempDir()
	if err := SaveHub(filepath.Join(member, "hub.json"), Hub{URL: "https://hub.example", Token: "mcc_a_b"}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		env  map[string]string
		want []Var
	}{
		{"nothing set", nil, nil},
		{"the install's own database", map[string]string{"MCPP_CHAT_DB": filepath.Join(dir, "chat.db")}, nil},
		{"another database", map[string]string{"MCPP_CHAT_DB": "/srv/chat.db"}, []Var{{"MCPP_CHAT_DB", "/srv/chat.db"}}},
		{"another module folder without a config", map[string]string{"MCPP_CHAT_HOME": home}, []Var{{"MCPP_CHAT_DB", filepath.Join(home, "chat.db")}}},
		{"another module folder with a config", map[string]string{"MCPP_CHAT_HOME": other}, []Var{{"MCPP_CHAT_HOME", other}}},
		{"a config naming a team store", map[string]string{"MCPP_CHAT_CONFIG": team}, []Var{{"MCPP_CHAT_CONFIG", team}}},
		{"a team store", map[string]string{"MCPP_CHAT_STORE": "postgres://chat@db.example/chat"}, []Var{{"MCPP_CHAT_STORE", "postgres://chat@db.example/chat"}}},
		{"a member's hub elsewhere", map[string]string{"MCPP_CHAT_HOME": member}, []Var{{"MCPP_CHAT_HUB_FILE", filepath.Join(member, "hub.json")}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			env := func(k string) string {
				if k == "HOME" {
					return home
				}
				return c.env[k]
			}
			got, err := EntryEnv(env, exe)
			if err != nil || !reflect.DeepEqual(got, c.want) {
				t.Fatalf("EntryEnv = %v, %v; want %v", got, err, c.want)
			}
			want, wantCfg, _ := Resolve(env, exe)
			p, cfg, err := Resolve(ClientSees(env, varMap(got)), exe)
			if err != nil || p.Store != want.Store || !cfg.Equal(wantCfg) {
				t.Errorf("an entry with %v opens %s, want %s", got, p.Store, want.Store)
			}
		})
	}
}

// A secret is never written into a client's settings: EntryEnv says
// where to put it instead.
func TestEntryEnvWritesNoSecret(t *testing.T) {
	_, exe := testInstall(t)
	for name, env := range map[string]map[string]string{
		"a store URL with a password": {"MCPP_CHAT_STORE": "postgres://chat:s3cret@db.example/chat"},
		"a hub token from the shell":  {"MCPP_CHAT_STORE": "https://hub.example", "MCPP_CHAT_TOKEN": "mcc_s3cret"},
	} {
		vars, err := EntryEnv(func(k string) string { return env[k] }, exe)
		if err == nil || strings.Contains(err.Error(), "s3cret") || !strings.Contains(err.Error(), "run setup again") {
			t.Errorf("%s: EntryEnv = %v, %v; want a refusal that says what to do", name, vars, err)
		}
	}
	// The same URL in the config an entry can be pointed at needs no secret.
	conf := filepath.Join(t.TempDir(), "config.yaml")
	writeTestFile(t, conf, "storage:\n  url: postgres://chat:s3cret@db.example/chat\n")
	env := map[string]string{"MCPP_CHAT_STORE": "postgres://chat:s3cret@db.example/chat", "MCPP_CHAT_CONFIG": conf}
	vars, err := EntryEnv(func(k string) string { return env[k] }, exe)
	if err != nil || !reflect.DeepEqual(vars, []Var{{"MCPP_CHAT_CONFIG", conf}}) {
		t.Errorf("with the URL in a config: %v, %v", vars, err)
	}
}

package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func mkdir(t *testing.T, parts ...string) string {
	t.Helper()
	p := filepath.Join(parts...)
	if err := os.MkdirAll(p, 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestIdentifyGitRootFromSubfolder(t *testing.T) {
	root := mkdir(t, t.TempDir(), "Mesh GW")
	mkdir(t, root, ".git")
	sub := mkdir(t, root, "src", "radio")
	p, err := Identify(sub, true)
	if err != nil || p.Root != root || p.Name != "mesh-gw" || p.Via != "git" {
		t.Fatalf("Identify(subfolder) = %+v %v", p, err)
	}
	// A git worktree has a .git file, not a folder.
	wt := mkdir(t, t.TempDir(), "wt")
	os.WriteFile(filepath.Join(wt, ".git"), []byte("gitdir: /elsewhere\n"), 0o644)
	if p, _ := Identify(mkdir(t, wt, "a"), true); p.Root != wt {
		t.Fatalf("worktree root = %s", p.Root)
	}
	if p, _ := Identify(sub, false); p.Root != sub {
		t.Fatalf("git_root false: %s", p.Root)
	}
}

func TestMarkerDeclaresPartyInMonorepo(t *testing.T) {
	mono := mkdir(t, t.TempDir(), "mono")
	mkdir(t, mono, ".git")
	api := mkdir(t, mono, "services", "api")
	os.WriteFile(filepath.Join(api, MarkerFile), []byte("name: Billing API\n"), 0o644)
	web := mkdir(t, mono, "web")
	os.WriteFile(filepath.Join(web, MarkerFile), []byte(""), 0o644)

	if p, _ := Identify(mkdir(t, api, "pkg"), true); p.Root != api || p.Name != "billing-api" || p.Via != "marker" {
		t.Fatalf("marker with name = %+v", p)
	}
	if p, _ := Identify(web, true); p.Root != web || p.Name != "web" {
		t.Fatalf("empty marker = %+v", p)
	}
	if p, _ := Identify(mkdir(t, mono, "docs"), true); p.Root != mono {
		t.Fatalf("outside the markers = %+v", p)
	}
	os.WriteFile(filepath.Join(web, MarkerFile), []byte("name: [unclosed\n"), 0o644)
	if _, err := Identify(web, true); err == nil {
		t.Fatal("a broken marker was accepted")
	}
}

func TestIdentifyMissingFolderAndSymlink(t *testing.T) {
	p, err := Identify("/srv/projects/../projects/node-dash/", true)
	if err != nil || p.Root != "/srv/projects/node-dash" || p.Name != "node-dash" {
		t.Fatalf("missing folder = %+v %v", p, err)
	}
	real := mkdir(t, t.TempDir(), "real-repo")
	mkdir(t, real, ".git")
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(real, link); err != nil {
		t.Skip(err)
	}
	if p, _ := Identify(link, true); p.Root != real {
		t.Fatalf("symlink not resolved: %+v", p)
	}
}

func TestPartyName(t *testing.T) {
	for in, want := range map[string]string{"Mesh GW": "mesh-gw", "node_dash.v2": "node_dash.v2", "--x--": "x", "***": "unnamed", "": "unnamed", "a~b": "a~b", "Ünï": "n"} {
		if got := PartyName(in); got != want {
			t.Errorf("PartyName(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestStartDirOrder(t *testing.T) {
	e := map[string]string{"MCPP_CHAT_WORKSPACE": "/ws", "CLAUDE_PROJECT_DIR": "/proj"}
	if got := StartDir(env(e), "/flag", "/cwd"); got != "/flag" {
		t.Fatal(got)
	}
	if got := StartDir(env(e), "", "/cwd"); got != "/ws" {
		t.Fatal(got)
	}
	delete(e, "MCPP_CHAT_WORKSPACE")
	if got := StartDir(env(e), "", "/cwd"); got != "/proj" {
		t.Fatalf("CLAUDE_PROJECT_DIR not honoured: %s", got)
	}
	delete(e, "CLAUDE_PROJECT_DIR")
	if got := StartDir(env(e), "", "/cwd"); got != "/cwd" {
		t.Fatal(got)
	}
	wd, _ := os.Getwd()
	if got := StartDir(env(e), "", ""); got != wd {
		t.Fatal(got)
	}
}

func TestOSUserIsThePythonEditions(t *testing.T) {
	for _, c := range []struct {
		env  map[string]string
		want string
	}{
		{map[string]string{"LOGNAME": "log", "USER": "Ada", "USERNAME": "win"}, "ada"},
		{map[string]string{"LOGNAME": "log", "USERNAME": "Win"}, "win"},
		{map[string]string{"LOGNAME": "log"}, "unknown"},
		{map[string]string{}, "unknown"},
	} {
		if got := OSUser(env(c.env)); got != c.want {
			t.Errorf("OSUser(%v) = %q, want %q (USER lowercased, else USERNAME, else unknown)", c.env, got, c.want)
		}
	}
}

// A party's name is in every peer's whoami and in every tick and watch
// line: a marker's name over 64 characters is refused, a folder's is cut.
func TestPartyNamesAreAtMost64Characters(t *testing.T) {
	repo := mkdir(t, t.TempDir(), "repo")
	mkdir(t, repo, ".git")
	os.WriteFile(filepath.Join(repo, MarkerFile), []byte("name: "+strings.Repeat("a", 60000)+"\n"), 0o644)
	_, err := Identify(repo, true)
	if err == nil || !strings.Contains(err.Error(), "60000 characters") || !strings.Contains(err.Error(), "at most 64") {
		t.Fatalf("a 60,000-character marker name: %v", err)
	}
	os.WriteFile(filepath.Join(repo, MarkerFile), []byte("name: "+strings.Repeat("b", 64)+"\n"), 0o644)
	if p, err := Identify(repo, true); err != nil || p.Name != strings.Repeat("b", 64) {
		t.Fatalf("a 64-character marker name: %+v %v", p, err)
	}
	long := mkdir(t, t.TempDir(), strings.Repeat("c", 63)+"-"+strings.Repeat("d", 100))
	if p, err := Identify(long, false); err != nil || p.Name != strings.Repeat("c", 63) {
		t.Fatalf("a 164-character folder: %+v %v", p, err)
	}
}

// A party name holds a letter or a digit: ".", ".." and "~" read as
// folders wherever a name stands. CheckPartyName is the one rule; a
// marker's name: that breaks it is refused, naming the file, and a folder
// whose name would is "unnamed", as an empty one.
func TestPartyNamesHoldALetterOrDigit(t *testing.T) {
	for _, bad := range []string{".", "..", "~", "...", "._~", "", "Node Dash", strings.Repeat("a", 65)} {
		if err := CheckPartyName(bad); err == nil {
			t.Errorf("CheckPartyName(%q) accepted it", bad)
		}
	}
	for _, good := range []string{"node-dash", ".dotfiles", "x~2", "a", "7"} {
		if err := CheckPartyName(good); err != nil {
			t.Errorf("CheckPartyName(%q): %v", good, err)
		}
	}
	if err := CheckPartyName(".."); err == nil || !strings.Contains(err.Error(), "a letter or a digit") {
		t.Errorf("the refusal of .. does not say what a name needs: %v", err)
	}
	for _, name := range []string{".", "..", "'~'", "'..'"} { // a bare ~ is YAML's null: no name
		repo := mkdir(t, t.TempDir(), "repo")
		os.WriteFile(filepath.Join(repo, MarkerFile), []byte("name: "+name+"\n"), 0o644)
		if p, err := Identify(repo, true); err == nil || !strings.Contains(err.Error(), MarkerFile) {
			t.Errorf("a marker naming %s: %+v, %v — want it refused, naming the file", name, p, err)
		}
	}
	if p, err := Identify(mkdir(t, t.TempDir(), "~"), false); err != nil || p.Name != "unnamed" {
		t.Errorf("a folder named ~: %+v, %v — want the party unnamed", p, err)
	}
}

package config

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"gopkg.in/yaml.v3"
)

// MarkerFile declares a party root (and optionally its name) inside a
// monorepo or any folder that is not a git worktree.
const MarkerFile = ".mcpp-chat.yaml"

// Party is the identity a session resolves to: its root folder (the true
// key) and the name that root asks for. The store may add ~2 on a clash.
type Party struct {
	Name string
	Root string
	// Via says how the root was found: marker, git or folder.
	Via string
}

// StartDir picks the folder identity starts from: --workspace ›
// MCPP_CHAT_WORKSPACE › CLAUDE_PROJECT_DIR › the hook payload's cwd ›
// the process's working directory. Server and hook share it; the server
// passes payloadCwd "".
func StartDir(env Env, flag, payloadCwd string) string {
	dir, _ := StartFrom(env, flag, payloadCwd)
	return dir
}

// StartFrom is StartDir and what chose it, as a person would set it:
// "--workspace", an environment variable's name, "the hook's cwd" or "the
// working directory".
func StartFrom(env Env, flag, payloadCwd string) (dir, from string) {
	for _, c := range []struct{ dir, from string }{
		{flag, "--workspace"},
		{env("MCPP_CHAT_WORKSPACE"), "MCPP_CHAT_WORKSPACE"},
		{env("CLAUDE_PROJECT_DIR"), "CLAUDE_PROJECT_DIR"},
		{payloadCwd, "the hook's cwd"},
	} {
		if c.dir != "" {
			return c.dir, c.from
		}
	}
	wd, err := os.Getwd()
	if err != nil {
		return ".", "the working directory"
	}
	return wd, "the working directory"
}

// CheckStart refuses a start folder that is not a folder on this machine:
// a party made for it would name a place no session works in (a typo in
// --workspace would quietly make a new party).
func CheckStart(dir, from string) error {
	info, err := os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("the folder %s (from %s) does not exist — name an existing folder, a repository or one inside it: each folder is a party of the chat", absClean(dir), from)
	case err != nil:
		return fmt.Errorf("cannot look at the folder %s (from %s): %w — name a folder you can read", absClean(dir), from, err)
	case !info.IsDir():
		return fmt.Errorf("%s (from %s) is a file, not a folder — name the folder of a repository, or one inside it", absClean(dir), from)
	}
	return nil
}

// Identify finds the party root above start and its name. A start folder
// that does not exist is used as given (absolute and cleaned).
func Identify(start string, gitRoot bool) (Party, error) {
	dir := absClean(start)
	if real, err := filepath.EvalSymlinks(dir); err == nil {
		dir = real
	}
	for d := dir; ; d = filepath.Dir(d) {
		if isFile(filepath.Join(d, MarkerFile)) {
			return fromMarker(d)
		}
		// The nearer of a marker and a git root wins: a marker above
		// the worktree (say in $HOME) must not swallow every repo.
		if gitRoot && exists(filepath.Join(d, ".git")) {
			return Party{Name: PartyName(filepath.Base(d)), Root: d, Via: "git"}, nil
		}
		if d == filepath.Dir(d) {
			break
		}
	}
	return Party{Name: PartyName(filepath.Base(dir)), Root: dir, Via: "folder"}, nil
}

func fromMarker(root string) (Party, error) {
	path := filepath.Join(root, MarkerFile)
	data, err := ReadSmallFile(path, MaxMarkerBytes)
	if err != nil {
		return Party{}, fmt.Errorf("cannot read the party marker: %w — make %s a small YAML file (just `name: <party>`, or nothing) or remove it", err, MarkerFile)
	}
	var marker struct {
		Name string `yaml:"name"`
	}
	if err := yaml.Unmarshal(data, &marker); err != nil {
		return Party{}, fmt.Errorf("%s is not valid YAML (%v) — fix it; it may hold just `name: <party>` or nothing", path, err)
	}
	if strings.TrimSpace(marker.Name) == "" {
		return Party{Name: PartyName(filepath.Base(root)), Root: root, Via: "marker"}, nil
	}
	name := normalName(marker.Name)
	if len(name) > MaxPartyName {
		return Party{}, fmt.Errorf("the name in %s is %d characters long — shorten it to at most %d (letters, digits and . _ ~ -)", path, len(name), MaxPartyName)
	}
	if err := CheckPartyName(name); err != nil {
		return Party{}, fmt.Errorf("the name in %s: %w", path, err)
	}
	return Party{Name: name, Root: root, Via: "marker"}, nil
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

var nonName = regexp.MustCompile(`[^a-z0-9._~-]+`)

// MaxPartyName is the longest party name, as for channel names: a name is
// in every peer's whoami, every tick line and every watch line.
const MaxPartyName = 64

// PartyName normalises a folder name: lowercase, runs of anything outside
// [a-z0-9._~-] become -, trimmed of -, cut to MaxPartyName; a name with
// no letter or digit (empty, ".", "~") becomes "unnamed". A folder's name
// is not chosen for the chat, so it is made a name rather than refused; a
// marker's name: is refused (fromMarker).
func PartyName(raw string) string {
	name := normalName(raw)
	if len(name) > MaxPartyName {
		name = strings.TrimRight(name[:MaxPartyName], "-")
	}
	if !hasLetterOrDigit(name) {
		return "unnamed"
	}
	return name
}

// CheckPartyName refuses a name no party may have, wherever a name comes
// in that someone chose (a marker's name:, a token's --party, a parties
// command): one PartyName would change, and one without a letter or a
// digit — ".", ".." and "~" read as folders wherever a name stands.
func CheckPartyName(name string) error {
	const rule = "a party name is lowercase letters, digits and . _ ~ -, with a letter or a digit, at most 64 characters"
	switch {
	case !hasLetterOrDigit(name):
		return fmt.Errorf("%q is not a party name: it has no letter or digit — %s; give the repository's party name, e.g. node-dash", name, rule)
	case name != PartyName(name):
		return fmt.Errorf("%q is not a party name — %s, e.g. %s", name, rule, PartyName(name))
	}
	return nil
}

func hasLetterOrDigit(name string) bool {
	return strings.ContainsFunc(name, func(r rune) bool { return r >= 'a' && r <= 'z' || r >= '0' && r <= '9' })
}

func normalName(raw string) string {
	return strings.Trim(nonName.ReplaceAllString(strings.ToLower(raw), "-"), "-")
}

// OSUser is the login name recorded with a new party, exactly as the Python
// edition records it — USER, else USERNAME, else "unknown", lowercased — so a
// party made by either edition carries the same os_user. Neither LOGNAME nor
// the password file counts: the Python edition reads neither.
func OSUser(env Env) string {
	for _, key := range []string{"USER", "USERNAME"} {
		if name := env(key); name != "" {
			return strings.ToLower(name)
		}
	}
	return "unknown"
}

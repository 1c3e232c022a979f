package config

import (
	"errors"
	"fmt"
	"strings"

	"github.com/mcpp/mcpp-chat/internal/redact"
)

// Var is one variable an entry sets: KEY=value.
type Var struct{ Key, Value string }

// clientPasses are the variables of the user's a client is sure to give a
// server or hook it starts, as far as they decide the chat: Codex gives a
// server only HOME, LANG, LOGNAME, PATH, TMPDIR and USER besides its
// table's env, and Claude Code gives what its own start happened to have —
// a desktop launcher has none of a shell's exports.
var clientPasses = []string{"HOME", "PATH"}

// ClientSees is the environment a client gives an entry that sets vars
// (a server's env, a hook command's VAR=value words): HOME and PATH as env
// has them, and vars.
func ClientSees(env Env, vars map[string]string) Env {
	return func(key string) string {
		if v, ok := vars[key]; ok {
			return v
		}
		for _, k := range clientPasses {
			if k == key {
				return env(key)
			}
		}
		return ""
	}
}

// EntryEnv is what every entry a client starts — a server, a hook —
// must set to open the chat this environment resolves to, for the program
// at exe: the fewest of our variables (in a fixed order of preference:
// the database file, the hub file, MCPP_CHAT_STORE, the config, the module
// folder) with which exe, given only what ClientSees passes, resolves to
// the same store and the same settings. None when it finds them on its
// own. An error says why no entry can be given the chat — a secret that
// setup does not write into a client's files — and what to do.
func EntryEnv(env Env, exe string) ([]Var, error) {
	want, cfg, err := Resolve(env, exe)
	if err != nil {
		return nil, err
	}
	candidates, err := entryCandidates(env, want)
	if err != nil {
		return nil, err
	}
	for size := 0; size <= len(candidates); size++ {
		if vars, ok := firstOpening(candidates, size, env, exe, want, cfg); ok {
			return vars, nil
		}
	}
	if url := env("MCPP_CHAT_STORE"); url != "" && redact.URL(url) != url {
		return nil, fmt.Errorf("MCPP_CHAT_STORE holds a password, which setup does not write into a client's settings — put the URL in storage.url of %s (readable by you alone), where every client finds it, or keep the password in ~/.pgpass and MCPP_CHAT_STORE without it; then run setup again", absClean(want.Config))
	}
	return nil, errors.New("no MCPP_CHAT_* variable gives a client started elsewhere this chat — set MCPP_CHAT_DB, MCPP_CHAT_STORE or MCPP_CHAT_HOME to name it, then run setup again")
}

// entryCandidates are the variables an entry may set to reach the chat
// want names, most preferred first.
func entryCandidates(env Env, want Paths) ([]Var, error) {
	var out []Var
	switch {
	case IsHub(want.Store):
		saved, _, _ := LoadHub(want.Hub)
		if t := strings.TrimSpace(env("MCPP_CHAT_TOKEN")); t != "" && t != saved.Token {
			return nil, fmt.Errorf("the hub's token comes from MCPP_CHAT_TOKEN, a secret setup does not write into a client's settings — run mcpp-chat connect %s --token TOKEN, which saves it where every client finds it, then run setup again", redact.URL(want.Store))
		}
		out = append(out, Var{"MCPP_CHAT_HUB_FILE", want.Hub})
	case strings.HasPrefix(want.Store, "sqlite:"):
		out = append(out, Var{"MCPP_CHAT_DB", want.DB})
	}
	if url := env("MCPP_CHAT_STORE"); url != "" && redact.URL(url) == url {
		out = append(out, Var{"MCPP_CHAT_STORE", url})
	}
	return append(out, Var{"MCPP_CHAT_CONFIG", absClean(want.Config)}, Var{"MCPP_CHAT_HOME", want.ModuleDir}), nil
}

// firstOpening is the first set of size candidates, in order of
// preference, with which exe resolves to the store want and the settings
// cfg as a client starts it.
func firstOpening(candidates []Var, size int, env Env, exe string, want Paths, cfg Config) ([]Var, bool) {
	var pick func(from int, chosen []Var) ([]Var, bool)
	pick = func(from int, chosen []Var) ([]Var, bool) {
		if len(chosen) == size {
			p, c, err := Resolve(ClientSees(env, varMap(chosen)), exe)
			return chosen, err == nil && p.Store == want.Store && c.Equal(cfg)
		}
		for i := from; i < len(candidates); i++ {
			if vars, ok := pick(i+1, append(chosen[:len(chosen):len(chosen)], candidates[i])); ok {
				return vars, true
			}
		}
		return nil, false
	}
	return pick(0, nil)
}

func varMap(vars []Var) map[string]string {
	m := make(map[string]string, len(vars))
	for _, v := range vars {
		m[v.Key] = v.Value
	}
	return m
}

// OurVariables are the variables that choose an install's chat: an entry
// setup writes sets only those EntryEnv picks, and takes out the others.
var OurVariables = []string{"MCPP_CHAT_DB", "MCPP_CHAT_HUB_FILE", "MCPP_CHAT_STORE", "MCPP_CHAT_CONFIG", "MCPP_CHAT_HOME"}

// IsOurVariable reports one of OurVariables.
func IsOurVariable(key string) bool {
	for _, k := range OurVariables {
		if k == key {
			return true
		}
	}
	return false
}

package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpp/mcpp-chat/hook"
	"github.com/mcpp/mcpp-chat/internal/codexwake"
)

// codexOnPath puts a codex that says it is version on a PATH of its own.
func codexOnPath(t *testing.T, version string) string {
	t.Helper()
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "codex"), "#!/bin/sh\necho 'codex-cli "+version+"'\n", 0o755)
	return dir + ":/usr/bin:/bin"
}

// doctorWith runs doctor in home with env added.
func doctorWith(t *testing.T, home string, extra map[string]string) (int, string) {
	t.Helper()
	env := map[string]string{"HOME": home, "MCPP_CHAT_DB": filepath.Join(home, "chat.db"), "MCPP_CHAT_WORKSPACE": home,
		"XDG_DATA_HOME": filepath.Join(home, ".local", "share")}
	for k, v := range extra {
		env[k] = v
	}
	var out, errb bytes.Buffer
	code := run(context.Background(), []string{"doctor"}, func(k string) string { return env[k] }, strings.NewReader(""), &out, &errb)
	return code, out.String() + errb.String()
}

// setup codex --write says what it enables, and doctor whether Codex
// sessions can be woken here: with the SessionStart and SessionEnd hooks
// and the tested Codex, on; with an older Codex, a warning; without the
// hooks, off, with the fix.
func TestDoctorAndSetupSayWhetherCodexSessionsWake(t *testing.T) {
	if !codexwake.Supported {
		t.Skip("the Codex doorbell runs on Linux only")
	}
	fakeInstall(t, true)
	home := t.TempDir()
	env := map[string]string{"HOME": home, "MCPP_CHAT_DB": filepath.Join(home, "chat.db"), "PATH": codexOnPath(t, codexwake.Tested)}
	code, out, errs := runSetupEnv(t, env, "codex", "--write")
	if code != 0 || !strings.Contains(out, "Waking idle Codex sessions: on (Codex "+codexwake.Tested+")") {
		t.Fatalf("setup codex --write: exit %d, does not say idle sessions are woken:\n%s%s", code, out, errs)
	}
	code, out = doctorWith(t, home, map[string]string{"PATH": env["PATH"]})
	if code != exitOK || !strings.Contains(out, "codex wake:  on (Codex "+codexwake.Tested+")") {
		t.Errorf("doctor with the tested Codex: exit %d\n%s", code, out)
	}
	code, out = doctorWith(t, home, map[string]string{"PATH": codexOnPath(t, "0.170.2")})
	if code != exitError || !strings.Contains(out, "warning:     codex wake off: Codex 0.170.2") || !strings.Contains(out, "update Codex") {
		t.Errorf("doctor with an older Codex: exit %d\n%s", code, out)
	}
	file := filepath.Join(home, ".codex", "config.toml")
	data, _ := os.ReadFile(file)
	full := string(data)
	writeFile(t, file, full[:strings.Index(full, "[[hooks.SessionEnd]]")], 0o600)
	code, out = doctorWith(t, home, map[string]string{"PATH": env["PATH"]})
	if code != exitError || !strings.Contains(out, "codex wake:  on (Codex") || !strings.Contains(out, "without the SessionEnd hook") {
		t.Errorf("doctor without the SessionEnd hook: exit %d\n%s", code, out)
	}
	start := strings.Index(full, "[[hooks.SessionStart]]")
	end := start + strings.Index(full[start:], "\n\n")
	writeFile(t, file, full[:start]+full[end:], 0o600)
	code, out = doctorWith(t, home, map[string]string{"PATH": env["PATH"]})
	if code != exitError || !strings.Contains(out, "codex wake:  off: Codex's config lacks the SessionStart hook") {
		t.Errorf("doctor without the SessionStart hook: exit %d\n%s", code, out)
	}
}

// doctor shows what the doorbell last did for a Codex process that runs,
// and a ring Codex refused.
func TestDoctorShowsTheDoorbellsLastLook(t *testing.T) {
	self, ok := codexwake.Self()
	if !ok {
		t.Skip("the Codex doorbell runs on Linux only")
	}
	fakeInstall(t, true)
	home := t.TempDir()
	if code, out, errs := runSetupEnv(t, map[string]string{"HOME": home, "MCPP_CHAT_DB": filepath.Join(home, "chat.db")}, "codex", "--write"); code != 0 {
		t.Fatalf("setup codex --write: exit %d\n%s%s", code, out, errs)
	}
	dir := hook.StateDir(func(k string) string { return map[string]string{"HOME": home}[k] })
	c := codexwake.Client{Process: self, Kind: codexwake.KindServer}
	err := codexwake.Update(context.Background(), dir, c, "/src/node-dash", func(r *codexwake.Record) {
		r.Threads = []codexwake.Thread{{ID: "01a-t", Version: codexwake.Tested, Bell: codexwake.Bell{Refused: "codex queue: thread is in plan mode"}}}
		r.Last = codexwake.LastClosed
	})
	if err != nil {
		t.Fatal(err)
	}
	_, out := doctorWith(t, home, nil)
	for _, want := range []string{"node-dash: 1 thread under Codex process", codexwake.LastClosed, "thread 01a-t: its last ring was refused: codex queue: thread is in plan mode"} {
		if !strings.Contains(out, want) {
			t.Errorf("doctor does not say %q:\n%s", want, out)
		}
	}
}

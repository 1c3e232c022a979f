package main

import (
	"database/sql"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// info beside a process that is making the database this moment — an
// empty file, then a header in WAL mode with no tables yet, as an mcpp
// host's worker leaves it while starting — says there is no chat yet, not
// that the file is foreign or broken: the host's initialize() runs then.
func TestInfoBesideADatabaseBeingMade(t *testing.T) {
	env := isolatedEnv(t)
	db := env["MCPP_CHAT_DB"]
	if err := os.MkdirAll(filepath.Dir(db), 0o700); err != nil {
		t.Fatal(err)
	}
	check := func(stage string) {
		t.Helper()
		code, out, errs := cli(t, env, "info")
		var info struct {
			Database infoDatabase `json:"database"`
		}
		if code != exitOK || json.Unmarshal([]byte(out), &info) != nil || !info.Database.OK || !strings.Contains(info.Database.Note, "first chat call") {
			t.Errorf("%s: exit %d, %s%s", stage, code, out, errs)
		}
	}
	if err := os.WriteFile(db, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	check("an empty file")
	made, err := sql.Open("sqlite3", "file:"+db)
	if err != nil {
		t.Fatal(err)
	}
	defer made.Close()
	if _, err := made.Exec(`PRAGMA journal_mode=WAL`); err != nil {
		t.Fatal(err)
	}
	check("a WAL header with no tables yet")
}

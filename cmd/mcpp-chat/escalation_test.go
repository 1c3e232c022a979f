package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// doctor says when the ladder escalates and how a person is told, with the
// webhook's URL, its secret, shown by its host alone.
func TestDoctorShowsTheLadderWithoutTheWebhooksSecret(t *testing.T) {
	home := t.TempDir()
	_, out := runDoctor(t, home)
	if !strings.Contains(out, "escalation:  an overdue item's raiser is woken 15m after its due time, a person told 1h after it, by nobody: set notify.command or notify.webhook") {
		t.Errorf("defaults:\n%s", out)
	}
	writeFile(t, filepath.Join(home, ".local", "share", "mcpp-chat", "config.yaml"),
		"escalation:\n  raiser_after: 5m\nnotify:\n  command: [notify-send, chat]\n  webhook: https://hooks.example.com/services/T1/B2/s3cret\n", 0o600)
	_, out = runDoctor(t, home)
	if !strings.Contains(out, "woken 5m after its due time, a person told 1h after it, by notify.command (notify-send chat) and notify.webhook https://hooks.example.com/xxxxx") {
		t.Errorf("configured:\n%s", out)
	}
	if strings.Contains(out, "s3cret") || strings.Contains(out, "/services/") {
		t.Errorf("doctor printed the webhook's secret:\n%s", out)
	}
}

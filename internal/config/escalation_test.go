package config

import (
	"slices"
	"strings"
	"testing"
	"time"
)

func TestEscalationKeys(t *testing.T) {
	c := Defaults()
	if c.RaiserAfter() != 15*time.Minute || c.PersonAfter() != time.Hour || len(c.Notify.Command) != 0 || c.Notify.Webhook != "" {
		t.Fatalf("defaults: raiser %s, person %s, %+v", c.RaiserAfter(), c.PersonAfter(), c.Notify)
	}
	c, err := Parse([]byte("escalation:\n  raiser_after: 90s\n  person_after: 1d\nnotify:\n  command: [notify-send, mcpp-chat]\n  webhook: https://hooks.example.com/services/T1/B2/secret\n"))
	if err != nil || c.RaiserAfter() != 90*time.Second || c.PersonAfter() != 24*time.Hour ||
		!slices.Equal(c.Notify.Command, []string{"notify-send", "mcpp-chat"}) || c.Notify.Webhook != "https://hooks.example.com/services/T1/B2/secret" {
		t.Fatalf("set: %+v %v", c, err)
	}
	if _, err := Parse([]byte("notify:\n  webhook: http://127.0.0.1:8080/hook\n")); err != nil {
		t.Errorf("plain http to loopback: %v", err)
	}
	for body, want := range map[string]string{
		"escalation:\n  raiser_after: soon\n":                       "escalation.raiser_after is \"soon\"",
		"escalation:\n  raiser_after: -1m\n":                        "escalation.raiser_after",
		"escalation:\n  raiser_after: 2h\n":                         "escalation.person_after is \"1h\" — set a duration no shorter than escalation.raiser_after (2h)",
		"notify:\n  command: [\"\"]\n":                              "notify.command's word 1",
		"notify:\n  webhook: ftp://hooks.example.com/services/x\n":  "notify.webhook ftp://hooks.example.com/xxxxx is not an https:// URL",
		"notify:\n  webhook: http://hooks.example.com/services/x\n": "notify.webhook http://hooks.example.com/xxxxx is plain http:// to another machine",
	} {
		_, err := Parse([]byte(body))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Parse(%q) = %v, want it to say %q", body, err, want)
		}
		if err != nil && strings.Contains(err.Error(), "services/x") {
			t.Errorf("the webhook's secret path is in the error: %v", err)
		}
	}
}

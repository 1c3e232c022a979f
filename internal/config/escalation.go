package config

import (
	"fmt"
	"net"
	"net/url"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/mcpp/mcpp-chat/internal/redact"
)

// The escalation ladder of an overdue item (docs/protocol.md): when the
// raiser is woken and a person told after the item's due time, and how the
// person is told.

// RaiserAfter is escalation.raiser_after as a duration.
func (c Config) RaiserAfter() time.Duration {
	d, _ := parseAfter(c.Escalation.RaiserAfter)
	return d
}

// PersonAfter is escalation.person_after as a duration.
func (c Config) PersonAfter() time.Duration {
	d, _ := parseAfter(c.Escalation.PersonAfter)
	return d
}

// parseAfter reads a stage's delay: a Go duration ("15m", "1h30m") or
// whole days ("1d").
func parseAfter(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	if days, ok := strings.CutSuffix(s, "d"); ok {
		var n int
		if _, err := fmt.Sscanf(days, "%d", &n); err == nil && fmt.Sprint(n) == days {
			return time.Duration(n) * 24 * time.Hour, nil
		}
	}
	return time.ParseDuration(s)
}

// maxAfter bounds a stage's delay: a year, as a due time is bounded.
const maxAfter = 366 * 24 * time.Hour

func (c Config) validateEscalation() error {
	raiser, err := parseAfter(c.Escalation.RaiserAfter)
	if err != nil || raiser < 0 || raiser > maxAfter {
		return fmt.Errorf("escalation.raiser_after is %q — set a duration from 0s to 366d, such as 15m", c.Escalation.RaiserAfter)
	}
	person, err := parseAfter(c.Escalation.PersonAfter)
	if err != nil || person < raiser || person > maxAfter {
		return fmt.Errorf("escalation.person_after is %q — set a duration no shorter than escalation.raiser_after (%s) and at most 366d, such as 1h", c.Escalation.PersonAfter, c.Escalation.RaiserAfter)
	}
	for i, arg := range c.Notify.Command {
		if strings.ContainsRune(arg, 0) || (i == 0 && strings.TrimSpace(arg) == "") {
			return fmt.Errorf("notify.command's word %d is not a usable argument — give the program and its arguments as a list, e.g. [notify-send, mcpp-chat]", i+1)
		}
	}
	return CheckWebhook(c.Notify.Webhook)
}

// CheckWebhook refuses a notify.webhook that is not an https:// URL (a
// plain http:// one only to this machine's loopback, where nothing crosses
// a network); "" is none. The error names the URL redacted.
func CheckWebhook(raw string) error {
	if raw == "" {
		return nil
	}
	u, err := url.Parse(raw)
	switch {
	case err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http"):
		return fmt.Errorf("notify.webhook %s is not an https:// URL — give the incoming webhook's URL, as Slack or Mattermost shows it", redact.Webhook(raw))
	case u.Scheme == "http" && !loopbackHost(u.Hostname()):
		return fmt.Errorf("notify.webhook %s is plain http:// to another machine, which would carry the webhook's secret in the clear — give its https:// URL", redact.Webhook(raw))
	}
	return nil
}

// loopbackHost reports this machine's loopback: localhost, 127.0.0.0/8, ::1.
func loopbackHost(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// Equal reports two configurations that say the same (notify.command
// makes Config incomparable with ==; an empty list is no list).
func (c Config) Equal(o Config) bool {
	if !slices.Equal(c.Notify.Command, o.Notify.Command) {
		return false
	}
	c.Notify.Command, o.Notify.Command = nil, nil
	return reflect.DeepEqual(c, o)
}

package transcript

import (
	"strings"
	"time"

	"github.com/mcpp/mcpp-chat/internal/store"
	safe "github.com/mcpp/mcpp-chat/internal/text"
)

// Delivery is what is known of a message's way to each recipient: when
// our hook or wake told it (and by which event), when it read the message,
// when it acked the item.
type Delivery struct {
	Told  map[string]store.Told
	Read  map[string]string
	Acked map[string]string
}

// DeliveryOf is m's delivery, as its receipts carry it.
func DeliveryOf(m store.Message) Delivery {
	d := Delivery{Told: m.ToldTo, Read: m.ReadAt}
	for _, c := range m.Consumers {
		if c.AckedAt != "" && c.Party != m.From {
			if d.Acked == nil {
				d.Acked = map[string]string{}
			}
			d.Acked[c.Party] = c.AckedAt
		}
	}
	return d
}

// Recipients lists parties, each with what is known of its delivery:
// "node-dash (told 2026-12-02 10:02 UTC by wake, read 10:03, acked
// 10:05)". A time on the day of the one before it in the parentheses is
// given as its hour only.
func (d Delivery) Recipients(parties []string) string {
	out := make([]string, len(parties))
	for i, p := range parties {
		var steps []string
		var last time.Time
		step := func(what, at, suffix string) {
			if at == "" {
				return
			}
			steps = append(steps, what+" "+since(at, &last)+suffix)
		}
		tl, told := d.Told[p]
		if told {
			step("told", tl.At, " by "+safe.OneLine(tl.Via, 20))
		}
		step("read", d.Read[p], "")
		step("acked", d.Acked[p], "")
		out[i] = safe.OneLine(p, 64)
		if len(steps) > 0 {
			out[i] += " (" + strings.Join(steps, ", ") + ")"
		}
	}
	return strings.Join(out, ", ")
}

// since is at to the minute in UTC; only its hour and minute when last
// (the time said before it) fell on the same day. last becomes at.
func since(at string, last *time.Time) string {
	t, err := time.Parse(time.RFC3339Nano, at)
	if err != nil {
		return safe.OneLine(at, 40)
	}
	t = t.UTC()
	same := !last.IsZero() && last.Format(time.DateOnly) == t.Format(time.DateOnly)
	*last = t
	if same {
		return t.Format("15:04")
	}
	return t.Format("2006-01-02 15:04 UTC")
}

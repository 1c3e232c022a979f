package escalation

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os/exec"
	"strings"
	"time"

	"github.com/mcpp/mcpp-chat/internal/redact"
	"github.com/mcpp/mcpp-chat/internal/store"
	"github.com/mcpp/mcpp-chat/internal/text"
)

// Notifier tells a person of an item still overdue at the ladder's last
// stage: by running a program (notify.command) and by posting to an
// incoming webhook (notify.webhook), either or both.
type Notifier struct {
	// Command is a program and its arguments, run with the event as one
	// JSON object on stdin; empty: none.
	Command []string
	// Webhook is an incoming webhook's URL, posted JSON with a "text"
	// field; "": none.
	Webhook string
	// Timeout bounds the program's run and each post; 0 means
	// DefaultTimeout. Tries bounds the posts (0: DefaultTries), Backoff
	// is the pause before the second (0: DefaultBackoff), doubled before
	// each further one.
	Timeout time.Duration
	Tries   int
	Backoff time.Duration
	// Client posts; nil means a client of its own.
	Client *http.Client
}

// Defaults of a Notifier's bounds.
const (
	DefaultTimeout = 10 * time.Second
	DefaultTries   = 3
	DefaultBackoff = time.Second
)

// maxOutput bounds what of a program's output, or a webhook's answer, is
// kept for the outcome.
const maxOutput = 4096

// Event is what a person is told: the JSON a notify.command reads on its
// stdin, and the text a webhook posts.
type Event struct {
	Event    string   `json:"event"`
	Stage    string   `json:"stage"`
	Channel  string   `json:"channel"`
	Seq      int64    `json:"seq"`
	Item     string   `json:"item"`
	Title    string   `json:"title"`
	Raiser   string   `json:"raiser"`
	NotAcked []string `json:"not_acked"`
	Due      string   `json:"due"`
	// Planned is when the stage was to fire, At when it did; LateBy says
	// how late, when no chat process was running at its time.
	Planned string `json:"planned"`
	At      string `json:"at"`
	LateBy  string `json:"late_by,omitempty"`
	Text    string `json:"text"`
}

// NewEvent is the event of a fired stage.
func NewEvent(f store.Fired) Event {
	e := Event{Event: "mcpp-chat.overdue", Stage: f.Stage, Channel: f.Channel, Seq: f.Seq, Item: f.Item, Title: f.Title,
		Raiser: f.Raiser, NotAcked: f.For, Due: store.Timestamp(f.Due), Planned: store.Timestamp(f.Planned), At: store.Timestamp(f.At)}
	if late := f.Late(); late > 0 {
		e.LateBy = store.Late(late)
	}
	e.Text = eventText(e, f)
	return e
}

// eventText is the event in a sentence for a person. What peers wrote (a
// title) is cleaned and cannot mention anyone: Slack reads <…> and
// Mattermost @name as mentions.
func eventText(e Event, f store.Fired) string {
	var b strings.Builder
	fmt.Fprintf(&b, "mcpp-chat: [%s] %q in #%s is overdue — %s not acked it (due %s, raised by %s).",
		defuse(e.Item), defuse(text.OneLine(e.Title, 120)), defuse(e.Channel), hasOrHave(f.For), f.Due.Format("2006-01-02 15:04 UTC"), defuse(e.Raiser))
	if e.LateBy != "" {
		fmt.Fprintf(&b, " Told %s late: no chat process was running at %s.", e.LateBy, f.Planned.UTC().Format("2006-01-02 15:04 UTC"))
	}
	return b.String()
}

func hasOrHave(names []string) string {
	list := defuse(strings.Join(names, ", "))
	if len(names) == 1 {
		return list + " has"
	}
	return list + " have"
}

// defuse keeps peer text from mentioning anyone in a chat app.
func defuse(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", "@", "＠").Replace(s)
}

// Tell tells a person of e, by every way configured, and says how it went
// in one line (the stage's outcome). The webhook's URL never appears in it.
func (n Notifier) Tell(ctx context.Context, e Event) string {
	var parts []string
	if len(n.Command) > 0 {
		parts = append(parts, "notify.command "+n.run(ctx, e))
	}
	if n.Webhook != "" {
		parts = append(parts, "notify.webhook "+n.post(ctx, e))
	}
	if len(parts) == 0 {
		return "nobody told: neither notify.command nor notify.webhook is set"
	}
	return strings.Join(parts, "; ")
}

func (n Notifier) timeout() time.Duration {
	if n.Timeout > 0 {
		return n.Timeout
	}
	return DefaultTimeout
}

// run runs notify.command with e on its stdin.
func (n Notifier) run(ctx context.Context, e Event) string {
	ctx, cancel := context.WithTimeout(ctx, n.timeout())
	defer cancel()
	data, _ := json.Marshal(e)
	cmd := exec.CommandContext(ctx, n.Command[0], n.Command[1:]...)
	cmd.Stdin = bytes.NewReader(append(data, '\n'))
	var out bounded
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.WaitDelay = time.Second // a child that keeps the output open does not hold us
	err := cmd.Run()
	switch {
	case err == nil:
		return "ok"
	case ctx.Err() != nil:
		return fmt.Sprintf("failed: no answer within %s", n.timeout())
	}
	msg := "failed: " + err.Error()
	if said := text.OneLine(out.String(), 200); said != "" {
		msg += " (" + said + ")"
	}
	return msg
}

// post posts e's text to the webhook, trying again after a pause (doubled
// each time) on a network error, a 429 or a 5xx, at most Tries times.
func (n Notifier) post(ctx context.Context, e Event) string {
	body, _ := json.Marshal(map[string]string{"text": e.Text})
	tries := n.Tries
	if tries <= 0 {
		tries = DefaultTries
	}
	pause := n.Backoff
	if pause <= 0 {
		pause = DefaultBackoff
	}
	for try := 1; ; try++ {
		last, again := n.postOnce(ctx, body)
		switch {
		case last == "ok" && try == 1:
			return "ok"
		case last == "ok":
			return fmt.Sprintf("ok (try %d)", try)
		case !again || try == tries:
			return fmt.Sprintf("failed after %d %s: %s", try, text.Plural(try, "try", "tries"), last)
		}
		select {
		case <-ctx.Done():
			return fmt.Sprintf("failed after %d %s: %s (stopped)", try, text.Plural(try, "try", "tries"), last)
		case <-time.After(pause):
		}
		pause *= 2
	}
}

// postOnce posts once; again says a later try may succeed.
func (n Notifier) postOnce(ctx context.Context, body []byte) (result string, again bool) {
	ctx, cancel := context.WithTimeout(ctx, n.timeout())
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, n.Webhook, bytes.NewReader(body))
	if err != nil {
		return "the URL is not usable", false
	}
	req.Header.Set("Content-Type", "application/json")
	client := n.Client
	if client == nil {
		client = &http.Client{}
	}
	resp, err := client.Do(req)
	if err != nil {
		return n.hide(err), true
	}
	defer resp.Body.Close()
	said, _ := io.ReadAll(io.LimitReader(resp.Body, maxOutput))
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		return "ok", false
	}
	msg := fmt.Sprintf("HTTP %d", resp.StatusCode)
	if s := text.OneLine(string(said), 120); s != "" {
		msg += " (" + s + ")"
	}
	return msg, resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode >= 500
}

// hide is a failed post's error without the webhook's URL, which is its
// secret: the client's error quotes it.
func (n Notifier) hide(err error) string {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	return strings.ReplaceAll(err.Error(), n.Webhook, redact.Webhook(n.Webhook))
}

// bounded keeps the first maxOutput bytes written to it.
type bounded struct{ b bytes.Buffer }

func (w *bounded) Write(p []byte) (int, error) {
	if room := maxOutput - w.b.Len(); room > 0 {
		w.b.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

func (w *bounded) String() string { return w.b.String() }

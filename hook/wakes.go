package hook

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/mcpp/mcpp-chat/internal/store"
	"github.com/mcpp/mcpp-chat/internal/turns"

	"github.com/mcpp/mcpp-chat/internal/statefile"
)

// What wakes a party is decided in one place, Decide: a Stop block, the
// idle wake and any other wake (the Codex doorbell) ask it. Attention and
// chains enter through the store's Pending — in mentions mode only what
// is addressed to the party, and never a post past attention.max_hops,
// makes a key (blockingKeys) — and the per-sender limit here: one sender
// wakes one party at most attention.wakes_per_10m times in ten minutes,
// and what it posts beyond that is gathered into the next wake.

// WakeWindow is the span attention.wakes_per_10m counts in.
const WakeWindow = 10 * time.Minute

// WakeLog is who woke a party when, within the last WakeWindow: a file per
// party in the hook's state folder, shared by its sessions' Stop hooks and
// waiters.
type WakeLog struct {
	Wakes []WakeAt `json:"wakes"`
}

// WakeAt is one sender's wake of the party.
type WakeAt struct {
	From string    `json:"from"`
	At   time.Time `json:"at"`
}

// count is how often from woke the party in the window before now.
func (l WakeLog) count(from string, now time.Time) int {
	n := 0
	for _, w := range l.Wakes {
		if w.From == from && now.Sub(w.At) < WakeWindow {
			n++
		}
	}
	return n
}

// freeAt is when from may wake the party again, with limit wakes a window.
func (l WakeLog) freeAt(from string, limit int, now time.Time) time.Time {
	var at []time.Time
	for _, w := range l.Wakes {
		if w.From == from && now.Sub(w.At) < WakeWindow {
			at = append(at, w.At)
		}
	}
	if len(at) < limit {
		return now
	}
	slices.SortFunc(at, func(a, b time.Time) int { return a.Compare(b) })
	return at[len(at)-limit].Add(WakeWindow)
}

// Decision is what wakes the party now.
type Decision struct {
	// Keys name what makes a peer wait on the party (blockingKeys).
	Keys []string
	// Fresh are the keys not reported before that wake it now; Held
	// those whose senders all woke it wakes_per_10m times already.
	Fresh, Held []string
	// Senders are who wake it now, once each.
	Senders []string
	// Retry is when a held key may wake it; zero when none is held.
	Retry time.Time
	// Chain is the chain of the turn a wake begins: the highest hop of
	// the posts that wake it, plus one. Its ID is "" when only items
	// wake it (their chain is not read), and the turn keeps its own.
	Chain store.Chain
}

// Decide is what wakes the party of p now: the keys of what makes a peer
// wait on it that neither a Stop block nor a wake reported (blocked),
// less those whose senders woke it limit times in the window before now
// (log). limit 0 is no limit.
func Decide(p store.Pending, blocked []string, log WakeLog, limit int, now time.Time) Decision {
	d := Decision{Keys: blockingKeys(p)}
	reported := newSet(blocked)
	seen := map[string]bool{}
	hop := -1
	var chain string
	for _, k := range d.Keys {
		if reported[k] {
			continue
		}
		from := keySenders(p, k, blocked)
		var allowed []string
		for _, s := range from {
			if limit <= 0 || log.count(s.From, now) < limit {
				allowed = append(allowed, s.From)
			}
		}
		if len(allowed) == 0 && len(from) > 0 {
			d.Held = append(d.Held, k)
			for _, s := range from {
				if at := log.freeAt(s.From, limit, now); d.Retry.IsZero() || at.Before(d.Retry) {
					d.Retry = at
				}
			}
			continue
		}
		d.Fresh = append(d.Fresh, k)
		for _, s := range from {
			if !slices.Contains(allowed, s.From) {
				continue
			}
			if !seen[s.From] {
				seen[s.From] = true
				d.Senders = append(d.Senders, s.From)
			}
			if s.talk && s.Hop > hop {
				hop, chain = s.Hop, s.Chain
			}
		}
	}
	if hop >= 0 {
		if chain == "" {
			chain = turns.NewChain() // posts from outside any known turn
		}
		d.Chain = store.Chain{ID: chain, Hop: hop + 1}
	}
	return d
}

// sender is who is behind a key, with the chain of its post (talk).
type sender struct {
	store.Waker
	talk bool
}

// keySenders are the senders a key stands for: an item's author, or the
// peers whose words in the channel came after what was last reported
// there.
func keySenders(p store.Pending, key string, blocked []string) []sender {
	for _, w := range p.WaitingOnMe {
		if w.Needs == store.NeedAck && ackKey(w) == key {
			return []sender{{Waker: store.Waker{From: w.From, Seq: w.Seq}}}
		}
	}
	for _, c := range p.Channels {
		if c.NewestTalk == 0 || talkKey(c) != key {
			continue
		}
		since := lastReported(c.Channel, blocked)
		var out []sender
		for _, w := range c.Wakers {
			if w.Seq > since {
				out = append(out, sender{Waker: w, talk: true})
			}
		}
		return out
	}
	return nil
}

// lastReported is the newest talk of channel a Stop block or wake reported.
func lastReported(channel string, blocked []string) int64 {
	var last int64
	prefix := "talk/" + channel + "/"
	for _, k := range blocked {
		if rest, ok := strings.CutPrefix(k, prefix); ok {
			if seq, err := strconv.ParseInt(rest, 10, 64); err == nil && seq > last {
				last = seq
			}
		}
	}
	return last
}

func wakeLogPath(dir, root string) string {
	sum := sha256.Sum256([]byte(root))
	return filepath.Join(dir, "wakes-"+hex.EncodeToString(sum[:12])+".json")
}

// ReadWakeLog reads the party's wake log without locking it; an absent or
// torn one is empty (nobody woke the party lately, as far as is known).
func ReadWakeLog(dir, root string) WakeLog {
	var l WakeLog
	if dir == "" {
		return l
	}
	f, err := openState(wakeLogPath(dir, root), os.O_RDONLY)
	if err != nil {
		return l
	}
	defer f.Close()
	data, _ := io.ReadAll(io.LimitReader(f, maxState))
	json.Unmarshal(data, &l)
	return l
}

// AddWakes records that senders woke the party at now, dropping what has
// left the window.
func AddWakes(ctx context.Context, dir, root string, senders []string, now time.Time) error {
	if dir == "" || len(senders) == 0 {
		return nil
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	f, err := openState(wakeLogPath(dir, root), os.O_RDWR|os.O_CREATE)
	if err != nil {
		return err
	}
	defer f.Close()
	lockCtx, cancel := context.WithTimeout(ctx, stateLockWait)
	defer cancel()
	if err := statefile.Lock(lockCtx, f); err != nil {
		return fmt.Errorf("lock the wake log: %w", err)
	}
	defer statefile.Unlock(f)
	data, _ := io.ReadAll(io.LimitReader(f, maxState))
	var l WakeLog
	json.Unmarshal(data, &l)
	l.Wakes = slices.DeleteFunc(l.Wakes, func(w WakeAt) bool { return now.Sub(w.At) >= WakeWindow })
	for _, s := range senders {
		l.Wakes = append(l.Wakes, WakeAt{From: s, At: now})
	}
	if data, err = json.Marshal(l); err != nil {
		return err
	}
	if err := f.Truncate(0); err != nil {
		return err
	}
	_, err = f.WriteAt(data, 0)
	return err
}

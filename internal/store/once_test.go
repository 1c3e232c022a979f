package store

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// sayOnce is a keyed chat_say as the tools run one: the say inside Once,
// its answer the say's seq.
func sayOnce(t *testing.T, db *DB, me Identity, key, hash, text string) (KeyedAnswer, bool, error) {
	t.Helper()
	return db.Once(context.Background(), Keyed{Me: me, Tool: "chat_say", Key: key, ArgsHash: hash}, func(ctx context.Context) (KeyedAnswer, error) {
		res, err := db.Say(ctx, me, SayArgs{Text: text, Channel: "gw--dash"})
		if err != nil {
			return KeyedAnswer{}, err
		}
		return KeyedAnswer{JSON: fmt.Sprintf(`{"seq":%d}`, res.Seq), Display: "said"}, nil
	})
}

// liveCount counts a channel's messages of one kind.
func liveCount(t *testing.T, db *DB, kind string) int {
	t.Helper()
	n := 0
	for _, m := range readAll(t, db, gw, "gw--dash").Messages {
		if m.Kind == kind {
			n++
		}
	}
	return n
}

// A retry with the same key and arguments gets the first answer, marked a
// duplicate, and writes nothing; the same key with other arguments or for
// another tool is refused in one sentence; another party's key is its own.
func TestOnceAnswersARetryWithTheFirstAnswer(t *testing.T) {
	bothEngines(t, func(t *testing.T) {
		db := world(t)
		first, dup, err := sayOnce(t, db, gw, "k1", "h1", "hello")
		if err != nil || dup {
			t.Fatalf("first call: %v, duplicate %v", err, dup)
		}
		again, dup, err := sayOnce(t, db, gw, "k1", "h1", "hello")
		if err != nil || !dup || again.JSON != first.JSON || again.Display != first.Display || again.At == "" {
			t.Fatalf("retry = %+v, duplicate %v, %v; want the first answer %+v", again, dup, err, first)
		}
		if n := liveCount(t, db, "say"); n != 1 {
			t.Fatalf("%d says after a retry, want 1", n)
		}
		_, _, err = sayOnce(t, db, gw, "k1", "h2", "hello again")
		refused(t, err, "was used")
		refused(t, err, "for other arguments")
		_, _, err = db.Once(context.Background(), Keyed{Me: gw, Tool: "chat_ack", Key: "k1", ArgsHash: "h1"},
			func(context.Context) (KeyedAnswer, error) {
				t.Fatal("a refused key ran its call")
				return KeyedAnswer{}, nil
			})
		refused(t, err, "another tool (chat_say)")
		if _, dup, err := sayOnce(t, db, dash, "k1", "h1", "hello"); err != nil || dup {
			t.Fatalf("another party's key: %v, duplicate %v", err, dup)
		}
		if n := liveCount(t, db, "say"); n != 2 {
			t.Fatalf("%d says, want 2", n)
		}
	})
}

// A call that fails keeps no key and leaves nothing of what it wrote: its
// retry runs it again.
func TestOnceKeepsNothingOfAFailedCall(t *testing.T) {
	bothEngines(t, func(t *testing.T) {
		db := world(t)
		boom := errors.New("boom")
		_, _, err := db.Once(context.Background(), Keyed{Me: gw, Tool: "chat_say", Key: "k", ArgsHash: "h"}, func(ctx context.Context) (KeyedAnswer, error) {
			if _, err := db.Say(ctx, gw, SayArgs{Text: "half", Channel: "gw--dash"}); err != nil {
				return KeyedAnswer{}, err
			}
			return KeyedAnswer{}, boom
		})
		if !errors.Is(err, boom) {
			t.Fatalf("err = %v, want boom", err)
		}
		if n := liveCount(t, db, "say"); n != 0 {
			t.Fatalf("a failed keyed call left %d says", n)
		}
		if _, dup, err := sayOnce(t, db, gw, "k", "h", "whole"); err != nil || dup {
			t.Fatalf("retry after a failure: %v, duplicate %v", err, dup)
		}
		if n := liveCount(t, db, "say"); n != 1 {
			t.Fatalf("%d says, want 1", n)
		}
	})
}

// Keys are kept a week: past it the same key makes a new call.
func TestOnceKeysLastAWeek(t *testing.T) {
	bothEngines(t, func(t *testing.T) {
		var now atomic.Pointer[time.Time]
		start := time.Now()
		now.Store(&start)
		db := worldWith(t, Options{Clock: func() time.Time { return *now.Load() }})
		mustOnce := func(wantDup bool) {
			t.Helper()
			if _, dup, err := sayOnce(t, db, gw, "k", "h", "hi"); err != nil || dup != wantDup {
				t.Fatalf("duplicate = %v (%v), want %v", dup, err, wantDup)
			}
		}
		mustOnce(false)
		later := start.Add(KeyKeep - time.Minute)
		now.Store(&later)
		mustOnce(true)
		past := start.Add(KeyKeep + time.Minute)
		now.Store(&past)
		mustOnce(false)
		if n := liveCount(t, db, "say"); n != 2 {
			t.Fatalf("%d says, want 2", n)
		}
	})
}

// A party holds at most KeysKept keys: the oldest go.
func TestOnceKeepsAtMostKeysKept(t *testing.T) {
	bothEngines(t, func(t *testing.T) {
		db := world(t)
		noop := func(context.Context) (KeyedAnswer, error) { return KeyedAnswer{JSON: "{}"}, nil }
		for i := range KeysKept + 5 {
			if _, _, err := db.Once(context.Background(), Keyed{Me: gw, Tool: "chat_say", Key: fmt.Sprint(i), ArgsHash: "h"}, noop); err != nil {
				t.Fatal(err)
			}
		}
		var n int
		if err := rawSQL(db).QueryRow(`SELECT count(*) FROM idempotency_keys`).Scan(&n); err != nil || n != KeysKept {
			t.Fatalf("%d keys kept (%v), want %d", n, err, KeysKept)
		}
		ran := false
		db.Once(context.Background(), Keyed{Me: gw, Tool: "chat_say", Key: "0", ArgsHash: "h"}, func(context.Context) (KeyedAnswer, error) {
			ran = true
			return KeyedAnswer{JSON: "{}"}, nil
		})
		if !ran {
			t.Fatal("the oldest key was kept beyond the bound")
		}
	})
}

// A key is refused when empty or longer than MaxKeyLength characters.
func TestOnceRefusesAKeyOutOfBounds(t *testing.T) {
	db := world(t)
	for _, key := range []string{"", string(make([]rune, MaxKeyLength+1))} {
		_, _, err := db.Once(context.Background(), Keyed{Me: gw, Tool: "chat_say", Key: key, ArgsHash: "h"},
			func(context.Context) (KeyedAnswer, error) { t.Fatal("ran"); return KeyedAnswer{}, nil })
		refused(t, err, "idempotency_key must be 1 to 128 characters")
	}
}

// Two processes retrying the same keyed call at once write it once.
func TestOnceRacingRetriesWriteOnce(t *testing.T) {
	bothEngines(t, func(t *testing.T) {
		db := world(t)
		handles := []*DB{db, secondHandle(t, db), secondHandle(t, db), secondHandle(t, db)}
		var wg sync.WaitGroup
		var firsts atomic.Int32
		for _, h := range handles {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, dup, err := sayOnce(t, h, gw, "race", "h", "once")
				if err != nil {
					t.Error(err)
				}
				if !dup {
					firsts.Add(1)
				}
			}()
		}
		wg.Wait()
		if n := liveCount(t, db, "say"); n != 1 || firsts.Load() != 1 {
			t.Fatalf("%d says, %d first answers; want 1 and 1", n, firsts.Load())
		}
	})
}

// A chat_ask that repeats one of the caller's live asks — the same
// channel, title and body (and slug, when given) — within SameWithin is
// that ask, answered as a duplicate; anything else is a new ask.
func TestAskRepeatWithinTheWindowIsThatAsk(t *testing.T) {
	bothEngines(t, func(t *testing.T) {
		var now atomic.Pointer[time.Time]
		start := time.Now()
		now.Store(&start)
		db := worldWith(t, Options{Clock: func() time.Time { return *now.Load() }})
		ctx := context.Background()
		ask := func(a AskArgs) AskResult {
			t.Helper()
			a.Channel, a.SameWithin = "gw--dash", time.Minute
			res, err := db.Ask(ctx, gw, a)
			if err != nil {
				t.Fatal(err)
			}
			return res
		}
		first := ask(AskArgs{Title: "Is the enum closed?", Body: "Asking once."})
		again := ask(AskArgs{Title: "Is the enum closed?", Body: "Asking once."})
		if !again.Duplicate || again.Slug != first.Slug || again.Seq != first.Seq || first.Duplicate {
			t.Fatalf("repeat = %+v, want the first %+v as a duplicate", again, first)
		}
		if fmt.Sprint(again.Consumers, again.AwaitingAckFrom) != fmt.Sprint(first.Consumers, first.AwaitingAckFrom) {
			t.Fatalf("repeat's consumers %v %v, first's %v %v", again.Consumers, again.AwaitingAckFrom, first.Consumers, first.AwaitingAckFrom)
		}
		if other := ask(AskArgs{Title: "Is the enum closed?", Body: "Another body."}); other.Duplicate {
			t.Fatal("another body was taken for a repeat")
		}
		if other := ask(AskArgs{Title: "Is the enum closed?", Body: "Asking once.", Slug: "enum-b"}); other.Duplicate || other.Slug != "enum-b" {
			t.Fatalf("another slug = %+v, want a new item enum-b", other)
		}
		if same := ask(AskArgs{Title: "Is the enum closed?", Body: "Asking once.", Slug: "enum-b"}); !same.Duplicate || same.Slug != "enum-b" {
			t.Fatalf("a repeat with its slug = %+v, want enum-b as a duplicate", same)
		}
		if res, err := db.Ask(ctx, dash, AskArgs{Title: "Is the enum closed?", Body: "Asking once.", Channel: "gw--dash", SameWithin: time.Minute}); err != nil || res.Duplicate {
			t.Fatalf("a peer's same ask = %+v (%v), want its own item", res, err)
		}
		later := start.Add(time.Minute)
		now.Store(&later)
		if late := ask(AskArgs{Title: "Is the enum closed?", Body: "Asking once."}); late.Duplicate || late.Slug == first.Slug {
			t.Fatalf("a repeat a minute later = %+v, want a new item", late)
		}
		if n := liveCount(t, db, "ask"); n != 5 {
			t.Fatalf("%d asks, want 5", n)
		}
	})
}

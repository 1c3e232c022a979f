package main

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// The person's search takes the words an agent's does, and is refused in
// the same sentence past the bound.
func TestSearchRefusesTooManyWordsInASentence(t *testing.T) {
	env := isolatedEnv(t)
	if code, out, _ := cli(t, env, "call", "chat_whoami"); code != exitOK {
		t.Fatalf("the first call, which makes the database: %d %s", code, out)
	}
	words := []string{"search"}
	for i := range 65 {
		words = append(words, fmt.Sprintf("w%d", i))
	}
	code, out, errs := cli(t, env, words...)
	if code != exitError || out != "" || !strings.Contains(errs, "has 65 words, and at most 64 are looked for at once — search for the few") {
		t.Fatalf("65 words: exit %d, %q, %q", code, out, errs)
	}
	if code, out, errs := cli(t, env, words[:65]...); code != exitOK || !strings.Contains(out, "Nothing matches") {
		t.Fatalf("64 words: exit %d, %q, %q", code, out, errs)
	}
}

// A search that builds its index for longer than indexProgressAfter (a
// parameter here: zero, or an hour) says so on stderr, and its answer on
// stdout is the same.
func TestSearchSaysItIsBuildingTheIndex(t *testing.T) {
	for _, c := range []struct {
		name  string
		after time.Duration
		want  bool
	}{{"slow", 0, true}, {"quick", time.Hour, false}} {
		t.Run(c.name, func(t *testing.T) {
			defer func(was time.Duration) { indexProgressAfter = was }(indexProgressAfter)
			indexProgressAfter = c.after
			env := isolatedEnv(t)
			for _, call := range [][]string{{"chat_channel_new", `{"name":"c1"}`}, {"chat_say", `{"text":"osprey"}`}} {
				if code, out, errs := cli(t, env, append([]string{"call"}, call...)...); code != exitOK {
					t.Fatalf("%s: %d %s %s", call[0], code, out, errs)
				}
			}
			code, out, errs := cli(t, env, "search", "anything")
			if code != exitOK || !strings.Contains(out, "Nothing matches") {
				t.Fatalf("exit %d, %q, %q", code, out, errs)
			}
			said := strings.Contains(errs, "mcpp-chat search: building the search index: ")
			if said != c.want {
				t.Fatalf("stderr %q: said it was building the index %v, want %v", errs, said, c.want)
			}
		})
	}
}

package main

import (
	"fmt"
	"strings"
	"testing"
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

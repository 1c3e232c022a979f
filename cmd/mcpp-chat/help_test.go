package main

import (
	"regexp"
	"strings"
	"testing"
)

var flagName = regexp.MustCompile(`--[a-z][a-z-]*`)

// usageLine is the line of text that starts with prefix.
func usageLine(t *testing.T, text, prefix string) string {
	t.Helper()
	for _, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), prefix) {
			return line
		}
	}
	t.Fatalf("no line starting %q in\n%s", prefix, text)
	return ""
}

// The top-level help and hub --help name a command's flags as the
// command's own --help does.
func TestHelpNamesEachCommandsFlags(t *testing.T) {
	setupLine, _, _ := strings.Cut(setupSynopsis, "\n")
	if got := usageLine(t, usage, "mcpp-chat setup "); strings.TrimSpace(got) != "mcpp-chat "+setupLine {
		t.Errorf("mcpp-chat --help says\n%s\nsetup --help says\nmcpp-chat %s", got, setupLine)
	}
	for _, c := range []struct{ synopsis, prefix string }{
		{hubServeSynopsis, "mcpp-chat hub serve "},
		{hubTokenSynopsis, "mcpp-chat hub token issue "},
	} {
		first, _, _ := strings.Cut(c.synopsis, "\n")
		line := usageLine(t, hubUsage, c.prefix)
		for _, f := range flagName.FindAllString(first, -1) {
			if f != "--store" && !strings.Contains(line, f) { // --store: said once, below
				t.Errorf("hub --help omits %s:\n%s", f, line)
			}
		}
	}
}

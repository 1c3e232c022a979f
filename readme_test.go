package mcppchat

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// anchor is the link GitHub makes of a heading.
func anchor(heading string) string {
	a := strings.ToLower(strings.TrimSpace(heading))
	a = regexp.MustCompile(`[^a-z0-9 _-]`).ReplaceAllString(a, "")
	return "#" + strings.ReplaceAll(a, " ", "-")
}

// The README's contents line links every section after it (the
// reference through its parts), and the Uninstall section takes out
// everything setup and connect put in place.
func TestReadmeContentsAndUninstall(t *testing.T) {
	data, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	readme := string(data)
	_, rest, ok := strings.Cut(readme, "\nContents: ")
	if !ok {
		t.Fatal("no Contents line")
	}
	contents, _, _ := strings.Cut(rest, "\n\n")
	for _, m := range regexp.MustCompile(`(?m)^## (.+)$`).FindAllStringSubmatch(rest, -1) {
		if m[1] == "Reference" {
			continue
		}
		if !strings.Contains(contents, "("+anchor(m[1])+")") {
			t.Errorf("the contents line does not link %q (%s)", m[1], anchor(m[1]))
		}
	}
	_, uninstall, _ := strings.Cut(readme, "\n## Uninstall\n")
	uninstall, _, _ = strings.Cut(uninstall, "\n## ")
	for _, want := range []string{"setup hooks --remove", "setup codex --remove", "hub.json", "hub-cache/", "chat.db.hub"} {
		if !strings.Contains(uninstall, want) {
			t.Errorf("Uninstall does not mention %s", want)
		}
	}
	if strings.Contains(uninstall, "delete the `[mcp_servers.chat]` table") {
		t.Error("Uninstall still says to delete Codex's table by hand")
	}
}

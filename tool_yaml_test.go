package mcppchat

import (
	"bytes"
	"os"
	"testing"
)

// An mcpp host reads tool.yaml; the Go server embeds module.yaml. One
// source of truth: tool.yaml is a symlink to it.
func TestToolYAMLIsModuleYAML(t *testing.T) {
	target, err := os.Readlink("tool.yaml")
	if err != nil || target != "module.yaml" {
		t.Fatalf("tool.yaml should be a symlink to module.yaml: %q, %v", target, err)
	}
	data, err := os.ReadFile("tool.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(data, ModuleYAML) {
		t.Fatal("tool.yaml does not resolve to the embedded module.yaml")
	}
}

// Package tools is the MCP surface of mcpp-chat: the tool list read from
// module.yaml, argument checks against each tool's inputSchema, one file per
// tool family, and the display text every result carries.
package tools

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"

	"gopkg.in/yaml.v3"

	mcppchat "github.com/mcpp/mcpp-chat"
)

// Manifest is module.yaml: the mcpp manifest format.
type Manifest struct {
	Name  string `yaml:"name"`
	Scope string `yaml:"scope"`
	About string `yaml:"about"`
	Tools []Tool `yaml:"tools"`
}

// Tool is one declared tool.
type Tool struct {
	Name        string `yaml:"name"`
	Description string `yaml:"description"`
	InputSchema Schema `yaml:"inputSchema"`
}

// Schema is the subset of JSON Schema the manifest uses; a test keeps the
// manifest inside it, so the checks in args.go cover every declared rule.
type Schema struct {
	Type        string             `yaml:"type" json:"type"`
	Description string             `yaml:"description,omitempty" json:"description,omitempty"`
	Properties  map[string]*Schema `yaml:"properties,omitempty" json:"properties,omitempty"`
	Required    []string           `yaml:"required,omitempty" json:"required,omitempty"`
	Items       *Schema            `yaml:"items,omitempty" json:"items,omitempty"`
	Minimum     *float64           `yaml:"minimum,omitempty" json:"minimum,omitempty"`
	Maximum     *float64           `yaml:"maximum,omitempty" json:"maximum,omitempty"`
	// MinLength and MaxLength bound a string, in characters.
	MinLength *int `yaml:"minLength,omitempty" json:"minLength,omitempty"`
	MaxLength *int `yaml:"maxLength,omitempty" json:"maxLength,omitempty"`
}

// LoadManifest decodes the embedded module.yaml, refusing unknown keys.
func LoadManifest() (Manifest, error) {
	var m Manifest
	dec := yaml.NewDecoder(bytes.NewReader(mcppchat.ModuleYAML))
	dec.KnownFields(true)
	if err := dec.Decode(&m); err != nil {
		return m, fmt.Errorf("module.yaml: %w", err)
	}
	return m, nil
}

// Tool finds a declared tool by name.
func (m Manifest) Tool(name string) (Tool, bool) {
	for _, t := range m.Tools {
		if t.Name == name {
			return t, true
		}
	}
	return Tool{}, false
}

// SchemaJSON is the tool's inputSchema as MCP's tools/list sends it; unknown
// arguments are refused, so the schema says so.
func (t Tool) SchemaJSON() json.RawMessage {
	type wire struct {
		Schema
		AdditionalProperties bool `json:"additionalProperties"`
	}
	s := t.InputSchema
	if s.Properties == nil {
		s.Properties = map[string]*Schema{}
	}
	if s.Required == nil {
		s.Required = []string{}
	}
	data, err := json.Marshal(wire{Schema: s})
	if err != nil {
		panic(err) // a struct of strings, maps and floats always marshals
	}
	return data
}

// argNames lists a tool's arguments in a stable order for messages.
func (t Tool) argNames() []string {
	names := make([]string, 0, len(t.InputSchema.Properties))
	for n := range t.InputSchema.Properties {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

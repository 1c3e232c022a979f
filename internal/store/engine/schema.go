package engine

import (
	"fmt"
	"io/fs"
	"regexp"
	"sort"
	"strconv"

	mcppchat "github.com/mcpp/mcpp-chat"
)

// Patch is one step of the schema: schema.sql is version 1, patch-N.sql
// brings a database to version N.
type Patch struct {
	Version int
	SQL     string
}

var patchName = regexp.MustCompile(`^patch-([0-9]+)\.sql$`)

// Patches lists the embedded schema steps in order: dir/schema.sql is
// version 1 and dir/patch-N.sql version N. With an override folder
// (PostgreSQL's pg/), a step found there replaces the shared one: only the
// steps whose SQL differs between the engines are written twice.
func Patches(dir, override string) ([]Patch, error) {
	read := func(name string) ([]byte, error) {
		if override != "" {
			if body, err := fs.ReadFile(mcppchat.SchemaPatches, override+"/"+name); err == nil {
				return body, nil
			}
		}
		return fs.ReadFile(mcppchat.SchemaPatches, dir+"/"+name)
	}
	v1, err := read("schema.sql")
	if err != nil {
		return nil, fmt.Errorf("read embedded schema: %w", err)
	}
	out := []Patch{{1, string(v1)}}
	entries, err := fs.ReadDir(mcppchat.SchemaPatches, dir)
	if err != nil {
		return nil, fmt.Errorf("read embedded patches: %w", err)
	}
	for _, e := range entries {
		m := patchName.FindStringSubmatch(e.Name())
		if m == nil {
			continue
		}
		n, _ := strconv.Atoi(m[1])
		body, err := read(e.Name())
		if err != nil {
			return nil, fmt.Errorf("read embedded %s: %w", e.Name(), err)
		}
		out = append(out, Patch{n, string(body)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Version < out[j].Version })
	for i, p := range out {
		if p.Version != i+1 {
			return nil, fmt.Errorf("schema patches must be numbered 2, 3, ... without gaps; found patch-%d.sql", p.Version)
		}
	}
	return out, nil
}

// SchemaVersion is the newest schema this binary knows.
func SchemaVersion() int {
	p, err := Patches("schema_patches", "")
	if err != nil {
		return 0
	}
	return len(p)
}

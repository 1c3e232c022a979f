package tools

import (
	"encoding/json"
	"maps"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	mcppchat "github.com/mcpp/mcpp-chat"
	"github.com/mcpp/mcpp-chat/internal/config"
	"github.com/mcpp/mcpp-chat/internal/store"
)

var wantTools = []string{"chat_whoami", "chat_channel_new", "chat_channel_list", "chat_channel_join", "chat_channel_leave",
	"chat_say", "chat_ask", "chat_reply", "chat_ack", "chat_resolve", "chat_prune_ok", "chat_due", "chat_reassign", "chat_read", "chat_search", "chat_inbox", "chat_wait",
	"chat_claim", "chat_release", "chat_claims", "chat_attention"}

func TestEveryDeclaredToolHasAHandlerAndViceVersa(t *testing.T) {
	t.Parallel()
	m, err := LoadManifest()
	if err != nil {
		t.Fatal(err)
	}
	declared := map[string]bool{}
	for _, tool := range m.Tools {
		if declared[tool.Name] {
			t.Errorf("%s declared twice", tool.Name)
		}
		declared[tool.Name] = true
		if _, ok := handlers[tool.Name]; !ok {
			t.Errorf("%s is declared in module.yaml but has no handler", tool.Name)
		}
	}
	for name := range handlers {
		if !declared[name] {
			t.Errorf("handler %s is not declared in module.yaml", name)
		}
	}
	var names []string
	for n := range declared {
		names = append(names, n)
	}
	sort.Strings(names)
	want := append([]string{}, wantTools...)
	sort.Strings(want)
	if strings.Join(names, ",") != strings.Join(want, ",") {
		t.Fatalf("tools = %v, want the %d chat tools", names, len(wantTools))
	}
}

func TestManifestContract(t *testing.T) {
	t.Parallel()
	m, err := LoadManifest()
	if err != nil {
		t.Fatal(err)
	}
	if m.Name != "chat" || m.Scope != "local" {
		t.Fatalf("name/scope = %q/%q", m.Name, m.Scope)
	}
	for _, phrase := range []string{"authoritative about your own repo and nothing else", "Never assert what a peer's code can or cannot do", "Never edit another party's files", "raise an item"} {
		if !strings.Contains(m.About, phrase) {
			t.Errorf("about lacks %q", phrase)
		}
	}
	boundary := map[string]string{"chat_ask": "do not answer for them", "chat_resolve": "Only the raiser confirms satisfaction", "chat_prune_ok": "only your own prune-ok"}
	args := map[string][]string{
		"chat_whoami": {"about", "skip"}, "chat_channel_new": {"name", "about", "parties"}, "chat_channel_list": {"all", "skip"},
		"chat_channel_join": {"name", "attention"}, "chat_channel_leave": {"name"}, "chat_say": {"text", "channel", "reply_to", "ref", "to"},
		"chat_ask": {"title", "body", "channel", "slug", "ref", "consumers", "announce", "due", "to"}, "chat_reply": {"item", "text", "hand_over", "to"},
		"chat_ack": {"item", "note"}, "chat_resolve": {"item", "note", "answered"}, "chat_prune_ok": {"item"},
		"chat_due": {"item", "due"}, "chat_reassign": {"item", "consumer", "to"},
		"chat_read": {"channel", "limit", "since", "peek", "archived", "body_offset"}, "chat_inbox": {"skip"}, "chat_wait": {"seconds", "channel"},
		"chat_search": {"query", "channel", "archived", "limit", "skip"}, "chat_attention": {"channel", "mode"},
		"chat_claim": {"resource", "ttl", "reason", "exclusive", "item"}, "chat_release": {"resource"}, "chat_claims": {},
	}
	// Every tool that writes takes an idempotency_key, and says so.
	for _, tool := range writingTools {
		args[tool] = append(args[tool], "idempotency_key")
	}
	for _, tool := range m.Tools {
		if tool.Description == "" || tool.InputSchema.Type != "object" {
			t.Errorf("%s: description or type object missing", tool.Name)
		}
		if phrase, ok := boundary[tool.Name]; ok && !strings.Contains(strings.ToLower(tool.Description), strings.ToLower(phrase)) {
			t.Errorf("%s description lacks %q", tool.Name, phrase)
		}
		if got := tool.argNames(); strings.Join(got, ",") != strings.Join(sorted(args[tool.Name]), ",") {
			t.Errorf("%s arguments = %v, want %v", tool.Name, got, args[tool.Name])
		}
		if slices.Contains(writingTools, tool.Name) {
			if !strings.Contains(tool.Description, "idempotency_key") {
				t.Errorf("%s description does not tell the model to pass an idempotency_key", tool.Name)
			}
			if k := tool.InputSchema.Properties["idempotency_key"]; k.Type != "string" || *k.MinLength != 1 || *k.MaxLength != store.MaxKeyLength {
				t.Errorf("%s idempotency_key is not a string of 1 to %d characters", tool.Name, store.MaxKeyLength)
			}
		}
		for name, p := range tool.InputSchema.Properties {
			if p.Description == "" {
				t.Errorf("%s.%s has no description", tool.Name, name)
			}
		}
	}
	read, _ := m.Tool("chat_read")
	if l := read.InputSchema.Properties["limit"]; *l.Minimum != 1 || *l.Maximum != config.MaxReadLimit {
		t.Errorf("read limit range = %v..%v", *l.Minimum, *l.Maximum)
	}
	wait, _ := m.Tool("chat_wait")
	if s := wait.InputSchema.Properties["seconds"]; *s.Minimum != 1 || *s.Maximum != 20 {
		t.Errorf("wait seconds range = %v..%v", *s.Minimum, *s.Maximum)
	}
}

// writingTools are the tools that write the conversation.
var writingTools = []string{"chat_channel_new", "chat_channel_join", "chat_channel_leave", "chat_say", "chat_ask",
	"chat_reply", "chat_ack", "chat_resolve", "chat_prune_ok", "chat_due", "chat_reassign", "chat_claim", "chat_release", "chat_attention"}

func sorted(s []string) []string {
	out := append([]string{}, s...)
	sort.Strings(out)
	return out
}

// args.go checks exactly these schema keywords; a new keyword in
// module.yaml would go unchecked, so it must fail here first.
func TestManifestUsesOnlyCheckedKeywords(t *testing.T) {
	t.Parallel()
	var raw struct {
		Tools []struct {
			InputSchema map[string]any `yaml:"inputSchema"`
		} `yaml:"tools"`
	}
	if err := yaml.Unmarshal(mcppchat.ModuleYAML, &raw); err != nil {
		t.Fatal(err)
	}
	allowed := map[string]bool{"type": true, "properties": true, "required": true, "items": true, "minimum": true, "maximum": true, "description": true,
		"minLength": true, "maxLength": true}
	types := map[string]bool{"object": true, "string": true, "integer": true, "boolean": true, "array": true}
	var walk func(path string, s map[string]any)
	walk = func(path string, s map[string]any) {
		for k, v := range s {
			if !allowed[k] {
				t.Errorf("%s uses unchecked keyword %q", path, k)
			}
			if k == "type" && !types[v.(string)] {
				t.Errorf("%s has unchecked type %v", path, v)
			}
		}
		if props, ok := s["properties"].(map[string]any); ok {
			for name, p := range props {
				walk(path+"."+name, p.(map[string]any))
			}
		}
		if items, ok := s["items"].(map[string]any); ok {
			walk(path+"[]", items)
		}
	}
	for i, tool := range raw.Tools {
		walk("tools["+strconv.Itoa(i)+"]", tool.InputSchema)
	}
}

func TestSchemaJSONRefusesUnknownArguments(t *testing.T) {
	t.Parallel()
	m, _ := LoadManifest()
	tool, _ := m.Tool("chat_inbox")
	var s map[string]any
	if err := json.Unmarshal(tool.SchemaJSON(), &s); err != nil {
		t.Fatal(err)
	}
	if s["type"] != "object" || s["additionalProperties"] != false {
		t.Fatalf("schema = %v", s)
	}
}

// checkArgs validates every argument the schema declares and bind decodes
// them into the tool's struct: an argument with no field there would be
// validated, then silently dropped, and a field of another kind would fail
// every call that passes it.
func TestArgumentStructsMatchTheSchema(t *testing.T) {
	t.Parallel()
	m, err := LoadManifest()
	if err != nil {
		t.Fatal(err)
	}
	for _, tool := range m.Tools {
		h, ok := handlers[tool.Name]
		if !ok {
			continue // TestEveryDeclaredToolHasAHandlerAndViceVersa says so
		}
		fields := jsonFields(h.args)
		var names []string
		for name, kind := range fields {
			names = append(names, name)
			prop, declared := tool.InputSchema.Properties[name]
			if declared && !holds(kind, prop) {
				t.Errorf("%s: field `%s` is a %v, the schema says %s", tool.Name, name, kind, prop.Type)
			}
		}
		sort.Strings(names)
		if got, want := strings.Join(names, ","), strings.Join(tool.argNames(), ","); got != want {
			t.Errorf("%s: the argument struct %v has fields %s; the schema declares %s", tool.Name, h.args, got, want)
		}
	}
}

// jsonFields maps the JSON names of a struct's fields, those of embedded
// structs included (encoding/json promotes them), to their types.
func jsonFields(typ reflect.Type) map[string]reflect.Type {
	out := map[string]reflect.Type{}
	for f := range typ.Fields() {
		if f.Anonymous && f.Type.Kind() == reflect.Struct {
			maps.Copy(out, jsonFields(f.Type))
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if !f.IsExported() || name == "-" {
			continue
		}
		if name == "" {
			name = f.Name
		}
		out[name] = f.Type
	}
	return out
}

// holds reports whether a field of type typ holds what the schema allows.
func holds(typ reflect.Type, s *Schema) bool {
	if typ.Kind() == reflect.Pointer {
		typ = typ.Elem()
	}
	switch s.Type {
	case "string":
		return typ.Kind() == reflect.String
	case "boolean":
		return typ.Kind() == reflect.Bool
	case "integer":
		return typ.Kind() == reflect.Int || typ.Kind() == reflect.Int64
	case "array":
		return typ.Kind() == reflect.Slice && typ.Elem().Kind() == reflect.String
	}
	return false
}

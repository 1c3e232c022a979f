// Command bench is the driver behind `make bench`: it builds the binaries,
// seeds databases through internal/store, and times what only a whole
// process shows — MCP round trips against a warm `serve`, `call` and hook
// processes, concurrent writers, memory and start-up. It prints a markdown
// table for docs/performance.md. It is a program, not a test, so
// `go test ./...` never runs it. (chat_wait's wake-up latency has its own
// measurement: MCPP_CHAT_BENCH=1 go test ./tests -run TestWakeLatency.)
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"
)

type options struct {
	root     string
	tools    map[string]bool // nil: every tool
	samples  int
	sections map[string]bool
	keep     bool
	seedOnly string
	// The scale and waiters sections (scale.go).
	scaleMembers membersFlag
	scaleFor     time.Duration
	scaleStores  string
	waiters      int
	hubFlags     []string
}

func main() {
	var o options
	var only string
	flag.StringVar(&o.root, "root", ".", "the checkout to build")
	flag.IntVar(&o.samples, "n", 1000, "measured calls per tool and database size")
	flag.StringVar(&only, "only", "", "comma-separated sections to run (start,tools,call,hook,write,rss,postgres,hub; scale,waiters only when named); default all")
	flag.BoolVar(&o.keep, "keep", false, "keep the scratch folder (its path is printed)")
	flag.StringVar(&o.seedOnly, "seed", "", "only write the seeded template databases into this folder, then exit")
	tools := flag.String("tool", "", "comma-separated tools for the tools section (e.g. chat_say); default all")
	o.scaleMembers = membersFlag{10, 50, 200}
	flag.Var(&o.scaleMembers, "scale-members", "scale: the team sizes, comma-separated")
	flag.DurationVar(&o.scaleFor, "scale-for", 10*time.Second, "scale: how long each configuration's members call")
	flag.StringVar(&o.scaleStores, "scale-stores", "sqlite,pg,pg2", "scale: the configurations, comma-separated: sqlite (a SQLite hub), pg (one hub on PostgreSQL), pg2 (two hubs on it)")
	flag.IntVar(&o.waiters, "waiters", 1000, "waiters: how many chat_wait calls are held at once")
	hubFlags := flag.String("hub-flags", "", "extra flags for every `mcpp-chat hub serve`, space-separated (e.g. its connection caps)")
	writer := flag.String("store-writer", "", "internal: DB|PARTY|WORKSPACE|N — post N says through the store directly")
	flag.Parse()
	if *writer != "" {
		if err := storeWriter(*writer); err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			os.Exit(1)
		}
		return
	}
	o.hubFlags = strings.Fields(*hubFlags)
	if *tools != "" {
		o.tools = map[string]bool{}
		for _, t := range strings.Split(*tools, ",") {
			o.tools[strings.TrimSpace(t)] = true
		}
	}
	if only != "" {
		o.sections = map[string]bool{}
		for _, s := range strings.Split(only, ",") {
			o.sections[strings.TrimSpace(s)] = true
		}
	}
	if err := runAll(o); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

func (o options) want(section string) bool { return o.sections == nil || o.sections[section] }

func (o options) wantTool(tool string) bool { return o.tools == nil || o.tools[tool] }

func runAll(o options) error {
	dir := o.seedOnly
	if dir == "" {
		var err error
		if dir, err = os.MkdirTemp("", "mcpp-chat-bench-"); err != nil {
			return err
		}
		if o.keep {
			fmt.Fprintln(os.Stderr, "bench: scratch folder", dir)
		} else {
			defer os.RemoveAll(dir)
		}
	}
	w, err := newWorld(dir)
	if err != nil {
		return err
	}
	w.hubFlags = o.hubFlags
	root, err := filepath.Abs(o.root)
	if err != nil {
		return err
	}
	if o.seedOnly != "" {
		_, err := w.templates()
		return err
	}
	progress("building the binaries")
	if err := w.build(root); err != nil {
		return err
	}
	var r report
	steps := []struct {
		name string
		fn   func(*world, options, *report) error
		// named runs the step only when -only names it: it takes minutes
		// and loads the machine for all of them.
		named bool
	}{
		{"start", benchStart, false},
		{"tools", benchTools, false},
		{"call", benchCall, false},
		{"hook", benchHook, false},
		{"write", benchWrite, false},
		{"rss", benchRSS, false},
		{"postgres", benchPostgres, false},
		{"hub", benchHub, false},
		{"scale", benchScale, true},
		{"waiters", benchWaiters, true},
	}
	for _, s := range steps {
		if !o.want(s.name) || s.named && !o.sections[s.name] {
			continue
		}
		if err := s.fn(w, o, &r); err != nil {
			return fmt.Errorf("%s: %w", s.name, err)
		}
	}
	r.print(os.Stdout, machine())
	return nil
}

func progress(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "bench: "+format+"\n", args...)
}

// machine describes where the figures were taken.
func machine() string {
	cpu := "unknown CPU"
	if data, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, line := range strings.Split(string(data), "\n") {
			if v, ok := strings.CutPrefix(line, "model name"); ok {
				cpu = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(v), ":"))
				break
			}
		}
	}
	return fmt.Sprintf("%d cores (%s), %s/%s, %s, %s", runtime.NumCPU(), cpu, runtime.GOOS, runtime.GOARCH, runtime.Version(), time.Now().Format("2006-01-02"))
}

package tests

import (
	"context"
	"fmt"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mcpp/mcpp-chat/internal/store"
	"github.com/mcpp/mcpp-chat/tests/hubload"
)

// crowdSize is how many members wait at once: a team's sessions, each
// in a chat_wait, on one hub.
const crowdSize = 1000

// A thousand members wait at once (chat_wait, 20 s) on one hub on
// PostgreSQL, each with its own token and connection, and one say in the
// channel they all sit in answers every wait: none is refused, none ends
// before the say or without it. A wait holds a request open, not a share
// of the store: neither the hub's connections nor its store's may run out
// while a team waits.
func TestHubThousandWaitsAllWokenByOneSay(t *testing.T) {
	skipShort(t)
	// Two descriptors a wait (the member's socket and the hub's, in this
	// process and the hub it starts), and room for the rest.
	raiseFileLimit(t, 2*crowdSize+1024)
	w, _, u := teamWorld(t)
	w.configure("chat:\n  wait_progress_ms: 1000\n") // a wait is seen under way within a second
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	db, err := store.OpenPostgres(ctx, u, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	waiters, announcer, err := hubload.SeedCrowd(ctx, db, crowdSize)
	db.Close()
	if err != nil {
		t.Fatal(err)
	}
	h := startHubProcess(t, w, "crowd", u, hubCapFlags(t, 2*crowdSize)...)
	res, err := hubload.Crowd(ctx, h.url+"/mcp", waiters, announcer, hubload.CrowdOptions{Seconds: 20, SayAt: 6 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Log(res.Summary())
	if len(res.Wake) > 0 {
		t.Logf("the say sent → a wait's answer: p50 %s, p95 %s, max %s", res.Wake[len(res.Wake)/2].Round(time.Millisecond),
			res.Wake[len(res.Wake)*95/100].Round(time.Millisecond), res.Wake[len(res.Wake)-1].Round(time.Millisecond))
	}
	if res.SayErr != nil {
		t.Errorf("the say to all failed: %v", res.SayErr)
	}
	if res.Woken != crowdSize {
		t.Errorf("%d of %d waits were answered by the say, want all: %s\nthe hub's warnings, the first of each:\n%s", res.Woken, crowdSize, res.Summary(), strings.Join(warnings(h.logs(), 8), "\n"))
	}
}

// raiseFileLimit lifts this process's open-files limit to its hard
// limit (the processes it starts inherit it), and skips the test when
// even that is below need.
func raiseFileLimit(t *testing.T, need uint64) {
	t.Helper()
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		t.Fatalf("read the open-files limit: %v", err)
	}
	if lim.Max < need {
		t.Skipf("this test holds %d connections open at once and needs %d open files, but the hard limit is %d — raise it (ulimit -Hn, or LimitNOFILE= for a service) to run it", crowdSize, need, lim.Max)
	}
	if lim.Cur >= need {
		return
	}
	old := lim.Cur
	lim.Cur = lim.Max
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		t.Fatalf("raise the open-files limit to %d: %v", lim.Max, err)
	}
	t.Cleanup(func() {
		lim.Cur = old
		syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim)
	})
}

// capFlag finds a connection cap among hub serve's flags.
var capFlag = regexp.MustCompile(`(?m)^\s+-(max-conns(-per-addr)?)\b`)

// hubCapFlags are the flags that let a hub hold n connections, for a hub
// serve that caps them (its --max-conns and --max-conns-per-addr, when
// it has them): a test that needs many sets the caps itself rather than
// rely on their defaults.
func hubCapFlags(t *testing.T, n int) []string {
	t.Helper()
	out, err := exec.Command(chatBin, "hub", "serve", "--help").CombinedOutput()
	if err != nil {
		t.Fatalf("hub serve --help: %v\n%s", err, out)
	}
	var flags []string
	for _, m := range capFlag.FindAllStringSubmatch(string(out), -1) {
		flags = append(flags, "--"+m[1]+"="+strconv.Itoa(n))
	}
	return flags
}

// logNoise are the parts of a log line that differ between lines saying
// the same thing.
var logNoise = regexp.MustCompile(`time=\S+ | remote=\S+`)

// warnings are the first n distinct warnings and errors in a hub's log,
// each once with its count.
func warnings(log string, n int) []string {
	count := map[string]int{}
	var order []string
	for _, line := range strings.Split(log, "\n") {
		if !strings.Contains(line, "level=WARN") && !strings.Contains(line, "level=ERROR") {
			continue
		}
		line = logNoise.ReplaceAllString(line, "")
		if count[line] == 0 {
			order = append(order, line)
		}
		count[line]++
	}
	var out []string
	for _, line := range order[:min(n, len(order))] {
		out = append(out, fmt.Sprintf("%d× %s", count[line], line))
	}
	return out
}

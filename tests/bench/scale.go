package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/mcpp/mcpp-chat/internal/pgtest"
	"github.com/mcpp/mcpp-chat/internal/store"
	"github.com/mcpp/mcpp-chat/tests/hubload"
)

// The scale and waiters sections load one hub with a whole team at once
// (issue 24: a hub on PostgreSQL does not scale), all over loopback, with
// the hub a real `mcpp-chat hub serve` process:
//
//   - scale: N members (-scale-members), each a party with its own token
//     seated in three shared channels of about ten, seeing about twenty
//     open asks, each running one loop of calls through its own
//     hub.Client for -scale-for: one chat_say in four, chat_inbox
//     otherwise. On a database file, on PostgreSQL, and on two hubs
//     sharing one PostgreSQL (the members split between them).
//   - waiters: -waiters chat_wait calls (seconds=20) held at once on a
//     PostgreSQL hub, and one chat_say at ~6 s that concerns them all:
//     how many were answered and refused, the wake-up after the say, and
//     the PostgreSQL connections the hub's database holds meanwhile.
//
// The bench process's own CPU runs the members' clients; on a small
// machine it competes with the hub and PostgreSQL for the cores, so the
// figures are the whole machine's, not the hub's alone. A hub serve that
// caps its connections needs the caps raised for a crowd: pass them with
// -hub-flags (e.g. -hub-flags '--max-conns=4000 --max-conns-per-addr=4000').

const (
	scaleCommand   = "go run ./tests/bench -only scale"
	waitersCommand = "go run ./tests/bench -only waiters"
)

// crowdConfig is the waiters' hub config: progress every second, so that
// a wait is seen under way without a notification storm.
const crowdConfig = "storage:\n  daily_backup: false\nchat:\n  wait_progress_ms: 1000\n"

// raiseFileLimit lifts the open-files limit to its hard limit: a thousand
// connections are two thousand descriptors in this process, and the hub
// it starts inherits the limit.
func raiseFileLimit() uint64 {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return 0
	}
	if lim.Cur < lim.Max {
		lim.Cur = lim.Max
		if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
			progress("could not raise the open-files limit to %d: %v", lim.Max, err)
			syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim)
		}
	}
	return lim.Cur
}

// teamStore is a fresh store for one configuration: its URL for hub
// serve, and the environment the hub runs with.
type teamStore struct {
	url string
	env []string
	// pg is the database's name on the PostgreSQL server, "" for a file.
	pg string
}

// freshFile is a new database file seeded by seed.
func (w *world) freshFile(config string, seed func(*store.DB) error) (teamStore, error) {
	run, err := w.hubRun("")
	if err != nil {
		return teamStore{}, err
	}
	if config != "" {
		if err := os.WriteFile(filepath.Join(run.dir, "config.yaml"), []byte(config), 0o600); err != nil {
			return teamStore{}, err
		}
	}
	db, err := store.Open(context.Background(), run.db)
	if err != nil {
		return teamStore{}, err
	}
	err = seed(db)
	if cerr := db.Close(); err == nil {
		err = cerr
	}
	return teamStore{url: "sqlite:" + run.db, env: run.env}, err
}

// freshPostgres is a new database on pg seeded by seed.
func (w *world) freshPostgres(pg *pgtest.Server, name, config string, seed func(*store.DB) error) (teamStore, error) {
	if err := pgExec(pg, "CREATE DATABASE "+name); err != nil {
		return teamStore{}, err
	}
	run, err := w.hubRun("")
	if err != nil {
		return teamStore{}, err
	}
	if config != "" {
		if err := os.WriteFile(filepath.Join(run.dir, "config.yaml"), []byte(config), 0o600); err != nil {
			return teamStore{}, err
		}
	}
	url := pg.URL(name)
	db, err := store.OpenPostgres(context.Background(), url, store.Options{})
	if err != nil {
		return teamStore{}, err
	}
	err = seed(db)
	if cerr := db.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		// A store in use has its planner statistics, which autovacuum
		// gathers within a minute of the writes; a store seeded a moment
		// ago has none, and its plans would be those of an empty one.
		err = pgExecIn(pg, name, "ANALYZE")
	}
	return teamStore{url: url, env: run.env, pg: name}, err
}

// benchScale runs every team size on every store: a database file, and
// (when PostgreSQL is installed) one and two hubs on PostgreSQL, each on
// a fresh store.
func benchScale(w *world, o options, r *report) error {
	for _, name := range strings.Split(o.scaleStores, ",") {
		if !slices.Contains([]string{"sqlite", "pg", "pg2"}, name) {
			return fmt.Errorf("-scale-stores names %q — give sqlite, pg or pg2, comma-separated", name)
		}
	}
	progress("scale: open-files limit %d", raiseFileLimit())
	pg, err := startPostgres()
	if err != nil {
		return err
	}
	if pg != nil {
		defer pg.Stop()
	} else {
		progress("scale: PostgreSQL not installed; only the SQLite hub is measured")
	}
	for _, n := range o.scaleMembers {
		var members []hubload.Member
		seed := func(db *store.DB) error {
			begin := time.Now()
			var err error
			members, err = hubload.SeedTeam(context.Background(), db, n)
			progress("scale: seeded %d members in %s", n, time.Since(begin).Round(time.Millisecond))
			return err
		}
		type config struct {
			name  string // as -scale-stores names it
			setup string
			hubs  int
			fresh func() (teamStore, error)
		}
		runs := []config{{"sqlite", "SQLite hub", 1, func() (teamStore, error) { return w.freshFile("", seed) }}}
		if pg != nil {
			runs = append(runs,
				config{"pg", "PostgreSQL, one hub", 1, func() (teamStore, error) {
					return w.freshPostgres(pg, fmt.Sprintf("scale_one_%d", n), "", seed)
				}},
				config{"pg2", "PostgreSQL, two hubs (members split)", 2, func() (teamStore, error) {
					return w.freshPostgres(pg, fmt.Sprintf("scale_two_%d", n), "", seed)
				}})
		}
		for _, c := range runs {
			if !slices.Contains(strings.Split(o.scaleStores, ","), c.name) {
				continue
			}
			progress("scale: %d members, %s, %s", n, c.setup, o.scaleFor)
			st, err := c.fresh()
			if err != nil {
				return fmt.Errorf("%d members, %s: seed: %w", n, c.setup, err)
			}
			if err := w.scaleRun(r, o, pg, st, c.setup, c.hubs, members); err != nil {
				return fmt.Errorf("%d members, %s: %w", n, c.setup, err)
			}
		}
	}
	return nil
}

// scaleRun starts the hubs on st, runs the members' loops and reports.
func (w *world) scaleRun(r *report, o options, pg *pgtest.Server, st teamStore, setup string, nHubs int, members []hubload.Member) error {
	var hubs []*hubProc
	var urls []string
	for range nHubs {
		h, err := w.startHub(st.url, st.env)
		if err != nil {
			return err
		}
		defer h.stop()
		hubs = append(hubs, h)
		urls = append(urls, h.mcp)
	}
	var conns *connSampler
	if st.pg != "" {
		conns = sampleConns(pg, st.pg)
	}
	var pgFor *pgtest.Server // nil: the store is a file
	if st.pg != "" {
		pgFor = pg
	}
	cpu := startCPU(pgFor, hubs)
	res, err := hubload.Mix(context.Background(), urls, members, o.scaleFor)
	used := cpu.stop()
	var peak connCounts
	if conns != nil {
		peak = conns.stop()
	}
	if err != nil {
		return err
	}
	all := samples(res.All())
	calls := res.Calls()
	value := fmt.Sprintf("%.0f calls/s (%d calls in %s); p99 %s", float64(calls)/res.Elapsed.Seconds(), calls,
		res.Elapsed.Round(time.Millisecond), ms(all.pct(99)))
	for _, tool := range []string{"chat_inbox", "chat_say"} {
		l := samples(res.Lat[tool])
		value += fmt.Sprintf("; %s p50 %s p99 %s n=%d", tool, ms(l.pct(50)), ms(l.pct(99)), len(l))
	}
	value += fmt.Sprintf("; errors %d", res.Errors.N())
	if first := res.Errors.First(3); len(first) > 0 {
		value += " (" + strings.Join(clip(first, 200), " | ") + ")"
		for _, e := range res.Errors.First(10) {
			progress("scale: error: %s", e)
		}
	}
	if n := res.WarmUp.N(); n > 0 {
		value += fmt.Sprintf("; before the clock, %d of %d first calls (`chat_whoami`) failed (%s)", n, len(members), strings.Join(clip(res.WarmUp.First(2), 200), " | "))
	}
	value += "; CPU a call: " + used.perCall(calls)
	if conns != nil {
		value += "; " + peak.figure(calls)
	}
	r.add(figure{what: fmt.Sprintf("%d members, each a loop of 3 `chat_inbox` : 1 `chat_say` (`hub.Client`, own connection)", len(members)),
		setup: setup + ", " + o.scaleFor.String(), lat: all, value: value, command: scaleCommand})
	for _, h := range hubs {
		if tail := h.tail(); strings.Contains(tail, "level=WARN") || strings.Contains(tail, "level=ERROR") {
			progress("scale: the hub's log (%s) ends:\n%s", h.log, lastLines(tail, 5))
		}
	}
	return nil
}

// benchWaiters holds o.waiters waits on one PostgreSQL hub and wakes them
// with one say.
func benchWaiters(w *world, o options, r *report) error {
	progress("waiters: open-files limit %d", raiseFileLimit())
	pg, err := startPostgres()
	if err != nil {
		return err
	}
	if pg == nil {
		progress("waiters: PostgreSQL not installed; skipped")
		return nil
	}
	defer pg.Stop()
	var waiters []hubload.Member
	var announcer hubload.Member
	st, err := w.freshPostgres(pg, "waiters", crowdConfig, func(db *store.DB) error {
		begin := time.Now()
		var err error
		waiters, announcer, err = hubload.SeedCrowd(context.Background(), db, o.waiters)
		progress("waiters: seeded %d waiters in %s", o.waiters, time.Since(begin).Round(time.Millisecond))
		return err
	})
	if err != nil {
		return err
	}
	h, err := w.startHub(st.url, st.env)
	if err != nil {
		return err
	}
	defer h.stop()
	conns := sampleConns(pg, st.pg)
	cpu := startCPU(pg, []*hubProc{h})
	progress("waiters: %d chat_wait (seconds=20), the say at ~6 s", o.waiters)
	res, err := hubload.Crowd(context.Background(), h.mcp, waiters, announcer, hubload.CrowdOptions{Seconds: 20, SayAt: 6 * time.Second})
	used := cpu.stop()
	peak := conns.stop()
	if err != nil {
		return err
	}
	progress("waiters: %s", res.Summary())
	wake := samples(res.Wake)
	value := fmt.Sprintf("answered %d of %d (woken by the say %d, before it %d, nothing arrived %d); refused %d",
		res.Woken+res.Early+res.Quiet, res.Waiters, res.Woken, res.Early, res.Quiet, res.Refused.N())
	if first := res.Refused.First(3); len(first) > 0 {
		value += " (" + strings.Join(clip(first, 200), " | ") + ")"
	}
	value += fmt.Sprintf("; %d under way when the say was sent at %s; the say took %s", res.UnderWay, res.SaidAt.Round(time.Millisecond), ms(res.Say))
	if res.SayErr != nil {
		value += fmt.Sprintf(" and failed: %.200s", res.SayErr)
	}
	if len(wake) > 0 {
		value += fmt.Sprintf("; wake-up max %s", ms(wake[len(wake)-1]))
	}
	value += "; " + peak.figure(0) + "; CPU: " + used.total()
	r.add(figure{what: fmt.Sprintf("%d `chat_wait` (seconds=20, `hub.Client`, own connection each), one `chat_say` to all: the say sent → each wait's answer", res.Waiters),
		setup: "PostgreSQL hub", lat: wake, value: value, command: waitersCommand})
	if tail := h.tail(); strings.Contains(tail, "level=WARN") || strings.Contains(tail, "level=ERROR") {
		progress("waiters: the hub's log (%s) ends:\n%s", h.log, lastLines(tail, 5))
	}
	return nil
}

// connSampler counts, every 200 ms, the connections to one database,
// and the sessions opened on it meanwhile.
type connSampler struct {
	stopped chan struct{}
	done    chan connCounts
}

// connCounts is what a connSampler saw.
type connCounts struct {
	samples []int
	// opened is the number of sessions the database's server started
	// (pg_stat_database.sessions, PostgreSQL 14 and later; a few may be
	// reported late); -1 unknown.
	opened int64
}

func sampleConns(pg *pgtest.Server, database string) *connSampler {
	s := &connSampler{stopped: make(chan struct{}), done: make(chan connCounts, 1)}
	go func() {
		c := connCounts{opened: -1}
		ctx := context.Background()
		conn, err := pgx.Connect(ctx, pg.URL("postgres"))
		if err != nil {
			progress("pg_stat_activity: %v", err)
			<-s.stopped
			s.done <- c
			return
		}
		defer conn.Close(ctx)
		sessions := func() int64 {
			var n int64 = -1
			conn.QueryRow(ctx, `SELECT sessions FROM pg_stat_database WHERE datname = $1`, database).Scan(&n)
			return n
		}
		before := sessions()
		tick := time.NewTicker(200 * time.Millisecond)
		defer tick.Stop()
		for {
			var n int
			if err := conn.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE datname = $1`, database).Scan(&n); err == nil {
				c.samples = append(c.samples, n)
			}
			select {
			case <-tick.C:
			case <-s.stopped:
				// A backend reports its statistics within a second
				// of a transaction's end (and at its exit).
				time.Sleep(time.Second)
				if after := sessions(); before >= 0 && after >= 0 {
					c.opened = after - before
				}
				s.done <- c
				return
			}
		}
	}()
	return s
}

func (s *connSampler) stop() connCounts {
	close(s.stopped)
	return <-s.done
}

// figure is the samples' median and range, and the sessions opened (per
// call, when calls is not 0).
func (c connCounts) figure(calls int) string {
	if len(c.samples) == 0 {
		return "PostgreSQL connections not sampled"
	}
	sorted := slices.Sorted(slices.Values(c.samples))
	out := fmt.Sprintf("PostgreSQL connections of the hub's database, every 200 ms: median %d, min %d, max %d (%d samples)",
		sorted[len(sorted)/2], sorted[0], sorted[len(sorted)-1], len(sorted))
	if c.opened >= 0 {
		out += fmt.Sprintf("; %d sessions opened", c.opened)
		if calls > 0 {
			out += fmt.Sprintf(" (%.2f a call)", float64(c.opened)/float64(calls))
		}
	}
	return out
}

// cpuWatch is the CPU time of the hubs, of PostgreSQL and of this
// process (the members' clients) since it started.
type cpuWatch struct {
	pg      *pgtest.Server
	hubs    []*hubProc
	hubCPU  time.Duration
	pgCPU   time.Duration
	selfCPU time.Duration
}

func startCPU(pg *pgtest.Server, hubs []*hubProc) *cpuWatch {
	c := &cpuWatch{pg: pg, hubs: hubs}
	c.hubCPU, c.pgCPU, c.selfCPU = c.read()
	return c
}

func (c *cpuWatch) read() (hubs, pg, self time.Duration) {
	for _, h := range c.hubs {
		d, _ := cpuOf(h.cmd.Process.Pid)
		hubs += d
	}
	if c.pg != nil {
		pg = postgresCPU(c.pg)
	}
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) == nil {
		self = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	return hubs, pg, self
}

// cpuUsed is what a cpuWatch counted.
type cpuUsed struct {
	hubs, pg, self time.Duration
	hasPG          bool
}

func (c *cpuWatch) stop() cpuUsed {
	h, p, s := c.read()
	return cpuUsed{h - c.hubCPU, p - c.pgCPU, s - c.selfCPU, c.pg != nil}
}

func (u cpuUsed) perCall(calls int) string {
	if calls == 0 {
		return "no calls"
	}
	n := time.Duration(calls)
	if !u.hasPG {
		return fmt.Sprintf("hub %s, clients %s", ms(u.hubs/n), ms(u.self/n))
	}
	return fmt.Sprintf("hub %s, PostgreSQL %s, clients %s", ms(u.hubs/n), ms(u.pg/n), ms(u.self/n))
}

func (u cpuUsed) total() string {
	return fmt.Sprintf("hub %.1f s, PostgreSQL %.1f s, clients %.1f s", u.hubs.Seconds(), u.pg.Seconds(), u.self.Seconds())
}

// postgresCPU is the CPU time of the server's processes so far: the
// postmaster's own and its ended children's (which it has reaped), and
// each running child's.
func postgresCPU(pg *pgtest.Server) time.Duration {
	data, err := os.ReadFile(filepath.Join(pg.Dir(), "data", "postmaster.pid"))
	if err != nil {
		return 0
	}
	first, _, _ := strings.Cut(string(data), "\n")
	pid, err := strconv.ParseInt(strings.TrimSpace(first), 10, 64)
	if err != nil {
		return 0
	}
	f := statFields(int(pid))
	total := f.ticks(statUtime, statStime, statCutime, statCstime)
	procs, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, p := range procs {
		child, err := strconv.Atoi(filepath.Base(filepath.Dir(p)))
		if err != nil {
			continue
		}
		if f := statFields(child); f.int(statParent) == pid {
			total += f.ticks(statUtime, statStime)
		}
	}
	return total
}

// Fields of /proc/PID/stat, counted after the command name.
const (
	statParent = 1
	statUtime  = 11
	statStime  = 12
	statCutime = 13
	statCstime = 14
)

// procStat is a process's /proc stat line after its command name (which
// is in parentheses and may hold spaces); empty when the process is gone.
type procStat []string

func statFields(pid int) procStat {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return nil
	}
	return strings.Fields(string(data[strings.LastIndexByte(string(data), ')')+1:]))
}

func (f procStat) int(i int) int64 {
	if i >= len(f) {
		return -1
	}
	v, _ := strconv.ParseInt(f[i], 10, 64)
	return v
}

// ticks sums fields counted in clock ticks (10 ms on Linux).
func (f procStat) ticks(fields ...int) time.Duration {
	var sum int64
	for _, i := range fields {
		sum += max(0, f.int(i))
	}
	return time.Duration(sum) * 10 * time.Millisecond
}

func clip(texts []string, n int) []string {
	out := make([]string, len(texts))
	for i, t := range texts {
		if len(t) > n {
			t = strings.ToValidUTF8(t[:n], "") + "…"
		}
		out[i] = t
	}
	return out
}

func lastLines(text string, n int) string {
	lines := strings.Split(strings.TrimRight(text, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// membersFlag is -scale-members: team sizes, comma-separated.
type membersFlag []int

func (m *membersFlag) String() string {
	var parts []string
	for _, n := range *m {
		parts = append(parts, strconv.Itoa(n))
	}
	return strings.Join(parts, ",")
}

func (m *membersFlag) Set(v string) error {
	*m = nil
	for _, part := range strings.Split(v, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(part))
		if err != nil || n < 2 {
			return fmt.Errorf("team sizes are numbers of 2 or more, comma-separated: %q", part)
		}
		*m = append(*m, n)
	}
	return nil
}

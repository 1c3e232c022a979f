// Package pgtest gives tests a real PostgreSQL: a throwaway server started
// from the machine's own binaries in a temporary folder, listening on a
// unix socket only (no TCP port), with fsync off, and a fresh database for
// each test. One server serves a whole test binary; Main stops it.
//
// A machine without PostgreSQL skips those tests with a line saying so,
// unless MCPP_CHAT_PG_REQUIRE=1 (CI sets it), which makes them fail.
package pgtest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// RequireEnv names the variable that turns a missing PostgreSQL from a
// skip into a failure.
const RequireEnv = "MCPP_CHAT_PG_REQUIRE"

// startTimeout bounds initdb and the server's start: both take about a
// second here, more on a loaded machine.
const startTimeout = 60 * time.Second

var (
	shared     *Server
	sharedErr  error
	sharedOnce sync.Once
	databases  atomic.Int64
)

// Main runs the package's tests and then stops the shared server, if one
// was started. Call it from TestMain: os.Exit(pgtest.Main(m)).
func Main(m *testing.M) int {
	code := m.Run()
	if shared != nil {
		if err := shared.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "pgtest:", err)
		}
	}
	return code
}

// URL returns the URL of a new, empty database on the shared server, for
// this test alone. It skips the test under -short, and (or fails it,
// under RequireEnv) when the machine has no PostgreSQL.
func URL(t testing.TB) string {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: the PostgreSQL suite runs in the full tier (make test)")
	}
	sharedOnce.Do(func() {
		dir, err := os.MkdirTemp("", "pgtest.")
		if err != nil {
			sharedErr = err
			return
		}
		shared, sharedErr = Start(dir)
		if sharedErr != nil {
			os.RemoveAll(dir)
		}
	})
	if errors.Is(sharedErr, ErrNotInstalled) && os.Getenv(RequireEnv) != "1" {
		t.Skipf("PostgreSQL suite not run: %v", sharedErr)
	}
	if sharedErr != nil {
		t.Fatalf("start a PostgreSQL server: %v", sharedErr)
	}
	name := fmt.Sprintf("t%d_%d", os.Getpid(), databases.Add(1))
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	if err := shared.exec(ctx, "CREATE DATABASE "+name); err != nil {
		t.Fatalf("create database %s: %v", name, err)
	}
	return shared.URL(name)
}

// PasswordURL returns the URL of a new, empty database on the shared
// server and of a new role that owns it and must give password to connect
// (scram-sha-256; every other role is still trusted). The URL carries no
// password: the test adds the right or a wrong one (&password=…).
func PasswordURL(t testing.TB, password string) string {
	t.Helper()
	u := URL(t)
	name := fmt.Sprintf("r%d_%d", os.Getpid(), databases.Add(1))
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	db := u[len("postgres:///"):strings.Index(u, "?")]
	for _, sql := range []string{
		fmt.Sprintf("CREATE ROLE %s LOGIN PASSWORD '%s'", name, password),
		fmt.Sprintf("ALTER DATABASE %s OWNER TO %s", db, name),
	} {
		if err := shared.exec(ctx, sql); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	if err := shared.requirePassword(ctx, name); err != nil {
		t.Fatal(err)
	}
	return strings.Replace(u, "user=postgres", "user="+name, 1)
}

// requirePassword puts a line asking role for its password first in the
// server's pg_hba.conf and waits until the server has read it.
func (s *Server) requirePassword(ctx context.Context, role string) error {
	hba := filepath.Join(s.dir, "data", "pg_hba.conf")
	rules, err := os.ReadFile(hba)
	if err != nil {
		return err
	}
	line := fmt.Sprintf("local all %s scram-sha-256\n", role)
	if err := os.WriteFile(hba, append([]byte(line), rules...), 0o600); err != nil {
		return err
	}
	if err := s.exec(ctx, "SELECT pg_reload_conf()"); err != nil {
		return err
	}
	for { // the reload is the postmaster's, a moment later
		conn, err := pgx.Connect(ctx, strings.Replace(s.URL("postgres"), "user=postgres", "user="+role, 1))
		if err != nil {
			return nil
		}
		conn.Close(ctx)
		select {
		case <-ctx.Done():
			return fmt.Errorf("the server still lets %s in without a password: %w", role, ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// Own starts a server for this test alone — one it may restart without
// cutting the other tests' connections — and stops it when the test ends.
// Like URL, it skips (or fails, under RequireEnv) without PostgreSQL.
func Own(t testing.TB) *Server {
	t.Helper()
	URL(t)
	// Not t.TempDir: as root the server runs as postgres, which cannot
	// enter the test's private temporary folder.
	dir, err := os.MkdirTemp("", "pgtest.")
	if err != nil {
		t.Fatal(err)
	}
	s, err := Start(dir)
	if err != nil {
		os.RemoveAll(dir)
		t.Fatalf("start a PostgreSQL server: %v", err)
	}
	t.Cleanup(func() { s.Stop() })
	return s
}

// ErrNotInstalled reports that no PostgreSQL server binaries were found.
var ErrNotInstalled = errors.New("no PostgreSQL server binaries (initdb, postgres) in /usr/lib/postgresql/*/bin or on PATH — install Debian's postgresql package (.ci/run does)")

// Server is a running throwaway PostgreSQL.
type Server struct {
	dir  string // holds data/, the socket and the server's log
	bin  string
	cred *syscall.Credential // nil unless run as root
	cmd  *exec.Cmd
	done chan struct{} // closed when the server has exited
}

// Start initialises a cluster in dir and starts a server on a unix socket
// in dir. As root it runs them as the postgres user, which initdb insists
// on. The server dies with the process that started it.
func Start(dir string) (*Server, error) {
	bin, err := binDir()
	if err != nil {
		return nil, err
	}
	cred, err := runAs(dir)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	initdb := exec.CommandContext(ctx, filepath.Join(bin, "initdb"), "-D", filepath.Join(dir, "data"),
		"-A", "trust", "-U", "postgres", "-E", "UTF8", "--no-sync")
	initdb.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	if out, err := initdb.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("initdb: %w\n%s", err, out)
	}
	return serve(bin, dir, cred)
}

// serve starts a server on the cluster in dir and waits until it answers.
func serve(bin, dir string, cred *syscall.Credential) (*Server, error) {
	logFile, err := os.OpenFile(filepath.Join(dir, "server.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	defer logFile.Close()
	cmd := exec.Command(filepath.Join(bin, "postgres"), "-D", filepath.Join(dir, "data"),
		"-k", dir, "-c", "listen_addresses=", "-c", "fsync=off", "-c", "synchronous_commit=off",
		"-c", "full_page_writes=off", "-c", "max_connections=200")
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start postgres: %w", err)
	}
	s := &Server{dir: dir, bin: bin, cred: cred, cmd: cmd, done: make(chan struct{})}
	go func() { cmd.Wait(); close(s.done) }()
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	if err := s.awaitReady(ctx); err != nil {
		s.Stop()
		return nil, err
	}
	return s, nil
}

// awaitReady waits until the server accepts a connection.
func (s *Server) awaitReady(ctx context.Context) error {
	for {
		err := s.exec(ctx, "SELECT 1")
		if err == nil {
			return nil
		}
		select {
		case <-s.done:
			log, _ := os.ReadFile(filepath.Join(s.dir, "server.log"))
			return fmt.Errorf("postgres exited while starting:\n%s", log)
		case <-ctx.Done():
			return fmt.Errorf("postgres did not accept connections within %v: %w", startTimeout, err)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// URL is the URL of database name on this server, through its socket.
func (s *Server) URL(name string) string {
	return "postgres:///" + name + "?host=" + s.dir + "&user=postgres&sslmode=disable"
}

// Dir is the folder of the server's socket, data and log.
func (s *Server) Dir() string { return s.dir }

func (s *Server) exec(ctx context.Context, sql string) error {
	conn, err := pgx.Connect(ctx, s.URL("postgres"))
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, sql)
	return err
}

// Restart stops the server the fast way (as pg_ctl restart -m fast does:
// every connection is cut) and starts it again on the same data.
func (s *Server) Restart() error {
	if err := s.stop(); err != nil {
		return err
	}
	again, err := serve(s.bin, s.dir, s.cred)
	if err != nil {
		return err
	}
	*s = *again
	return nil
}

// Stop shuts the server down (fast: open connections are cut) and removes
// its folder.
func (s *Server) Stop() error {
	err := s.stop()
	if rmErr := os.RemoveAll(s.dir); err == nil {
		err = rmErr
	}
	return err
}

func (s *Server) stop() error {
	s.cmd.Process.Signal(syscall.SIGINT)
	select {
	case <-s.done:
		return nil
	case <-time.After(startTimeout):
		s.cmd.Process.Kill()
		<-s.done
		return errors.New("postgres did not stop within a minute of SIGINT; killed")
	}
}

// binDir finds the server binaries: Debian keeps them out of PATH, in
// /usr/lib/postgresql/VERSION/bin (the newest is taken).
func binDir() (string, error) {
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(dirs, func(i, j int) bool { return version(dirs[i]) > version(dirs[j]) })
	for _, d := range dirs {
		if isFile(filepath.Join(d, "initdb")) && isFile(filepath.Join(d, "postgres")) {
			return d, nil
		}
	}
	if p, err := exec.LookPath("initdb"); err == nil {
		d := filepath.Dir(p)
		if isFile(filepath.Join(d, "postgres")) {
			return d, nil
		}
	}
	return "", ErrNotInstalled
}

func version(binDir string) int {
	n, _ := strconv.Atoi(filepath.Base(filepath.Dir(binDir)))
	return n
}

func isFile(path string) bool {
	info, err := os.Stat(path)
	return err == nil && info.Mode().IsRegular()
}

// runAs is the postgres user's credential when running as root (initdb
// refuses root), after handing dir to it; nil otherwise.
func runAs(dir string) (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		return nil, fmt.Errorf("running as root, PostgreSQL needs the postgres user to run as: %w", err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	if err := os.Chown(dir, uid, gid); err != nil {
		return nil, err
	}
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
}

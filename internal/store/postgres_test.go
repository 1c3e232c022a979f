package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	_ "github.com/jackc/pgx/v5/stdlib"
	"github.com/mcpp/mcpp-chat/internal/pgtest"

	"time"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// The two engines must answer every query alike, so their tables have the
// same columns in the same order, with the same nullability, defaults and
// kinds, and the same indexes.
func TestPostgresSchemaMatchesSQLite(t *testing.T) {
	t.Parallel()
	store, _ := openPGStore(t)
	pg := rawSQL(store)
	lite, err := Open(context.Background(), filepath.Join(t.TempDir(), "chat.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer lite.Close()
	liteSQL, err := sql.Open("sqlite3", "file:"+lite.Path()+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer liteSQL.Close()
	want := sqliteColumns(t, liteSQL)
	got := postgresColumns(t, pg)
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("columns differ\nPostgreSQL:\n%s\nSQLite:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if g, w := postgresIndexes(t, pg), sqliteIndexes(t, liteSQL); g != w {
		t.Errorf("indexes differ\nPostgreSQL: %s\nSQLite:     %s", g, w)
	}
	var version int
	if err := pg.QueryRow(`SELECT version FROM schema_version`).Scan(&version); err != nil || version != SchemaVersion() {
		t.Errorf("schema_version = %d (%v), want %d", version, err, SchemaVersion())
	}
}

// kind folds each engine's type names onto the two the schema uses.
func kind(declared string) string {
	switch strings.ToLower(declared) {
	case "integer", "bigint":
		return "integer"
	case "text":
		return "text"
	}
	return "?" + declared
}

func sqliteColumns(t *testing.T, db *sql.DB) []string {
	var out []string
	for _, table := range chatTables {
		rows, err := db.Query(fmt.Sprintf(`SELECT name, type, "notnull", coalesce(dflt_value, ''), pk FROM pragma_table_info('%s') ORDER BY cid`, table))
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var name, typ, dflt string
			var notNull, pk int
			if err := rows.Scan(&name, &typ, &notNull, &dflt, &pk); err != nil {
				t.Fatal(err)
			}
			out = append(out, fmt.Sprintf("%s.%s %s notnull=%v default=%q", table, name, kind(typ), notNull == 1 || pk > 0, dflt))
		}
		rows.Close()
	}
	return out
}

func postgresColumns(t *testing.T, db *sql.DB) []string {
	var out []string
	for _, table := range chatTables {
		rows, err := db.Query(`SELECT column_name, data_type, is_nullable, coalesce(column_default, '')
			FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = $1 ORDER BY ordinal_position`, table)
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var name, typ, nullable, dflt string
			if err := rows.Scan(&name, &typ, &nullable, &dflt); err != nil {
				t.Fatal(err)
			}
			if name == "rowid" {
				continue // SQLite's implicit rowid, a column on PostgreSQL
			}
			dflt = strings.TrimSuffix(dflt, "::text")
			out = append(out, fmt.Sprintf("%s.%s %s notnull=%v default=%q", table, name, kind(typ), nullable == "NO", dflt))
		}
		rows.Close()
	}
	return out
}

var chatTables = []string{"parties", "channels", "channel_parties", "messages", "item_consumers", "cursors", "schema_version",
	"told", "idempotency_keys", "claims", "claim_waiters"}

func sqliteIndexes(t *testing.T, db *sql.DB) string {
	return names(t, db, `SELECT name FROM sqlite_master WHERE type = 'index' AND name LIKE 'idx_%' ORDER BY name`)
}

func postgresIndexes(t *testing.T, db *sql.DB) string {
	// idx_messages_search is PostgreSQL's full-text index; SQLite's is a
	// file of its own beside the database.
	return names(t, db, `SELECT indexname FROM pg_indexes WHERE schemaname = current_schema() AND indexname LIKE 'idx_%'
		AND indexname <> 'idx_messages_search' ORDER BY indexname`)
}

func names(t *testing.T, db *sql.DB, query string) string {
	rows, err := db.Query(query)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var n string
		rows.Scan(&n)
		out = append(out, n)
	}
	return strings.Join(out, " ")
}

// A database the Python edition wrote, copied into a team store: every row
// of every table arrives as it was, new rows get new ids, and a second copy
// into the now non-empty store is refused without writing.
func TestCopyToPostgres(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	src := filepath.Join(t.TempDir(), "chat.db")
	data, err := os.ReadFile("../../tools/testdata/python-edition/reference-v1.db")
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(src, data, 0o600)
	from, err := OpenReadOnly(ctx, src)
	if err != nil {
		t.Fatal(err)
	}
	defer from.Close()
	to, _ := openPGStore(t)
	copied, err := CopyTo(ctx, from, to)
	if err != nil {
		t.Fatal(err)
	}
	if copied.Rows["messages"] == 0 || copied.Rows["parties"] == 0 || copied.Rows["item_consumers"] == 0 || copied.Replaced != 0 {
		t.Fatalf("copied %v", copied)
	}
	lite, err := sql.Open("sqlite3", "file:"+src+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer lite.Close()
	for _, table := range []struct{ name, columns string }{ // every column of the chat's tables
		{"parties", "id, name, workspace_path, os_user, about, first_seen, last_seen"},
		{"channels", "id, name, about, created_by, created_at, is_closed"},
		{"channel_parties", "channel_id, party_id, joined_at, left_at, rowid"},
		{"messages", "id, channel_id, seq, kind, parent_id, slug, title, body, ref, author_id, status, is_archived, created_at, updated_at"},
		{"item_consumers", "message_id, party_id, acked_at, prune_ok_at, rowid"},
		{"cursors", "channel_id, party_id, last_seq, updated_at"},
	} {
		q := `SELECT ` + table.columns + ` FROM ` + table.name + ` ORDER BY 1, 2`
		if got, want := rowsDigest(t, rawSQL(to), q), rowsDigest(t, lite, q); got != want {
			t.Errorf("%s differs after the copy:\n%s\nwant\n%s", table.name, got, want)
		}
	}
	// New rows after the copy: a new party, a new channel, a new message.
	newcomer := Identity{Name: "newcomer", Workspace: "/srv/newcomer"}
	if _, err := to.ChannelNew(ctx, newcomer, "after-copy", "", []string{"mesh-gw"}); err != nil {
		t.Fatalf("a new channel after the copy: %v", err)
	}
	if _, err := to.Say(ctx, Identity{Name: "mesh-gw", Workspace: "/srv/projects/mesh-gw"}, SayArgs{Channel: "gw--dash", Text: "after the copy"}); err != nil {
		t.Fatalf("a write after the copy: %v", err)
	}
	before := rowsDigest(t, rawSQL(to), `SELECT id, name FROM parties ORDER BY id`)
	if _, err := CopyTo(ctx, from, to); err == nil || !strings.Contains(err.Error(), "only into an empty store") {
		t.Errorf("a second copy: %v, want a refusal", err)
	}
	if rowsDigest(t, rawSQL(to), `SELECT id, name FROM parties ORDER BY id`) != before {
		t.Error("the refused copy wrote")
	}
}

func openPGStore(t *testing.T) (*DB, string) {
	t.Helper()
	u := pgtest.URL(t)
	db, err := OpenPostgres(context.Background(), u, Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db, u
}

// rowsDigest is every row of a query as text, one line each.
func rowsDigest(t *testing.T, db *sql.DB, query string) string {
	t.Helper()
	rows, err := db.Query(query)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	cols, _ := rows.Columns()
	var b strings.Builder
	for rows.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			t.Fatal(err)
		}
		for i, v := range vals {
			if b, ok := v.([]byte); ok {
				vals[i] = string(b)
			}
		}
		fmt.Fprintf(&b, "%v\n", vals)
	}
	return b.String()
}

// The archive's two gates on PostgreSQL: two consumers' prune-oks commit
// side by side from two processes' handles; the last one must archive the
// item (without the write lock, each saw the other's prune-ok missing and
// neither archived).
func TestPostgresConcurrentPruneOKsArchive(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	a, u := openPGStore(t)
	b, err := OpenPostgres(ctx, u, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	for _, id := range []Identity{gw, dash, fw} {
		must(t)(b.Register(ctx, id))
	}
	must(t)(a.ChannelNew(ctx, gw, "skew", "", []string{"node-dash", "fw-core"}))
	for round := range 20 {
		item := fmt.Sprintf("q%d", round)
		must(t)(a.Ask(ctx, gw, AskArgs{Channel: "skew", Title: "Question", Body: "b", Slug: item, Consumers: []string{"node-dash", "fw-core"}}))
		must(t)(b.Ack(ctx, dash, item, "", ""))
		must(t)(b.Ack(ctx, fw, item, "", ""))
		must(t)(a.Resolve(ctx, gw, item, "done", true, ""))
		must(t)(a.PruneOK(ctx, gw, item, ""))
		var wg sync.WaitGroup
		for _, p := range []struct {
			db *DB
			id Identity
		}{{a, dash}, {b, fw}} {
			wg.Go(func() {
				if _, err := p.db.PruneOK(ctx, p.id, item, ""); err != nil {
					t.Error(err)
				}
			})
		}
		wg.Wait()
		var archived int
		if err := rawSQL(a).QueryRow(`SELECT is_archived FROM messages WHERE slug = $1`, item).Scan(&archived); err != nil || archived != 1 {
			t.Fatalf("round %d: after both prune-oks is_archived = %d (%v), want 1", round, archived, err)
		}
	}
}

// The server closes a connection the handle's pool keeps (as a restart
// does to all of them): the next call, which the pool hands that
// connection, runs again on a new one instead of failing.
func TestPostgresCallSurvivesAClosedPooledConnection(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, u := openPGStore(t)
	must(t)(db.ChannelNew(ctx, gw, "solo", "", nil))
	r := openRO(t, u)
	admin, err := sql.Open("pgx", u)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	for round := range 5 {
		if _, err := admin.Exec(`SELECT pg_terminate_backend(pid) FROM pg_stat_activity
			WHERE datname = current_database() AND pid <> pg_backend_pid() AND backend_type = 'client backend'`); err != nil {
			t.Fatal(err)
		}
		if _, err := db.Say(ctx, gw, SayArgs{Channel: "solo", Text: fmt.Sprint("after a cut ", round)}); err != nil {
			t.Fatalf("round %d: a write after the server closed the connection: %v", round, err)
		}
		if _, err := r.Version(ctx); err != nil {
			t.Fatalf("round %d: a read after the server closed the connection: %v", round, err)
		}
	}
}

// pgSeqScan matches a plan line that walks a whole table that grows with
// the history. (Cursors grow with seats, not history; the seed has twenty,
// which PostgreSQL rightly scans; the SQLite plan test covers their index.)
var pgSeqScan = regexp.MustCompile(`Seq Scan on (messages|item_consumers)\b`)

// On a team store too, every statement a call runs reaches the growing
// tables through an index. Each is planned as PostgreSQL plans a statement
// it reuses (the generic plan, whatever the values) with sequential scans
// priced out, so a scan that remains is one no index can replace.
func TestPostgresEveryCallQueryUsesAnIndex(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, _ := openPGStore(t) // first: it skips under -short, before the seed's seconds
	spec := smallSeed
	spec.History = 20000 // enough rows that a scan costs more than an index
	lite, report := seeded(t, spec)
	if _, err := CopyTo(ctx, openRO(t, lite.Path()), db); err != nil {
		t.Fatal(err)
	}
	queries := exerciseEveryCall(t, db, report)
	conn, err := rawSQL(db).Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	for _, set := range []string{`ANALYZE`, `SET plan_cache_mode = force_generic_plan`} {
		if _, err := conn.ExecContext(ctx, set); err != nil {
			t.Fatal(err)
		}
	}
	planned := 0
	for i, q := range queries {
		name := fmt.Sprintf("q%d", i)
		if _, err := conn.ExecContext(ctx, "PREPARE "+name+" AS "+q); err != nil {
			continue // a statement whose parameter types only its values tell
		}
		params := make([]string, maxParam(q))
		for j := range params {
			params[j] = "NULL"
		}
		explain := "EXPLAIN EXECUTE " + name
		if len(params) > 0 {
			explain += "(" + strings.Join(params, ", ") + ")"
		}
		plan := strings.Join(rowsOf(t, conn, explain), "\n")
		planned++
		if pgSeqScan.MatchString(plan) {
			t.Errorf("a call scans a growing table:\n%s\nplan:\n%s", strings.TrimSpace(q), plan)
		}
	}
	if planned < 30 {
		t.Fatalf("only %d of %d statements planned", planned, len(queries))
	}
}

// maxParam is the highest $N a query uses.
func maxParam(q string) int {
	n := 0
	for _, m := range regexp.MustCompile(`\$(\d+)`).FindAllStringSubmatch(q, -1) {
		var k int
		fmt.Sscan(m[1], &k)
		n = max(n, k)
	}
	return n
}

func rowsOf(t *testing.T, conn *sql.Conn, query string) []string {
	t.Helper()
	rows, err := conn.QueryContext(context.Background(), query)
	if err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		rows.Scan(&s)
		out = append(out, s)
	}
	return out
}

// migrate's copy leaves no table of the chat behind: a database that has
// a row in each of its tables arrives with every column of every row as it
// was, and a table a later schema adds fails here until the copy knows it.
func TestCopyToPostgresKeepsEveryTable(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	src := filepath.Join(t.TempDir(), "chat.db")
	clock := newFakeClock(time.Now().UTC())
	db, err := OpenWith(ctx, src, Options{Clock: clock.now})
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []Identity{gw, dash, fw} {
		must(t)(db.Register(ctx, id))
	}
	must(t)(db.ChannelNew(ctx, gw, "gw--dash", "", []string{"node-dash", "fw-core"}))
	must(t)(db.ChannelJoinWith(ctx, fw, "gw--dash", "mentions"))
	must(t)(db.Ask(ctx, gw, AskArgs{Title: "enum", Body: "b", Slug: "enum", Due: "10m"}))
	clock.advance(11 * time.Minute)
	if fired := advance(t, db); len(fired) != 1 {
		t.Fatalf("fired %+v", fired)
	}
	said := must2[SayResult](t)(db.Say(WithChain(ctx, Chain{ID: "c1", Hop: 1}), gw, SayArgs{Channel: "gw--dash", Text: "@fw-core look"}))
	must(t)(db.RecordTold(ctx, fw, []Telling{{Channel: "gw--dash", Seq: said.Seq, At: Now(), Via: ViaWake}}))
	if _, _, err := sayOnce(t, db, dash, "k1", "h1", "once"); err != nil {
		t.Fatal(err)
	}
	claimOK(t, db, dash, claimArgs("env:staging", "deploying"))
	if res := must2[ClaimResult](t)(db.Claim(ctx, fw, claimArgs("env:staging", "me too"))); res.Granted {
		t.Fatal("a second exclusive claim was granted")
	}
	db.Close()

	lite, err := sql.Open("sqlite3", "file:"+src+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer lite.Close()
	tables := strings.Fields(names(t, lite, `SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' AND name <> 'schema_version' ORDER BY name`))
	to, _ := openPGStore(t)
	copied, err := CopyTo(ctx, openRO(t, src), to)
	if err != nil {
		t.Fatal(err)
	}
	for _, table := range tables {
		columns := strings.Join(strings.Fields(names(t, lite, `SELECT name FROM pragma_table_info('`+table+`') ORDER BY cid`)), ", ")
		q := `SELECT ` + columns + ` FROM ` + table + ` ORDER BY 1, 2`
		want := rowsDigest(t, lite, q)
		if want == "" {
			t.Errorf("the source has no row in %s: give this test one, so that its copy is checked", table)
			continue
		}
		if got := rowsDigest(t, rawSQL(to), q); got != want {
			t.Errorf("%s differs after the copy (%d copied):\n%s\nwant\n%s", table, copied.Rows[table], got, want)
		}
	}
	// The copied claim's id is behind the store's next one.
	claimOK(t, to, fw, claimArgs("env:prod", "after the copy"))
}

// A team that moves its SQLite hub's chat to PostgreSQL keeps its tokens:
// each member's token works on the team store, a revoked one stays
// revoked, a token the store's hub issued before the copy stays, and the
// copy of a database beside which no hub ran makes no token file.
func TestCopyToPostgresCarriesTheHubsTokens(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	src := filepath.Join(t.TempDir(), "chat.db")
	db, err := Open(ctx, src)
	if err != nil {
		t.Fatal(err)
	}
	must(t)(db.Register(ctx, gw))
	lite, err := db.Tokens(ctx)
	if err != nil {
		t.Fatal(err)
	}
	member, _, err := lite.Issue(ctx, []string{"mesh-gw"}, "gw-laptop", time.Hour)
	if err == nil {
		_, _, err = lite.Issue(ctx, []string{"node-dash"}, "dash-old", time.Hour)
	}
	if err == nil {
		_, err = lite.Revoke(ctx, "dash-old")
	}
	lite.Close()
	db.Close()
	if err != nil {
		t.Fatal(err)
	}

	to, _ := openPGStore(t)
	toks, err := to.Tokens(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer toks.Close()
	earlier, _, err := toks.Issue(ctx, []string{"fw-core"}, "fw", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	copied, err := CopyTo(ctx, openRO(t, src), to)
	if err != nil {
		t.Fatal(err)
	}
	if copied.Tokens != 2 || !strings.HasSuffix(copied.String(), ", 2 hub tokens") {
		t.Errorf("copied %d tokens (%s), want 2", copied.Tokens, copied)
	}
	if tok, err := toks.Verify(ctx, member); err != nil || tok.Label != "gw-laptop" || !slices.Equal(tok.Parties, []string{"mesh-gw"}) {
		t.Errorf("the member's token on the team store: %+v, %v", tok, err)
	}
	if _, err := toks.Verify(ctx, earlier); err != nil {
		t.Errorf("the token issued on the team store before the copy: %v", err)
	}
	all, err := toks.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	revoked := 0
	for _, tok := range all {
		if tok.Label == "dash-old" && !tok.Revoked.IsZero() {
			revoked++
		}
	}
	if len(all) != 3 || revoked != 1 {
		t.Errorf("the team store's tokens: %+v, want 3 with dash-old revoked", all)
	}

	bare := filepath.Join(t.TempDir(), "chat.db")
	db, err = Open(ctx, bare)
	if err != nil {
		t.Fatal(err)
	}
	must(t)(db.Register(ctx, gw))
	db.Close()
	to2, _ := openPGStore(t)
	if copied, err := CopyTo(ctx, openRO(t, bare), to2); err != nil || copied.Tokens != 0 {
		t.Fatalf("copy without a hub: %v, %d tokens", err, copied.Tokens)
	}
	if _, err := os.Lstat(bare + ".hub"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the copy made %s.hub: %v", bare, err)
	}
}

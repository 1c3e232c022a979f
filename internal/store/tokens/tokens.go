// Package tokens holds a team hub's credentials over database/sql, in the
// place an engine keeps them beside the chat (engine.TokenStore).
package tokens

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"database/sql"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/mcpp/mcpp-chat/internal/store/engine"
)

// Tokens are a team hub's credentials: each is bound to one or more
// parties, expires, and can be revoked. Only a hash of the secret is kept.
// They live outside the chat's versioned schema, which is the Python
// edition's too: on PostgreSQL in the table hub_tokens, on SQLite in the
// owner-only file <db>.hub beside the database.
//
// A token is checked against the store on every request, so a revoke
// holds on every hub at once, with no cache to invalidate.
type Tokens struct {
	sql     *sql.DB
	release func() error
	rewrite func(string) string
	clock   func() time.Time
}

// Token is one credential as the hub's admin sees it: never its secret.
type Token struct {
	ID      string
	Label   string
	Parties []string
	Created time.Time
	Expires time.Time
	// Revoked is the zero time for a token that was not revoked.
	Revoked time.Time
}

// MaxTokenTTL is the longest a token may live: ten years, which no
// credential needs, far inside what the store's times can hold.
const MaxTokenTTL = 3650 * 24 * time.Hour

// TokenPrefix starts every token, so that a secret scanner (and a person)
// can tell what it is.
const TokenPrefix = "mcc_"

// The reasons a token is refused. The texts never hold the token.
var (
	ErrTokenUnknown = errors.New("the token is not one this hub issued — ask the hub's admin for one (mcpp-chat hub token issue)")
	ErrTokenExpired = errors.New("the token has expired — ask the hub's admin for a new one (mcpp-chat hub token issue)")
	ErrTokenRevoked = errors.New("the token was revoked — ask the hub's admin for a new one (mcpp-chat hub token issue)")
)

// Schema makes the tokens' table where it is missing, on both engines.
const Schema = `CREATE TABLE IF NOT EXISTS hub_tokens (
	id TEXT PRIMARY KEY,
	secret_sha256 TEXT NOT NULL,
	parties TEXT NOT NULL,
	label TEXT NOT NULL,
	created_at TEXT NOT NULL,
	expires_at TEXT NOT NULL,
	revoked_at TEXT
)`

// Place is where the tokens live, as an engine gives it
// (engine.TokenStore): the handle, the rewrite of this package's SQL
// (SQLite's dialect) into the engine's (nil: as written), what Close
// calls, and how the engine explains its driver's errors.
type Place struct {
	DB       *sql.DB
	Rewrite  func(string) string
	Release  func() error
	Describe func(error) error
}

// Open opens the tokens in place, making their table if it is missing.
func Open(ctx context.Context, place Place, clock func() time.Time) (*Tokens, error) {
	t := &Tokens{sql: place.DB, rewrite: place.Rewrite, release: place.Release, clock: clock}
	if t.rewrite == nil {
		t.rewrite = func(q string) string { return q }
	}
	if err := t.makeTable(ctx); err != nil {
		t.Close()
		if place.Describe != nil {
			err = place.Describe(err)
		}
		return nil, fmt.Errorf("make the hub's token table: %w", err)
	}
	return t, nil
}

// makeTable creates the table if it is missing. Two hubs starting
// together on PostgreSQL may both try; the one that loses the race on the
// catalog fails, and finds the table the other made.
func (t *Tokens) makeTable(ctx context.Context) error {
	_, err := t.sql.ExecContext(ctx, Schema)
	if err == nil {
		return nil
	}
	if _, again := t.sql.ExecContext(ctx, `SELECT 1 FROM hub_tokens LIMIT 0`); again == nil {
		return nil
	}
	return err
}

// Close gives the place back (a SQLite hub closes its token file).
func (t *Tokens) Close() error {
	if t.release != nil {
		return t.release()
	}
	return nil
}

// Issue makes a token for parties, valid for ttl, and returns its secret
// text: the only time it exists outside the holder's hands.
func (t *Tokens) Issue(ctx context.Context, parties []string, label string, ttl time.Duration) (string, Token, error) {
	if len(parties) == 0 {
		return "", Token{}, engine.UserErrorf("a token needs a party: give --party NAME (the repository's party name)")
	}
	if ttl <= 0 || ttl > MaxTokenTTL {
		return "", Token{}, engine.UserErrorf("a token needs a lifetime of at most 3650d (ten years): give --ttl, e.g. 90d or 12h")
	}
	if !utf8.ValidString(label) { // as a folder (Identity.check): one rule on both engines
		return "", Token{}, engine.UserErrorf("the label %q is not UTF-8 text, which the store cannot hold — give one that is, e.g. alice-laptop", label)
	}
	// Each party once: a party named twice made a token of "two", which
	// then needed the Mcpp-Party header on every request.
	seen := map[string]bool{}
	parties = slices.DeleteFunc(slices.Clone(parties), func(p string) bool { dup := seen[p]; seen[p] = true; return dup })
	id := make([]byte, 6)
	rand.Read(id) // never fails (crypto/rand)
	return t.store(ctx, hex.EncodeToString(id), randomText(32), parties, label, ttl)
}

func (t *Tokens) store(ctx context.Context, id, secret string, parties []string, label string, ttl time.Duration) (string, Token, error) {
	now := t.clock().UTC()
	tok := Token{ID: id, Label: label, Parties: parties, Created: now, Expires: now.Add(ttl)}
	list, _ := json.Marshal(parties)
	_, err := t.sql.ExecContext(ctx, t.rewrite(`INSERT INTO hub_tokens (id, secret_sha256, parties, label, created_at, expires_at)
		VALUES (?, ?, ?, ?, ?, ?)`), id, hashSecret(secret), string(list), label, engine.Timestamp(now), engine.Timestamp(tok.Expires))
	if err != nil {
		return "", Token{}, fmt.Errorf("store the token: %w", err)
	}
	return TokenPrefix + id + "_" + secret, tok, nil
}

// Verify finds the token text names, if it is valid now.
func (t *Tokens) Verify(ctx context.Context, text string) (Token, error) {
	id, secret, ok := splitToken(text)
	if !ok {
		return Token{}, ErrTokenUnknown
	}
	tok, hash, err := t.byID(ctx, id)
	if err != nil {
		return Token{}, err
	}
	if subtle.ConstantTimeCompare([]byte(hash), []byte(hashSecret(secret))) != 1 {
		return Token{}, ErrTokenUnknown
	}
	return tok, t.validNow(tok)
}

// TokenID is the id a token's text names, verified or not ("" if the text
// is not a token's): a hub notes what a request holds before checking it.
func TokenID(text string) string {
	id, _, _ := splitToken(text)
	return id
}

func splitToken(text string) (id, secret string, ok bool) {
	id, secret, ok = strings.Cut(strings.TrimPrefix(text, TokenPrefix), "_")
	if !ok || !strings.HasPrefix(text, TokenPrefix) || !isTokenID(id) || secret == "" {
		return "", "", false
	}
	return id, secret, true
}

// Check is Verify again for a token already verified, by its id: whether
// it is still valid now.
func (t *Tokens) Check(ctx context.Context, id string) (Token, error) {
	tok, _, err := t.byID(ctx, id)
	if err != nil {
		return Token{}, err
	}
	return tok, t.validNow(tok)
}

func (t *Tokens) validNow(tok Token) error {
	switch {
	case !tok.Revoked.IsZero():
		return ErrTokenRevoked
	case !t.clock().Before(tok.Expires):
		return ErrTokenExpired
	}
	return nil
}

// Stamp names the revokes so far: it moves at every revoke, on every hub
// of the store, so that a hub holding requests open learns of one with a
// single cheap read and checks again only the tokens it holds.
func (t *Tokens) Stamp(ctx context.Context) (string, error) {
	var n int64
	var newest string
	err := t.sql.QueryRowContext(ctx, `SELECT count(*), COALESCE(max(revoked_at), '') FROM hub_tokens WHERE revoked_at IS NOT NULL`).Scan(&n, &newest)
	if err != nil {
		return "", fmt.Errorf("read the tokens' revokes: %w", err)
	}
	return fmt.Sprintf("%d %s", n, newest), nil
}

func (t *Tokens) byID(ctx context.Context, id string) (Token, string, error) {
	row := t.sql.QueryRowContext(ctx, t.rewrite(`SELECT id, secret_sha256, parties, label, created_at, expires_at, revoked_at
		FROM hub_tokens WHERE id = ?`), id)
	tok, hash, err := scanToken(row.Scan)
	if errors.Is(err, sql.ErrNoRows) {
		return Token{}, "", ErrTokenUnknown
	}
	return tok, hash, err
}

// List is every token, newest first.
func (t *Tokens) List(ctx context.Context) ([]Token, error) {
	rows, err := t.sql.QueryContext(ctx, `SELECT id, secret_sha256, parties, label, created_at, expires_at, revoked_at
		FROM hub_tokens ORDER BY created_at DESC, id`)
	if err != nil {
		return nil, fmt.Errorf("list the tokens: %w", err)
	}
	defer rows.Close()
	var out []Token
	for rows.Next() {
		tok, _, err := scanToken(rows.Scan)
		if err != nil {
			return nil, err
		}
		out = append(out, tok)
	}
	return out, rows.Err()
}

// Record is a token as it is stored, its secret's hash with it: what a
// copy moves from one store to another, so that its holder keeps it.
type Record struct {
	ID, Hash, Parties, Label, Created, Expires string
	Revoked                                    sql.NullString
}

// Insert adds a Record in SQLite's dialect where no token has its id.
const Insert = `INSERT INTO hub_tokens (id, secret_sha256, parties, label, created_at, expires_at, revoked_at)
	VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING`

// Args are r's values in Insert's order.
func (r Record) Args() []any {
	return []any{r.ID, r.Hash, r.Parties, r.Label, r.Created, r.Expires, r.Revoked}
}

// Records is every token as stored, revoked and expired ones too (a
// revoke must hold wherever the tokens go), oldest first.
func (t *Tokens) Records(ctx context.Context) ([]Record, error) {
	rows, err := t.sql.QueryContext(ctx, `SELECT id, secret_sha256, parties, label, created_at, expires_at, revoked_at
		FROM hub_tokens ORDER BY created_at, id`)
	if err != nil {
		return nil, fmt.Errorf("read the tokens: %w", err)
	}
	defer rows.Close()
	var out []Record
	for rows.Next() {
		var r Record
		if err := rows.Scan(&r.ID, &r.Hash, &r.Parties, &r.Label, &r.Created, &r.Expires, &r.Revoked); err != nil {
			return nil, fmt.Errorf("read the tokens: %w", err)
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

// Revoke ends the token named by its id or its label (which must then be
// one token's); it reports the token it revoked.
func (t *Tokens) Revoke(ctx context.Context, which string) (Token, error) {
	all, err := t.List(ctx)
	if err != nil {
		return Token{}, err
	}
	var found []Token
	for _, tok := range all {
		if tok.ID == which || tok.Label == which || (strings.HasPrefix(which, TokenPrefix+tok.ID+"_")) {
			found = append(found, tok)
		}
	}
	switch {
	case len(found) == 0:
		return Token{}, engine.UserErrorf("no token has the id or label %q — see mcpp-chat hub token list", which)
	case len(found) > 1:
		return Token{}, engine.UserErrorf("%d tokens have the label %q — revoke one by its id (mcpp-chat hub token list)", len(found), which)
	}
	tok := found[0]
	if !tok.Revoked.IsZero() {
		return tok, nil
	}
	tok.Revoked = t.clock().UTC()
	if _, err := t.sql.ExecContext(ctx, t.rewrite(`UPDATE hub_tokens SET revoked_at = ? WHERE id = ?`), engine.Timestamp(tok.Revoked), tok.ID); err != nil {
		return Token{}, fmt.Errorf("revoke the token: %w", err)
	}
	return tok, nil
}

func scanToken(scan func(...any) error) (Token, string, error) {
	var tok Token
	var hash, parties, created, expires string
	var revoked sql.NullString
	if err := scan(&tok.ID, &hash, &parties, &tok.Label, &created, &expires, &revoked); err != nil {
		return Token{}, "", err
	}
	if err := json.Unmarshal([]byte(parties), &tok.Parties); err != nil {
		return Token{}, "", fmt.Errorf("token %s: its parties: %w", tok.ID, err)
	}
	tok.Created, _ = time.Parse(time.RFC3339Nano, created)
	tok.Expires, _ = time.Parse(time.RFC3339Nano, expires)
	if revoked.Valid {
		tok.Revoked, _ = time.Parse(time.RFC3339Nano, revoked.String)
	}
	return tok, hash, nil
}

// isTokenID reports text that could be an id Issue made (12 hex digits),
// before it is looked up: anything else is unknown, on both engines.
func isTokenID(id string) bool {
	_, err := hex.DecodeString(id)
	return len(id) == 12 && err == nil
}

func hashSecret(secret string) string {
	sum := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(sum[:])
}

// randomText is n random bytes as URL-safe text without padding.
func randomText(n int) string {
	b := make([]byte, n)
	rand.Read(b) // never fails (crypto/rand)
	return base64.RawURLEncoding.EncodeToString(b)
}

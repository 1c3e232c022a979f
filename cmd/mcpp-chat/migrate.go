package main

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/mcpp/mcpp-chat/internal/config"
	"github.com/mcpp/mcpp-chat/internal/redact"
	"github.com/mcpp/mcpp-chat/internal/store"
)

const migrateSynopsis = `migrate --to postgres://… [--from sqlite:PATH]

Copies this install's chat database (or PATH) into an empty team store on
PostgreSQL, for sessions on several machines to share: every party,
channel, message, item and read position, due time, claim, mention and
attention setting, keeping their ids, numbers and times, and the tokens
a hub on the database issued (revoked ones stay revoked), in one
transaction — a copy that fails leaves the store as it was.
The database is only read. A store that already holds a chat is refused.
Then point every session at the store (MCPP_CHAT_STORE or storage.url).`

// migrate copies a single-host database into an empty team store. The
// source is only read; the target gets everything in one transaction or
// nothing.
func migrate(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	fs := flags("migrate", migrateSynopsis, stderr)
	from := fs.String("from", "", "the database to copy, sqlite:PATH (default: this install's database)")
	to := fs.String("to", "", "the empty team store to copy into, postgres://… (default: this install's store, if it is one)")
	if code, done := parse(fs, args, stdout); done {
		return code
	}
	in, err := locate(getenv, "")
	if err != nil {
		fmt.Fprintf(stderr, "mcpp-chat migrate: %v\n", err)
		return exitError
	}
	source := in.paths.DB
	if *from != "" {
		if !strings.HasPrefix(*from, "sqlite:") || *from == "sqlite:" {
			fmt.Fprintf(stderr, "mcpp-chat migrate: --from %q is not sqlite:PATH — name the database file to copy, e.g. --from sqlite:%s\n", redact.URL(*from), in.paths.DB)
			return exitUsage
		}
		source = strings.TrimPrefix(*from, "sqlite:")
	}
	target := *to
	if target == "" && in.onPostgres() {
		target = in.paths.Store
	}
	if !config.IsPostgres(target) {
		fmt.Fprintf(stderr, "mcpp-chat migrate: give the team store to copy into: --to postgres://USER@HOST/DATABASE (or postgresql://…)\n")
		return exitUsage
	}
	src, err := store.OpenReadOnly(ctx, source)
	if err != nil {
		fmt.Fprintf(stderr, "mcpp-chat migrate: %v\n", err)
		return exitError
	}
	defer src.Close()
	dst, err := store.OpenPostgres(ctx, target, storeOptions(in.cfg))
	if err != nil {
		fmt.Fprintf(stderr, "mcpp-chat migrate: %v\n", err)
		return exitError
	}
	defer dst.Close()
	copied, err := store.CopyTo(ctx, src, dst)
	if err != nil {
		fmt.Fprintf(stderr, "mcpp-chat migrate: %v\n", err)
		return exitError
	}
	fmt.Fprintf(stdout, "copied %s from %s into %s\n", copied, source, dst.Path())
	if copied.Replaced > 0 {
		fields := "fields"
		if copied.Replaced == 1 {
			fields = "field"
		}
		fmt.Fprintf(stdout, "replaced NUL characters (U+0000) and bytes that are not UTF-8, which PostgreSQL cannot store, with U+FFFD (�) in %d text %s\n", copied.Replaced, fields)
	}
	if !in.onPostgres() {
		fmt.Fprintf(stdout, "to use it, set MCPP_CHAT_STORE to that URL (or storage.url in %s) for every session that should share it\n", in.paths.Config)
	}
	return exitOK
}

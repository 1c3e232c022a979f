package tools

import (
	"os"
	"testing"

	_ "github.com/jackc/pgx/v5/stdlib" // the PostgreSQL store's driver

	"github.com/mcpp/mcpp-chat/internal/pgtest"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

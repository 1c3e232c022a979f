package main

import (
	"os"
	"testing"

	"github.com/mcpp/mcpp-chat/internal/pgtest"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

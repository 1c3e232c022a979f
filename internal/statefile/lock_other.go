//go:build !unix

package statefile

import (
	"context"
	"os"
)

// noFollow: no such open flag here.
const noFollow = 0

// Lock takes no lock here: two hook processes of one session may race on
// a state file, and the worst outcome is a line told twice (the Codex
// doorbell does not run here).
func Lock(context.Context, *os.File) error { return nil }

// Unlock has no lock to let go here.
func Unlock(*os.File) {}

//go:build !unix

package hook

import (
	"context"
	"os"
)

// noFollow: no such open flag here.
const noFollow = 0

// Elsewhere two hook processes of one session may race on the state file;
// the worst outcome is a line told twice.
func lockFile(context.Context, *os.File) error { return nil }

func unlockFile(*os.File) {}

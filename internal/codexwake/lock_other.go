//go:build !unix

package codexwake

import (
	"context"
	"os"
)

const noFollow = 0

// Elsewhere the doorbell does not run (Supported is false).
func lockFile(context.Context, *os.File) error { return nil }

func unlockFile(*os.File) {}

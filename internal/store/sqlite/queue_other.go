//go:build !unix

package sqlite

import (
	"errors"
	"os"
)

// noFollow: no such open flag here.
const noFollow = 0

// errQueueOff is what flock gives here: the queue turns itself off.
var errQueueOff = errors.New("no writer queue on this system")

// errLocked is never returned here: without flock the queue turns itself
// off and SQLite's busy handler does all the waiting.
var errLocked = errors.New("locked")

func tryLock(*os.File) error { return errQueueOff }

func lock(*os.File) error { return errQueueOff }

func unlock(*os.File) {}

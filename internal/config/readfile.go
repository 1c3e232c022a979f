package config

import (
	"errors"
	"fmt"
	"io"
	"os"
)

// Size limits for the small files mcpp-chat reads. A repository's marker
// or a config file is a few lines; these bounds only keep a hostile or
// mistaken file (a symlink to /dev/zero, a FIFO, a huge file) from
// making every session's server read forever.
const (
	MaxConfigBytes = 1 << 20
	MaxMarkerBytes = 64 << 10
)

// ErrNotRegular is a path that names something other than a regular file:
// a device, a FIFO, a socket or a folder.
var ErrNotRegular = errors.New("not a regular file")

// ErrTooLarge is a file over the size its reader allows.
var ErrTooLarge = errors.New("too large")

// ReadSmallFile reads a regular file of at most max bytes, following
// symlinks. It refuses anything else without reading it: the open does not
// block on a FIFO, and a device is never read.
func ReadSmallFile(path string, max int64) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|openNonBlocking, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !info.Mode().IsRegular() {
		return nil, &fileError{fmt.Sprintf("%s is %s, not a regular file", path, kindOfFile(info.Mode())), ErrNotRegular}
	}
	data, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > max {
		return nil, &fileError{fmt.Sprintf("%s is over the %s a file like it may have", path, sizeText(max)), ErrTooLarge}
	}
	return data, nil
}

// fileError is a refusal of ReadSmallFile: its sentence, and ErrNotRegular
// or ErrTooLarge for errors.Is.
type fileError struct {
	msg  string
	kind error
}

func (e *fileError) Error() string { return e.msg }
func (e *fileError) Unwrap() error { return e.kind }

func kindOfFile(m os.FileMode) string {
	switch {
	case m.IsDir():
		return "a folder"
	case m&os.ModeNamedPipe != 0:
		return "a named pipe (FIFO)"
	case m&os.ModeSocket != 0:
		return "a socket"
	case m&os.ModeDevice != 0:
		return "a device"
	}
	return "a special file"
}

func sizeText(n int64) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}

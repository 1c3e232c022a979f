//go:build !unix

package wake

// lockFolder does nothing where flock is missing: two processes' ticks may
// then cross, and the file name an older write than the newest.
func lockFolder(string) (unlock func()) { return func() {} }

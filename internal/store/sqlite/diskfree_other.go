//go:build !unix

package sqlite

// diskFull cannot tell here; a full disk then reads as an I/O error.
func diskFull(string) bool { return false }

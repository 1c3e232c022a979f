//go:build !unix

package store

// diskFull cannot tell here; a full disk then reads as an I/O error.
func diskFull(string) bool { return false }

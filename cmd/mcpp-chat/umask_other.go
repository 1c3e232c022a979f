//go:build !unix

package main

// ownerOnlyFiles is a no-op where there is no umask; files there inherit
// the folder's access list.
func ownerOnlyFiles() {}

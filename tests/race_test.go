//go:build race

package tests

// Under `go test -race` the binaries these tests drive are built with the
// race detector as well: the concurrency worth checking is in `serve`,
// `watch` and the hook, which run as child processes here.
func init() { raceBinaries = true }

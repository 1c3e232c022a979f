//go:build !unix

package hook

// lookProcess knows nothing here: the waiter relies on its parent check
// and its timeout.
func lookProcess(int) process { return process{live: true} }

//go:build !linux

package turns

// ClientOf cannot tell the client process here: posts carry no chain, and
// wake as they did before chains (docs/hooks.md, Chains).
func ClientOf(pid int) (Client, bool) { return Client{}, false }

// Lookup cannot read a process here.
func Lookup(pid int) (Client, bool) { return Client{}, false }

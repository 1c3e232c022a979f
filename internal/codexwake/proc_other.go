//go:build !linux

package codexwake

// Supported reports that this system lets the doorbell see which Codex
// processes run, and where: only Linux does (/proc) so far. Elsewhere it
// cannot tell a thread somebody sees from one Codex keeps loaded after its
// terminal closed, and ringing that one would run a turn nobody sees.
const Supported = false

func Self() (Process, bool) { return Process{}, false }

func Alive(Process) bool { return false }

func FindClient(int) (Client, bool) { return Client{}, false }

func Interfaces(Client, string, func(string) string) int { return 0 }

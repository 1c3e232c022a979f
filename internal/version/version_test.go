package version

import "testing"

func TestCompare(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want int
	}{{"2.1.332", "2.1.332", 0}, {"2.1.99", "2.1.332", -1}, {"2.10.0", "2.9.9", 1}, {"2.1", "2.1.0", 0}, {"3", "2.9.9", 1}, {"0.170.2", "0.171.0", -1}} {
		if got := Compare(tc.a, tc.b); got != tc.want {
			t.Errorf("Compare(%s, %s) = %d, want %d", tc.a, tc.b, got, tc.want)
		}
	}
	for s, want := range map[string]string{"2.1.332 (Claude Code)\n": "2.1.332", "codex-cli 0.171.0\n": "0.171.0", "no version": ""} {
		if v := In(s); v != want {
			t.Errorf("In(%q) = %q, want %q", s, v, want)
		}
	}
}

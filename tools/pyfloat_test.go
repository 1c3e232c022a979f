package tools

import (
	"encoding/json"
	"math"
	"testing"
)

// A float is written as Python's json.dumps writes it (the texts below
// are what Python 3 prints for each number), never as an integer.
func TestPyFloatIsWrittenAsPythonWritesIt(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		f    float64
		want string
	}{
		{0, "0.0"}, {math.Copysign(0, -1), "-0.0"}, {2, "2.0"}, {-3, "-3.0"}, {1.5, "1.5"}, {0.1, "0.1"},
		{600, "600.0"}, {123.456, "123.456"}, {0.30000000000000004, "0.30000000000000004"},
		{1e-4, "0.0001"}, {1e-5, "1e-05"}, {1.5e-5, "1.5e-05"}, {5e-324, "5e-324"},
		{1e15, "1000000000000000.0"}, {9999999999999998, "9999999999999998.0"},
		{1e16, "1e+16"}, {1.5e16, "1.5e+16"}, {1e22, "1e+22"}, {1e300, "1e+300"},
	} {
		got, err := json.Marshal(pyFloat(c.f))
		if err != nil || string(got) != c.want {
			t.Errorf("%v is written %s (%v), want %s", c.f, got, err, c.want)
		}
	}
	for _, f := range []float64{math.NaN(), math.Inf(1), math.Inf(-1)} {
		if got, err := json.Marshal(pyFloat(f)); err == nil {
			t.Errorf("%v is written %s, want an error (JSON has no such number)", f, got)
		}
	}
}

package tools

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// pyFloat is a number the Python edition answers as a float: JSON writes
// it as Python's json.dumps writes one (0.0, 2.0, 1.5, 1e-05, 1e+16), so
// a client that compares answers as text, or keeps the number's type,
// sees the same answer from either edition. Go's encoding writes a whole
// float as an integer (0, 2).
type pyFloat float64

// MarshalJSON writes f as Python's repr: the shortest digits that read
// back as f, in fixed notation from 1e-4 up to 1e16 (with ".0" when it is
// whole), else in exponent notation with at least two exponent digits.
func (f pyFloat) MarshalJSON() ([]byte, error) {
	v := float64(f)
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return nil, fmt.Errorf("%v has no JSON form", v)
	}
	sci := strconv.FormatFloat(v, 'e', -1, 64) // d.ddde±XX: the shortest digits
	exp, _ := strconv.Atoi(sci[strings.LastIndexByte(sci, 'e')+1:])
	if v != 0 && (exp < -4 || exp >= 16) {
		return []byte(sci), nil
	}
	s := strconv.FormatFloat(v, 'f', -1, 64)
	if !strings.Contains(s, ".") {
		s += ".0"
	}
	return []byte(s), nil
}

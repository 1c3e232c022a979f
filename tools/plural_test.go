package tools

import (
	"strings"
	"testing"
)

// A cut read's line agrees with its counts: "1 of the 3 messages loaded
// is here; 1 more waits", not "1 … are here; 1 more wait".
func TestReadCutLineAgreesWithItsCounts(t *testing.T) {
	t.Parallel()
	var ans readAnswer
	ans.Channel = "c1"
	ans.More = 1
	line, _ := cutLine(ans, readArgs{}, 4, 1, 3, nil)
	if !strings.Contains(line, "1 of the 3 messages loaded is here; 1 more waits after #4") {
		t.Errorf("one: %s", line)
	}
	ans.More = 2
	line, _ = cutLine(ans, readArgs{}, 4, 2, 3, nil)
	if !strings.Contains(line, "2 of the 3 messages loaded are here; 2 more wait after #4") {
		t.Errorf("several: %s", line)
	}
}

package hub

import (
	"fmt"
	"net"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// A flood of refusals writes a bounded number of log lines, which carry
// the counts: each address's first refusal in full, then a line per
// address per interval with how many it had; addresses past the bound
// share a line, and the hub keeps counts for no more than the bound.
func TestRefusalsAreLoggedAsARate(t *testing.T) {
	t.Parallel()
	const perAddr, addrs, bound = 300, 6, 4
	h := startHub(t)
	h.s.refusals.mu.Lock()
	h.s.refusals.max = bound
	h.s.refusals.mu.Unlock()
	for i := range addrs {
		from := &net.TCPAddr{IP: net.IPv4(127, 0, 0, byte(2+i))}
		client := &http.Client{Transport: &http.Transport{DialContext: (&net.Dialer{LocalAddr: from}).DialContext}}
		for range perAddr {
			req, _ := http.NewRequest(http.MethodGet, h.srv.URL+"/v1/hook", nil)
			req.Header.Set("Authorization", "Bearer mcc_000000000000_nope")
			resp, err := client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusUnauthorized {
				t.Fatalf("status %d", resp.StatusCode)
			}
		}
		client.CloseIdleConnections()
	}
	if n := strings.Count(h.log.String(), `msg="refused a request"`); n != bound {
		t.Fatalf("%d refusals from %d addresses logged %d lines, want one for each of the %d addresses counted apart:\n%s",
			addrs*perAddr, addrs, n, bound, h.log)
	}
	h.s.refusals.flush(time.Now().Add(refusalEvery))
	lines := strings.Split(strings.TrimSpace(h.log.String()), "\n")
	if len(lines) > 2*bound+1 {
		t.Fatalf("%d refusals wrote %d lines:\n%s", addrs*perAddr, len(lines), h.log)
	}
	total := 0
	for _, line := range lines {
		switch m := regexp.MustCompile(`msg="refused requests" remote="?([^" ]+( addresses)?)"? count=(\d+)`).FindStringSubmatch(line); {
		case strings.Contains(line, `msg="refused a request"`):
			total++
		case m != nil:
			n, _ := strconv.Atoi(m[3])
			total += n
		default:
			t.Errorf("a line about something else: %s", line)
		}
	}
	if total != addrs*perAddr {
		t.Fatalf("the lines count %d refusals, want %d:\n%s", total, addrs*perAddr, h.log)
	}
	if !strings.Contains(h.log.String(), `remote="other addresses" count=`+fmt.Sprint((addrs-bound)*perAddr)) {
		t.Errorf("the addresses past the bound share no line:\n%s", h.log)
	}
	// Quiet for an interval, an address is forgotten.
	h.s.refusals.flush(time.Now().Add(3 * refusalEvery))
	h.s.refusals.mu.Lock()
	defer h.s.refusals.mu.Unlock()
	if n := len(h.s.refusals.byAddr); n != 0 {
		t.Fatalf("the hub still counts for %d quiet addresses", n)
	}
}

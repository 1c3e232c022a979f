package main

import (
	"testing"
	"time"
)

// A token's expiry says the time of day when the token ends within two
// days (a 12-hour token's date alone says nothing), the date otherwise.
func TestTokenExpiryShowsTheHourWhenItIsNear(t *testing.T) {
	now := time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		left time.Duration
		want string
	}{
		{12 * time.Hour, "2026-11-30 21:00 UTC (in 12h 00min)"},
		{47*time.Hour + 30*time.Minute, "2026-12-02 08:30 UTC (in 47h 30min)"},
		{40 * time.Minute, "2026-11-30 09:40 UTC (in 40min)"},
		{90 * 24 * time.Hour, "2027-02-28 (in 90 days)"},
		{-time.Hour, "2026-11-30 08:00 UTC (expired)"},
	} {
		if got := tokenExpiry(now.Add(c.left), now); got != c.want {
			t.Errorf("in %v: %q, want %q", c.left, got, c.want)
		}
	}
}

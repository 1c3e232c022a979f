package tools

import (
	"context"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/mcpp/mcpp-chat/internal/config"
)

// A wait whose client asked for progress says every chat.wait_progress_ms
// how long it has waited, and stops saying so when the wait ends.
func TestWaitProgressEveryInterval(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := &Service{Config: config.Defaults()}
		var got []string
		ctx := context.WithValue(context.Background(), progressKey{}, progressFunc(func(_ context.Context, done, total float64, msg string) {
			got = append(got, fmt.Sprintf("%v/%v %s", done, total, msg))
		}))
		start := time.Now()
		stop := s.keepAlive(ctx, start, 12)
		time.Sleep(12 * time.Second)
		stop()
		time.Sleep(time.Minute)
		want := []string{"5/12 waiting for a peer (5s of 12s)", "10/12 waiting for a peer (10s of 12s)"}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("progress %q, want %q", got, want)
		}
	})
}

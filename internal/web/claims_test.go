package web

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/mcpp/mcpp-chat/internal/store"
)

// The page lists every live claim beside the parties, its reason as text.
func TestPageShowsClaims(t *testing.T) {
	db := chat(t)
	ts, _ := serve(t, db.Path(), nil)
	if _, page := get(t, ts.URL+"/c/gw--dash"); !strings.Contains(page, `<li class="empty">Nothing claimed.</li>`) {
		t.Errorf("with nothing claimed:\n%s", page)
	}
	if _, err := db.Claim(context.Background(), gw, store.ClaimArgs{Resource: "path:node-dash/proto/**", Reason: "<b>regenerating</b>",
		TTL: time.Hour, Exclusive: true, MaxLifetime: 8 * time.Hour}); err != nil {
		t.Fatal(err)
	}
	_, page := get(t, ts.URL+"/c/gw--dash")
	for _, want := range []string{`<span class="resource">path:node-dash/proto/**</span> <span class="party">mesh-gw</span> until <time>`, "&lt;b&gt;regenerating&lt;/b&gt;"} {
		if !strings.Contains(page, want) {
			t.Errorf("the page lacks %q:\n%s", want, page)
		}
	}
}

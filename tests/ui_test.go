package tests

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// chromium finds the browser for the page's test: Debian's chromium (CI
// installs it), or MCPP_CHAT_CHROMIUM. Without one the test skips, saying
// how to get it, unless MCPP_CHAT_E2E_REQUIRE=1 (CI): then it fails.
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{os.Getenv("MCPP_CHAT_CHROMIUM"), "chromium", "chromium-browser", "google-chrome"} {
		if name == "" {
			continue
		}
		if path, err := exec.LookPath(name); err == nil {
			return path
		}
	}
	msg := "no chromium on PATH, so the page is not tried in a real browser — install it (apt-get install chromium) or set MCPP_CHAT_CHROMIUM to a Chrome or Chromium binary"
	if os.Getenv(e2eRequireEnv) == "1" {
		t.Fatal(msg + " (" + e2eRequireEnv + "=1 requires it)")
	}
	t.Skip(msg)
	return ""
}

// browser starts headless Chromium for one test, bounded by within.
func browser(t *testing.T, within time.Duration) context.Context {
	t.Helper()
	skipShort(t) // before the browser starts: that alone takes seconds
	exe := chromium(t)
	ctx, cancel := context.WithTimeout(context.Background(), within)
	t.Cleanup(cancel)
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(exe),
		chromedp.Flag("headless", "new"),
		chromedp.NoSandbox, // root in a container has no sandbox to drop into
		chromedp.DisableGPU,
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1280, 860),
	)
	actx, acancel := chromedp.NewExecAllocator(ctx, opts...)
	t.Cleanup(acancel)
	bctx, bcancel := chromedp.NewContext(actx)
	t.Cleanup(bcancel)
	if err := chromedp.Do(bctx); err != nil {
		t.Fatalf("start %s: %v", exe, err)
	}
	return bctx
}

// The page in a real browser: it lists the channels with each party's
// unread count and the items with their states; a message posted by
// another process appears within a second without a reload; markup in a
// message shows as text and runs nothing, on the first load and live;
// search finds an archived item by a word of its body. (The README's
// screenshot is TestDemoScreenshot's, not this page of hostile text.)
func TestPageInABrowser(t *testing.T) {
	ctx := browser(t, 3*time.Minute)
	w, gw, _ := viewWorld(t)
	ui := startView(t, w, gw, "ui", "--listen", "127.0.0.1:0")
	base := ui.url(t)

	err := chromedp.Do(ctx,
		chromedp.Navigate(base+"/"),
		chromedp.WaitVisible(`#main .threads`),
		chromedp.WaitVisible(`#live.on`), // the event stream is open
	)
	side, _ := chromedp.Run(ctx, chromedp.Text(`#side`))
	main, _ := chromedp.Run(ctx, chromedp.Text(`#main`))
	if err != nil {
		t.Fatalf("open %s: %v\nui stderr %s", base, err, ui.stderr)
	}
	for _, want := range []string{"#gw--dash", "mesh-gw", "node-dash", "unread", "3 live items"} {
		if !strings.Contains(side, want) {
			t.Errorf("the channel list lacks %q:\n%s", want, side)
		}
	}
	for _, want := range []string{
		"[chunk-api]", "ACK · resolve owed by mesh-gw", "Looking at the generator now.",
		"[gen-v2]", "DONE · prune-ok owed by",
		"[frame-order]", "OPEN · ack owed by node-dash",
		`<img src=x onerror="window.pwned=1"><script>window.pwned=1</script>`,
	} {
		if !strings.Contains(main, want) {
			t.Errorf("the channel page lacks %q:\n%s", want, main)
		}
	}
	pwned := func(when string) {
		t.Helper()
		ran, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`window.pwned !== undefined`))
		if err != nil {
			t.Fatal(err)
		}
		if ran {
			t.Errorf("a message's markup ran as script %s", when)
		}
	}
	pwned("on the first load")

	// A mark on the window survives only if the page is not reloaded.
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`window.sameLoad = true`)); err != nil {
		t.Fatal(err)
	}
	w.mustCall(gw, "chat_say", map[string]any{"channel": "gw--dash",
		"text": "a heron landed on the bench <img src=y onerror=\"window.pwned=2\">"}, nil)
	posted := time.Now()
	waitCtx, cancel := context.WithTimeout(ctx, time.Second)
	_, err = chromedp.Run(waitCtx, chromedp.Poll[bool](`document.getElementById('main').innerText.includes('a heron landed on the bench')`, chromedp.WithPollingInterval(10*time.Millisecond)))
	cancel()
	if err != nil {
		t.Fatalf("the message posted by chat_say was not on the page within a second: %v", err)
	}
	t.Logf("the posted message appeared %v after chat_say returned", time.Since(posted).Round(time.Millisecond))
	if same, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`window.sameLoad === true`)); err != nil || !same {
		t.Errorf("the page reloaded to show the new message (%v)", err)
	}
	pwned("after a live update")

	// Search from the box, as a person would.
	err = chromedp.Do(ctx,
		chromedp.SetValue(`#search input[name=q]`, "flamingo"),
		chromedp.Submit(`#search`),
		chromedp.WaitVisible(`.hits .hit`),
	)
	hits, _ := chromedp.Run(ctx, chromedp.Text(`#main`))
	if err != nil {
		t.Fatalf("search: %v", err)
	}
	for _, want := range []string{"1 hit", "[old-wire]", "Wire format v1", "archived", "flamingo framing"} {
		if !strings.Contains(hits, want) {
			t.Errorf("the search page lacks %q:\n%s", want, hits)
		}
	}
	ui.stop(t)
}

// The README's screenshot (docs/ui.png) is the demo's conversation as the
// page shows it: `mcpp-chat demo --keep`, its database where a default
// install keeps one (so the header reads ~/.local/share/mcpp-chat/chat.db),
// the channel's archived thread. To rewrite it:
//
//	MCPP_CHAT_UI_SCREENSHOT=$PWD/docs/ui.png go test ./tests -run TestDemoScreenshot -count=1
//
// Without the variable the screenshot goes to the test's temporary folder.
func TestDemoScreenshot(t *testing.T) {
	ctx := browser(t, 3*time.Minute)
	w := newWorld(t)
	tmp := filepath.Join(w.dir, "tmp")
	if err := os.Mkdir(tmp, 0o700); err != nil {
		t.Fatal(err)
	}
	demo := exec.Command(chatBin, "demo", "--keep")
	demo.Env = append(append([]string{}, w.env...), "TMPDIR="+tmp)
	out, err := demo.CombinedOutput()
	kept := regexp.MustCompile(`Kept (\S+) — `).FindSubmatch(out)
	if err != nil || kept == nil {
		t.Fatalf("demo --keep (%v) kept nothing:\n%s", err, out)
	}
	db := filepath.Join(w.home, ".local", "share", "mcpp-chat", "chat.db")
	copyFile(t, filepath.Join(string(kept[1]), "data", "chat.db"), db)
	w.env = append(w.env, "MCPP_CHAT_DB="+db) // the last value of a variable wins

	ui := startView(t, w, w.home, "ui", "--listen", "127.0.0.1:0")
	err = chromedp.Do(ctx,
		chromedp.EmulateViewport(1280, 520),
		chromedp.Navigate(ui.url(t)+"/c/gw--dash?archived=1"),
		chromedp.WaitVisible(`#main .threads`),
		chromedp.WaitVisible(`#live.on`),
	)
	page, _ := chromedp.Run(ctx, chromedp.Text(`body`))
	if err != nil {
		t.Fatalf("open the demo's channel: %v\nui stderr %s", err, ui.stderr)
	}
	for _, want := range []string{"~/.local/share/mcpp-chat/chat.db", "[chunk-api]", "Is the chunk header enum closed?", "I own the decoder", "Confirmed against the new decoder"} {
		if !strings.Contains(page, want) {
			t.Errorf("the page lacks %q:\n%s", want, page)
		}
	}
	shot := os.Getenv("MCPP_CHAT_UI_SCREENSHOT")
	if shot == "" {
		shot = filepath.Join(t.TempDir(), "ui.png")
	}
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100)) // 100: a PNG
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(shot, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s", shot)
	ui.stop(t)
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	data, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(to), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, data, 0o600); err != nil {
		t.Fatal(err)
	}
}

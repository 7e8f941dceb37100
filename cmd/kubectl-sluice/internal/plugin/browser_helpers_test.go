package plugin

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"

	"sluice.dev/sluice/test/testenv"
)

// The tests drive a real headless Chromium (Debian's chromium package; `make test` installs it
// through hack/install-chromium.sh) with chromedp, one browser for the package, one tab per test.
var (
	browserOnce   sync.Once
	browserCtx    context.Context
	browserCancel context.CancelFunc
	browserErr    error
)

// chromiumPath finds the browser: $CHROMIUM, else chromium or chromium-browser on PATH.
func chromiumPath() (string, error) {
	if p := os.Getenv("CHROMIUM"); p != "" {
		return p, nil
	}
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("no chromium on PATH: install it with hack/install-chromium.sh (make test runs it), or set $CHROMIUM")
}

func startBrowser() (context.Context, error) {
	browserOnce.Do(func() {
		path, err := chromiumPath()
		if err != nil {
			browserErr = err
			return
		}
		dir, err := os.MkdirTemp("", "sluice-chromium-")
		if err != nil {
			browserErr = err
			return
		}
		// The flags this machine needs: no sandbox (root), and no background connections, which a
		// closed network refuses.
		opts := []chromedp.ExecAllocatorOption{
			chromedp.ExecPath(path), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun,
			chromedp.NoDefaultBrowserCheck, chromedp.UserDataDir(dir), chromedp.WindowSize(1360, 900),
			chromedp.Flag("disable-quic", true), chromedp.Flag("disable-background-networking", true),
			chromedp.Flag("disable-component-update", true), chromedp.Flag("disable-sync", true),
			chromedp.Flag("disable-extensions", true), chromedp.Flag("hide-scrollbars", true),
		}
		alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
		ctx, cancel := chromedp.NewContext(alloc)
		if err := chromedp.Do(ctx); err != nil {
			cancel()
			cancelAlloc()
			browserErr = fmt.Errorf("starting %s: %w", path, err)
			return
		}
		browserCtx = ctx
		browserCancel = func() { cancel(); cancelAlloc(); os.RemoveAll(dir) }
	})
	return browserCtx, browserErr
}

func stopBrowser() {
	if browserCancel != nil {
		browserCancel()
	}
}

// tab is one browser tab of a test: its context, and every console error or uncaught exception
// the page produced.
type tab struct {
	t   *testing.T
	ctx context.Context

	mu       sync.Mutex
	problems []string
}

// newTab opens a tab; the test fails at its end if the page logged a console error or threw.
func newTab(t *testing.T) *tab {
	t.Helper()
	testenv.Require(t, env)
	parent, err := startBrowser()
	if err != nil {
		t.Fatal(err)
	}
	tabCtx, closeTab := chromedp.NewContext(parent)
	messages := chromedp.Console(tabCtx)
	ctx, cancelTimeout := context.WithTimeout(tabCtx, 120*time.Second)
	tb := &tab{t: t, ctx: ctx}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for m, err := range messages {
			if err != nil {
				return
			}
			if m.Type == chromedp.ConsoleError || m.IsException() {
				tb.mu.Lock()
				tb.problems = append(tb.problems, m.String()+" "+m.URL)
				tb.mu.Unlock()
			}
		}
	}()
	t.Cleanup(func() {
		cancelTimeout()
		closeTab()
		<-done
		tb.mu.Lock()
		defer tb.mu.Unlock()
		for _, p := range tb.problems {
			t.Errorf("the page logged an error: %s", p)
		}
	})
	return tb
}

// do runs chromedp actions, failing the test on error.
func (tb *tab) do(actions ...chromedp.Action[chromedp.Void]) {
	tb.t.Helper()
	if err := chromedp.Do(tb.ctx, actions...); err != nil {
		tb.t.Fatalf("browser: %v", err)
	}
}

// eval evaluates a JavaScript expression.
func eval[T any](tb *tab, expr string) T {
	tb.t.Helper()
	v, err := chromedp.Run(tb.ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		tb.t.Fatalf("evaluating %s: %v", expr, err)
	}
	return v
}

// waitJS waits until the expression is true and returns how long that took; it fails after
// timeout with what the page shows.
func (tb *tab) waitJS(expr string, timeout time.Duration) time.Duration {
	tb.t.Helper()
	start := time.Now()
	for {
		if eval[bool](tb, "!!("+expr+")") {
			return time.Since(start)
		}
		if time.Since(start) > timeout {
			tb.t.Fatalf("waited %s for %s; the page shows:\n%s", timeout, expr,
				eval[string](tb, `document.getElementById('main').innerText.slice(0, 2000)`))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// open navigates to url and waits for the page's first data. The page is left before the
// servers started earlier in the test stop, so it never sees them go.
func (tb *tab) open(url string) {
	tb.t.Helper()
	tb.t.Cleanup(func() { _ = chromedp.Do(tb.ctx, chromedp.Navigate("about:blank")) })
	tb.do(chromedp.Navigate(url))
	tb.waitJS(`document.getElementById('main').dataset.ready === 'true'`, 15*time.Second)
}

// screenshots writes the page as PNGs in light and in dark, to testdata/out/NAME-{light,dark}.png
// (ignored by git), and logs where.
func (tb *tab) screenshots(name string) {
	tb.t.Helper()
	dir, err := filepath.Abs(filepath.Join("testdata", "out"))
	if err != nil {
		tb.t.Fatal(err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		tb.t.Fatal(err)
	}
	for _, scheme := range []string{"light", "dark"} {
		tb.scheme(scheme)
		png, err := chromedp.Run(tb.ctx, chromedp.FullScreenshot(100))
		if err != nil {
			tb.t.Fatal(err)
		}
		path := filepath.Join(dir, name+"-"+scheme+".png")
		if err := os.WriteFile(path, png, 0o644); err != nil {
			tb.t.Fatal(err)
		}
		tb.t.Logf("screenshot: %s", path)
	}
	tb.scheme("light")
}

// scheme emulates the system's colour scheme.
func (tb *tab) scheme(s string) {
	tb.t.Helper()
	if _, err := chromedp.Call(tb.ctx, emulation.SetEmulatedMedia,
		emulation.SetEmulatedMediaParams{Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: s}}}); err != nil {
		tb.t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond)
}

// click clicks the first visible element matching the CSS selector.
func (tb *tab) click(sel string) {
	tb.t.Helper()
	tb.do(chromedp.Click(chromedp.CSS(sel), chromedp.NodeVisible))
}

// js runs a JavaScript statement in the page.
func (tb *tab) js(stmt string) {
	tb.t.Helper()
	eval[bool](tb, "(() => { "+stmt+"; return true })()")
}

// typeInto focuses the element and types text by key presses, after clearing it.
func (tb *tab) typeInto(sel, text string) {
	tb.t.Helper()
	tb.js(`const el = document.querySelector(` + jsString(sel) + `); el.value = ''; el.dispatchEvent(new Event('input')); el.focus()`)
	if text != "" {
		tb.do(chromedp.KeyEvent(text))
	}
}

// choose picks value in the select element, as a user does, and announces the change.
func (tb *tab) choose(sel, value string) {
	tb.t.Helper()
	tb.js(`const el = document.querySelector(` + jsString(sel) + `); el.focus(); el.value = ` + jsString(value) + `; el.dispatchEvent(new Event('change'))`)
}

// keys presses keys on the focused element.
func (tb *tab) keys(keys string) {
	tb.t.Helper()
	tb.do(chromedp.KeyEvent(keys))
}

package plugin

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
	"sluice.dev/sluice/test/testenv"
)

// clock is the settable clock that stamps the watch lines.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time  { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *clock) Set(t time.Time) { c.mu.Lock(); defer c.mu.Unlock(); c.now = t }

// step is one status the test writes, at the clock time t0+at, and how to know Watch saw it.
type step struct {
	at     time.Duration
	status sluicev1.CanaryStatus
	seen   string // substring of the output once reported
}

// followRun starts Watch on a fresh canary, advances its status through steps (each once the
// previous one is reported) and returns the output and Watch's result.
func followRun(t *testing.T, terminal bool, steps []step) (string, error) {
	t.Helper()
	ns := env.Namespace(t)
	cn := newCanary(t, ns, "podinfo", nil)
	clk := &clock{now: t0}
	setStatus(t, cn, steps[0].status)

	out := &syncBuffer{}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		done <- Watch(ctx, env.Client, out, types.NamespacedName{Namespace: ns, Name: "podinfo"},
			WatchOptions{Interval: 20 * time.Millisecond, Terminal: terminal, Now: clk.Now})
	}()
	for i, s := range steps {
		if i > 0 {
			clk.Set(t0.Add(s.at))
			setStatus(t, cn, s.status)
		}
		waitFor(t, out, s.seen, func(o string) bool { return strings.Contains(o, s.seen) })
	}
	select {
	case err := <-done:
		return out.String(), err
	case <-time.After(15 * time.Second):
		t.Fatalf("Watch did not return after the run ended; output:\n%s", out.String())
		return "", nil
	}
}

var progressing = func(w, failed int32) sluicev1.CanaryStatus {
	return sluicev1.CanaryStatus{Phase: sluicev1.CanaryPhaseProgressing, CanaryWeight: w, FailedChecks: failed}
}

// TestWatchPiped follows a run 0 -> 10 -> 20 -> promoted with stdout not a terminal: one plain
// line per change, and Watch returns nil once the run succeeds.
func TestWatchPiped(t *testing.T) {
	testenv.Require(t, env)
	out, err := followRun(t, false, []step{
		{0, progressing(0, 0), "Progressing 0 0\n"},
		{10 * time.Second, progressing(10, 0), "Progressing 10 0\n"},
		{20 * time.Second, progressing(20, 0), "Progressing 20 0\n"},
		{30 * time.Second, sluicev1.CanaryStatus{Phase: sluicev1.CanaryPhaseSucceeded}, "Succeeded 0 0\n"},
	})
	if err != nil {
		t.Errorf("Watch: %v", err)
	}
	golden(t, "watch.golden", out)
}

// TestWatchTerminal draws the same kind of run as a progress bar, and fails with ErrRunFailed
// when the run is rolled back.
func TestWatchTerminal(t *testing.T) {
	testenv.Require(t, env)
	out, err := followRun(t, true, []step{
		{0, progressing(10, 0), " 10/50%"},
		{10 * time.Second, progressing(20, 1), "failed 1/5"},
		{20 * time.Second, sluicev1.CanaryStatus{Phase: sluicev1.CanaryPhaseFailed, FailedChecks: 5}, "Failed"},
	})
	if !errors.Is(err, ErrRunFailed) {
		t.Errorf("Watch of a failed run: %v, want ErrRunFailed", err)
	}
	golden(t, "watch-terminal.golden", out)
}

func TestBar(t *testing.T) {
	for _, tc := range []struct {
		weight, total int32
		want          string
	}{
		{0, 50, "[..........]"},
		{10, 50, "[##........]"},
		{50, 50, "[##########]"},
		{70, 50, "[##########]"},
		{5, 0, "[..........]"},
	} {
		if got := Bar(tc.weight, tc.total, 10); got != tc.want {
			t.Errorf("Bar(%d, %d) = %q, want %q", tc.weight, tc.total, got, tc.want)
		}
	}
}

// TestWatchTimeout: `watch --timeout` gives up with an error while the run goes on.
func TestWatchTimeout(t *testing.T) {
	testenv.Require(t, env)
	ns := env.Namespace(t)
	setStatus(t, newCanary(t, ns, "podinfo", nil), progressing(30, 0))
	out, err := run(t, ns, "watch", "podinfo", "--interval=20ms", "--timeout=300ms")
	if err == nil || !strings.Contains(err.Error(), "did not end within 300ms") {
		t.Errorf("watch --timeout: err = %v", err)
	}
	if out != "12:00:00 Progressing 30 0\n" {
		t.Errorf("watch --timeout printed %q", out)
	}
	if _, err := run(t, ns, "watch", "absent"); err == nil || !strings.Contains(err.Error(), "not found") {
		t.Errorf("watch of a missing canary: %v", err)
	}
}

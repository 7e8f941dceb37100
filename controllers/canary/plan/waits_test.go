package plan

import (
	"testing"
	"time"

	"k8s.io/utils/ptr"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
)

// TestWatchedWaitsDoNotPoll (issue 17: a thousand waiting Canaries must not tick every two
// seconds): every wait that a watched change ends — the primary starting at initialization, the
// canary's pods at a run's start, a canary that lost its pods, the promoted primary rolling out —
// looks again only at the progress deadline or one interval away, whichever is first. The one wait
// on something the controller reads around the cache (the primary Service's endpoints) still polls.
func TestWatchedWaitsDoNotPoll(t *testing.T) {
	const deadline = 150 * time.Second
	spec := seedSpec()
	spec.ProgressDeadlineSeconds = ptr.To(int32(deadline / time.Second))
	interval := Interval(spec)

	// wantWatched checks a waiting decision: no poll, the deadline or the interval.
	wantWatched := func(t *testing.T, what string, d Decision, left time.Duration) {
		t.Helper()
		want := min(interval, left+deadlineMargin)
		if d.RequeueAfter != want {
			t.Fatalf("%s: next look in %s, want %s (deadline in %s, interval %s; not the %s poll)",
				what, d.RequeueAfter, want, left, interval, PollInterval)
		}
	}

	t.Run("initialization waits for the primary", func(t *testing.T) {
		w := newWorld(spec)
		w.primaryRevision, w.primaryDown = "rev-1", true
		d := w.tick(t)
		if d.Status.Phase != sluicev1.CanaryPhaseInitializing {
			t.Fatalf("phase %s, want Initializing", d.Status.Phase)
		}
		wantWatched(t, "first look", d, deadline)
		w.next = 130 * time.Second // the next tick (a watch event): 20 s before the deadline
		wantWatched(t, "near the deadline", w.tick(t), 20*time.Second)
	})

	t.Run("run start waits for the canary's pods", func(t *testing.T) {
		w := passingRun(t, spec)
		w.canaryNeverReady = true
		d := w.tick(t)
		if d.Status.Phase != sluicev1.CanaryPhaseProgressing {
			t.Fatalf("phase %s, want Progressing", d.Status.Phase)
		}
		wantWatched(t, "run start", d, deadline)
		d = w.tick(t) // the canary is still not ready
		wantWatched(t, "canary unready", d, deadline-w.now.Sub(d.Status.LastProgressTime.Time))
	})

	t.Run("promotion waits for the primary's rollout", func(t *testing.T) {
		w := passingRun(t, spec)
		w.primaryRolling = true
		for i := 0; i < 50 && w.status.Phase != sluicev1.CanaryPhasePromoting; i++ {
			w.tick(t)
		}
		d := w.tick(t)
		if d.Status.Phase != sluicev1.CanaryPhasePromoting {
			t.Fatalf("phase %s, want Promoting while the primary rolls out", d.Status.Phase)
		}
		wantWatched(t, "primary rolling", d, deadline-w.now.Sub(d.Status.LastProgressTime.Time))
	})

	t.Run("endpoints read around the cache still poll", func(t *testing.T) {
		w := passingRun(t, spec)
		w.primaryEndpoints = &Endpoints{Ready: 1, Serving: 2} // lagging the primary's 2 ready pods
		for i := 0; i < 50 && w.status.Phase != sluicev1.CanaryPhasePromoting; i++ {
			w.tick(t)
		}
		d := w.tick(t)
		if d.Status.Phase != sluicev1.CanaryPhasePromoting || d.RequeueAfter != PollInterval {
			t.Fatalf("endpoints lagging: phase %s, next look in %s, want Promoting and the %s poll", d.Status.Phase, d.RequeueAfter, PollInterval)
		}
	})
}

package canary

import (
	"context"
	"fmt"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
	"sluice.dev/sluice/controllers/canary/plan"
	"sluice.dev/sluice/controllers/windows"
)

// runningPhases are the phases of a run in flight, counted against Options.MaxProgressing.
var runningPhases = map[sluicev1.CanaryPhase]bool{
	sluicev1.CanaryPhaseProgressing: true, sluicev1.CanaryPhaseWaitingPromotion: true,
	sluicev1.CanaryPhasePromoting: true, sluicev1.CanaryPhaseFinalising: true,
}

// hold returns why the run may not start or advance now: a closed progression window (for
// starting and advancing) or the cap on simultaneous rollouts (for starting only). A window that
// cannot be evaluated or never opens fails closed: it is returned as a stall (reason
// InvalidWindow), which holds like a closed window and is reported as Stalled.
func (r *Reconciler) hold(ctx context.Context, canary *sluicev1.Canary, o plan.Observed) (hold, stall *plan.Hold, err error) {
	phase := canary.Status.Phase
	running := runningPhases[phase]
	starting := !running && phase != "" && phase != sluicev1.CanaryPhaseInitializing &&
		o.Revision != canary.Status.LastAppliedSpec && o.Revision != canary.Status.LastPromotedSpec
	promoting := phase == sluicev1.CanaryPhasePromoting || phase == sluicev1.CanaryPhaseFinalising
	st, err := windows.Evaluate(canary.Spec.Windows, o.Now)
	if err != nil && !promoting && phase != "" && phase != sluicev1.CanaryPhaseInitializing {
		return nil, &plan.Hold{Reason: sluicev1.ReasonInvalidWindow,
			Message: fmt.Sprintf("progression windows fail closed, no run starts or advances: %v", err)}, nil
	}
	if !running && !starting || err != nil {
		return nil, nil, nil
	}
	if !st.Open && !promoting {
		return &plan.Hold{Reason: sluicev1.ReasonOutsideWindow, Until: st.NextOpen,
			Message: fmt.Sprintf("outside progression windows; next window opens at %s", st.NextOpen.UTC().Format(time.RFC3339))}, nil, nil
	}
	if !starting || r.MaxProgressing <= 0 {
		return nil, nil, nil
	}
	admitted, err := r.cap.admit(ctx, r, canary, o.Revision, o.Now)
	if err != nil {
		return nil, nil, err
	}
	if !admitted {
		// The message does not count the runs: a count that moves would rewrite the status of
		// every waiting Canary at each of its looks.
		return &plan.Hold{Reason: sluicev1.ReasonRolloutCapReached,
			Message: fmt.Sprintf("the cap of %d runs at once is reached (--max-progressing); the run starts when a slot frees", r.MaxProgressing)}, nil, nil
	}
	return nil, nil, nil
}

// rolloutCap counts runs in flight from the cache, plus runs this process admitted in the last
// few seconds whose status the cache may not show yet. Counting and admitting are one step under
// its lock, so two workers never both take the last slot.
type rolloutCap struct {
	mu       sync.Mutex
	admitted map[types.NamespacedName]admission
}

// admission is a run this process let start: when, and the revision it runs.
type admission struct {
	at       time.Time
	revision string
}

// admissionMemory is how long an admitted run is counted before the cache must show it.
const admissionMemory = 30 * time.Second

// admit lets self's run of revision start if fewer than r.MaxProgressing other runs are in flight,
// and remembers it.
func (c *rolloutCap) admit(ctx context.Context, r *Reconciler, self *sluicev1.Canary, revision string, now time.Time) (bool, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	n, err := c.running(ctx, r, self, now)
	if err != nil || n >= r.MaxProgressing {
		return false, err
	}
	if c.admitted == nil {
		c.admitted = map[types.NamespacedName]admission{}
	}
	c.admitted[types.NamespacedName{Namespace: self.Namespace, Name: self.Name}] = admission{at: now, revision: revision}
	return true, nil
}

// running counts the runs in flight but self's; c.mu is held.
func (c *rolloutCap) running(ctx context.Context, r *Reconciler, self *sluicev1.Canary, now time.Time) (int, error) {
	list := &sluicev1.CanaryList{}
	if err := r.listIndexed(ctx, list, "", indexRunning, "true", indexRunningValue); err != nil {
		return 0, fmt.Errorf("listing canaries: %w", err)
	}
	me := client.ObjectKeyFromObject(self)
	counted := map[types.NamespacedName]bool{} // the index lists only runs in flight (indexRunningValue)
	for i := range list.Items {
		if key := client.ObjectKeyFromObject(&list.Items[i]); key != me {
			counted[key] = true
		}
	}
	for key, a := range c.admitted {
		if counted[key] || now.Sub(a.at) > admissionMemory || shownByCache(ctx, r, key, a) {
			delete(c.admitted, key) // the cache shows the run (in flight or ended): it counts from there
			continue
		}
		if key != me {
			counted[key] = true
		}
	}
	return len(counted), nil
}

// shownByCache reports whether the cache shows the admitted run started (its revision applied) or
// the Canary gone: a run that ended before any count saw it in flight frees its slot too.
func shownByCache(ctx context.Context, r *Reconciler, key types.NamespacedName, a admission) bool {
	cn := &sluicev1.Canary{}
	if err := r.Get(ctx, key, cn); err != nil {
		return apierrors.IsNotFound(err)
	}
	return cn.Status.LastAppliedSpec == a.revision
}

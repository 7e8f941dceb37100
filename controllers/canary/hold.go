package canary

import (
	"context"
	"fmt"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"

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
	n, err := r.cap.running(ctx, r, canary, o.Now)
	if err != nil {
		return nil, nil, err
	}
	if n >= r.MaxProgressing {
		return &plan.Hold{Reason: sluicev1.ReasonRolloutCapReached,
			Message: fmt.Sprintf("%d canaries progressing, the cap is %d (--max-progressing)", n, r.MaxProgressing)}, nil, nil
	}
	r.cap.admit(canary, o.Now)
	return nil, nil, nil
}

// rolloutCap counts runs in flight from the cache, plus runs this process admitted in the last
// few seconds whose status the cache may not show yet.
type rolloutCap struct {
	mu       sync.Mutex
	admitted map[types.NamespacedName]time.Time
}

// admissionMemory is how long an admitted run is counted before the cache must show it.
const admissionMemory = 30 * time.Second

func (c *rolloutCap) running(ctx context.Context, r *Reconciler, self *sluicev1.Canary, now time.Time) (int, error) {
	list := &sluicev1.CanaryList{}
	if err := r.listIndexed(ctx, list, "", indexRunning, "true", indexRunningValue); err != nil {
		return 0, fmt.Errorf("listing canaries: %w", err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	counted := map[types.NamespacedName]bool{}
	for i := range list.Items {
		cn := &list.Items[i]
		key := types.NamespacedName{Namespace: cn.Namespace, Name: cn.Name}
		if key.Namespace == self.Namespace && key.Name == self.Name {
			continue
		}
		if runningPhases[cn.Status.Phase] {
			counted[key] = true
		}
	}
	for key, at := range c.admitted {
		if now.Sub(at) > admissionMemory {
			delete(c.admitted, key)
			continue
		}
		if key.Namespace != self.Namespace || key.Name != self.Name {
			counted[key] = true
		}
	}
	return len(counted), nil
}

func (c *rolloutCap) admit(canary *sluicev1.Canary, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.admitted == nil {
		c.admitted = map[types.NamespacedName]time.Time{}
	}
	c.admitted[types.NamespacedName{Namespace: canary.Namespace, Name: canary.Name}] = now
}

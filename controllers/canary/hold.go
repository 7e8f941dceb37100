package canary

import (
	"context"
	"fmt"
	"slices"
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
// starting and advancing) or the cap on simultaneous rollouts (for starting, and for advancing a
// run resumed after a pause until it has a slot again: capline.go). A window that cannot be
// evaluated or never opens fails closed: it is returned as a stall (reason InvalidWindow), which
// holds like a closed window and is reported as Stalled. rejoined reports a run resumed after a
// pause that has its slot again (or no cap to wait for): status.slotReleased is to be cleared.
func (r *Reconciler) hold(ctx context.Context, canary *sluicev1.Canary, o plan.Observed) (hold, stall *plan.Hold, rejoined bool, err error) {
	phase := canary.Status.Phase
	running := runningPhases[phase]
	starting := !running && phase != "" && phase != sluicev1.CanaryPhaseInitializing &&
		o.Revision != canary.Status.LastAppliedSpec && o.Revision != canary.Status.LastPromotedSpec
	promoting := phase == sluicev1.CanaryPhasePromoting || phase == sluicev1.CanaryPhaseFinalising
	st, err := windows.Evaluate(canary.Spec.Windows, o.Now)
	if err != nil && !promoting && phase != "" && phase != sluicev1.CanaryPhaseInitializing {
		return nil, &plan.Hold{Reason: sluicev1.ReasonInvalidWindow,
			Message: fmt.Sprintf("progression windows fail closed, no run starts or advances: %v", err)}, false, nil
	}
	if !running && !starting || err != nil {
		return nil, nil, false, nil
	}
	if !st.Open && !promoting {
		return &plan.Hold{Reason: sluicev1.ReasonOutsideWindow, Until: st.NextOpen,
			Message: fmt.Sprintf("outside progression windows; next window opens at %s", st.NextOpen.UTC().Format(time.RFC3339))}, nil, false, nil
	}
	back := rejoining(canary)
	if !starting && !back {
		return nil, nil, false, nil
	}
	if r.MaxProgressing <= 0 {
		return nil, nil, back, nil
	}
	revision := o.Revision
	if running {
		revision = canary.Status.LastAppliedSpec
	}
	admitted, err := r.cap.admit(ctx, r, canary, revision, o.Now)
	if err != nil {
		return nil, nil, false, err
	}
	if !admitted {
		// The message does not count the runs: a count that moves would rewrite the status of
		// every waiting Canary at each of its looks.
		msg := fmt.Sprintf("the cap of %d runs at once is reached (--max-progressing); the run starts when a slot frees", r.MaxProgressing)
		if running {
			msg = fmt.Sprintf("resumed after a pause, the run waits in line for one of the %d slots (--max-progressing) before it advances; its checks go on", r.MaxProgressing)
		}
		return &plan.Hold{Reason: sluicev1.ReasonRolloutCapReached, Message: msg}, nil, false, nil
	}
	return nil, nil, back, nil
}

// rolloutCap counts runs in flight from the cache, plus runs this process admitted in the last
// few seconds whose status the cache may not show yet, and hands the free slots out in the order
// of the line (capline.go). Counting and admitting are one step under its lock, so two workers
// never both take the last slot.
type rolloutCap struct {
	mu       sync.Mutex
	admitted map[types.NamespacedName]admission
}

// admission is a run this process let start (or resume): when, and the revision it runs.
type admission struct {
	at       time.Time
	revision string
	rejoin   bool // a run resumed after a pause
}

// admissionMemory is how long an admitted run is counted before the cache must show it.
const admissionMemory = 30 * time.Second

// admit lets self's run of revision start (or, resumed after a pause, advance again) if fewer than
// r.MaxProgressing other runs are in flight and self is next in line for a free slot, and
// remembers it.
func (c *rolloutCap) admit(ctx context.Context, r *Reconciler, self *sluicev1.Canary, revision string, now time.Time) (bool, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	running, err := c.running(ctx, r, self, now)
	if err != nil {
		return false, err
	}
	n := 0
	for _, k := range running {
		n += k
	}
	if n >= r.MaxProgressing {
		return false, nil
	}
	line, err := c.line(ctx, r, self, now)
	if err != nil {
		return false, err
	}
	me := client.ObjectKeyFromObject(self)
	next := nextInLine(line, running, r.MaxProgressing-n)
	if !slices.ContainsFunc(next, func(w waiter) bool { return w.namespace == me.Namespace && w.name == me.Name }) {
		return false, nil
	}
	if c.admitted == nil {
		c.admitted = map[types.NamespacedName]admission{}
	}
	c.admitted[me] = admission{at: now, revision: revision, rejoin: runningPhases[self.Status.Phase]}
	return true, nil
}

// line is the runs in line for a slot, self among them: those the cache shows in line, but the
// ones this process admitted (they count as running), and self, waiting since it joined.
func (c *rolloutCap) line(ctx context.Context, r *Reconciler, self *sluicev1.Canary, now time.Time) ([]waiter, error) {
	list := &sluicev1.CanaryList{}
	if err := r.listIndexed(ctx, list, "", indexRunning, indexRunningCapped, indexRunningValue); err != nil {
		return nil, fmt.Errorf("listing canaries: %w", err)
	}
	me := client.ObjectKeyFromObject(self)
	line := []waiter{waiterOf(self, now)}
	for i := range list.Items {
		key := client.ObjectKeyFromObject(&list.Items[i])
		if _, admitted := c.admitted[key]; key == me || admitted {
			continue
		}
		line = append(line, waiterOf(&list.Items[i], now))
	}
	return line, nil
}

// running counts the runs in flight but self's, by namespace; c.mu is held.
func (c *rolloutCap) running(ctx context.Context, r *Reconciler, self *sluicev1.Canary, now time.Time) (map[string]int, error) {
	list := &sluicev1.CanaryList{}
	if err := r.listIndexed(ctx, list, "", indexRunning, "true", indexRunningValue); err != nil {
		return nil, fmt.Errorf("listing canaries: %w", err)
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
	byNamespace := map[string]int{}
	for key := range counted {
		byNamespace[key.Namespace]++
	}
	return byNamespace, nil
}

// shownByCache reports whether the cache shows the admitted run started (its revision applied) —
// or, for a run resumed after a pause, holding its slot again or ended — or the Canary gone: a run
// that ended before any count saw it in flight frees its slot too.
func shownByCache(ctx context.Context, r *Reconciler, key types.NamespacedName, a admission) bool {
	cn := &sluicev1.Canary{}
	if err := r.Get(ctx, key, cn); err != nil {
		return apierrors.IsNotFound(err)
	}
	if a.rejoin {
		return cn.Status.LastAppliedSpec != a.revision || !rejoining(cn)
	}
	return cn.Status.LastAppliedSpec == a.revision
}

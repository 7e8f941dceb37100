package canary

import (
	"cmp"
	"slices"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
)

// The line for the cap's slots (--max-progressing).
//
// A run holds a slot while it is in flight (Progressing, WaitingPromotion, Promoting, Finalising)
// and not suspended: a suspended run gives its slot up. The runs that wait for a slot — new
// revisions in Waiting, and runs resumed after a pause — stand in line, and the free slots go to
// them one by one: each to a run of the namespace with the fewest runs in flight (counting the
// slots already handed out), then to the one that has waited longest (compareWaits). No namespace
// gets another slot while a namespace with fewer runs waits, so one tenant's many revisions
// cannot keep another tenant's run from starting; no run in flight is stopped for the line (that
// would move traffic backwards), so a namespace keeps the slots it took while nobody else waited
// until its runs end.
//
// A run paused with spec.suspend gives its slot up (status.slotReleased). Resumed, it gets back in
// line with its traffic where the pause left it: until a slot is its again, the cap holds its
// advance as a closed window does — its checks go on every interval and a failing canary still
// rolls back — and its Ready condition says RolloutCapReached. A promotion (Promoting,
// Finalising) paused stops counting too, and resumes at once: it ends the run.

// holdsSlot reports whether c's run counts against the cap: in flight, not suspended, and not
// waiting to get back in line after a pause (status.slotReleased).
func holdsSlot(c *sluicev1.Canary) bool {
	return runningPhases[c.Status.Phase] && !c.Spec.Suspend && !(rejoinPhase(c.Status.Phase) && c.Status.SlotReleased)
}

// inLine reports whether c waits in line for a slot: its Ready condition says the cap holds it
// (not a closed window, say, which would leave the slot it is given empty), and it is a new
// revision Waiting or a resumed run that gave its slot up; not suspended.
func inLine(c *sluicev1.Canary) bool {
	if c.Spec.Suspend || !heldByCap(c) {
		return false
	}
	return c.Status.Phase == sluicev1.CanaryPhaseWaiting || rejoining(c)
}

// rejoinPhase reports whether a run in phase p gets back in line after a pause.
func rejoinPhase(p sluicev1.CanaryPhase) bool {
	return p == sluicev1.CanaryPhaseProgressing || p == sluicev1.CanaryPhaseWaitingPromotion
}

// rejoining reports whether c's run, resumed after a pause, must be admitted to a slot again
// before it advances.
func rejoining(c *sluicev1.Canary) bool {
	return !c.Spec.Suspend && rejoinPhase(c.Status.Phase) && c.Status.SlotReleased
}

// releaseSlot records that c's run, suspended, gives its slot up (status.slotReleased): a run
// with a weight or promotion still to go, under a cap.
func (r *Reconciler) releaseSlot(c *sluicev1.Canary) {
	if r.MaxProgressing > 0 && rejoinPhase(c.Status.Phase) {
		c.Status.SlotReleased = true
	}
}

// waiter is a run in line: its Canary and since when it waits.
type waiter struct {
	namespace, name string
	since           *metav1.Time
}

// waiterOf is c in line: a Canary already in line waits since its phase changed (Waiting since);
// one that joins now (a new revision's first look, a resumed run) since now.
func waiterOf(c *sluicev1.Canary, now time.Time) waiter {
	w := waiter{namespace: c.Namespace, name: c.Name, since: c.Status.LastTransitionTime}
	if !inLine(c) || w.since == nil {
		t := metav1.NewTime(now)
		w.since = &t
	}
	return w
}

// nextInLine returns the runs the free slots go to, in order: each slot to a run of the
// namespace with the fewest runs in flight (running, by namespace, plus the slots handed out
// before it), then to the longest wait, then by namespace and name.
func nextInLine(line []waiter, running map[string]int, free int) []waiter {
	line = slices.Clone(line)
	slices.SortFunc(line, compareWaiters)
	counts := make(map[string]int, len(running))
	for ns, n := range running {
		counts[ns] = n
	}
	var next []waiter
	for len(next) < free && len(line) > 0 {
		best := 0
		for i := range line {
			if counts[line[i].namespace] < counts[line[best].namespace] {
				best = i
			}
		}
		next = append(next, line[best])
		counts[line[best].namespace]++
		line = slices.Delete(line, best, best+1)
	}
	return next
}

// compareWaiters orders runs in line, the longest wait first: the earlier time (none last), then
// namespace and name.
func compareWaiters(a, b waiter) int {
	ta, tb := a.since, b.since
	switch {
	case ta == nil && tb != nil:
		return 1
	case ta != nil && tb == nil:
		return -1
	case ta != nil && !ta.Equal(tb):
		return ta.Compare(tb.Time)
	}
	return cmp.Or(cmp.Compare(a.namespace, b.namespace), cmp.Compare(a.name, b.name))
}

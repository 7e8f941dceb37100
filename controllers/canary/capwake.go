package canary

import (
	"cmp"
	"context"
	"slices"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
)

// The cap's queue. With --max-progressing, a new revision that finds the cap reached waits in
// phase Waiting and looks again every interval. When a run ends (its Canary leaves the running
// phases, or is deleted mid-run), the slots the cache shows free go to the runs that have waited
// longest (the earliest Waiting since, then by namespace and name): they are woken at once, so a slot
// does not stay empty for up to an interval and the runs start in the order their revisions
// came. A waiting Canary that looks on its own may still take a slot first; the order is a
// preference, the cap is the rule (hold.go). The waiting Canaries are found through the runs
// index of the cache, so the work does not grow with the number of Canaries that are not waiting.

// heldByCap reports whether c's Ready condition says it waits for the cap.
func heldByCap(c *sluicev1.Canary) bool {
	ready := meta.FindStatusCondition(c.Status.Conditions, sluicev1.ConditionReady)
	return ready != nil && ready.Reason == sluicev1.ReasonRolloutCapReached
}

// capWakeHandler wakes the longest-waiting capped Canaries whenever a run ends.
func (r *Reconciler) capWakeHandler() handler.EventHandler {
	return handler.Funcs{
		UpdateFunc: func(ctx context.Context, e event.UpdateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			old, okOld := e.ObjectOld.(*sluicev1.Canary)
			cur, okCur := e.ObjectNew.(*sluicev1.Canary)
			if okOld && okCur && runningPhases[old.Status.Phase] && !runningPhases[cur.Status.Phase] {
				r.wakeLongestWaiting(ctx, q)
			}
		},
		DeleteFunc: func(ctx context.Context, e event.DeleteEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			if c, ok := e.Object.(*sluicev1.Canary); ok && runningPhases[c.Status.Phase] {
				r.wakeLongestWaiting(ctx, q)
			}
		},
	}
}

// wakeLongestWaiting queues as many capped Canaries as the cache shows free slots (at least one),
// those that have waited longest first. Runs often end together (their promotions are in step):
// each end wakes the waiters the slots it sees free allow, so a woken Canary whose start the
// cache does not show yet does not take the wake of the next slot. A woken Canary that finds the
// cap reached after all stays Waiting, writing nothing.
func (r *Reconciler) wakeLongestWaiting(ctx context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	waiting := &sluicev1.CanaryList{}
	if err := r.listIndexed(ctx, waiting, "", indexRunning, indexRunningCapped, indexRunningValue); err != nil {
		return // the waiting Canaries look again on their own within an interval
	}
	running := &sluicev1.CanaryList{}
	if err := r.listIndexed(ctx, running, "", indexRunning, "true", indexRunningValue); err != nil {
		return
	}
	free := max(1, r.MaxProgressing-len(running.Items))
	order := make([]*sluicev1.Canary, 0, len(waiting.Items))
	for i := range waiting.Items {
		order = append(order, &waiting.Items[i])
	}
	slices.SortFunc(order, compareWaits)
	for _, c := range order[:min(free, len(order))] {
		q.Add(reconcile.Request{NamespacedName: client.ObjectKeyFromObject(c)})
	}
}

// compareWaits orders waiting Canaries, the longest wait first: the earlier phase change (one
// without a transition time last), then namespace and name.
func compareWaits(a, b *sluicev1.Canary) int {
	ta, tb := a.Status.LastTransitionTime, b.Status.LastTransitionTime
	switch {
	case ta == nil && tb != nil:
		return 1
	case ta != nil && tb == nil:
		return -1
	case ta != nil && !ta.Equal(tb):
		return ta.Compare(tb.Time)
	}
	return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
}

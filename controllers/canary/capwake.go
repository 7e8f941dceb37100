package canary

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
)

// The cap's wake-ups. A new revision that finds no slot for it waits in phase Waiting (a resumed
// run at its weight) and looks again every interval. Whenever a slot frees (a run ends, is
// suspended or deleted) or a run joins the line while slots are free, the runs next in line
// (capline.go) are woken at once, as many as the cache shows free slots, so a slot does not stay
// empty for up to an interval. The line is the rule: a run that looks on its own takes a free
// slot only when it is next in line (hold.go). The runs in line and in flight are found through
// the runs index of the cache, so the work does not grow with the number of Canaries that are not
// waiting.

// heldByCap reports whether c's Ready condition says it waits for the cap.
func heldByCap(c *sluicev1.Canary) bool {
	ready := meta.FindStatusCondition(c.Status.Conditions, sluicev1.ConditionReady)
	return ready != nil && ready.Reason == sluicev1.ReasonRolloutCapReached
}

// capWakeHandler wakes the runs next in line whenever a slot frees or a run joins the line.
func (r *Reconciler) capWakeHandler() handler.EventHandler {
	return handler.Funcs{
		UpdateFunc: func(ctx context.Context, e event.UpdateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			old, okOld := e.ObjectOld.(*sluicev1.Canary)
			cur, okCur := e.ObjectNew.(*sluicev1.Canary)
			switch {
			case !okOld || !okCur:
			case holdsSlot(old) && !holdsSlot(cur):
				r.wakeNextInLine(ctx, q, true)
			case !inLine(old) && inLine(cur):
				r.wakeNextInLine(ctx, q, false)
			}
		},
		DeleteFunc: func(ctx context.Context, e event.DeleteEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			if c, ok := e.Object.(*sluicev1.Canary); ok && holdsSlot(c) {
				r.wakeNextInLine(ctx, q, true)
			}
		},
	}
}

// wakeNextInLine queues the runs next in line for the slots the cache shows free: at least one
// when a slot just freed (runs often end together, and the cache may not show every end yet),
// none when all are taken otherwise. A woken Canary that finds no slot for it after all stays in
// line, writing nothing.
func (r *Reconciler) wakeNextInLine(ctx context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request], freed bool) {
	waiting := &sluicev1.CanaryList{}
	if err := r.listIndexed(ctx, waiting, "", indexRunning, indexRunningCapped, indexRunningValue); err != nil {
		return // the waiting Canaries look again on their own within an interval
	}
	running := &sluicev1.CanaryList{}
	if err := r.listIndexed(ctx, running, "", indexRunning, "true", indexRunningValue); err != nil {
		return
	}
	free := r.MaxProgressing - len(running.Items)
	if freed {
		free = max(1, free)
	}
	counts := map[string]int{}
	for i := range running.Items {
		counts[running.Items[i].Namespace]++
	}
	line := make([]waiter, 0, len(waiting.Items))
	for i := range waiting.Items {
		line = append(line, waiterOf(&waiting.Items[i], time.Time{}))
	}
	for _, w := range nextInLine(line, counts, free) {
		q.Add(reconcile.Request{NamespacedName: client.ObjectKey{Namespace: w.namespace, Name: w.name}})
	}
}

// compareWaits orders waiting Canaries, the longest wait first: the earlier phase change (one
// without a transition time last), then namespace and name.
func compareWaits(a, b *sluicev1.Canary) int {
	return compareWaiters(waiter{namespace: a.Namespace, name: a.Name, since: a.Status.LastTransitionTime},
		waiter{namespace: b.Namespace, name: b.Name, since: b.Status.LastTransitionTime})
}

package canary

import (
	"context"
	"maps"

	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
)

// Target watch. A target Deployment (or DaemonSet) wakes the Canaries that target it on every
// change of its spec or metadata (a new revision, a scale, a deletion) and on its creation and
// deletion. A change of its status alone (the Deployment controller counting pods, pods turning
// ready or going away) wakes only the Canaries that read it: a run in flight (the canary's
// readiness), one initializing or waiting, and an ended run whose canary still holds traffic.
// An idle Canary decides nothing from its target's status (its revision is the template and the
// configs, its scale-down the spec), so the cluster's own churn — the Deployment controller
// catching up with a thousand scale-downs after initialization — costs it no reconcile.

// targetHandler maps target events to the Canaries of that target (by index).
func (r *Reconciler) targetHandler() handler.EventHandler {
	enqueue := func(ctx context.Context, o client.Object, q workqueue.TypedRateLimitingInterface[reconcile.Request], statusOnly bool) {
		list := &sluicev1.CanaryList{}
		if err := r.List(ctx, list, client.InNamespace(o.GetNamespace()), client.MatchingFields{indexTarget: o.GetName()},
			client.UnsafeDisableDeepCopy); err != nil {
			return
		}
		for i := range list.Items {
			c := &list.Items[i]
			if statusOnly && !readsTargetStatus(c) {
				continue
			}
			q.Add(reconcile.Request{NamespacedName: client.ObjectKeyFromObject(c)})
		}
	}
	return handler.Funcs{
		CreateFunc: func(ctx context.Context, e event.CreateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			enqueue(ctx, e.Object, q, false)
		},
		UpdateFunc: func(ctx context.Context, e event.UpdateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			enqueue(ctx, e.ObjectNew, q, statusOnlyChange(e.ObjectOld, e.ObjectNew))
		},
		DeleteFunc: func(ctx context.Context, e event.DeleteEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			enqueue(ctx, e.Object, q, false)
		},
		GenericFunc: func(ctx context.Context, e event.GenericEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			enqueue(ctx, e.Object, q, false)
		},
	}
}

// statusOnlyChange reports whether the change from old to cur is in the status alone: the same
// generation (spec), labels, annotations, owners, finalizers and no deletion.
func statusOnlyChange(old, cur client.Object) bool {
	if old == nil || cur == nil {
		return false
	}
	return old.GetGeneration() == cur.GetGeneration() && cur.GetDeletionTimestamp().IsZero() &&
		maps.Equal(old.GetLabels(), cur.GetLabels()) && maps.Equal(old.GetAnnotations(), cur.GetAnnotations()) &&
		len(old.GetOwnerReferences()) == len(cur.GetOwnerReferences()) && len(old.GetFinalizers()) == len(cur.GetFinalizers())
}

// readsTargetStatus reports whether a tick of c reads its target's status: anything but an idle
// phase (a run in flight, initializing, waiting, a new Canary), an ended run whose canary still
// holds traffic, and a stalled Canary (its cause may be anywhere).
func readsTargetStatus(c *sluicev1.Canary) bool {
	if !idlePhases[c.Status.Phase] || c.Status.CanaryWeight > 0 {
		return true
	}
	for _, cond := range c.Status.Conditions {
		if cond.Type == sluicev1.ConditionStalled && cond.Status == "True" {
			return true
		}
	}
	return false
}

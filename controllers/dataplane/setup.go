package dataplane

import (
	"context"
	"fmt"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
	"sluice.dev/sluice/mesh"
)

// defaultEventDelay batches the events that wake an upgrade up.
const defaultEventDelay = 250 * time.Millisecond

// SetupWithManager registers the controller: it reconciles DataPlanes, and wakes those that
// watch the cluster (all but the suspended ones and runs that ended RolledBack or Failed: a
// converged data plane keeps watching for drift) on changes to namespaces, pods (from the first
// DataPlane on: podWatch), Deployments, StatefulSets and DaemonSets (the control plane's
// included), batched by Options.EventDelay.
// maxConcurrent bounds the workers.
// Without the DataPlane CRD installed it registers nothing (and logs why).
func (r *Reconciler) SetupWithManager(ctx context.Context, mgr ctrl.Manager, maxConcurrent int) error {
	gk := schema.GroupKind{Group: sluicev1.GroupVersion.Group, Kind: "DataPlane"}
	if _, err := mgr.GetRESTMapper().RESTMapping(gk); err != nil {
		log.FromContext(ctx).Info("DataPlane CRD not installed: the dataplane controller is off", "error", err.Error())
		return nil
	}
	// Notifications are delivered in the background; a stopping manager waits for them.
	if err := mgr.Add(&r.deliveries); err != nil {
		return err
	}
	wake := r.wakeRunning()
	// Every pod matters: one that comes back without the proxy is as much news as a meshed one.
	notJob := predicate.NewPredicateFuncs(func(o client.Object) bool {
		pod, ok := o.(*corev1.Pod)
		return ok && !mesh.JobOwned(pod)
	})
	c, err := ctrl.NewControllerManagedBy(mgr).
		Named("dataplane").
		For(&sluicev1.DataPlane{}, builder.WithPredicates(predicate.Or(predicate.GenerationChangedPredicate{},
			predicate.AnnotationChangedPredicate{}, predicate.LabelChangedPredicate{}, deleting()))).
		Watches(&corev1.Namespace{}, wake).
		Watches(&appsv1.Deployment{}, wake).
		Watches(&appsv1.StatefulSet{}, wake).
		Watches(&appsv1.DaemonSet{}, wake).
		WithOptions(controller.Options{MaxConcurrentReconciles: maxConcurrent}).
		Build(r)
	if err != nil {
		return err
	}
	r.podWatch.start = func() error {
		return c.Watch(source.Kind[client.Object](mgr.GetCache(), &corev1.Pod{}, wake, notJob))
	}
	return nil
}

// podWatch starts the watch of pods with the first DataPlane the controller reconciles. Pods are
// the cluster's most numerous and busiest kind and only a DataPlane reads them: a manager that
// only runs Canaries neither caches a pod nor receives a pod event. Once started, the watch stays
// for the manager's life (the next DataPlane needs it again, and the informer would have to sync
// anew).
type podWatch struct {
	mu      sync.Mutex
	started bool
	// start registers the watch (SetupWithManager sets it; nil: nothing to start, as for a
	// Reconciler driven by hand in tests).
	start func() error
}

// ensure starts the watch once; an error is returned (and the next call tries again).
func (w *podWatch) ensure() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.started || w.start == nil {
		return nil
	}
	if err := w.start(); err != nil {
		return fmt.Errorf("watching pods: %w", err)
	}
	w.started = true
	return nil
}

// wakeRunning enqueues every running DataPlane after EventDelay; the queue keeps one entry
// per DataPlane, so a burst of pod events costs one reconcile.
func (r *Reconciler) wakeRunning() handler.EventHandler {
	delay := r.EventDelay
	if delay <= 0 {
		delay = defaultEventDelay
	}
	enqueue := func(ctx context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
		var list sluicev1.DataPlaneList
		if err := r.List(ctx, &list, client.UnsafeDisableDeepCopy); err != nil {
			return
		}
		for i := range list.Items {
			dp := &list.Items[i]
			if running(dp) {
				q.AddAfter(reconcile.Request{NamespacedName: client.ObjectKeyFromObject(dp)}, delay)
			}
		}
	}
	return handler.Funcs{
		CreateFunc: func(ctx context.Context, _ event.CreateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			enqueue(ctx, q)
		},
		UpdateFunc: func(ctx context.Context, _ event.UpdateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			enqueue(ctx, q)
		},
		DeleteFunc: func(ctx context.Context, _ event.DeleteEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			enqueue(ctx, q)
		},
	}
}

// running reports whether dp has work to do when the cluster changes: everything but a suspended
// DataPlane and a run that ended (RolledBack, Failed: the next move is the user's). A converged
// data plane keeps watching, for drift.
func running(dp *sluicev1.DataPlane) bool {
	if dp.Spec.Suspend {
		return false
	}
	switch dp.Status.Phase {
	case sluicev1.DataPlaneRolledBack, sluicev1.DataPlaneFailed:
		return false
	}
	return true
}

// deleting passes updates that set the deletion timestamp (the finalizer has work to do).
func deleting() predicate.Funcs {
	return predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
		return e.ObjectNew.GetDeletionTimestamp() != nil && e.ObjectOld.GetDeletionTimestamp() == nil
	}}
}

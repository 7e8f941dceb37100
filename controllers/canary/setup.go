package canary

import (
	"context"
	"time"

	istionetv1 "istio.io/client-go/pkg/apis/networking/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
	"sluice.dev/sluice/providers"
)

// Field indexes on Canaries.
const (
	indexTarget   = "spec.targetRef.name"
	indexConfigs  = "status.trackedConfigs"
	indexRouteRef = "spec.service.routeRef"
)

// SetupWithManager registers the controller: it reconciles Canaries, the Deployments, Services and
// routes they own, target Deployments (by index), tracked ConfigMaps and Secrets (by index,
// metadata only) and the primary Services' EndpointSlices (by label).
// Route kinds whose CRDs are not installed are not watched. maxConcurrent bounds the workers.
func (r *Reconciler) SetupWithManager(ctx context.Context, mgr ctrl.Manager, maxConcurrent int) error {
	// Notifications are delivered in the background; a stopping manager waits for them.
	if err := mgr.Add(&r.deliveries); err != nil {
		return err
	}
	if err := RegisterIndexes(ctx, mgr.GetFieldIndexer()); err != nil {
		return err
	}
	b := ctrl.NewControllerManagedBy(mgr).
		Named("canary").
		For(&sluicev1.Canary{}, builder.WithPredicates(predicate.Or(
			predicate.GenerationChangedPredicate{}, predicate.AnnotationChangedPredicate{}))).
		Owns(&appsv1.Deployment{}).
		Owns(&appsv1.DaemonSet{}).
		Owns(&corev1.Service{}).
		// Targets by index; a change of a target's status alone wakes only the Canaries that read
		// it (targetwatch.go).
		Watches(&appsv1.Deployment{}, r.targetHandler()).
		Watches(&appsv1.DaemonSet{}, r.targetHandler()).
		// The primary Services' EndpointSlices wake a Canary waiting to return traffic to its
		// primary (endpointwatch.go); the manager's cache holds those slices alone, trimmed.
		Watches(&discoveryv1.EndpointSlice{}, r.endpointSliceHandler()).
		// Metadata only: a resourceVersion change is all a tracked config needs to start a run, and
		// no Secret or ConfigMap contents are cached (see controllers/manager and configread).
		Watches(&corev1.ConfigMap{}, handler.EnqueueRequestsFromMapFunc(r.byIndex(indexConfigs, func(o client.Object) string {
			return kindConfigMap + "/" + o.GetName()
		})), builder.OnlyMetadata).
		Watches(&corev1.Secret{}, handler.EnqueueRequestsFromMapFunc(r.byIndex(indexConfigs, func(o client.Object) string {
			return kindSecret + "/" + o.GetName()
		})), builder.OnlyMetadata).
		WithOptions(controller.Options{MaxConcurrentReconciles: maxConcurrent, RateLimiter: errorBackoff()})
	if r.MaxProgressing > 0 {
		// A run that ends wakes the runs waiting longest for the cap (capwake.go).
		b = b.Watches(&sluicev1.Canary{}, r.capWakeHandler())
	}
	mapper := mgr.GetRESTMapper()
	// Generated routes are owned; a user's route named by routeRef is watched through the index, so
	// an outside edit of its weights is put back at once, not at the next step.
	// Either way the echo of our own route write is skipped (notOwnRouteWrite).
	notOurs := builder.WithPredicates(r.notOwnRouteWrite())
	if installed(mapper, schema.GroupKind{Group: gwv1.GroupName, Kind: "HTTPRoute"}) {
		b = b.Owns(&gwv1.HTTPRoute{}, notOurs).Watches(&gwv1.HTTPRoute{}, handler.EnqueueRequestsFromMapFunc(
			r.byIndex(indexRouteRef, func(o client.Object) string { return "HTTPRoute/" + o.GetName() })), notOurs)
	}
	if installed(mapper, schema.GroupKind{Group: "networking.istio.io", Kind: "VirtualService"}) {
		b = b.Owns(&istionetv1.VirtualService{}, notOurs).Watches(&istionetv1.VirtualService{}, handler.EnqueueRequestsFromMapFunc(
			r.byIndex(indexRouteRef, func(o client.Object) string { return "VirtualService/" + o.GetName() })), notOurs)
	}
	return r.watchAutoscalers(b, mapper).Complete(r)
}

// notOwnRouteWrite passes every route event but the creation or update that shows exactly the
// version a write of our Routers produced (providers.IsOwnWrite): the tick that wrote it already
// planned with it, so its echo would only cost a tick (one per route write). A deletion always
// passes, as does any version someone else wrote, and our own write once the memory of it is
// gone: skipping is an optimization that never hides another writer's change.
func (r *Reconciler) notOwnRouteWrite() predicate.Predicate {
	return predicate.Funcs{
		CreateFunc: func(e event.CreateEvent) bool { return !providers.IsOwnWrite(r.RouterClient, e.Object) },
		UpdateFunc: func(e event.UpdateEvent) bool { return !providers.IsOwnWrite(r.RouterClient, e.ObjectNew) },
	}
}

// MaxErrorBackoff bounds the wait before a failed tick is retried. A tick fails on an error a
// retry may fix (a refused route write, say); during a run, or after a rollback whose route
// write failed, traffic may sit where it should not until a retry succeeds, and the progress
// deadline is judged only when a tick runs: the default controller backoff (up to 16 minutes)
// would leave both far behind their cause.
const MaxErrorBackoff = 10 * time.Second

// errorBackoff is the controller's retry backoff: exponential from 5 ms, at most MaxErrorBackoff.
func errorBackoff() workqueue.TypedRateLimiter[reconcile.Request] {
	return workqueue.NewTypedItemExponentialFailureRateLimiter[reconcile.Request](5*time.Millisecond, MaxErrorBackoff)
}

// byIndex maps an object to the Canaries in its namespace whose index holds keyOf(object).
func (r *Reconciler) byIndex(index string, keyOf func(client.Object) string) handler.MapFunc {
	return func(ctx context.Context, o client.Object) []reconcile.Request {
		list := &sluicev1.CanaryList{}
		if err := r.List(ctx, list, client.InNamespace(o.GetNamespace()), client.MatchingFields{index: keyOf(o)}); err != nil {
			return nil
		}
		reqs := make([]reconcile.Request, 0, len(list.Items))
		for i := range list.Items {
			reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&list.Items[i])})
		}
		return reqs
	}
}

func installed(mapper meta.RESTMapper, gk schema.GroupKind) bool {
	_, err := mapper.RESTMapping(gk)
	return err == nil
}

// RegisterIndexes adds the cache indexes the Reconciler reads through (target, tracked configs,
// routeRef, runs in flight) to idx. SetupWithManager calls it; a Reconciler over a cache built by
// hand (benchmarks) must call it on that cache.
func RegisterIndexes(ctx context.Context, idx client.FieldIndexer) error {
	if err := idx.IndexField(ctx, &sluicev1.Canary{}, indexTarget, indexTargetValue); err != nil {
		return err
	}
	if err := idx.IndexField(ctx, &sluicev1.Canary{}, indexConfigs, func(o client.Object) []string {
		var keys []string
		for k := range o.(*sluicev1.Canary).Status.TrackedConfigs {
			keys = append(keys, k)
		}
		return keys
	}); err != nil {
		return err
	}
	if err := idx.IndexField(ctx, &sluicev1.Canary{}, indexRouteRef, func(o client.Object) []string {
		if ref := o.(*sluicev1.Canary).Spec.Service.RouteRef; ref != nil {
			return []string{ref.Kind + "/" + ref.Name}
		}
		return nil
	}); err != nil {
		return err
	}
	if err := registerAutoscalerIndex(ctx, idx); err != nil {
		return err
	}
	return registerEconomyIndexes(ctx, idx)
}

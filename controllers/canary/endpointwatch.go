package canary

import (
	"context"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
)

// EndpointSlice watch. The tick that returns all traffic to the primary waits, while the primary
// Service's EndpointSlices do not show the primary's rollout yet (plan: primaryEndpointsCaughtUp),
// and used to look again every plan.PollInterval. The controller watches the primary Services'
// slices (the cache holds those alone: controllers/manager cacheslices.go), so a change of one
// wakes its Canary at once. Only a Canary that can be waiting on them is woken: one whose canary
// holds traffic (status.canaryWeight > 0, the only state whose ticks read the primary's
// endpoints: plan.ReturnsAllTraffic). A Canary at rest ignores its primary's pods coming and
// going, so the cluster's churn costs it no reconcile.

// endpointSliceHandler maps a primary Service's EndpointSlice to its Canary — named by the
// ownership label, which the EndpointSlice controller copies from the Service — when that Canary
// holds traffic on its canary. The Canary is read from the cache without a copy.
func (r *Reconciler) endpointSliceHandler() handler.EventHandler {
	return handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, o client.Object) []reconcile.Request {
		name := o.GetLabels()[LabelCanary]
		if name == "" || o.GetLabels()[sluicev1.LabelServiceRole] != sluicev1.ServiceRolePrimary {
			return nil
		}
		key := client.ObjectKey{Namespace: o.GetNamespace(), Name: name}
		c := &sluicev1.Canary{}
		if err := r.Get(ctx, key, c, client.UnsafeDisableDeepCopy); err != nil || !waitsOnPrimaryEndpoints(c) {
			return nil
		}
		return []reconcile.Request{{NamespacedName: key}}
	})
}

// waitsOnPrimaryEndpoints reports whether a tick of c may read its primary's endpoints: its
// canary holds traffic, which a tick returns to the primary only once the endpoints show it ready.
func waitsOnPrimaryEndpoints(c *sluicev1.Canary) bool {
	return c.Status.CanaryWeight > 0
}

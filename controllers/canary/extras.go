package canary

import (
	"context"

	"sigs.k8s.io/controller-runtime/pkg/log"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
	"sluice.dev/sluice/controllers/canary/plan"
	"sluice.dev/sluice/providers"
)

// observeExtras reads the route's mirroring and session affinity into o (cached reads, like the
// weights), so the plan restores them when the route drifts and removes ones an earlier spec
// left; when they cannot be read, o says they are unknown.
func observeExtras(ctx context.Context, router providers.Router, canary *sluicev1.Canary, o *plan.Observed) {
	mirror, err := router.GetMirror(ctx, canary)
	if err != nil {
		log.FromContext(ctx).Info("Reading route mirroring failed", "error", err.Error())
		return
	}
	cookie, err := router.GetSessionAffinity(ctx, canary)
	if err != nil {
		log.FromContext(ctx).Info("Reading route session affinity failed", "error", err.Error())
		return
	}
	o.RouteMirror, o.RouteCookie, o.RouteExtrasKnown = mirror, cookie, true
}

package gatewayapi

import (
	"context"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
	"sluice.dev/sluice/providers"
)

var _ providers.ReachPinner = (*Router)(nil)

// PinReach returns a copy of canary whose spec.service.gatewayRefs and hosts are the generated
// HTTPRoute's parentRefs and hostnames (generatedSpec renders them back unchanged: they already
// carry every defaulted field), so the route written from the copy has the parents and hostnames
// it has now. errors: see providers.ReachPinner (ErrRouteConflict is the conflict).
func (r *Router) PinReach(ctx context.Context, canary *sluicev1.Canary) (*sluicev1.Canary, error) {
	ref, err := routeRef(canary)
	if err != nil || ref != nil {
		return canary, err
	}
	route, err := r.generatedRoute(ctx, canary)
	if err != nil {
		return nil, err
	}
	pinned := canary.DeepCopy()
	pinned.Spec.Service.GatewayRefs = nil
	for _, p := range route.Spec.ParentRefs {
		pinned.Spec.Service.GatewayRefs = append(pinned.Spec.Service.GatewayRefs, *p.DeepCopy())
	}
	pinned.Spec.Service.Hosts = nil
	for _, h := range route.Spec.Hostnames {
		pinned.Spec.Service.Hosts = append(pinned.Spec.Service.Hosts, string(h))
	}
	return pinned, nil
}

package istio

import (
	"context"
	"fmt"
	"slices"

	istionetv1 "istio.io/client-go/pkg/apis/networking/v1"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
	"sluice.dev/sluice/providers"
)

var _ providers.ReachPinner = (*Router)(nil)

// PinReach returns a copy of canary whose spec.service.hosts and gateways are the generated
// VirtualService's (its hosts include the apex Service, which desiredVirtualService puts first
// anyway), so the VirtualService written from the copy has the hosts and gateways it has now.
// errors: see providers.ReachPinner (ErrNotControlled is the conflict).
func (r *Router) PinReach(ctx context.Context, canary *sluicev1.Canary) (*sluicev1.Canary, error) {
	ref, err := referenced(canary)
	if err != nil || ref {
		return canary, err
	}
	vs := &istionetv1.VirtualService{}
	ok, err := r.getControlled(ctx, canary, canary.ServiceNames().Apex, vs)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, fmt.Errorf("%w: VirtualService %s/%s", providers.ErrRouteNotFound, canary.Namespace, canary.ServiceNames().Apex)
	}
	pinned := canary.DeepCopy()
	pinned.Spec.Service.Hosts = slices.Clone(vs.Spec.GetHosts())
	pinned.Spec.Service.Gateways = slices.Clone(vs.Spec.GetGateways())
	return pinned, nil
}

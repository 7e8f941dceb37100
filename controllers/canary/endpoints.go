package canary

import (
	"context"
	"fmt"

	discoveryv1 "k8s.io/api/discovery/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
	"sluice.dev/sluice/controllers/canary/plan"
)

// +kubebuilder:rbac:groups=discovery.k8s.io,resources=endpointslices,verbs=list

// primaryEndpoints reads the primary Service's endpoints around the cache, for a tick whose
// decision sends all traffic back to the primary (plan.ReturnsAllTraffic): it judges the
// endpoints the data plane routes by, not only the Deployment's status
// (plan.Observed.PrimaryEndpoints). Only those ticks read, so the steps of a run and a Canary at
// rest cost no EndpointSlice read or watch. nil when the Service has no EndpointSlice at all (a cluster without the EndpointSlice controller,
// which keeps at least a placeholder slice for every Service with a selector): then the
// workload's status is all there is to judge by.
func (r *Reconciler) primaryEndpoints(ctx context.Context, canary *sluicev1.Canary) (*plan.Endpoints, error) {
	reader := client.Reader(r.Client)
	if r.APIReader != nil {
		reader = r.APIReader
	}
	name := canary.ServiceNames().Primary
	slices := &discoveryv1.EndpointSliceList{}
	if err := reader.List(ctx, slices, client.InNamespace(canary.Namespace), client.MatchingLabels{discoveryv1.LabelServiceName: name}); err != nil {
		return nil, fmt.Errorf("listing the EndpointSlices of Service %s: %w", name, err)
	}
	if len(slices.Items) == 0 {
		return nil, nil
	}
	e := countEndpoints(slices.Items)
	return &e, nil
}

// countEndpoints counts the endpoints of a Service's EndpointSlices, each pod (or, without a
// target reference, each address) once: ready, and serving (not terminating).
func countEndpoints(slices []discoveryv1.EndpointSlice) plan.Endpoints {
	ready, serving := map[string]bool{}, map[string]bool{}
	for _, sl := range slices {
		for _, ep := range sl.Endpoints {
			key := ""
			if ep.TargetRef != nil {
				key = ep.TargetRef.Kind + "/" + ep.TargetRef.Name
			} else if len(ep.Addresses) > 0 {
				key = "address/" + ep.Addresses[0]
			}
			if key == "" || (ep.Conditions.Terminating != nil && *ep.Conditions.Terminating) {
				continue
			}
			serving[key] = true
			if ep.Conditions.Ready == nil || *ep.Conditions.Ready {
				ready[key] = true // an unset ready condition means ready (EndpointConditions)
			}
		}
	}
	return plan.Endpoints{Ready: int32(len(ready)), Serving: int32(len(serving))}
}

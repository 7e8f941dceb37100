package canary

import (
	"context"
	"fmt"

	discoveryv1 "k8s.io/api/discovery/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
	"sluice.dev/sluice/controllers/canary/plan"
)

// +kubebuilder:rbac:groups=discovery.k8s.io,resources=endpointslices,verbs=list;watch

// primaryEndpoints reads the primary Service's endpoints for a tick whose decision sends all
// traffic back to the primary (plan.ReturnsAllTraffic): it judges the endpoints the data plane
// routes by, not only the Deployment's status (plan.Observed.PrimaryEndpoints). nil when the
// Service has no EndpointSlice at all (a cluster without the EndpointSlice controller, which
// keeps at least a placeholder slice for every Service with a selector): then the workload's
// status is all there is to judge by.
//
// The slices come from the cache, which holds the primary Services' slices alone (selected by
// the role label the EndpointSlice controller copies from the Service; controllers/manager
// cacheslices.go) and which the controller watches (endpointwatch.go): no request per rollout.
// The cache may lag the apiserver; that is safe only because the plan judges a slice's pods by
// their ReplicaSet (plan.Endpoints.OtherRevision), so a stale slice can only hold the switch back.
// Hence the cache is read only when the primary's Deployment names its current ReplicaSet
// (currentReplicaSet). Otherwise — a DaemonSet primary, a Deployment whose controller has not
// said yet, a Service whose slices are not in the cache (created by an older Sluice and not
// relabelled yet, or the label not copied yet) — the slices are read around the cache, as
// before: a fresh read, judged by its counts (and by its pods' ReplicaSet when it is known).
func (r *Reconciler) primaryEndpoints(ctx context.Context, canary *sluicev1.Canary, primary workload) (*plan.Endpoints, error) {
	name := canary.ServiceNames().Primary
	rs := currentReplicaSet(primary)
	if rs != "" {
		slices := &discoveryv1.EndpointSliceList{}
		if err := r.Client.List(ctx, slices, client.InNamespace(canary.Namespace),
			client.MatchingLabels{discoveryv1.LabelServiceName: name, sluicev1.LabelServiceRole: sluicev1.ServiceRolePrimary}); err != nil {
			return nil, fmt.Errorf("listing the EndpointSlices of Service %s: %w", name, err)
		}
		if len(slices.Items) > 0 {
			return judgedEndpoints(slices.Items, rs), nil
		}
	}
	reader := client.Reader(r.Client)
	if r.APIReader != nil {
		reader = r.APIReader
	}
	slices := &discoveryv1.EndpointSliceList{}
	if err := reader.List(ctx, slices, client.InNamespace(canary.Namespace), client.MatchingLabels{discoveryv1.LabelServiceName: name}); err != nil {
		return nil, fmt.Errorf("listing the EndpointSlices of Service %s: %w", name, err)
	}
	if len(slices.Items) == 0 {
		return nil, nil
	}
	return judgedEndpoints(slices.Items, rs), nil
}

// judgedEndpoints counts the slices' endpoints and, when the primary's current ReplicaSet rs is
// known, the serving ones of another ReplicaSet.
// It notes whether every slice carries the role label, which the controller's watch selects.
func judgedEndpoints(slices []discoveryv1.EndpointSlice, rs string) *plan.Endpoints {
	e := countEndpoints(slices)
	if rs != "" {
		e.OtherRevision = otherRevisionEndpoints(slices, rs)
	}
	e.Watched = true
	for _, sl := range slices {
		if sl.Labels[sluicev1.LabelServiceRole] != sluicev1.ServiceRolePrimary {
			e.Watched = false
		}
	}
	return &e
}

// countEndpoints counts the endpoints of a Service's EndpointSlices, each pod (or, without a
// target reference, each address) once: ready, and serving (not terminating).
func countEndpoints(slices []discoveryv1.EndpointSlice) plan.Endpoints {
	ready, serving := map[string]bool{}, map[string]bool{}
	for _, sl := range slices {
		for _, ep := range sl.Endpoints {
			key := endpointKey(ep)
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

package dataplane

import (
	"context"
	"fmt"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
	"sluice.dev/sluice/controllers/dataplane/waves"
	"sluice.dev/sluice/mesh"
)

// controlPlane is what one tick saw of the mesh's control plane.
type controlPlane struct {
	namespace string
	state     mesh.ControlPlaneState
	// revisions with an istiod, and revision tags with the revision each serves (Istio).
	revisions map[string]bool
	tags      map[string]string
}

// controlPlaneNamespace is spec.controlPlaneNamespace or the mesh's default.
func controlPlaneNamespace(dp *sluicev1.DataPlane) string {
	if dp.Spec.ControlPlaneNamespace != "" {
		return dp.Spec.ControlPlaneNamespace
	}
	return mesh.DefaultControlPlaneNamespace(dp.Spec.Mesh)
}

// observeControlPlane reads the control-plane Deployments of the mesh from the cache and, for
// Istio, the revision tags (MutatingWebhookConfigurations labelled istio.io/tag), and checks them
// against the declared version. errors: API errors.
func (r *Reconciler) observeControlPlane(ctx context.Context, dp *sluicev1.DataPlane) (*controlPlane, error) {
	cp := &controlPlane{namespace: controlPlaneNamespace(dp)}
	var deps appsv1.DeploymentList
	if err := r.List(ctx, &deps, client.InNamespace(cp.namespace)); err != nil {
		return nil, fmt.Errorf("listing the control plane's Deployments in %s: %w", cp.namespace, err)
	}
	target := waves.Target(dp.Spec)
	switch dp.Spec.Mesh {
	case sluicev1.MeshLinkerd:
		cp.state = mesh.LinkerdControlPlane(deps.Items, cp.namespace, target)
	case sluicev1.MeshIstio:
		cp.revisions = mesh.Revisions(deps.Items)
		var hooks admissionregistrationv1.MutatingWebhookConfigurationList
		if err := r.List(ctx, &hooks, client.HasLabels{mesh.IstioTagLabel}); err != nil {
			return nil, fmt.Errorf("listing Istio revision tags: %w", err)
		}
		cp.tags = map[string]string{}
		for _, h := range hooks.Items {
			cp.tags[h.Labels[mesh.IstioTagLabel]] = h.Labels[mesh.IstioRevLabel]
		}
		cp.state = mesh.IstioControlPlane(deps.Items, cp.namespace, target, rollbackRevisions(dp))
	}
	return cp, nil
}

// rollbackRevisions are the revisions a wave rolling back (or about to) returns to.
func rollbackRevisions(dp *sluicev1.DataPlane) []string {
	seen := map[string]bool{}
	var out []string
	for _, w := range dp.Status.Waves {
		if w.Phase != sluicev1.WaveRestarting && w.Phase != sluicev1.WaveBaking && w.Phase != sluicev1.WaveRollingBack {
			continue
		}
		for _, v := range w.Previous {
			if v != "" && !seen[v] && v != dp.Status.Version {
				seen[v] = true
				out = append(out, v)
			}
		}
	}
	return out
}

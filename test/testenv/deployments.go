package testenv

import (
	"context"
	"fmt"
	"slices"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// MarkRolledOut plays the Deployment controller once, for an apiserver without one (envtest):
// every Deployment of ns — or only those named in only — reports all its replicas updated, ready
// and available for its current generation. Deployments already reporting that are not written.
// errors: listing or patching fails.
func MarkRolledOut(ctx context.Context, c client.Client, ns string, only ...string) error {
	list := &appsv1.DeploymentList{}
	if err := c.List(ctx, list, client.InNamespace(ns)); err != nil {
		return fmt.Errorf("listing deployments: %w", err)
	}
	for i := range list.Items {
		d := &list.Items[i]
		if len(only) > 0 && !slices.Contains(only, d.Name) {
			continue
		}
		n := int32(1)
		if d.Spec.Replicas != nil {
			n = *d.Spec.Replicas
		}
		st := appsv1.DeploymentStatus{ObservedGeneration: d.Generation, Replicas: n, UpdatedReplicas: n,
			ReadyReplicas: n, AvailableReplicas: n}
		if equality.Semantic.DeepEqual(d.Status, st) {
			continue
		}
		patch := client.MergeFrom(d.DeepCopy())
		d.Status = st
		if err := c.Status().Patch(ctx, d, patch); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("writing the status of deployment %s: %w", d.Name, err)
		}
	}
	return nil
}

// PlayDeploymentController calls MarkRolledOut every 50 ms until ctx ends, ignoring errors (a
// conflict just waits for the next round).
func PlayDeploymentController(ctx context.Context, c client.Client, ns string, only ...string) {
	for ctx.Err() == nil {
		_ = MarkRolledOut(ctx, c, ns, only...)
		select {
		case <-ctx.Done():
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// MarkDaemonSetsRolledOut plays the DaemonSet controller once, for an apiserver without one, on a
// cluster of nodes nodes labelled nodeLabels: every DaemonSet of ns — or only those named in only —
// whose pod template's nodeSelector those labels match reports a pod updated, ready and available
// on every node for its current generation; one whose nodeSelector they do not match reports
// none. DaemonSets already reporting that are not written. errors: listing or patching fails.
func MarkDaemonSetsRolledOut(ctx context.Context, c client.Client, ns string, nodes int32, nodeLabels map[string]string, only ...string) error {
	list := &appsv1.DaemonSetList{}
	if err := c.List(ctx, list, client.InNamespace(ns)); err != nil {
		return fmt.Errorf("listing daemonsets: %w", err)
	}
	for i := range list.Items {
		d := &list.Items[i]
		if len(only) > 0 && !slices.Contains(only, d.Name) {
			continue
		}
		n := nodes
		for k, v := range d.Spec.Template.Spec.NodeSelector {
			if nodeLabels[k] != v {
				n = 0
			}
		}
		st := appsv1.DaemonSetStatus{ObservedGeneration: d.Generation, DesiredNumberScheduled: n, CurrentNumberScheduled: n,
			UpdatedNumberScheduled: n, NumberReady: n, NumberAvailable: n}
		if equality.Semantic.DeepEqual(d.Status, st) {
			continue
		}
		patch := client.MergeFrom(d.DeepCopy())
		d.Status = st
		if err := c.Status().Patch(ctx, d, patch); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("writing the status of daemonset %s: %w", d.Name, err)
		}
	}
	return nil
}

package dataplane

import (
	"context"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
	"sluice.dev/sluice/controllers/dataplane/waves"
	"sluice.dev/sluice/controllers/internal/reconcilekit"
	"sluice.dev/sluice/mesh"
)

// fleet is what one tick observed: the namespaces of the data plane with their workloads and
// meshed pods, the selected namespaces it skips, and every selected namespace's name.
type fleet struct {
	namespaces []waves.Namespace
	skipped    []sluicev1.SkippedNamespace
	selected   map[string]bool
}

// observe reads the namespaces, workloads and pods from the cache. Namespaces are selected by
// spec.namespaceSelector, or by default those running the mesh's proxy or with its injection
// enabled. Whatever the selector says, the protected namespaces (kube-system, kube-public,
// kube-node-lease, the control-plane namespace) are skipped with the reason, and so are Istio
// namespaces whose revision cannot be moved and selected namespaces without any proxy (a
// DataPlane never turns injection on). The namespaces of the plan are observed whether or not
// they are still selected. errors: API errors.
func (r *Reconciler) observe(ctx context.Context, dp *sluicev1.DataPlane, cp *controlPlane) (*fleet, error) {
	m := dp.Spec.Mesh
	var nsList corev1.NamespaceList
	if err := r.List(ctx, &nsList, client.UnsafeDisableDeepCopy); err != nil {
		return nil, fmt.Errorf("listing namespaces: %w", err)
	}
	var selector labels.Selector
	if dp.Spec.NamespaceSelector != nil {
		s, err := metav1.LabelSelectorAsSelector(dp.Spec.NamespaceSelector.LabelSelector())
		if err != nil {
			return nil, reconcilekit.Stalled(sluicev1.ReasonInvalidSpec, "spec.namespaceSelector: %w", err)
		}
		selector = s
	}
	planned := map[string]bool{}
	for _, w := range dp.Status.Waves {
		for _, ns := range w.Namespaces {
			planned[ns] = true
		}
	}
	f := &fleet{selected: map[string]bool{}}
	skip := func(ns, reason, msg string) {
		f.skipped = append(f.skipped, sluicev1.SkippedNamespace{Namespace: ns, Reason: reason, Message: msg})
	}
	for i := range nsList.Items {
		ns := &nsList.Items[i]
		if !ns.DeletionTimestamp.IsZero() {
			continue
		}
		pods, err := r.listPods(ctx, ns.Name)
		if err != nil {
			return nil, err
		}
		selected := mesh.InjectionEnabled(ns, m) || runsProxy(pods, m)
		if selector != nil {
			selected = selector.Matches(labels.Set(ns.Labels))
		}
		if !selected && !planned[ns.Name] {
			continue
		}
		if why := mesh.Protected(ns, m, cp.namespace); why != "" {
			skip(ns.Name, sluicev1.ReasonProtectedNamespace, why)
			continue
		}
		f.selected[ns.Name] = selected
		if !planned[ns.Name] {
			if m == sluicev1.MeshIstio {
				if reason, msg := mesh.IstioSkipReason(ns, cp.revisions, cp.tags); reason != "" {
					skip(ns.Name, reason, msg)
					continue
				}
			}
			if !mesh.InjectionEnabled(ns, m) && !runsProxy(pods, m) && !expectsAny(pods, m) {
				skip(ns.Name, sluicev1.ReasonNoProxyPods, fmt.Sprintf(
					"namespace %s runs no pod with the %s proxy and has no injection enabled: a DataPlane never turns injection on", ns.Name, m))
				continue
			}
		}
		n, err := r.observeNamespace(ctx, dp, cp, ns, pods)
		if err != nil {
			return nil, err
		}
		f.namespaces = append(f.namespaces, n)
	}
	slices.SortFunc(f.namespaces, func(a, b waves.Namespace) int { return strings.Compare(a.Name, b.Name) })
	slices.SortFunc(f.skipped, func(a, b sluicev1.SkippedNamespace) int { return strings.Compare(a.Namespace, b.Namespace) })
	return f, nil
}

func (r *Reconciler) listPods(ctx context.Context, ns string) ([]corev1.Pod, error) {
	if r.Pods != nil {
		return r.Pods.ListPods(ctx, ns)
	}
	var list corev1.PodList
	if err := r.List(ctx, &list, client.InNamespace(ns), client.UnsafeDisableDeepCopy); err != nil {
		return nil, fmt.Errorf("listing pods in %s: %w", ns, err)
	}
	return list.Items, nil
}

// runsProxy reports whether any running pod of pods runs mesh m's proxy.
func runsProxy(pods []corev1.Pod, m sluicev1.Mesh) bool {
	for i := range pods {
		if _, ok := mesh.Detect(&pods[i], m); ok && mesh.Live(&pods[i]) && !mesh.JobOwned(&pods[i]) {
			return true
		}
	}
	return false
}

// expectsAny reports whether a running pod of pods asks for the proxy itself.
func expectsAny(pods []corev1.Pod, m sluicev1.Mesh) bool {
	for i := range pods {
		if _, ok := mesh.Detect(&pods[i], m); !ok && mesh.ExpectsProxy(&pods[i], m, false) {
			return true
		}
	}
	return false
}

// checkCanaries reports canary namespaces that do not exist or are not selected, before a run is
// planned: CEL validates what the spec itself shows, the labels of namespaces only this can see.
func checkCanaries(dp *sluicev1.DataPlane, f *fleet) error {
	var missing []string
	for _, ns := range dp.Spec.CanaryNamespaces {
		if !f.selected[ns] {
			missing = append(missing, ns)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	for _, s := range f.skipped {
		if slices.Contains(missing, s.Namespace) {
			return reconcilekit.Stalled(sluicev1.ReasonCanaryNamespaceNotSelected, "canary namespace %s is skipped: %s", s.Namespace, s.Message)
		}
	}
	return reconcilekit.Stalled(sluicev1.ReasonCanaryNamespaceNotSelected,
		"spec.canaryNamespaces %s: not selected by spec.namespaceSelector (or missing, or not meshed)", strings.Join(missing, ", "))
}

package dataplane

import (
	"context"
	"fmt"
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
	"sluice.dev/sluice/controllers/dataplane/waves"
	"sluice.dev/sluice/mesh"
)

// fleet is what one tick observed: the namespaces the upgrade moves with their workloads and
// meshed pods, the selected namespaces it skips, and every selected namespace's name.
type fleet struct {
	namespaces []waves.Namespace
	skipped    []sluicev1.SkippedNamespace
	selected   map[string]bool
}

// observe reads the namespaces, workloads and pods from the cache. Namespaces are selected by
// spec.namespaceSelector, or by default those running the mesh's proxy or with its injection
// enabled (the control-plane namespace excepted); Istio namespaces whose labels cannot be moved
// are skipped with the reason. The namespaces of the plan are observed whether or not they are
// still selected. errors: API errors.
func (r *Reconciler) observe(ctx context.Context, dp *sluicev1.DataPlane) (*fleet, error) {
	m := dp.Spec.Mesh
	var nsList corev1.NamespaceList
	if err := r.List(ctx, &nsList, client.UnsafeDisableDeepCopy); err != nil {
		return nil, fmt.Errorf("listing namespaces: %w", err)
	}
	var selector labels.Selector
	if dp.Spec.NamespaceSelector != nil {
		s, err := metav1.LabelSelectorAsSelector(dp.Spec.NamespaceSelector.LabelSelector())
		if err != nil {
			return nil, stalled(sluicev1.ReasonInvalidSpec, "spec.namespaceSelector: %w", err)
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
	for i := range nsList.Items {
		ns := &nsList.Items[i]
		if !ns.DeletionTimestamp.IsZero() {
			continue
		}
		var pods []corev1.Pod
		selected := false
		if selector != nil {
			selected = selector.Matches(labels.Set(ns.Labels))
		} else if !mesh.ControlPlane(ns, m) {
			if selected = mesh.InjectionEnabled(ns, m); !selected {
				var err error
				if pods, err = r.listPods(ctx, ns.Name); err != nil {
					return nil, err
				}
				selected = runsProxy(pods, m)
			}
		}
		if selected {
			f.selected[ns.Name] = true
		}
		if selected && m == sluicev1.MeshIstio && dp.Spec.Istio != nil && !planned[ns.Name] {
			if reason, msg := mesh.IstioSkipReason(ns, dp.Spec.Istio.PreviousRevision, dp.Spec.Istio.Revision); reason != "" {
				f.skipped = append(f.skipped, sluicev1.SkippedNamespace{Namespace: ns.Name, Reason: reason, Message: msg})
				continue
			}
		}
		if !selected && !planned[ns.Name] {
			continue
		}
		if pods == nil {
			var err error
			if pods, err = r.listPods(ctx, ns.Name); err != nil {
				return nil, err
			}
		}
		n, err := r.observeNamespace(ctx, dp, ns, pods)
		if err != nil {
			return nil, err
		}
		f.namespaces = append(f.namespaces, n)
	}
	slices.SortFunc(f.namespaces, func(a, b waves.Namespace) int { return strings.Compare(a.Name, b.Name) })
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

// observeNamespace groups the meshed pods of ns by the Deployment, StatefulSet or DaemonSet that
// replaces them. Job pods and finished pods are ignored; meshed pods of other owners (or none)
// are listed as unmanaged. Workloads the running wave restarted are included even while they
// have no pod. errors: API errors.
func (r *Reconciler) observeNamespace(ctx context.Context, dp *sluicev1.DataPlane, ns *corev1.Namespace, pods []corev1.Pod) (waves.Namespace, error) {
	m := dp.Spec.Mesh
	out := waves.Namespace{Name: ns.Name, Pin: mesh.Pin(ns, m)}
	groups := map[mesh.WorkloadRef]*waves.Workload{}
	objects := map[mesh.WorkloadRef]client.Object{}
	lookup := func(ref mesh.WorkloadRef) (client.Object, error) {
		if obj, ok := objects[ref]; ok {
			return obj, nil
		}
		obj, err := r.workload(ctx, ns.Name, ref)
		objects[ref] = obj
		return obj, err
	}
	add := func(ref mesh.WorkloadRef, obj client.Object) *waves.Workload {
		if w, ok := groups[ref]; ok {
			return w
		}
		method, _ := mesh.Method(obj)
		w := &waves.Workload{Kind: ref.Kind, Name: ref.Name, Method: method, RolledOut: mesh.RolledOut(obj),
			Desired: mesh.DesiredPods(obj), Token: mesh.RestartToken(obj)}
		groups[ref] = w
		return w
	}
	for i := range pods {
		pod := &pods[i]
		if mesh.Finished(pod) || mesh.JobOwned(pod) {
			continue
		}
		proxy, ok := mesh.Detect(pod, m)
		if !ok {
			continue
		}
		ref, ok := mesh.OwnerOf(pod)
		var obj client.Object
		if ok {
			var err error
			if obj, err = lookup(ref); err != nil {
				return out, err
			}
		}
		if obj == nil {
			if mesh.Live(pod) {
				out.Unmanaged = append(out.Unmanaged, pod.Name)
			}
			continue
		}
		w := add(ref, obj)
		if mesh.Terminating(pod) {
			w.Terminating++
			continue
		}
		w.Pods = append(w.Pods, waves.Pod{Name: pod.Name, UID: string(pod.UID), Version: proxy.Version, Ready: mesh.Ready(pod)})
	}
	// Workloads restarted by the running wave stay in view while their pods are replaced.
	for _, w := range dp.Status.Waves {
		for _, rs := range w.Restarts {
			ref := mesh.WorkloadRef{Kind: rs.Kind, Name: rs.Name}
			if rs.Namespace != ns.Name || rs.Done || groups[ref] != nil {
				continue
			}
			obj, err := lookup(ref)
			if err != nil {
				return out, err
			}
			if obj != nil {
				add(ref, obj)
			}
		}
	}
	for _, w := range groups {
		slices.SortFunc(w.Pods, func(a, b waves.Pod) int { return strings.Compare(a.Name, b.Name) })
		out.Workloads = append(out.Workloads, *w)
	}
	slices.SortFunc(out.Workloads, func(a, b waves.Workload) int {
		return strings.Compare(a.Kind+"/"+a.Name, b.Kind+"/"+b.Name)
	})
	slices.Sort(out.Unmanaged)
	return out, nil
}

// workload reads a Deployment, StatefulSet or DaemonSet from the cache; nil for other kinds and
// missing objects. errors: API errors other than NotFound.
func (r *Reconciler) workload(ctx context.Context, ns string, ref mesh.WorkloadRef) (client.Object, error) {
	obj := newWorkload(ref.Kind)
	if obj == nil {
		return nil, nil
	}
	if err := r.Get(ctx, client.ObjectKey{Namespace: ns, Name: ref.Name}, obj, client.UnsafeDisableDeepCopy); err != nil {
		if client.IgnoreNotFound(err) == nil {
			return nil, nil
		}
		return nil, fmt.Errorf("reading %s %s/%s: %w", ref.Kind, ns, ref.Name, err)
	}
	return obj, nil
}

func newWorkload(kind string) client.Object {
	switch kind {
	case mesh.KindDeployment:
		return &appsv1.Deployment{}
	case mesh.KindStatefulSet:
		return &appsv1.StatefulSet{}
	case mesh.KindDaemonSet:
		return &appsv1.DaemonSet{}
	}
	return nil
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
			return stalled(sluicev1.ReasonCanaryNamespaceNotSelected, "canary namespace %s is skipped: %s", s.Namespace, s.Message)
		}
	}
	return stalled(sluicev1.ReasonCanaryNamespaceNotSelected,
		"spec.canaryNamespaces %s: not selected by spec.namespaceSelector (or missing, or not meshed)", strings.Join(missing, ", "))
}

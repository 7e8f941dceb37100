package dataplane

import (
	"context"
	"fmt"
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
	"sluice.dev/sluice/controllers/dataplane/waves"
	"sluice.dev/sluice/mesh"
)

// observeNamespace groups the pods of ns by the workload that replaces them: Deployments,
// StatefulSets, DaemonSets and Argo Rollouts Rollouts. Job pods, finished pods and excluded pods
// are left out; meshed pods of other owners (or none) are unmanaged; running pods that should run
// the proxy and do not are unmeshed. Workloads the running wave restarted are included even while
// they have no pod. errors: API errors.
func (r *Reconciler) observeNamespace(ctx context.Context, dp *sluicev1.DataPlane, cp *controlPlane, ns *corev1.Namespace, pods []corev1.Pod) (waves.Namespace, error) {
	m := dp.Spec.Mesh
	out := waves.Namespace{Name: ns.Name, Pin: mesh.Pin(ns, m), InjectionEnabled: mesh.InjectionEnabled(ns, m)}
	if m == sluicev1.MeshIstio {
		out.Pin, out.RevisionTag = mesh.ResolveRevision(out.Pin, cp.tags)
		out.Pinnable = ns.Labels[mesh.IstioRevLabel] != ""
	} else {
		out.Pinnable = out.InjectionEnabled || runsProxy(pods, m)
	}
	// A namespace the DataPlane pinned ran the proxy: pods coming back without it left the mesh
	// (its injection label was removed), they did not opt out.
	_, pinned := dp.Status.Pins[ns.Name]
	namespaceInjection := out.InjectionEnabled || pinned
	exclude := labels.Nothing()
	if dp.Spec.ExcludePods != nil {
		exclude, _ = metav1.LabelSelectorAsSelector(dp.Spec.ExcludePods) // validated before
	}

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
			Desired: mesh.DesiredPods(obj), Token: mesh.RestartToken(obj), Problem: failedCreate(obj)}
		groups[ref] = w
		return w
	}
	for i := range pods {
		pod := &pods[i]
		if mesh.Finished(pod) || mesh.JobOwned(pod) || pod.Annotations[sluicev1.AnnotationDataPlaneExclude] == "true" ||
			exclude.Matches(labels.Set(pod.Labels)) {
			continue
		}
		proxy, meshed := mesh.Detect(pod, m)
		if !meshed && !mesh.ExpectsProxy(pod, m, namespaceInjection) {
			continue
		}
		ref, owned := mesh.OwnerOf(pod)
		var obj client.Object
		if owned {
			var err error
			if obj, err = lookup(ref); err != nil {
				return out, err
			}
		}
		if !meshed {
			out.Unmeshed = append(out.Unmeshed, pod.Name)
			if obj != nil && mesh.Live(pod) {
				w := add(ref, obj)
				w.Unmeshed = append(w.Unmeshed, waves.Pod{Name: pod.Name, UID: string(pod.UID), Ready: mesh.Ready(pod)})
			}
			continue
		}
		if obj == nil {
			if mesh.Live(pod) {
				out.Unmanaged = append(out.Unmanaged, waves.Pod{Name: pod.Name, UID: string(pod.UID), Version: proxy.Version, Ready: mesh.Ready(pod)})
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
	slices.SortFunc(out.Unmanaged, func(a, b waves.Pod) int { return strings.Compare(a.Name, b.Name) })
	slices.Sort(out.Unmeshed)
	return out, nil
}

// workload reads a Deployment, StatefulSet or DaemonSet from the cache, or a Rollout from the
// apiserver; nil for other kinds, missing objects, and Rollouts where Argo Rollouts is not
// installed. errors: API errors other than NotFound.
func (r *Reconciler) workload(ctx context.Context, ns string, ref mesh.WorkloadRef) (client.Object, error) {
	obj := newWorkload(ref.Kind)
	if obj == nil {
		return nil, nil
	}
	opts := []client.GetOption{}
	if ref.Kind != mesh.KindRollout {
		opts = append(opts, client.UnsafeDisableDeepCopy)
	}
	if err := r.Get(ctx, client.ObjectKey{Namespace: ns, Name: ref.Name}, obj, opts...); err != nil {
		if client.IgnoreNotFound(err) == nil || apimeta.IsNoMatchError(err) {
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
	case mesh.KindRollout:
		return mesh.NewRollout()
	}
	return nil
}

// failedCreate is why a Deployment's controller cannot create pods (its ReplicaFailure
// condition, e.g. a ReplicaSet's FailedCreate when a webhook refuses them), or "".
func failedCreate(obj client.Object) string {
	d, ok := obj.(*appsv1.Deployment)
	if !ok {
		return ""
	}
	for _, c := range d.Status.Conditions {
		if c.Type == appsv1.DeploymentReplicaFailure && c.Status == corev1.ConditionTrue {
			return fmt.Sprintf("%s: %s", c.Reason, c.Message)
		}
	}
	return ""
}

package manager

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"sluice.dev/sluice/controllers/canary"
	"sluice.dev/sluice/mesh"
)

// The informer cache holds every object of the kinds the controllers watch, cluster-wide: with
// ten thousand Canaries that is ten thousand of each kind a Canary brings, and their pods. It
// keeps only what the controllers read:
//
//   - every object: no managedFields (nothing reads them) and no kubectl last-applied annotation
//     (a copy of the whole object as applied). Sluice writes with patches computed between two
//     copies of the cached object or with server-side apply, never with an update of a cached
//     object, so what the cache leaves out is never written back;
//   - Pods (read only by the data-plane controller, through package mesh): identity, labels,
//     annotations, owners, deletion; each container's name and image (init containers also their
//     restartPolicy, which marks a native sidecar); phase and condition types and statuses.
//     Everything else — volumes, env, resources, probes, container statuses, IPs — is dropped:
//     about four fifths of a pod;
//   - Namespaces: identity, labels and annotations;
//   - Deployments and DaemonSets (read by both controllers): canary.TrimWorkload. Sluice's own
//     primaries stay whole; every other one loses its pod template but what the controllers read
//     of it (mesh's annotations, node selector, containers' names, images and ports, config
//     references) and keeps the state of its revision hash; the canary controller reads a target
//     whole from the apiserver only to build or promote a primary from it;
//   - StatefulSets (read only by the data-plane controller): no volume claim templates, and of the
//     pod template the annotations package mesh reads and the containers' names and images.
//
// docs/multi-tenancy.md gives the measured cost per cached object.

// lastApplied is kubectl's annotation holding the object as last applied.
const lastApplied = corev1.LastAppliedConfigAnnotation

// trimCache installs the transforms on the cache options (keeping other ByObject settings).
func trimCache(opts *cache.Options) {
	opts.DefaultTransform = stripForCache
	key, by := byObject(opts, &corev1.Pod{})
	by.Transform = trimPod
	opts.ByObject[key] = by
	key, by = byObject(opts, &corev1.Namespace{})
	by.Transform = trimNamespace
	opts.ByObject[key] = by
	for _, obj := range []client.Object{&appsv1.Deployment{}, &appsv1.DaemonSet{}} {
		key, by = byObject(opts, obj)
		by.Transform = canary.TrimWorkload
		opts.ByObject[key] = by
	}
	key, by = byObject(opts, &appsv1.StatefulSet{})
	by.Transform = trimStatefulSet
	opts.ByObject[key] = by
}

// stripForCache drops managedFields and the last-applied annotation.
var stripForCache toolscache.TransformFunc = func(in any) (any, error) {
	if m, err := meta.Accessor(in); err == nil {
		m.SetManagedFields(nil)
		if a := m.GetAnnotations(); a[lastApplied] != "" {
			delete(a, lastApplied)
			m.SetAnnotations(a)
		}
	}
	return in, nil
}

// trimPod keeps what package mesh reads of a pod (see above).
var trimPod toolscache.TransformFunc = func(in any) (any, error) {
	pod, ok := in.(*corev1.Pod)
	if !ok {
		return stripForCache(in)
	}
	out := &corev1.Pod{TypeMeta: pod.TypeMeta, ObjectMeta: pod.ObjectMeta}
	out.ManagedFields = nil
	if pod.Annotations[lastApplied] != "" {
		delete(out.Annotations, lastApplied)
	}
	out.Spec.Containers = make([]corev1.Container, len(pod.Spec.Containers))
	for i, c := range pod.Spec.Containers {
		out.Spec.Containers[i] = corev1.Container{Name: c.Name, Image: c.Image}
	}
	if len(pod.Spec.InitContainers) > 0 {
		out.Spec.InitContainers = make([]corev1.Container, len(pod.Spec.InitContainers))
		for i, c := range pod.Spec.InitContainers {
			out.Spec.InitContainers[i] = corev1.Container{Name: c.Name, Image: c.Image, RestartPolicy: c.RestartPolicy}
		}
	}
	out.Status.Phase = pod.Status.Phase
	if len(pod.Status.Conditions) > 0 {
		out.Status.Conditions = make([]corev1.PodCondition, len(pod.Status.Conditions))
		for i, c := range pod.Status.Conditions {
			out.Status.Conditions[i] = corev1.PodCondition{Type: c.Type, Status: c.Status}
		}
	}
	return out, nil
}

// trimStatefulSet keeps what package mesh reads of a StatefulSet (see above).
var trimStatefulSet toolscache.TransformFunc = func(in any) (any, error) {
	sts, ok := in.(*appsv1.StatefulSet)
	if !ok {
		return stripForCache(in)
	}
	if _, err := stripForCache(sts); err != nil {
		return nil, err
	}
	tpl := sts.Spec.Template
	sts.Spec.Template = corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Annotations: mesh.TemplateAnnotationsOf(tpl.Annotations)}}
	sts.Spec.Template.Spec.InitContainers = namesAndImages(tpl.Spec.InitContainers)
	sts.Spec.Template.Spec.Containers = namesAndImages(tpl.Spec.Containers)
	sts.Spec.VolumeClaimTemplates = nil
	return sts, nil
}

// namesAndImages keeps each container's name and image.
func namesAndImages(cs []corev1.Container) []corev1.Container {
	if len(cs) == 0 {
		return nil
	}
	out := make([]corev1.Container, len(cs))
	for i, c := range cs {
		out[i] = corev1.Container{Name: c.Name, Image: c.Image}
	}
	return out
}

// trimNamespace keeps a namespace's metadata.
var trimNamespace toolscache.TransformFunc = func(in any) (any, error) {
	ns, ok := in.(*corev1.Namespace)
	if !ok {
		return stripForCache(in)
	}
	out := &corev1.Namespace{TypeMeta: ns.TypeMeta, ObjectMeta: ns.ObjectMeta}
	out.ManagedFields = nil
	if ns.Annotations[lastApplied] != "" {
		delete(out.Annotations, lastApplied)
	}
	out.Status.Phase = ns.Status.Phase // Terminating matters to whoever writes in it
	return out, nil
}

package mesh

import (
	"encoding/json"
	"fmt"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
)

// Workload kinds a DataPlane restarts.
const (
	KindDeployment  = "Deployment"
	KindStatefulSet = "StatefulSet"
	KindDaemonSet   = "DaemonSet"
	KindReplicaSet  = "ReplicaSet"
	KindJob         = "Job"
	// KindRollout is an Argo Rollouts Rollout (argoproj.io/v1alpha1), restarted through its own
	// spec.restartAt field.
	KindRollout = "Rollout"
	// RolloutPodTemplateHashLabel is the label Argo Rollouts puts on its ReplicaSets' pods.
	RolloutPodTemplateHashLabel = "rollouts-pod-template-hash"
)

// RolloutGVK is the group, version and kind of Argo Rollouts' Rollout.
var RolloutGVK = schema.GroupVersionKind{Group: "argoproj.io", Version: "v1alpha1", Kind: KindRollout}

// WorkloadRef names the workload that replaces a pod, in the pod's namespace.
type WorkloadRef struct {
	Kind string
	Name string
}

func (w WorkloadRef) String() string { return w.Kind + "/" + w.Name }

// OwnerOf returns the workload that replaces pod when it goes: for a pod of a ReplicaSet named
// <deployment>-<pod-template-hash> the Deployment (the caller confirms it exists), else the pod's
// controller (StatefulSet, DaemonSet, or any other kind). ok is false for pods without a
// controller and for Job pods, which a DataPlane never touches.
func OwnerOf(pod *corev1.Pod) (WorkloadRef, bool) {
	ref := metav1.GetControllerOf(pod)
	if ref == nil || ref.Kind == KindJob {
		return WorkloadRef{}, false
	}
	if ref.Kind == KindReplicaSet && strings.HasPrefix(ref.APIVersion, "apps/") {
		if hash := pod.Labels[appsv1.DefaultDeploymentUniqueLabelKey]; hash != "" && strings.HasSuffix(ref.Name, "-"+hash) {
			return WorkloadRef{Kind: KindDeployment, Name: strings.TrimSuffix(ref.Name, "-"+hash)}, true
		}
		if hash := pod.Labels[RolloutPodTemplateHashLabel]; hash != "" && strings.HasSuffix(ref.Name, "-"+hash) {
			return WorkloadRef{Kind: KindRollout, Name: strings.TrimSuffix(ref.Name, "-"+hash)}, true
		}
	}
	return WorkloadRef{Kind: ref.Kind, Name: ref.Name}, true
}

// JobOwned reports whether pod belongs to a Job (CronJobs create Jobs).
func JobOwned(pod *corev1.Pod) bool {
	ref := metav1.GetControllerOf(pod)
	return ref != nil && ref.Kind == KindJob
}

// Method returns how a workload's pods are replaced: Rollout (pod-template annotation) for
// Deployments and for DaemonSets and StatefulSets with rolling updates, Evict (one pod at a time
// through the Eviction API) for OnDelete DaemonSets and StatefulSets. ok is false for other kinds.
func Method(obj client.Object) (sluicev1.RestartMethod, bool) {
	switch o := obj.(type) {
	case *appsv1.Deployment:
		return sluicev1.RestartRollout, true
	case *appsv1.StatefulSet:
		if o.Spec.UpdateStrategy.Type == appsv1.OnDeleteStatefulSetStrategyType {
			return sluicev1.RestartEvict, true
		}
		return sluicev1.RestartRollout, true
	case *appsv1.DaemonSet:
		if o.Spec.UpdateStrategy.Type == appsv1.OnDeleteDaemonSetStrategyType {
			return sluicev1.RestartEvict, true
		}
		return sluicev1.RestartRollout, true
	case *unstructured.Unstructured:
		if o.GroupVersionKind() == RolloutGVK {
			return sluicev1.RestartAt, true
		}
	}
	return "", false
}

// RolledOut reports whether a workload's controller has caught up with its spec: the latest
// generation observed, every replica updated (rolling kinds) and ready.
func RolledOut(obj client.Object) bool {
	switch o := obj.(type) {
	case *appsv1.Deployment:
		n := ptr.Deref(o.Spec.Replicas, 1)
		s := o.Status
		return s.ObservedGeneration >= o.Generation && s.Replicas == n && s.UpdatedReplicas == n && s.AvailableReplicas == n
	case *appsv1.StatefulSet:
		n := ptr.Deref(o.Spec.Replicas, 1)
		s := o.Status
		if s.ObservedGeneration < o.Generation || s.Replicas != n || s.ReadyReplicas != n {
			return false
		}
		return o.Spec.UpdateStrategy.Type == appsv1.OnDeleteStatefulSetStrategyType ||
			(s.UpdatedReplicas == n && (s.UpdateRevision == "" || s.UpdateRevision == s.CurrentRevision))
	case *appsv1.DaemonSet:
		s := o.Status
		if s.ObservedGeneration < o.Generation || s.NumberReady != s.DesiredNumberScheduled ||
			s.CurrentNumberScheduled != s.DesiredNumberScheduled || s.NumberUnavailable != 0 {
			return false
		}
		return o.Spec.UpdateStrategy.Type == appsv1.OnDeleteDaemonSetStrategyType || s.UpdatedNumberScheduled == s.DesiredNumberScheduled
	case *unstructured.Unstructured:
		return rolloutRolledOut(o)
	}
	return false
}

// DesiredPods is how many pods a workload wants: spec.replicas (default 1) of a Deployment or
// StatefulSet, status.desiredNumberScheduled of a DaemonSet; 0 for other kinds.
func DesiredPods(obj client.Object) int32 {
	switch o := obj.(type) {
	case *appsv1.Deployment:
		return ptr.Deref(o.Spec.Replicas, 1)
	case *appsv1.StatefulSet:
		return ptr.Deref(o.Spec.Replicas, 1)
	case *appsv1.DaemonSet:
		return o.Status.DesiredNumberScheduled
	case *unstructured.Unstructured:
		n, found, _ := unstructured.NestedInt64(o.Object, "spec", "replicas")
		if !found {
			n = 1
		}
		return int32(n)
	}
	return 0
}

// TemplateAnnotationsOf returns the pod-template annotations among ann that this package reads of
// a workload (RestartToken, TemplateVersion), nil when none: all a cache of workloads needs to
// keep of them.
func TemplateAnnotationsOf(ann map[string]string) map[string]string {
	var out map[string]string
	for _, k := range []string{RestartedAtAnnotation, LinkerdProxyVersionAnnotation} {
		if v, ok := ann[k]; ok {
			if out == nil {
				out = map[string]string{}
			}
			out[k] = v
		}
	}
	return out
}

// PodTemplate returns the pod template of a Deployment, StatefulSet or DaemonSet, or nil.
func PodTemplate(obj client.Object) *corev1.PodTemplateSpec {
	switch o := obj.(type) {
	case *appsv1.Deployment:
		return &o.Spec.Template
	case *appsv1.StatefulSet:
		return &o.Spec.Template
	case *appsv1.DaemonSet:
		return &o.Spec.Template
	}
	return nil
}

// rolloutRolledOut reports whether an Argo Rollouts Rollout has caught up with its spec: its
// controller observed it, every replica is updated and available, and a requested restart
// (spec.restartAt) has been carried out (status.restartedAt).
func rolloutRolledOut(u *unstructured.Unstructured) bool {
	if u.GroupVersionKind() != RolloutGVK {
		return false
	}
	want := DesiredPods(u)
	num := func(f string) int64 {
		n, _, _ := unstructured.NestedInt64(u.Object, "status", f)
		return n
	}
	// Argo Rollouts writes observedGeneration as a string.
	observed, _, _ := unstructured.NestedString(u.Object, "status", "observedGeneration")
	if observed != "" && observed != fmt.Sprint(u.GetGeneration()) {
		return false
	}
	restartAt, _, _ := unstructured.NestedString(u.Object, "spec", "restartAt")
	restartedAt, _, _ := unstructured.NestedString(u.Object, "status", "restartedAt")
	if restartAt != "" && restartedAt != restartAt {
		return false
	}
	return num("replicas") == int64(want) && num("updatedReplicas") == int64(want) && num("availableReplicas") == int64(want)
}

// RestartAtPatch asks an Argo Rollouts Rollout to restart its pods (spec.restartAt, which its
// controller carries out one pod at a time within its maxUnavailable).
func RestartAtPatch(token string) client.Patch {
	body, _ := json.Marshal(map[string]any{"spec": map[string]any{"restartAt": token}})
	return client.RawPatch(types.MergePatchType, body)
}

// NewRollout returns an empty Rollout to read into or patch.
func NewRollout() *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(RolloutGVK)
	return u
}

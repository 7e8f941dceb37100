package mesh

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// RestartedAtAnnotation is the pod-template annotation a rolling restart sets, Sluice's
// counterpart of kubectl's kubectl.kubernetes.io/restartedAt. Its value is the wave's restart
// token, so setting it again with the same token changes nothing.
const RestartedAtAnnotation = "sluice.dev/restartedAt"

// RestartToken returns the restart token in obj's pod template ("" when none).
func RestartToken(obj client.Object) string {
	if t := PodTemplate(obj); t != nil {
		return t.Annotations[RestartedAtAnnotation]
	}
	if u, ok := obj.(*unstructured.Unstructured); ok && u.GroupVersionKind() == RolloutGVK {
		v, _, _ := unstructured.NestedString(u.Object, "spec", "restartAt")
		return v
	}
	return ""
}

// RestartPatch returns the merge patch that restarts a Deployment, StatefulSet or DaemonSet with
// token: it sets the pod template annotation sluice.dev/restartedAt, and the workload's controller
// replaces the pods by its update strategy, as `kubectl rollout restart` does.
func RestartPatch(token string) client.Patch {
	body, _ := json.Marshal(map[string]any{"spec": map[string]any{"template": map[string]any{
		"metadata": map[string]any{"annotations": map[string]string{RestartedAtAnnotation: token}}}}})
	return client.RawPatch(types.MergePatchType, body)
}

// ErrEvictionBlocked means the Eviction API refused an eviction because it would violate a
// PodDisruptionBudget (HTTP 429); try again later.
var ErrEvictionBlocked = errors.New("eviction blocked by a PodDisruptionBudget")

// Evict asks the Eviction API to evict pod (only the pod with pod's UID: a replacement of the
// same name is never evicted by mistake). A pod that is already gone or replaced is not an error.
// errors: ErrEvictionBlocked (wrapping the API's message), other API errors.
func Evict(ctx context.Context, c client.SubResourceClientConstructor, pod *corev1.Pod) error {
	ev := &policyv1.Eviction{
		ObjectMeta:    metav1.ObjectMeta{Name: pod.Name, Namespace: pod.Namespace},
		DeleteOptions: &metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &pod.UID}},
	}
	err := c.SubResource("eviction").Create(ctx, pod, ev)
	switch {
	case err == nil, apierrors.IsNotFound(err), apierrors.IsConflict(err):
		return nil
	case apierrors.IsTooManyRequests(err):
		return fmt.Errorf("%w: pod %s/%s: %v", ErrEvictionBlocked, pod.Namespace, pod.Name, err)
	}
	return fmt.Errorf("evicting pod %s/%s: %w", pod.Namespace, pod.Name, err)
}

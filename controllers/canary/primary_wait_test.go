package canary

import (
	"context"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
	"sluice.dev/sluice/controllers/scheme"
)

// TestPrimaryPodsAreReadForACauseOnlyAfterTheGrace: while an initialization has waited less than
// podDiagnosisGrace for its primary, no pod is listed (a thousand Canaries initializing at once
// would each list pods every tick while their primaries start as they should); once it has waited
// longer, the pods are read and their cause named. A cause the cached Deployment names comes at once.
func TestPrimaryPodsAreReadForACauseOnlyAfterTheGrace(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "app-primary-1", Labels: map[string]string{"app": "app-primary"}},
		Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{{Name: "app",
			State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ImagePullBackOff", Message: "Back-off pulling image x:nope"}}}}}}
	primary := func() *appsv1.Deployment {
		return &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "app-primary"},
			Spec: appsv1.DeploymentSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "app-primary"}}}}
	}
	initializingFor := func(d time.Duration) *sluicev1.Canary {
		return &sluicev1.Canary{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "app"},
			Status: sluicev1.CanaryStatus{Phase: sluicev1.CanaryPhaseInitializing, LastTransitionTime: &metav1.Time{Time: now.Add(-d)}}}
	}
	podLists := 0 // the pod lists read around the cache
	reader := fake.NewClientBuilder().WithScheme(scheme.New()).WithObjects(pod).WithInterceptorFuncs(interceptor.Funcs{
		List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
			if _, ok := list.(*corev1.PodList); ok {
				podLists++
			}
			return c.List(ctx, list, opts...)
		}}).Build()
	r := &Reconciler{APIReader: reader}

	if got := r.primaryWaitingOn(ctx, now, initializingFor(podDiagnosisGrace/2), deployment{primary()}, false); got != "" || podLists != 0 {
		t.Fatalf("within the grace: cause %q after %d pod lists; want none and no list", got, podLists)
	}
	got := r.primaryWaitingOn(ctx, now, initializingFor(podDiagnosisGrace+time.Second), deployment{primary()}, false)
	if !strings.Contains(got, "ImagePullBackOff") || podLists != 1 {
		t.Fatalf("after the grace: cause %q after %d pod lists; want the pod's ImagePullBackOff from one list", got, podLists)
	}
	quota := primary()
	quota.Status.Conditions = []appsv1.DeploymentCondition{{Type: appsv1.DeploymentReplicaFailure, Status: corev1.ConditionTrue,
		Reason: "FailedCreate", Message: "exceeded quota"}}
	if got := r.primaryWaitingOn(ctx, now, initializingFor(time.Second), deployment{quota}, false); !strings.Contains(got, "exceeded quota") {
		t.Fatalf("a cause the Deployment names: %q, want it at once", got)
	}
	if got := r.primaryWaitingOn(ctx, now, initializingFor(time.Minute), deployment{primary()}, true); got != "" {
		t.Fatalf("a ready primary waits on %q", got)
	}
}

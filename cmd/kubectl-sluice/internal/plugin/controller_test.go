package plugin

import (
	"context"
	"io"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
	"sluice.dev/sluice/controllers/manager"
	"sluice.dev/sluice/test/testenv"
)

// TestLeversDriveTheController runs the real manager against envtest and drives a Canary with the
// plugin's levers, asserting the phase changes each one causes.
func TestLeversDriveTheController(t *testing.T) {
	if env == nil {
		t.Skip("needs envtest")
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ns := env.Namespace(t)
	mgr, err := manager.New(ctx, env.Config, manager.Options{MetricsAddr: "0", ProbeAddr: "0", SkipNameValidation: true,
		Namespaces: []string{ns}, MetricsServer: "http://127.0.0.1:1"})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	defer func() { cancel(); <-done }()
	go testenv.PlayDeploymentController(ctx, env.Client, ns)

	dep := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: ns},
		Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](1),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "app"}},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "app"}},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "app:1"}}}}},
	}
	if err := env.Client.Create(ctx, dep); err != nil {
		t.Fatal(err)
	}
	// A long interval holds the run at its first step until a lever acts.
	newCanary(t, ns, "app", func(cn *sluicev1.Canary) {
		cn.Spec.Analysis.Interval = "1h"
		cn.Spec.Analysis.Metrics = nil
	})
	key := types.NamespacedName{Namespace: ns, Name: "app"}
	waitCanary(t, key, "Initialized", func(s sluicev1.CanaryStatus) bool { return s.Phase == sluicev1.CanaryPhaseInitialized })
	now := time.Now()
	next := func() time.Time { now = now.Add(time.Second); return now }

	setImage(t, ns, "app:2")
	waitCanary(t, key, "weight 10", func(s sluicev1.CanaryStatus) bool { return s.CanaryWeight == 10 })
	if err := Abort(ctx, env.Client, io.Discard, key, next(), LeverOptions{}); err != nil {
		t.Fatal(err)
	}
	waitCanary(t, key, "Failed after abort", func(s sluicev1.CanaryStatus) bool {
		return s.Phase == sluicev1.CanaryPhaseFailed && s.CanaryWeight == 0
	})

	if err := Retry(ctx, env.Client, io.Discard, key, next(), LeverOptions{}); err != nil {
		t.Fatal(err)
	}
	waitCanary(t, key, "Progressing again at weight 10 after retry", func(s sluicev1.CanaryStatus) bool {
		return s.Phase == sluicev1.CanaryPhaseProgressing && s.CanaryWeight == 10
	})

	if err := Pause(ctx, env.Client, io.Discard, key); err != nil {
		t.Fatal(err)
	}
	waitCanary(t, key, "suspended", func(s sluicev1.CanaryStatus) bool {
		for _, c := range s.Conditions {
			if c.Type == sluicev1.ConditionReconciling && c.Reason == sluicev1.ReasonSuspended {
				return true
			}
		}
		return false
	})
	if err := Promote(ctx, env.Client, io.Discard, key, next(), LeverOptions{}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * time.Second)
	if s := status(t, key); s.Phase != sluicev1.CanaryPhaseProgressing || s.CanaryWeight != 10 {
		t.Fatalf("a paused canary acted on promote: %s at %d", s.Phase, s.CanaryWeight)
	}
	if err := Resume(ctx, env.Client, io.Discard, key); err != nil {
		t.Fatal(err)
	}
	waitCanary(t, key, "Succeeded after resume with a pending promote", func(s sluicev1.CanaryStatus) bool {
		return s.Phase == sluicev1.CanaryPhaseSucceeded && s.CanaryWeight == 0
	})
	primary := &appsv1.Deployment{}
	if err := env.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: "app-primary"}, primary); err != nil {
		t.Fatal(err)
	}
	if img := primary.Spec.Template.Spec.Containers[0].Image; img != "app:2" {
		t.Fatalf("primary runs %s after promote, want app:2", img)
	}
	// The handled promote does not act on the next run.
	setImage(t, ns, "app:3")
	waitCanary(t, key, "weight 10 of the next run", func(s sluicev1.CanaryStatus) bool {
		return s.Phase == sluicev1.CanaryPhaseProgressing && s.CanaryWeight == 10
	})
	time.Sleep(2 * time.Second)
	if s := status(t, key); s.Phase != sluicev1.CanaryPhaseProgressing {
		t.Fatalf("a leftover promote annotation acted on the next run: %s", s.Phase)
	}
}

func status(t *testing.T, key types.NamespacedName) sluicev1.CanaryStatus {
	t.Helper()
	cn := &sluicev1.Canary{}
	if err := env.Client.Get(context.Background(), key, cn); err != nil {
		t.Fatal(err)
	}
	return cn.Status
}

func waitCanary(t *testing.T, key types.NamespacedName, what string, cond func(sluicev1.CanaryStatus) bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if cond(status(t, key)) {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("timed out waiting for %s; status %+v", what, status(t, key))
}

func setImage(t *testing.T, ns, image string) {
	t.Helper()
	d := &appsv1.Deployment{}
	if err := env.Client.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: "app"}, d); err != nil {
		t.Fatal(err)
	}
	patch := client.MergeFrom(d.DeepCopy())
	d.Spec.Template.Spec.Containers[0].Image = image
	if err := env.Client.Patch(context.Background(), d, patch); err != nil {
		t.Fatal(err)
	}
}

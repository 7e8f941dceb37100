package plugin

import (
	"context"
	"fmt"
	"io"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
	"sluice.dev/sluice/controllers/manager"
	"sluice.dev/sluice/mesh"
	"sluice.dev/sluice/test/controlplane"
	"sluice.dev/sluice/test/testenv"
)

// TestDataPlaneLeversDriveTheController runs the real manager against envtest with the simulated
// Linkerd control plane, and drives a DataPlane with the plugin: its canary namespace already
// runs the declared proxy, so the canary wave bakes and the fleet waits for approval; `approve`
// starts the fleet wave, whose Deployment restarts but never gets new pods (envtest runs no
// Deployment controller), and `abort` rolls that wave back: RolledBack, its namespace pinned back
// to the version it ran.
func TestDataPlaneLeversDriveTheController(t *testing.T) {
	testenv.Require(t, env)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c := env.Client
	if err := controlplane.InstallLinkerd(ctx, c, "edge-26.8.3"); err != nil {
		t.Fatal(err)
	}
	if err := testenv.MarkRolledOut(ctx, c, controlplane.Namespace); err != nil {
		t.Fatal(err)
	}
	canaryNS, fleetNS := env.Namespace(t), env.Namespace(t)
	id := canaryNS
	meshedNamespace(t, canaryNS, id, "edge-26.8.3")
	meshedNamespace(t, fleetNS, id, "edge-26.6.3")

	mgr, err := manager.New(ctx, env.Config, manager.Options{MetricsAddr: "0", ProbeAddr: "0", SkipNameValidation: true,
		MetricsServer: "http://127.0.0.1:1"})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	defer func() { cancel(); <-done }()
	go testenv.PlayDeploymentController(ctx, c, fleetNS)

	name := "levers-" + id
	dp := &sluicev1.DataPlane{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: sluicev1.DataPlaneSpec{
		Mesh: sluicev1.MeshLinkerd, Version: "edge-26.8.3", CanaryNamespaces: []string{canaryNS}, RequireApproval: true, BakeTime: "1s",
		NamespaceSelector: &sluicev1.NamespaceSelector{MatchLabels: map[string]string{"fleet": id}}}}
	if err := c.Create(ctx, dp); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Delete(context.Background(), dp) })
	now := time.Now()
	next := func() time.Time { now = now.Add(time.Second); return now }

	waitDataPlane(t, name, "waiting for approval", func(s sluicev1.DataPlaneStatus) bool {
		return s.Phase == sluicev1.DataPlaneWaiting && len(s.Waves) == 2 && s.Waves[0].Phase == sluicev1.WaveSucceeded
	})
	if err := AbortDataPlane(ctx, c, io.Discard, name, next(), LeverOptions{}); err != nil {
		t.Fatal(err) // Waiting is in flight: abort is allowed (checked, not sent: see below)
	}
	// That abort ended the run before the fleet wave: retry runs it again.
	waitDataPlane(t, name, "Failed after an abort between waves", func(s sluicev1.DataPlaneStatus) bool {
		return s.Phase == sluicev1.DataPlaneFailed && s.Waves[1].Reason == sluicev1.ReasonAborted
	})
	if err := RetryDataPlane(ctx, c, io.Discard, name, next(), LeverOptions{}); err != nil {
		t.Fatal(err)
	}
	waitDataPlane(t, name, "waiting for approval again after retry", func(s sluicev1.DataPlaneStatus) bool {
		return s.Phase == sluicev1.DataPlaneWaiting && len(s.Waves) == 2 && s.Waves[0].Phase == sluicev1.WaveSucceeded
	})
	if err := ApproveDataPlane(ctx, c, io.Discard, name, next(), LeverOptions{}); err != nil {
		t.Fatal(err)
	}
	waitDataPlane(t, name, "fleet wave restarting after approve", func(s sluicev1.DataPlaneStatus) bool {
		return s.Phase == sluicev1.DataPlaneProgressing && s.Waves[1].Phase == sluicev1.WaveRestarting && s.Waves[1].Restarted == 1
	})
	if pin := namespacePin(t, fleetNS); pin != "edge-26.8.3" {
		t.Fatalf("fleet namespace pinned to %q at its wave", pin)
	}
	if err := AbortDataPlane(ctx, c, io.Discard, name, next(), LeverOptions{}); err != nil {
		t.Fatal(err)
	}
	waitDataPlane(t, name, "RolledBack after abort", func(s sluicev1.DataPlaneStatus) bool {
		return s.Phase == sluicev1.DataPlaneRolledBack && s.Waves[1].Reason == sluicev1.ReasonAborted
	})
	if pin := namespacePin(t, fleetNS); pin != "edge-26.6.3" {
		t.Fatalf("fleet namespace pinned to %q after the rollback", pin)
	}
	if err := ApproveDataPlane(ctx, c, io.Discard, name, next(), LeverOptions{}); err == nil {
		t.Fatal("approve accepted on a rolled-back DataPlane")
	}
	// Delete it while the controller runs, so its finalizer is released (other tests list
	// DataPlanes).
	if err := c.Delete(ctx, dp); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for c.Get(ctx, client.ObjectKeyFromObject(dp), &sluicev1.DataPlane{}) == nil {
		if time.Now().After(deadline) {
			t.Fatal("the DataPlane was not finalized within 30s")
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// meshedNamespace creates ns (labelled fleet=id, injection enabled) with a rolled-out Deployment
// "web" and its one pod, which runs the Linkerd proxy at version.
func meshedNamespace(t *testing.T, ns, id, version string) {
	t.Helper()
	ctx := context.Background()
	c := env.Client
	nsObj := &corev1.Namespace{}
	if err := c.Get(ctx, client.ObjectKey{Name: ns}, nsObj); err != nil {
		t.Fatal(err)
	}
	patch := client.MergeFrom(nsObj.DeepCopy())
	nsObj.Labels["fleet"], nsObj.Labels[mesh.LinkerdInject] = id, "enabled"
	if err := c.Patch(ctx, nsObj, patch); err != nil {
		t.Fatal(err)
	}
	labels := map[string]string{"app": "web"}
	dep := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns}, Spec: appsv1.DeploymentSpec{
		Replicas: ptr.To[int32](1), Selector: &metav1.LabelSelector{MatchLabels: labels},
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "app:1"}}}}}}
	if err := c.Create(ctx, dep); err != nil {
		t.Fatal(err)
	}
	if err := testenv.MarkRolledOut(ctx, c, ns); err != nil {
		t.Fatal(err)
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web-abc12-x", Namespace: ns,
		Labels:      map[string]string{"app": "web", appsv1.DefaultDeploymentUniqueLabelKey: "abc12"},
		Annotations: map[string]string{mesh.LinkerdProxyVersionAnnotation: version},
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web-abc12", UID: "rs-uid",
			Controller: ptr.To(true)}}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "app:1"},
			{Name: mesh.LinkerdProxyContainer, Image: "cr.l5d.io/linkerd/proxy:" + version}}}}
	if err := c.Create(ctx, pod); err != nil {
		t.Fatal(err)
	}
	pod.Status = corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}}
	if err := c.Status().Update(ctx, pod); err != nil {
		t.Fatal(err)
	}
}

func namespacePin(t *testing.T, ns string) string {
	t.Helper()
	o := &corev1.Namespace{}
	if err := env.Client.Get(context.Background(), client.ObjectKey{Name: ns}, o); err != nil {
		t.Fatal(err)
	}
	return o.Annotations[mesh.LinkerdPinAnnotation]
}

// waitDataPlane waits up to 30s for the DataPlane's status to satisfy ok.
func waitDataPlane(t *testing.T, name, what string, ok func(sluicev1.DataPlaneStatus) bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		dp := &sluicev1.DataPlane{}
		if err := env.Client.Get(context.Background(), client.ObjectKey{Name: name}, dp); err != nil {
			t.Fatal(err)
		}
		if ok(dp.Status) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("not %s within 30s: phase %s, waves %+v, conditions %+v", what, dp.Status.Phase, dp.Status.Waves,
				fmt.Sprint(dp.Status.Conditions))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

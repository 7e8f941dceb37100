package dataplane

import (
	"context"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
	"sluice.dev/sluice/mesh"
)

// TestControlPlaneFirst: a version declared ahead of the control plane starts no wave, pins
// nothing and restarts nothing, with ControlPlaneNotReady naming what runs; once the control plane
// is upgraded the waves start and the data plane converges.
func TestControlPlaneFirst(t *testing.T) {
	h := newHarness(t, sluicev1.MeshLinkerd)
	h.fleet(2, map[string]string{mesh.LinkerdInject: "enabled"}, nil)
	h.create(sluicev1.DataPlaneSpec{Mesh: sluicev1.MeshLinkerd, Version: "edge-26.8.3", BakeTime: "1m", MaxUnavailable: ptr.To[int32](3)})
	for i := 0; i < 3; i++ {
		h.tick()
	}
	dp := h.get()
	c := apimeta.FindStatusCondition(dp.Status.Conditions, sluicev1.ConditionControlPlaneNotReady)
	if dp.Status.Phase != sluicev1.DataPlaneWaiting || c == nil ||
		!strings.Contains(c.Message, "linkerd/linkerd-destination runs edge-26.6.3, not edge-26.8.3") ||
		!strings.Contains(c.Message, "control plane seen at edge-26.6.3") {
		t.Fatalf("phase %s, ControlPlaneNotReady %+v", dp.Status.Phase, c)
	}
	for i := 1; i <= 2; i++ {
		if pin, ok := h.namespaceObj(i).Annotations[mesh.LinkerdPinAnnotation]; ok {
			t.Errorf("%s pinned to %s ahead of the control plane", h.ns(i), pin)
		}
	}
	h.sim.assertRestarts(t, 0)
	if len(h.sim.rollouts) != 0 {
		t.Fatalf("rollouts ahead of the control plane: %v", h.sim.rollouts)
	}

	h.upgradeControlPlane("edge-26.8.3")
	dp = h.runUntil(200, sluicev1.DataPlaneUpToDate)
	if apimeta.FindStatusCondition(dp.Status.Conditions, sluicev1.ConditionControlPlaneNotReady) != nil || dp.Status.Current != 12 {
		t.Fatalf("after the control plane upgrade: current %d, conditions %+v", dp.Status.Current, dp.Status.Conditions)
	}
}

// TestScopeNeverTouchesProtectedNamespaces: a selector that matches kube-system and the control
// plane's namespace leaves both alone (skipped with the reason), and planning pins only the
// namespaces of the wave that starts.
func TestScopeNeverTouchesProtectedNamespaces(t *testing.T) {
	h := newHarness(t, sluicev1.MeshLinkerd)
	h.fleet(3, map[string]string{mesh.LinkerdInject: "enabled"}, nil)
	for _, name := range []string{"kube-system", "linkerd"} {
		ns := &corev1.Namespace{}
		if err := h.c.Get(h.ctx, client.ObjectKey{Name: name}, ns); apierrors.IsNotFound(err) {
			ns.Name = name
			if err := h.c.Create(h.ctx, ns); err != nil {
				t.Fatal(err)
			}
		} else if err != nil {
			t.Fatal(err)
		}
		patch := client.MergeFrom(ns.DeepCopy())
		if ns.Labels == nil {
			ns.Labels = map[string]string{}
		}
		ns.Labels["fleet"], ns.Labels[mesh.LinkerdInject] = h.id, "enabled"
		if err := h.c.Patch(h.ctx, ns, patch); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			_ = h.c.Patch(context.Background(), ns, client.RawPatch("application/merge-patch+json",
				[]byte(`{"metadata":{"labels":{"fleet":null,"linkerd.io/inject":null}}}`)))
		})
	}
	h.sim.namespaces = append(h.sim.namespaces, "kube-system")
	h.sim.addWorkloads(t, "kube-system")
	t.Cleanup(func() {
		for _, o := range []client.Object{&appsv1.Deployment{}, &appsv1.StatefulSet{}, &appsv1.DaemonSet{}} {
			_ = h.c.DeleteAllOf(context.Background(), o, client.InNamespace("kube-system"))
		}
		_ = h.c.DeleteAllOf(context.Background(), &corev1.Pod{}, client.InNamespace("kube-system"))
	})
	if err := h.sim.sync(h.ctx); err != nil {
		t.Fatal(err)
	}
	h.upgradeControlPlane("edge-26.8.3")
	h.create(sluicev1.DataPlaneSpec{Mesh: sluicev1.MeshLinkerd, Version: "edge-26.8.3", BakeTime: "1m",
		CanaryNamespaces: []string{h.ns(1)}, MaxUnavailable: ptr.To[int32](3),
		NamespaceSelector: &sluicev1.NamespaceSelector{MatchLabels: map[string]string{"fleet": h.id}}})

	h.tick() // plans and starts the canary wave
	dp := h.get()
	if pin := h.namespaceObj(1).Annotations[mesh.LinkerdPinAnnotation]; pin != "edge-26.8.3" {
		t.Errorf("canary namespace pinned to %q", pin)
	}
	for i := 2; i <= 3; i++ {
		if pin, ok := h.namespaceObj(i).Annotations[mesh.LinkerdPinAnnotation]; ok {
			t.Errorf("%s pinned to %s at planning, before its wave", h.ns(i), pin)
		}
	}
	skipped := map[string]string{}
	for _, s := range dp.Status.Skipped {
		skipped[s.Namespace] = s.Reason
	}
	if skipped["kube-system"] != sluicev1.ReasonProtectedNamespace || skipped["linkerd"] != sluicev1.ReasonProtectedNamespace {
		t.Fatalf("skipped %+v", dp.Status.Skipped)
	}
	dp = h.runUntil(200, sluicev1.DataPlaneUpToDate)
	for _, name := range []string{"kube-system", "linkerd"} {
		ns := &corev1.Namespace{}
		if err := h.c.Get(h.ctx, client.ObjectKey{Name: name}, ns); err != nil {
			t.Fatal(err)
		}
		if pin, ok := ns.Annotations[mesh.LinkerdPinAnnotation]; ok {
			t.Errorf("%s pinned to %s", name, pin)
		}
		var deps appsv1.DeploymentList
		if err := h.c.List(h.ctx, &deps, client.InNamespace(name)); err != nil {
			t.Fatal(err)
		}
		for _, d := range deps.Items {
			if v, ok := d.Spec.Template.Annotations[mesh.RestartedAtAnnotation]; ok {
				t.Errorf("%s/%s restarted (%s)", name, d.Name, v)
			}
		}
		for _, r := range dp.Status.Namespaces {
			if r.Namespace == name {
				t.Errorf("%s has a row: %+v", name, r)
			}
		}
	}
	if got := h.sim.versions(t, "kube-system"); got != "[edge-26.6.3 x6]" {
		t.Errorf("kube-system runs %s", got)
	}
	for k, n := range h.sim.rollouts {
		if strings.HasPrefix(k, "kube-system/") && n > 0 {
			t.Errorf("%s rolled out %d times", k, n)
		}
	}
	c := apimeta.FindStatusCondition(dp.Status.Conditions, sluicev1.ConditionNamespacesSkipped)
	if c == nil || !strings.Contains(c.Message, "kube-system is a Kubernetes system namespace") ||
		!strings.Contains(c.Message, "linkerd runs the linkerd control plane") {
		t.Errorf("NamespacesSkipped %+v", c)
	}
}

// TestDuplicateDataPlaneStalls: a second DataPlane for the same mesh is refused with a Stalled
// condition naming the first, and acts on nothing.
func TestDuplicateDataPlaneStalls(t *testing.T) {
	h := newHarness(t, sluicev1.MeshLinkerd)
	h.fleet(1, map[string]string{mesh.LinkerdInject: "enabled"}, nil)
	h.create(sluicev1.DataPlaneSpec{Mesh: sluicev1.MeshLinkerd, Version: "edge-26.8.3"})
	time.Sleep(1100 * time.Millisecond) // creation timestamps have a one-second resolution
	second := &sluicev1.DataPlane{ObjectMeta: metav1.ObjectMeta{Name: h.name + "-again"},
		Spec: sluicev1.DataPlaneSpec{Mesh: sluicev1.MeshLinkerd, Version: "edge-26.9.0"}}
	if err := h.c.Create(h.ctx, second); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = h.c.Delete(context.Background(), second)
		_, _ = h.newReconciler().Reconcile(context.Background(), ctrl.Request{NamespacedName: client.ObjectKeyFromObject(second)})
	})
	for i := 0; i < 2; i++ {
		if _, err := h.r.Reconcile(h.ctx, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(second)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := h.c.Get(h.ctx, client.ObjectKeyFromObject(second), second); err != nil {
		t.Fatal(err)
	}
	c := apimeta.FindStatusCondition(second.Status.Conditions, sluicev1.ConditionStalled)
	if c == nil || c.Reason != sluicev1.ReasonDuplicateDataPlane || !strings.Contains(c.Message, "DataPlane "+h.name+" already declares the linkerd data plane") {
		t.Fatalf("Stalled %+v", c)
	}
	if len(second.Status.Waves) != 0 || len(second.Status.Pins) != 0 {
		t.Fatalf("the duplicate acted: %+v", second.Status)
	}
}

// TestDeletionMidWaveLeavesNamespacesCoherent: deleting a DataPlane while its first wave bakes
// removes the pins it wrote (the namespaces not reached yet were never pinned), so every namespace
// follows the control plane's version, and says so in an event; the DataPlane goes away.
func TestDeletionMidWaveLeavesNamespacesCoherent(t *testing.T) {
	h := newHarness(t, sluicev1.MeshLinkerd)
	h.upgradeControlPlane("edge-26.8.3")
	h.fleet(3, map[string]string{mesh.LinkerdInject: "enabled"}, nil)
	h.create(sluicev1.DataPlaneSpec{Mesh: sluicev1.MeshLinkerd, Version: "edge-26.8.3", BakeTime: "1h",
		Waves: sluicev1.DataPlaneWaves{MaxNamespaces: ptr.To[int32](2)}, MaxUnavailable: ptr.To[int32](3)})
	for i := 0; i < 100; i++ {
		h.tick()
		if dp := h.get(); len(dp.Status.Waves) > 0 && dp.Status.Waves[0].Phase == sluicev1.WaveBaking {
			break
		}
	}
	dp := h.get()
	if dp.Status.Waves[0].Phase != sluicev1.WaveBaking || len(dp.Status.Pins) != 2 {
		t.Fatalf("wave 0 %s, pins %v", dp.Status.Waves[0].Phase, dp.Status.Pins)
	}
	if err := h.c.Delete(h.ctx, dp); err != nil {
		t.Fatal(err)
	}
	if _, err := h.r.Reconcile(h.ctx, ctrlRequest(h.name)); err != nil {
		t.Fatal(err)
	}
	if err := h.c.Get(h.ctx, client.ObjectKey{Name: h.name}, &sluicev1.DataPlane{}); !apierrors.IsNotFound(err) {
		t.Fatalf("the DataPlane is still there: %v", err)
	}
	for i := 1; i <= 3; i++ {
		if pin, ok := h.namespaceObj(i).Annotations[mesh.LinkerdPinAnnotation]; ok {
			t.Errorf("%s still pinned to %s", h.ns(i), pin)
		}
	}
	ev := strings.Join(h.events.all(), "\n")
	if !strings.Contains(ev, "[Deleted] DataPlane deleted") || !strings.Contains(ev, "removed its pins from "+h.ns(1)+", "+h.ns(2)) ||
		!strings.Contains(ev, "every namespace follows the control plane's version (edge-26.8.3)") {
		t.Errorf("events:\n%s", ev)
	}
}

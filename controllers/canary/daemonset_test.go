package canary

import (
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
)

// daemonSetApp creates a DaemonSet "podinfo" with a ConfigMap it mounts, at image tag, on a
// cluster of nodes nodes (the harness plays the DaemonSet controller).
func (h *harness) daemonSetApp(nodes int32, tag string) {
	h.t.Helper()
	h.nodes = nodes
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "podinfo-config", Namespace: h.ns}, Data: map[string]string{"mode": "v1"}}
	ds := &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Name: "podinfo", Namespace: h.ns},
		Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "podinfo"}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "podinfo"}},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "ghcr.io/stefanprodan/podinfo:" + tag,
					EnvFrom: []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{
						LocalObjectReference: corev1.LocalObjectReference{Name: "podinfo-config"}}}}}}},
			},
		},
	}
	for _, o := range []client.Object{cm, ds} {
		if err := h.c.Create(h.ctx, o); err != nil {
			h.t.Fatalf("creating %s: %v", o.GetName(), err)
		}
	}
}

func (h *harness) daemonSet(name string) *appsv1.DaemonSet {
	h.t.Helper()
	d := &appsv1.DaemonSet{}
	if err := h.c.Get(h.ctx, client.ObjectKey{Namespace: h.ns, Name: name}, d); err != nil {
		h.t.Fatalf("reading daemonset %s: %v", name, err)
	}
	return d
}

func (h *harness) setDaemonSetImage(tag string) {
	h.t.Helper()
	d := h.daemonSet("podinfo")
	patch := client.MergeFrom(d.DeepCopy())
	d.Spec.Template.Spec.Containers[0].Image = "ghcr.io/stefanprodan/podinfo:" + tag
	if err := h.c.Patch(h.ctx, d, patch); err != nil {
		h.t.Fatalf("updating image: %v", err)
	}
}

// daemonSetCanary is the blue/green Canary of three iterations for the DaemonSet podinfo.
func (h *harness) daemonSetCanary() *sluicev1.Canary {
	c := h.blueGreenCanaryFor()
	c.Spec.TargetRef = sluicev1.TargetReference{APIVersion: "apps/v1", Kind: "DaemonSet", Name: "podinfo"}
	return c
}

// runsOnNoNode reports whether Sluice scaled the DaemonSet to zero (its pods match no node).
func runsOnNoNode(d *appsv1.DaemonSet) bool {
	return d.Spec.Template.Spec.NodeSelector[scaleToZeroKey] == "true"
}

func imageOf(d *appsv1.DaemonSet) string { return d.Spec.Template.Spec.Containers[0].Image }

// TestDaemonSetTargetPromotesAndRollsBack (issue 16): a DaemonSet target runs blue/green on provider
// kubernetes. Sluice creates the primary DaemonSet podinfo-primary from it (selector and config
// copies suffixed -primary) and runs the target on no node between runs; a good release runs its
// iterations at 0 % on the canary, switches, and the primary gets the promoted pod template; a bad
// one is rolled back with the primary's revision kept and the apex never selecting the canary.
func TestDaemonSetTargetPromotesAndRollsBack(t *testing.T) {
	h := newHarnessFor(t, sluicev1.ProviderKubernetes)
	h.daemonSetApp(3, "6.7.0")
	h.create(h.daemonSetCanary())
	h.runUntil(sluicev1.CanaryPhaseInitialized, 20)

	primary := h.daemonSet("podinfo-primary")
	if !ownedBy(primary, h.canary()) || primary.Spec.Selector.MatchLabels["app"] != "podinfo-primary" ||
		primary.Spec.Template.Labels["app"] != "podinfo-primary" || runsOnNoNode(primary) ||
		primary.Spec.Template.Spec.Containers[0].EnvFrom[0].ConfigMapRef.Name != "podinfo-config-primary" {
		t.Fatalf("primary daemonset: %+v", primary.Spec)
	}
	if primary.Status.NumberReady != 3 {
		t.Fatalf("primary ready on %d nodes", primary.Status.NumberReady)
	}
	if !runsOnNoNode(h.daemonSet("podinfo")) {
		t.Fatalf("the target runs on its nodes after initialization: %v", h.daemonSet("podinfo").Spec.Template.Spec.NodeSelector)
	}
	if got := h.apexSelects(); got != "primary" {
		t.Fatalf("after initialization the apex selects %s", got)
	}
	initialRevision := h.canary().Status.LastPromotedSpec

	h.setDaemonSetImage("6.7.1")
	seen := h.runWatchingApex(sluicev1.CanaryPhaseSucceeded, 60)
	if want := []string{"primary@Progressing", "canary@Promoting", "primary@Succeeded"}; strings.Join(seen, " ") != strings.Join(want, " ") {
		t.Fatalf("apex selected %v, want %v\n%s", seen, want, strings.Join(h.log, "\n"))
	}
	primary = h.daemonSet("podinfo-primary")
	if !strings.HasSuffix(imageOf(primary), ":6.7.1") || runsOnNoNode(primary) || primary.Spec.Template.Labels["app"] != "podinfo-primary" {
		t.Fatalf("primary after promotion: image %s, nodeSelector %v, labels %v", imageOf(primary),
			primary.Spec.Template.Spec.NodeSelector, primary.Spec.Template.Labels)
	}
	c := h.canary()
	if c.Status.Iterations != 3 || c.Status.LastPromotedSpec != c.Status.LastAppliedSpec || c.Status.LastPromotedSpec == initialRevision {
		t.Fatalf("status after promotion: %+v", c.Status)
	}
	if primary.Annotations[AnnotationRevision] != c.Status.LastPromotedSpec {
		t.Fatalf("primary revision %s, promoted %s", primary.Annotations[AnnotationRevision], c.Status.LastPromotedSpec)
	}
	if !runsOnNoNode(h.daemonSet("podinfo")) {
		t.Fatal("the target still runs on its nodes after the promotion")
	}
	promoted := c.Status.LastPromotedSpec

	h.analyzer.fail = func(int32) bool { return true }
	h.setDaemonSetImage("6.7.2")
	seen = h.runWatchingApex(sluicev1.CanaryPhaseFailed, 60)
	for _, s := range seen {
		if !strings.HasPrefix(s, "primary@") {
			t.Fatalf("the apex selected the canary during a failing run: %v\n%s", seen, strings.Join(h.log, "\n"))
		}
	}
	primary = h.daemonSet("podinfo-primary")
	if !strings.HasSuffix(imageOf(primary), ":6.7.1") || primary.Annotations[AnnotationRevision] != promoted {
		t.Fatalf("primary after the rollback: image %s revision %s, want 6.7.1 at %s", imageOf(primary), primary.Annotations[AnnotationRevision], promoted)
	}
	if !runsOnNoNode(h.daemonSet("podinfo")) {
		t.Fatal("the target still runs on its nodes after the rollback")
	}
	if c := h.canary(); c.Status.LastPromotedSpec != promoted {
		t.Fatalf("promoted revision %s after the rollback, want %s", c.Status.LastPromotedSpec, promoted)
	}
	t.Log("\n" + strings.Join(h.log, "\n"))
}

// TestDaemonSetNotReadyWhileNodesRunOldPods: a DaemonSet counts as ready only when every node it
// should run on runs the current template, whatever numberReady says (it counts nodes with any
// ready pod, old ones included): the primary whose rollout is stuck on one node keeps the Canary
// Initializing, and a canary DaemonSet still updating is never switched to.
func TestDaemonSetNotReadyWhileNodesRunOldPods(t *testing.T) {
	h := newHarnessFor(t, sluicev1.ProviderKubernetes)
	h.daemonSetApp(3, "6.7.0")
	h.nodes = 0 // the test writes the DaemonSet statuses
	h.create(h.daemonSetCanary())
	oldPodsOnOneNode := func(name string) {
		d := h.daemonSet(name)
		patch := client.MergeFrom(d.DeepCopy())
		d.Status = appsv1.DaemonSetStatus{ObservedGeneration: d.Generation, DesiredNumberScheduled: 3, CurrentNumberScheduled: 3,
			UpdatedNumberScheduled: 2, NumberReady: 3, NumberAvailable: 3}
		if err := h.c.Status().Patch(h.ctx, d, patch); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i < 8; i++ {
		h.tick()
		if err := h.c.Get(h.ctx, client.ObjectKey{Namespace: h.ns, Name: "podinfo-primary"}, &appsv1.DaemonSet{}); err == nil {
			oldPodsOnOneNode("podinfo-primary")
		}
	}
	if h.last.Phase != sluicev1.CanaryPhaseInitializing {
		t.Fatalf("phase %s with the primary's rollout stuck on one node\n%s", h.last.Phase, strings.Join(h.log, "\n"))
	}
	apex := &corev1.Service{}
	if err := h.c.Get(h.ctx, client.ObjectKey{Namespace: h.ns, Name: "podinfo"}, apex); !apierrors.IsNotFound(err) {
		t.Fatalf("the apex Service exists (%v, selector %v) before the primary's rollout finished", err, apex.Spec.Selector)
	}

	h.nodes = 3
	h.runUntil(sluicev1.CanaryPhaseInitialized, 10)
	h.setDaemonSetImage("6.7.1")
	h.nodes = 0
	// Tick until just before the progress deadline (the canary never catches up, so the run then
	// rolls back): a waiting run looks again when its watches or the deadline say (plan/waits.go).
	released := h.clock.Now()
	for i := 0; i < 30 && h.clock.Now().Sub(released) < 9*time.Minute; i++ {
		h.tick()
		oldPodsOnOneNode("podinfo")
		if h.apexSelects() == "canary" || h.last.CanaryWeight != 0 {
			t.Fatalf("switched to a canary DaemonSet still running old pods on a node\n%s", strings.Join(h.log, "\n"))
		}
	}
	if h.last.Phase != sluicev1.CanaryPhaseProgressing {
		t.Fatalf("phase %s, want Progressing (waiting for the canary)\n%s", h.last.Phase, strings.Join(h.log, "\n"))
	}
}

// TestDaemonSetSummary: the per-node status fields as the plan reads them.
func TestDaemonSetSummary(t *testing.T) {
	ds := func(gen, observed int64, desired, updated, ready int32, off bool) daemonSet {
		d := &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Generation: gen}, Status: appsv1.DaemonSetStatus{ObservedGeneration: observed,
			DesiredNumberScheduled: desired, UpdatedNumberScheduled: updated, NumberReady: ready}}
		if off {
			d.Spec.Template.Spec.NodeSelector = map[string]string{scaleToZeroKey: "true"}
		}
		return daemonSet{d}
	}
	cases := []struct {
		name  string
		w     daemonSet
		ready bool
	}{
		{"all nodes updated and ready", ds(2, 2, 3, 3, 3, false), true},
		{"one node runs an old pod", ds(2, 2, 3, 2, 3, false), false},
		{"generation not observed", ds(3, 2, 3, 3, 3, false), false},
		{"updated but not ready", ds(2, 2, 3, 3, 2, false), false},
		{"no node to run on", ds(2, 2, 0, 0, 0, false), false},
		{"scaled to zero", ds(2, 2, 3, 3, 3, true), false},
	}
	for _, c := range cases {
		if got := c.w.summary("r").IsReady(100); got != c.ready {
			t.Errorf("%s: ready %t, want %t (%+v)", c.name, got, c.ready, c.w.summary("r"))
		}
	}
}

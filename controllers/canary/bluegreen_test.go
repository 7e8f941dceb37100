package canary

import (
	"maps"
	"strings"
	"testing"

	istionetv1 "istio.io/client-go/pkg/apis/networking/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
)

// blueGreenCanaryFor is the seed Canary as a blue/green run of three iterations on the harness's
// provider (Linkerd metrics, which provider kubernetes needs a mesh for).
func (h *harness) blueGreenCanaryFor() *sluicev1.Canary {
	c := h.canaryFor()
	c.Spec.Mesh = sluicev1.MeshLinkerd
	c.Spec.Analysis.StepWeight, c.Spec.Analysis.MaxWeight = 0, 0
	c.Spec.Analysis.Iterations = 3
	return c
}

// apexSelects names the pods the apex Service selects: "primary", "canary" or the selector.
func (h *harness) apexSelects() string {
	h.t.Helper()
	svc := &corev1.Service{}
	if err := h.c.Get(h.ctx, client.ObjectKey{Namespace: h.ns, Name: "podinfo"}, svc); err != nil {
		h.t.Fatal(err)
	}
	switch {
	case maps.Equal(svc.Spec.Selector, map[string]string{"app": "podinfo-primary"}):
		return "primary"
	case maps.Equal(svc.Spec.Selector, map[string]string{"app": "podinfo"}):
		return "canary"
	}
	return "other"
}

// runWatchingApex ticks until phase, recording every change of what the apex Service selects, in
// order, with the phase at the time.
func (h *harness) runWatchingApex(phase sluicev1.CanaryPhase, max int) []string {
	h.t.Helper()
	var seen []string
	for i := 0; i < max; i++ {
		h.tick()
		now := h.apexSelects() + "@" + string(h.last.Phase)
		if len(seen) == 0 || !strings.HasPrefix(seen[len(seen)-1], h.apexSelects()+"@") {
			seen = append(seen, now)
		}
		if h.last.Phase == phase {
			return seen
		}
	}
	h.t.Fatalf("phase %s after %d ticks, want %s\n%s", h.last.Phase, max, phase, strings.Join(h.log, "\n"))
	return nil
}

// TestKubernetesProviderBlueGreen: no route objects at all; the apex Service selects the primary
// while the iterations run, the canary once they passed (while the primary is promoted), and the
// new primary at the end; a failing run never points the apex at the canary.
func TestKubernetesProviderBlueGreen(t *testing.T) {
	h := newHarnessFor(t, sluicev1.ProviderKubernetes)
	h.app(2, "6.7.0")
	h.create(h.blueGreenCanaryFor())
	h.runUntil(sluicev1.CanaryPhaseInitialized, 20)
	if got := h.apexSelects(); got != "primary" {
		t.Fatalf("after initialization the apex selects %s", got)
	}

	h.setImage("6.7.1")
	seen := h.runWatchingApex(sluicev1.CanaryPhaseSucceeded, 60)
	if want := []string{"primary@Progressing", "canary@Promoting", "primary@Succeeded"}; strings.Join(seen, " ") != strings.Join(want, " ") {
		t.Fatalf("apex selected %v, want %v\n%s", seen, want, strings.Join(h.log, "\n"))
	}
	if img := h.deployment("podinfo-primary").Spec.Template.Spec.Containers[0].Image; !strings.HasSuffix(img, ":6.7.1") {
		t.Fatalf("primary runs %s", img)
	}
	if c := h.canary(); c.Status.Iterations != 3 || c.Status.LastPromotedSpec != c.Status.LastAppliedSpec {
		t.Fatalf("status after promotion: %+v", c.Status)
	}

	h.analyzer.fail = func(int32) bool { return true }
	h.setImage("6.7.2")
	seen = h.runWatchingApex(sluicev1.CanaryPhaseFailed, 60)
	for _, s := range seen {
		if !strings.HasPrefix(s, "primary@") {
			t.Fatalf("the apex selected the canary during a failing run: %v\n%s", seen, strings.Join(h.log, "\n"))
		}
	}
	if img := h.deployment("podinfo-primary").Spec.Template.Spec.Containers[0].Image; !strings.HasSuffix(img, ":6.7.1") {
		t.Fatalf("primary runs %s after the rollback", img)
	}
	if r := h.deployment("podinfo").Spec.Replicas; r == nil || *r != 0 {
		t.Fatalf("canary replicas after the rollback: %v", r)
	}
	routes, vss := &gwv1.HTTPRouteList{}, &istionetv1.VirtualServiceList{}
	for _, l := range []client.ObjectList{routes, vss} {
		if err := h.c.List(h.ctx, l, client.InNamespace(h.ns)); err != nil {
			t.Fatal(err)
		}
	}
	if len(routes.Items)+len(vss.Items) != 0 {
		t.Fatalf("provider kubernetes created route objects: %d HTTPRoutes, %d VirtualServices", len(routes.Items), len(vss.Items))
	}
	if n := h.analyzer.Calls(); n < 8 {
		t.Fatalf("%d analyses for two runs", n)
	}
	t.Log("\n" + strings.Join(h.log, "\n"))
}

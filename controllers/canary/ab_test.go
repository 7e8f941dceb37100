package canary

import (
	"strings"
	"testing"

	istionetv1 "istio.io/client-go/pkg/apis/networking/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
	"sluice.dev/sluice/providers"
)

// abCanaryFor is the harness's Canary as a Flagger A/B test: requests with x-canary: insider go to
// the canary for 3 checks, no weights.
func (h *harness) abCanaryFor() *sluicev1.Canary {
	c := h.canaryFor()
	c.Spec.Analysis.StepWeight, c.Spec.Analysis.MaxWeight = 0, 0
	c.Spec.Analysis.Iterations = 3
	c.Spec.Analysis.Match = []sluicev1.HTTPMatchRequest{{Headers: map[string]sluicev1.StringMatch{"x-canary": {Exact: ptr.To("insider")}}}}
	return c
}

// abRouting reads the generated route object and reports whether it holds the A/B rule, checking
// its shape: a rule (Istio: HTTP route) named sluice-ab-0 before the weighted one, matching
// x-canary: insider and sending everything to podinfo-canary, while the weighted one sends
// everything to podinfo-primary.
func (h *harness) abRouting() bool {
	h.t.Helper()
	key := client.ObjectKey{Namespace: h.ns, Name: "podinfo"}
	switch h.provider {
	case sluicev1.ProviderIstio:
		vs := &istionetv1.VirtualService{}
		if err := h.c.Get(h.ctx, key, vs); err != nil {
			h.t.Fatal(err)
		}
		http := vs.Spec.Http
		if len(http) == 1 {
			return false
		}
		ab, main := http[0], http[1]
		if len(http) != 2 || ab.Name != providers.ABRuleNamePrefix+"0" || len(ab.Match) != 1 ||
			ab.Match[0].Headers["x-canary"].GetExact() != "insider" ||
			ab.Route[0].Destination.Host != "podinfo-primary" || ab.Route[0].Weight != 0 ||
			ab.Route[1].Destination.Host != "podinfo-canary" || ab.Route[1].Weight != 100 ||
			main.Route[0].Weight != 100 || main.Route[1].Weight != 0 {
			h.t.Fatalf("VirtualService routes with A/B routing: %v", http)
		}
		return true
	default:
		route := &gwv1.HTTPRoute{}
		if err := h.c.Get(h.ctx, key, route); err != nil {
			h.t.Fatal(err)
		}
		rules := route.Spec.Rules
		if len(rules) == 1 {
			return false
		}
		ab, main := rules[0], rules[1]
		if len(rules) != 2 || string(ptr.Deref(ab.Name, "")) != providers.ABRuleNamePrefix+"0" || len(ab.Matches) != 1 ||
			len(ab.Matches[0].Headers) != 1 || ab.Matches[0].Headers[0].Name != "x-canary" || ab.Matches[0].Headers[0].Value != "insider" ||
			ab.BackendRefs[0].Name != "podinfo-primary" || *ab.BackendRefs[0].Weight != 0 ||
			ab.BackendRefs[1].Name != "podinfo-canary" || *ab.BackendRefs[1].Weight != 100 ||
			*main.BackendRefs[0].Weight != 100 || *main.BackendRefs[1].Weight != 0 {
			h.t.Fatalf("HTTPRoute rules with A/B routing: %+v", rules)
		}
		return true
	}
}

func TestABTestingPromotes(t *testing.T) { bothProviders(t, abTestingPromotes) }

func abTestingPromotes(t *testing.T, h *harness) {
	// Every check must run while matching requests reach the canary.
	h.analyzer.fail = func(int32) bool {
		if !h.abRouting() {
			t.Error("analysis ran without A/B routing")
		}
		return false
	}
	h.app(2, "6.0.0")
	h.create(h.abCanaryFor())
	h.runUntil(sluicev1.CanaryPhaseInitialized, 10)
	h.setImage("6.0.1")
	sawAB := false
	for i := 0; i < 40 && h.last.Phase != sluicev1.CanaryPhaseSucceeded; i++ {
		h.tick()
		if w := h.routeWeights(); w != providers.CanaryWeight(0) {
			t.Fatalf("route weights %+v in an A/B run, want 100/0", w)
		}
		if h.abRouting() {
			sawAB = true
			if d := h.deployment("podinfo"); d.Status.ReadyReplicas == 0 {
				t.Fatal("A/B routing to a canary without ready replicas")
			}
		}
		if h.last.Phase == sluicev1.CanaryPhaseSucceeded && !h.primaryMatchesTarget() {
			t.Fatal("Succeeded before the primary runs the canary's template")
		}
	}
	t.Log("\n" + strings.Join(h.log, "\n"))
	if h.last.Phase != sluicev1.CanaryPhaseSucceeded || !sawAB {
		t.Fatalf("phase %s, A/B routing seen %v", h.last.Phase, sawAB)
	}
	c := h.canary()
	if c.Status.Iterations != 3 || h.analyzer.Calls() != 3 || c.Status.CanaryWeight != 0 {
		t.Fatalf("iterations %d, checks %d, weight %d; want 3, 3, 0", c.Status.Iterations, h.analyzer.Calls(), c.Status.CanaryWeight)
	}
	if h.abRouting() {
		t.Fatal("A/B rule left after promotion")
	}
	if img := h.deployment("podinfo-primary").Spec.Template.Spec.Containers[0].Image; !strings.HasSuffix(img, ":6.0.1") {
		t.Fatalf("primary image %s after promotion", img)
	}
	if got := *h.deployment("podinfo").Spec.Replicas; got != 0 {
		t.Fatalf("canary not scaled down: %d", got)
	}
	for _, want := range []string{"[ABTestingStarted]", "[IterationPassed] A/B check 3/3 passed", "[Succeeded]"} {
		if !strings.Contains(strings.Join(h.log, "\n"), want) {
			t.Errorf("log lacks %s", want)
		}
	}
}

func TestABTestingRollsBack(t *testing.T) { bothProviders(t, abTestingRollsBack) }

func abTestingRollsBack(t *testing.T, h *harness) {
	h.analyzer.fail = func(int32) bool { return true }
	h.app(2, "6.0.0")
	c := h.abCanaryFor()
	c.Spec.Analysis.Threshold = 2
	h.create(c)
	h.runUntil(sluicev1.CanaryPhaseInitialized, 10)
	h.setImage("6.0.1-bad")
	sawAB := false
	for i := 0; i < 40 && h.last.Phase != sluicev1.CanaryPhaseFailed; i++ {
		h.tick()
		sawAB = sawAB || h.abRouting()
	}
	t.Log("\n" + strings.Join(h.log, "\n"))
	if h.last.Phase != sluicev1.CanaryPhaseFailed || !sawAB {
		t.Fatalf("phase %s, A/B routing seen %v", h.last.Phase, sawAB)
	}
	c = h.canary()
	if c.Status.FailedChecks != 2 || c.Status.Iterations != 0 || h.analyzer.Calls() != 2 {
		t.Fatalf("failed %d, iterations %d, checks %d; want 2, 0, 2", c.Status.FailedChecks, c.Status.Iterations, h.analyzer.Calls())
	}
	if h.abRouting() {
		t.Fatal("A/B rule left after the rollback")
	}
	if w := h.routeWeights(); w != providers.CanaryWeight(0) {
		t.Fatalf("route after rollback %+v", w)
	}
	if got := *h.deployment("podinfo").Spec.Replicas; got != 0 {
		t.Fatalf("canary not scaled down: %d", got)
	}
	if img := h.deployment("podinfo-primary").Spec.Template.Spec.Containers[0].Image; !strings.HasSuffix(img, ":6.0.0") {
		t.Fatalf("primary changed to %s", img)
	}
	for i := 0; i < 3; i++ {
		h.tick()
	}
	if h.analyzer.Calls() != 2 || h.last.Phase != sluicev1.CanaryPhaseFailed || h.abRouting() {
		t.Fatal("a rolled-back A/B canary ran analysis again, changed phase or routed by match again")
	}
}

// TestABTestingUserRouteRestoredOnDeletion deletes an A/B Canary with revertOnDeletion in the
// middle of its run on the user's three-rule HTTPRoute: the route comes back exactly as written.
func TestABTestingUserRouteRestoredOnDeletion(t *testing.T) {
	h := newHarness(t)
	h.app(2, "1")
	h.applyYAML(threeRuleRoute)
	routeGVK := gwv1.SchemeGroupVersion.WithKind("HTTPRoute")
	originalSpec := h.rawSpec(routeGVK, "podinfo")
	c := h.abCanaryFor()
	c.Spec.RevertOnDeletion = true
	c.Spec.Service.RouteRef = &sluicev1.RouteReference{APIVersion: "gateway.networking.k8s.io/v1", Kind: "HTTPRoute", Name: "podinfo"}
	h.create(c)
	h.runUntil(sluicev1.CanaryPhaseInitialized, 10)
	h.setImage("2")
	abRules := func() int {
		route := &gwv1.HTTPRoute{}
		if err := h.c.Get(h.ctx, client.ObjectKey{Namespace: h.ns, Name: "podinfo"}, route); err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, r := range route.Spec.Rules {
			if strings.HasPrefix(string(ptr.Deref(r.Name, "")), providers.ABRuleNamePrefix) {
				n++
			}
		}
		return n
	}
	for i := 0; i < 10 && h.canary().Status.Iterations < 1; i++ {
		h.tick()
	}
	// Rule A (/api, rewrite) and rule C (x-beta: yes) route to the apex: one A/B rule each.
	if n := abRules(); n != 2 {
		t.Fatalf("%d A/B rules during the run, want 2\n%s", n, strings.Join(h.log, "\n"))
	}
	h.deleteAndFinalize()
	if got := h.rawSpec(routeGVK, "podinfo"); got != originalSpec {
		t.Fatalf("HTTPRoute not restored:\n got %s\nwant %s", got, originalSpec)
	}
	h.assertTargetServes(2)
}

func TestABTestingRestoresRemovedRule(t *testing.T) {
	bothProviders(t, abTestingRestoresRemovedRule)
}

func abTestingRestoresRemovedRule(t *testing.T, h *harness) {
	h.app(2, "6.0.0")
	h.create(h.abCanaryFor())
	h.runUntil(sluicev1.CanaryPhaseInitialized, 10)
	h.setImage("6.0.1")
	for i := 0; i < 10 && !h.abRouting(); i++ {
		h.tick()
	}
	// Someone takes the A/B rule out of the route.
	key := client.ObjectKey{Namespace: h.ns, Name: "podinfo"}
	if h.provider == sluicev1.ProviderIstio {
		vs := &istionetv1.VirtualService{}
		if err := h.c.Get(h.ctx, key, vs); err != nil {
			t.Fatal(err)
		}
		vs.Spec.Http = vs.Spec.Http[1:]
		if err := h.c.Update(h.ctx, vs); err != nil {
			t.Fatal(err)
		}
	} else {
		route := &gwv1.HTTPRoute{}
		if err := h.c.Get(h.ctx, key, route); err != nil {
			t.Fatal(err)
		}
		route.Spec.Rules = route.Spec.Rules[1:]
		if err := h.c.Update(h.ctx, route); err != nil {
			t.Fatal(err)
		}
	}
	if h.abRouting() {
		t.Fatal("the A/B rule is still there")
	}
	h.tick()
	if !h.abRouting() || !strings.Contains(h.log[len(h.log)-1], "[ABRoutesRestored]") {
		t.Fatalf("the A/B rule was not put back:\n%s", strings.Join(h.log, "\n"))
	}
	h.runUntil(sluicev1.CanaryPhaseSucceeded, 20)
	if h.abRouting() {
		t.Fatal("A/B rule left after promotion")
	}
}

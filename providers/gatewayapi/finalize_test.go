package gatewayapi_test

import (
	"context"
	"reflect"
	"testing"

	"k8s.io/utils/ptr"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"sluice.dev/sluice/providers"
)

// TestReferenceFinalizeKeepsUserEdits edits the three-rule route in the middle of a run, as its
// owner would: rule A's timeout (a rule Sluice manages the backends of), rule B's backend (a rule
// Sluice never manages) and rule C's backends (a second backend next to Sluice's pair). Finalize
// undoes only what Sluice changed: rule A gets its apex backendRef back as written and keeps the
// new timeout, rule B stays as edited, and rule C's pair becomes one apex backendRef next to the
// user's new backend, with the same shares of the traffic.
func TestReferenceFinalizeKeepsUserEdits(t *testing.T) {
	ctx := context.Background()
	h := newHarness(t)
	ns := env.Namespace(t)
	orig := newThreeRuleRoute(t, ns)
	canary := referenceCanary(t, ns, "shop")
	if err := h.SetRoutes(ctx, canary, providers.CanaryWeight(30)); err != nil {
		t.Fatal(err)
	}
	route := getRoute(t, ns, "shop")
	route.Spec.Rules[ruleA].Timeouts = &gwv1.HTTPRouteTimeouts{Request: ptr.To(gwv1.Duration("9s"))}
	route.Spec.Rules[ruleB].BackendRefs = []gwv1.HTTPBackendRef{serviceRef("static-files-v2", 80, nil)}
	route.Spec.Rules[ruleC].BackendRefs = append(route.Spec.Rules[ruleC].BackendRefs, serviceRef("legacy", 9898, ptr.To(int32(100))))
	if err := env.Client.Update(ctx, route); err != nil {
		t.Fatal(err)
	}
	edited := getRoute(t, ns, "shop")

	if err := h.Finalize(ctx, canary); err != nil {
		t.Fatal(err)
	}
	got := getRoute(t, ns, "shop")
	if len(got.Spec.Rules) != 3 {
		t.Fatalf("%d rules after Finalize, want 3", len(got.Spec.Rules))
	}
	wantA := *orig.Spec.Rules[ruleA].DeepCopy()
	wantA.Timeouts = &gwv1.HTTPRouteTimeouts{Request: ptr.To(gwv1.Duration("9s"))}
	if !reflect.DeepEqual(got.Spec.Rules[ruleA], wantA) {
		t.Fatalf("rule A: the user's timeout edit is lost or the backend not restored:\n got %+v\nwant %+v", got.Spec.Rules[ruleA], wantA)
	}
	if !reflect.DeepEqual(got.Spec.Rules[ruleB], edited.Spec.Rules[ruleB]) {
		t.Fatalf("rule B (never managed) reverted:\n got %+v\nwant %+v", got.Spec.Rules[ruleB], edited.Spec.Rules[ruleB])
	}
	c := got.Spec.Rules[ruleC]
	if len(c.BackendRefs) != 2 || c.BackendRefs[0].Name != "podinfo" || ptr.Deref(c.BackendRefs[0].Weight, 1) != 100 ||
		!reflect.DeepEqual(c.BackendRefs[0].Filters, backendFilter) || c.BackendRefs[1].Name != "legacy" || ptr.Deref(c.BackendRefs[1].Weight, 1) != 100 {
		t.Fatalf("rule C: want apex podinfo (weight 100, its filter) and the user's legacy (100), got %+v", c.BackendRefs)
	}
	if !reflect.DeepEqual(c.Matches, orig.Spec.Rules[ruleC].Matches) {
		t.Fatalf("rule C matches changed: %+v", c.Matches)
	}
}

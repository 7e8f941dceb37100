package gatewayapi

import (
	"reflect"
	"testing"

	"k8s.io/utils/ptr"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
	"sluice.dev/sluice/providers"
)

var testServices = services{namespace: "ns", names: sluicev1.ServiceNames{Apex: "app", Primary: "app-primary", Canary: "app-canary"}}

func backend(name string, weight int32) gwv1.HTTPBackendRef {
	return gwv1.HTTPBackendRef{BackendRef: gwv1.BackendRef{
		BackendObjectReference: gwv1.BackendObjectReference{
			Group: ptr.To(gwv1.Group("")), Kind: ptr.To(gwv1.Kind("Service")),
			Name: gwv1.ObjectName(name), Port: ptr.To(gwv1.PortNumber(80)),
		},
		Weight: ptr.To(weight),
	}}
}

// weightsOf lists name=weight of a rule's backendRefs in order.
func weightsOf(rule gwv1.HTTPRouteRule) map[string][]int64 {
	out := map[string][]int64{}
	for i := range rule.BackendRefs {
		out[string(rule.BackendRefs[i].Name)] = append(out[string(rule.BackendRefs[i].Name)], weightOf(&rule.BackendRefs[i]))
	}
	return out
}

func TestSplitRule(t *testing.T) {
	w := providers.CanaryWeight(10)
	cases := []struct {
		name string
		refs []gwv1.HTTPBackendRef
		want map[string][]int64
	}{
		{"apex alone", []gwv1.HTTPBackendRef{backend("app", 1)},
			map[string][]int64{"app-primary": {90}, "app-canary": {10}}},
		{"apex alone, weight 7", []gwv1.HTTPBackendRef{backend("app", 7)},
			map[string][]int64{"app-primary": {90}, "app-canary": {10}}},
		{"apex at 0, alone: never all zero", []gwv1.HTTPBackendRef{backend("app", 0)},
			map[string][]int64{"app-primary": {90}, "app-canary": {10}}},
		{"apex 100 beside another: other kept", []gwv1.HTTPBackendRef{backend("app", 100), backend("legacy", 50)},
			map[string][]int64{"app-primary": {90}, "app-canary": {10}, "legacy": {50}}},
		{"apex 1 beside another: others scaled, shares kept", []gwv1.HTTPBackendRef{backend("app", 1), backend("legacy", 3)},
			map[string][]int64{"app-primary": {90}, "app-canary": {10}, "legacy": {300}}},
		{"apex 50 beside another", []gwv1.HTTPBackendRef{backend("legacy", 1), backend("app", 50)},
			map[string][]int64{"app-primary": {90}, "app-canary": {10}, "legacy": {2}}},
		{"apex 0 beside another: stays off", []gwv1.HTTPBackendRef{backend("app", 0), backend("legacy", 1)},
			map[string][]int64{"app-primary": {0}, "app-canary": {0}, "legacy": {1}}},
		{"pair set", []gwv1.HTTPBackendRef{backend("app-primary", 100), backend("app-canary", 0)},
			map[string][]int64{"app-primary": {90}, "app-canary": {10}}},
		{"pair in shared rule keeps its unit", []gwv1.HTTPBackendRef{backend("app-primary", 150), backend("app-canary", 50), backend("legacy", 100)},
			map[string][]int64{"app-primary": {180}, "app-canary": {20}, "legacy": {100}}},
		{"pair edited off the grid", []gwv1.HTTPBackendRef{backend("app-primary", 80), backend("app-canary", 10)},
			map[string][]int64{"app-primary": {90}, "app-canary": {10}}},
		{"lone primary gets its canary back", []gwv1.HTTPBackendRef{backend("app-primary", 100)},
			map[string][]int64{"app-primary": {90}, "app-canary": {10}}},
		{"pair at 0/0 alone: never all zero", []gwv1.HTTPBackendRef{backend("app-primary", 0), backend("app-canary", 0)}, map[string][]int64{"app-primary": {90}, "app-canary": {10}}},
		{"new apex beside a pair", []gwv1.HTTPBackendRef{backend("app-primary", 70), backend("app-canary", 30), backend("app", 1)},
			map[string][]int64{"app-primary": {9000, 90}, "app-canary": {1000, 10}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rule, err := testServices.splitRule(gwv1.HTTPRouteRule{BackendRefs: tc.refs}, w)
			if err != nil {
				t.Fatal(err)
			}
			got := weightsOf(rule)
			if len(got) != len(tc.want) {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
			for name, ws := range tc.want {
				if len(got[name]) != len(ws) {
					t.Fatalf("got %v, want %v", got, tc.want)
				}
				for i := range ws {
					if got[name][i] != ws[i] {
						t.Fatalf("got %v, want %v", got, tc.want)
					}
				}
			}
		})
	}
}

func TestSplitRuleKeepsEverythingButWeights(t *testing.T) {
	apex := backend("app", 1)
	apex.Filters = []gwv1.HTTPRouteFilter{{Type: gwv1.HTTPRouteFilterRequestHeaderModifier,
		RequestHeaderModifier: &gwv1.HTTPHeaderFilter{Set: []gwv1.HTTPHeader{{Name: "x", Value: "y"}}}}}
	rule := gwv1.HTTPRouteRule{
		Name:        ptr.To(gwv1.SectionName("a")),
		Matches:     []gwv1.HTTPRouteMatch{{Path: defaultPath()}},
		BackendRefs: []gwv1.HTTPBackendRef{apex},
	}
	out, err := testServices.splitRule(rule, providers.CanaryWeight(40))
	if err != nil {
		t.Fatal(err)
	}
	if len(out.BackendRefs) != 2 || *out.Name != "a" || len(out.Matches) != 1 {
		t.Fatalf("unexpected rule %+v", out)
	}
	for i, name := range []string{"app-primary", "app-canary"} {
		ref := out.BackendRefs[i]
		if string(ref.Name) != name || *ref.Port != 80 || len(ref.Filters) != 1 || ref.Filters[0].RequestHeaderModifier.Set[0].Value != "y" {
			t.Errorf("backendRef %d = %+v", i, ref)
		}
	}
	if string(rule.BackendRefs[0].Name) != "app" {
		t.Error("splitRule changed its input")
	}
}

func TestReadWeights(t *testing.T) {
	rule := func(refs ...gwv1.HTTPBackendRef) gwv1.HTTPRouteRule { return gwv1.HTTPRouteRule{BackendRefs: refs} }
	cases := []struct {
		name      string
		rules     []gwv1.HTTPRouteRule
		countApex bool
		want      providers.Weights
		wantErr   bool
	}{
		{"one pair", []gwv1.HTTPRouteRule{rule(backend("app-primary", 80), backend("app-canary", 20))}, false, providers.CanaryWeight(20), false},
		{"pairs agree, shared rule at unit 3", []gwv1.HTTPRouteRule{
			rule(backend("app-primary", 80), backend("app-canary", 20)),
			rule(backend("static", 5)),
			rule(backend("app-primary", 240), backend("app-canary", 60), backend("legacy", 100)),
		}, false, providers.CanaryWeight(20), false},
		{"0/0 pair skipped", []gwv1.HTTPRouteRule{rule(backend("app-primary", 0), backend("app-canary", 0), backend("legacy", 1)),
			rule(backend("app-primary", 0), backend("app-canary", 100))}, false, providers.CanaryWeight(100), false},
		{"unsplit apex counts as 100/0", []gwv1.HTTPRouteRule{rule(backend("app", 1))}, true, providers.CanaryWeight(0), false},
		{"unsplit apex ignored", []gwv1.HTTPRouteRule{rule(backend("app", 1))}, false, providers.Weights{}, true},
		{"disagree", []gwv1.HTTPRouteRule{rule(backend("app-primary", 80), backend("app-canary", 20)),
			rule(backend("app-primary", 70), backend("app-canary", 30))}, false, providers.Weights{}, true},
		{"unsplit apex disagrees with pairs", []gwv1.HTTPRouteRule{rule(backend("app-primary", 80), backend("app-canary", 20)),
			rule(backend("app", 1))}, true, providers.Weights{}, true},
		{"not a multiple of 100", []gwv1.HTTPRouteRule{rule(backend("app-primary", 80), backend("app-canary", 10))}, false, providers.Weights{}, true},
		{"not whole percent", []gwv1.HTTPRouteRule{rule(backend("app-primary", 199), backend("app-canary", 1))}, false, providers.Weights{}, true},
		{"other namespace is not ours", []gwv1.HTTPRouteRule{rule(func() gwv1.HTTPBackendRef {
			b := backend("app-primary", 100)
			b.Namespace = ptr.To(gwv1.Namespace("elsewhere"))
			return b
		}())}, false, providers.Weights{}, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := testServices.readWeights(tc.rules, tc.countApex)
			if (err != nil) != tc.wantErr || got != tc.want {
				t.Fatalf("readWeights = %+v, %v; want %+v, error %v", got, err, tc.want, tc.wantErr)
			}
		})
	}
}

func TestSplitThenReadEveryWeight(t *testing.T) {
	rules := []gwv1.HTTPRouteRule{
		{BackendRefs: []gwv1.HTTPBackendRef{backend("app", 1)}},
		{BackendRefs: []gwv1.HTTPBackendRef{backend("app", 3), backend("legacy", 7)}},
		{BackendRefs: []gwv1.HTTPBackendRef{backend("static", 1)}},
	}
	for c := int32(0); c <= 100; c++ {
		w := providers.CanaryWeight(c)
		out, err := testServices.splitRules(rules, w)
		if err != nil {
			t.Fatal(err)
		}
		got, err := testServices.readWeights(out, true)
		if err != nil || got != w {
			t.Fatalf("canary %d: read %+v, %v", c, got, err)
		}
		// Splitting again at the same weights changes nothing.
		again, err := testServices.splitRules(out, w)
		if err != nil {
			t.Fatal(err)
		}
		if weightsOf(again[1])["legacy"][0] != 700 || weightsOf(out[1])["legacy"][0] != 700 {
			t.Fatalf("legacy weight not scaled once: %v / %v", weightsOf(out[1]), weightsOf(again[1]))
		}
		for i := range out {
			var total int64
			for j := range out[i].BackendRefs {
				total += weightOf(&out[i].BackendRefs[j])
			}
			if total == 0 {
				t.Fatalf("canary %d: rule %d has all backends at weight 0", c, i)
			}
		}
	}
}

func TestUnsplitRules(t *testing.T) {
	rules := []gwv1.HTTPRouteRule{
		{BackendRefs: []gwv1.HTTPBackendRef{backend("app", 1)}},
		{BackendRefs: []gwv1.HTTPBackendRef{backend("legacy", 1), backend("app", 3)}},
		{BackendRefs: []gwv1.HTTPBackendRef{backend("static", 1)}},
	}
	split, err := testServices.splitRules(rules, providers.CanaryWeight(30))
	if err != nil {
		t.Fatal(err)
	}
	back := testServices.unsplitRules(split)
	for i, want := range []map[string][]int64{{"app": {100}}, {"legacy": {100}, "app": {300}}, {"static": {1}}} {
		if got := weightsOf(back[i]); !reflect.DeepEqual(got, want) {
			t.Errorf("rule %d: %v, want %v", i, got, want)
		}
	}
}

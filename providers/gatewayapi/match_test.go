package gatewayapi

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"k8s.io/utils/ptr"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
	"sluice.dev/sluice/providers"
)

func TestConvertMatches(t *testing.T) {
	got, err := convertMatches([]sluicev1.HTTPMatchRequest{
		{
			URI:         &sluicev1.StringMatch{Prefix: ptr.To("/api")},
			Headers:     map[string]sluicev1.StringMatch{"x-user": {Regex: ptr.To("^beta-.*")}, "cookie": {Prefix: ptr.To("canary=1")}},
			Method:      &sluicev1.StringMatch{Exact: ptr.To("POST")},
			QueryParams: map[string]sluicev1.StringMatch{"v": {Exact: ptr.To("2")}},
		},
		{URI: &sluicev1.StringMatch{Exact: ptr.To("/healthz")}},
		{URI: &sluicev1.StringMatch{Regex: ptr.To("/v[0-9]+/.*")}},
		{Headers: map[string]sluicev1.StringMatch{"x-canary": {Exact: ptr.To("always")}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []gwv1.HTTPRouteMatch{
		{
			Path: &gwv1.HTTPPathMatch{Type: ptr.To(gwv1.PathMatchPathPrefix), Value: ptr.To("/api")},
			Headers: []gwv1.HTTPHeaderMatch{
				{Type: ptr.To(gwv1.HeaderMatchRegularExpression), Name: "cookie", Value: `^canary=1.*`},
				{Type: ptr.To(gwv1.HeaderMatchRegularExpression), Name: "x-user", Value: "^beta-.*"},
			},
			QueryParams: []gwv1.HTTPQueryParamMatch{{Type: ptr.To(gwv1.QueryParamMatchExact), Name: "v", Value: "2"}},
			Method:      ptr.To(gwv1.HTTPMethodPost),
		},
		{Path: &gwv1.HTTPPathMatch{Type: ptr.To(gwv1.PathMatchExact), Value: ptr.To("/healthz")}},
		{Path: &gwv1.HTTPPathMatch{Type: ptr.To(gwv1.PathMatchRegularExpression), Value: ptr.To("/v[0-9]+/.*")}},
		{Path: defaultPath(), Headers: []gwv1.HTTPHeaderMatch{{Type: ptr.To(gwv1.HeaderMatchExact), Name: "x-canary", Value: "always"}}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("convertMatches:\n got %+v\nwant %+v", got, want)
	}

	if got, _ := convertMatches(nil); !reflect.DeepEqual(got, []gwv1.HTTPRouteMatch{{Path: defaultPath()}}) {
		t.Errorf("no match: %+v", got)
	}
	for _, bad := range []sluicev1.HTTPMatchRequest{
		{Method: &sluicev1.StringMatch{Regex: ptr.To("GET|POST")}},
		{Method: &sluicev1.StringMatch{Exact: ptr.To("get")}},
		{URI: &sluicev1.StringMatch{}},
	} {
		if _, err := convertMatches([]sluicev1.HTTPMatchRequest{bad}); !errors.Is(err, ErrInvalidSpec) {
			t.Errorf("convertMatches(%+v) error = %v, want ErrInvalidSpec", bad, err)
		}
	}
}

func TestGatewayDuration(t *testing.T) {
	for in, want := range map[string]gwv1.Duration{
		"5s": "5s", "1.5s": "1s500ms", "90s": "1m30s", "2h": "2h", "250ms": "250ms", "0s": "0s", "1h0m1s": "1h1s",
		"100000s": "27h46m40s",
	} {
		if got, err := gatewayDuration(in); err != nil || got != want {
			t.Errorf("gatewayDuration(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "10", "-1s", "1.5ms", "100000h"} {
		if _, err := gatewayDuration(bad); !errors.Is(err, ErrInvalidSpec) {
			t.Errorf("gatewayDuration(%q) error = %v, want ErrInvalidSpec", bad, err)
		}
	}
}

func TestGeneratedSpec(t *testing.T) {
	canary := &sluicev1.Canary{}
	canary.Namespace = "ns"
	canary.Spec.TargetRef.Name = "app"
	canary.Spec.Service = sluicev1.CanaryService{
		Port:    8080,
		Hosts:   []string{"app.example.com"},
		Timeout: "30s",
		Retries: &sluicev1.HTTPRetry{Attempts: 3},
		Headers: &sluicev1.HeaderOperations{
			Request:  &sluicev1.HeaderOperation{Set: map[string]string{"b": "2", "a": "1"}, Remove: []string{"x-debug"}},
			Response: &sluicev1.HeaderOperation{Add: map[string]string{"x-served-by": "sluice"}},
		},
	}
	spec, err := generatedSpec(canary, providers.CanaryWeight(25), false)
	if err != nil {
		t.Fatal(err)
	}
	wantParent := gwv1.ParentReference{Group: ptr.To(gwv1.Group("")), Kind: ptr.To(gwv1.Kind("Service")), Name: "app", Port: ptr.To(gwv1.PortNumber(8080))}
	if !reflect.DeepEqual(spec.ParentRefs, []gwv1.ParentReference{wantParent}) {
		t.Errorf("parentRefs = %+v", spec.ParentRefs)
	}
	if !reflect.DeepEqual(spec.Hostnames, []gwv1.Hostname{"app.example.com"}) {
		t.Errorf("hostnames = %v", spec.Hostnames)
	}
	rule := spec.Rules[0]
	if *rule.Timeouts.Request != "30s" || rule.Retry != nil {
		t.Errorf("timeouts = %+v, retry = %+v", rule.Timeouts, rule.Retry)
	}
	wantFilters := []gwv1.HTTPRouteFilter{
		{Type: gwv1.HTTPRouteFilterRequestHeaderModifier, RequestHeaderModifier: &gwv1.HTTPHeaderFilter{
			Set: []gwv1.HTTPHeader{{Name: "a", Value: "1"}, {Name: "b", Value: "2"}}, Remove: []string{"x-debug"}}},
		{Type: gwv1.HTTPRouteFilterResponseHeaderModifier, ResponseHeaderModifier: &gwv1.HTTPHeaderFilter{
			Add: []gwv1.HTTPHeader{{Name: "x-served-by", Value: "sluice"}}}},
	}
	if !reflect.DeepEqual(rule.Filters, wantFilters) {
		t.Errorf("filters = %+v", rule.Filters)
	}
	if got := weightsOf(rule); got["app-primary"][0] != 75 || got["app-canary"][0] != 25 || len(got) != 2 {
		t.Errorf("backends = %v", got)
	}

	canary.Spec.Service.GatewayRefs = []gwv1.ParentReference{{Name: "public", Namespace: ptr.To(gwv1.Namespace("infra"))}}
	spec, err = generatedSpec(canary, providers.CanaryWeight(0), false)
	if err != nil {
		t.Fatal(err)
	}
	wantGateway := gwv1.ParentReference{Group: ptr.To(gwv1.Group(gwv1.GroupName)), Kind: ptr.To(gwv1.Kind("Gateway")),
		Name: "public", Namespace: ptr.To(gwv1.Namespace("infra"))}
	if !reflect.DeepEqual(spec.ParentRefs, []gwv1.ParentReference{wantGateway}) {
		t.Errorf("parentRefs = %+v", spec.ParentRefs)
	}
}

func TestGeneratedSpecRewriteAndBackendTimeout(t *testing.T) {
	canary := &sluicev1.Canary{}
	canary.Namespace = "ns"
	canary.Spec.TargetRef.Name = "app"
	canary.Spec.Service = sluicev1.CanaryService{
		Port: 8080, Timeout: "30s", BackendTimeout: "10s",
		Match:   []sluicev1.HTTPMatchRequest{{URI: &sluicev1.StringMatch{Prefix: ptr.To("/api")}}},
		Rewrite: &sluicev1.HTTPRewrite{URI: "/v2", Authority: "app.internal", Type: sluicev1.RewriteReplacePrefixMatch},
	}
	spec, err := generatedSpec(canary, providers.CanaryWeight(0), false)
	if err != nil {
		t.Fatal(err)
	}
	rule := spec.Rules[0]
	wantTimeouts := &gwv1.HTTPRouteTimeouts{Request: ptr.To(gwv1.Duration("30s")), BackendRequest: ptr.To(gwv1.Duration("10s"))}
	if !reflect.DeepEqual(rule.Timeouts, wantTimeouts) {
		t.Errorf("timeouts = %+v, want %+v", rule.Timeouts, wantTimeouts)
	}
	wantRewrite := gwv1.HTTPRouteFilter{Type: gwv1.HTTPRouteFilterURLRewrite, URLRewrite: &gwv1.HTTPURLRewriteFilter{
		Hostname: ptr.To(gwv1.PreciseHostname("app.internal")),
		Path:     &gwv1.HTTPPathModifier{Type: gwv1.PrefixMatchHTTPPathModifier, ReplacePrefixMatch: ptr.To("/v2")},
	}}
	if len(rule.Filters) != 1 || !reflect.DeepEqual(rule.Filters[0], wantRewrite) {
		t.Errorf("filters = %+v, want the URL rewrite", rule.Filters)
	}

	canary.Spec.Service.Rewrite.Type = ""
	spec, err = generatedSpec(canary, providers.CanaryWeight(0), false)
	if err != nil {
		t.Fatal(err)
	}
	if p := spec.Rules[0].Filters[0].URLRewrite.Path; p.Type != gwv1.FullPathHTTPPathModifier || *p.ReplaceFullPath != "/v2" {
		t.Errorf("default rewrite path = %+v, want ReplaceFullPath /v2", p)
	}

	canary.Spec.Service.Rewrite.Type = sluicev1.RewriteReplacePrefixMatch
	canary.Spec.Service.Match = append(canary.Spec.Service.Match, sluicev1.HTTPMatchRequest{URI: &sluicev1.StringMatch{Exact: ptr.To("/health")}})
	if _, err := generatedSpec(canary, providers.CanaryWeight(0), false); !errors.Is(err, ErrInvalidSpec) ||
		!strings.Contains(err.Error(), "spec.service.rewrite.type ReplacePrefixMatch") {
		t.Fatalf("ReplacePrefixMatch with two matches: %v, want ErrInvalidSpec naming the field", err)
	}
}

package istio

import (
	"errors"
	"strconv"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/protoadapt"
	networkingv1 "istio.io/api/networking/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
	"sluice.dev/sluice/providers"
)

func rawJSON(s string) *apiextensionsv1.JSON { return &apiextensionsv1.JSON{Raw: []byte(s)} }

// fullService is a spec.service with every field the generated VirtualService carries.
func fullService() sluicev1.CanaryService {
	return sluicev1.CanaryService{
		Port:     9898,
		Hosts:    []string{"web.example.com", "web"},
		Gateways: []string{"istio-system/public"},
		Match: []sluicev1.HTTPMatchRequest{
			{Headers: map[string]sluicev1.StringMatch{"x-user": {Exact: ptr.To("beta")}}},
			{URI: &sluicev1.StringMatch{Prefix: ptr.To("/api")}, Method: &sluicev1.StringMatch{Regex: ptr.To("GET|HEAD")},
				QueryParams: map[string]sluicev1.StringMatch{"v": {Exact: ptr.To("2")}}},
		},
		Retries: &sluicev1.HTTPRetry{Attempts: 3, PerTryTimeout: "2s", RetryOn: "5xx,reset,connect-failure"},
		Timeout: "10s",
		Headers: &sluicev1.HeaderOperations{
			Request:  &sluicev1.HeaderOperation{Set: map[string]string{"x-a": "b"}, Add: map[string]string{"x-c": "d"}},
			Response: &sluicev1.HeaderOperation{Remove: []string{"server"}},
		},
		CorsPolicy:    rawJSON(`{"allowOrigins":[{"exact":"https://example.com"}],"allowMethods":["GET"],"maxAge":"24h"}`),
		Rewrite:       &sluicev1.HTTPRewrite{URI: "/v2", Authority: "web.internal"},
		TrafficPolicy: rawJSON(`{"connectionPool":{"tcp":{"maxConnections":100}},"loadBalancer":{"simple":"LEAST_REQUEST"}}`),
	}
}

// wantGenerated is fullService's VirtualService at canary weight c, in Istio's JSON shape.
func wantGenerated(t *testing.T, c int32) *networkingv1.VirtualService {
	t.Helper()
	w := providers.CanaryWeight(c)
	js := `{
	  "hosts": ["web", "web.example.com"],
	  "gateways": ["istio-system/public"],
	  "http": [{
	    "match": [
	      {"headers": {"x-user": {"exact": "beta"}}},
	      {"uri": {"prefix": "/api"}, "method": {"regex": "GET|HEAD"}, "queryParams": {"v": {"exact": "2"}}}
	    ],
	    "route": [
	      {"destination": {"host": "web-primary", "port": {"number": 9898}}, "weight": ` + strconv.Itoa(int(w.Primary)) + `},
	      {"destination": {"host": "web-canary", "port": {"number": 9898}}, "weight": ` + strconv.Itoa(int(w.Canary)) + `}
	    ],
	    "retries": {"attempts": 3, "perTryTimeout": "2s", "retryOn": "5xx,reset,connect-failure"},
	    "timeout": "10s",
	    "headers": {"request": {"set": {"x-a": "b"}, "add": {"x-c": "d"}}, "response": {"remove": ["server"]}},
	    "corsPolicy": {"allowOrigins": [{"exact": "https://example.com"}], "allowMethods": ["GET"], "maxAge": "24h"},
	    "rewrite": {"uri": "/v2", "authority": "web.internal"}
	  }]
	}`
	vs := &networkingv1.VirtualService{}
	if err := istioJSON.Unmarshal(strings.NewReader(js), protoadapt.MessageV1Of(vs)); err != nil {
		t.Fatal(err)
	}
	return vs
}

func TestDesiredVirtualService(t *testing.T) {
	canary := &sluicev1.Canary{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "shop"},
		Spec: sluicev1.CanarySpec{
			TargetRef: sluicev1.TargetReference{Kind: "Deployment", Name: "web"},
			Service:   fullService(),
		},
	}
	got, err := desiredVirtualService(canary, providers.CanaryWeight(25), false)
	if err != nil {
		t.Fatal(err)
	}
	if want := wantGenerated(t, 25); !proto.Equal(got, want) {
		t.Errorf("got  %v\nwant %v", got, want)
	}

	canary.Spec.Service = sluicev1.CanaryService{Port: 80}
	got, err = desiredVirtualService(canary, providers.CanaryWeight(0), false)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Gateways) != 1 || got.Gateways[0] != "mesh" || len(got.Hosts) != 1 || got.Hosts[0] != "web" {
		t.Errorf("defaults: gateways %v hosts %v, want [mesh] [web]", got.Gateways, got.Hosts)
	}
}

func TestConvertErrors(t *testing.T) {
	for _, tc := range []struct {
		name   string
		mutate func(*sluicev1.CanaryService)
		field  string
	}{
		{"trafficPolicy unknown field", func(s *sluicev1.CanaryService) {
			s.TrafficPolicy = rawJSON(`{"connectionPol":{}}`)
		}, "spec.service.trafficPolicy"},
		{"trafficPolicy bad enum", func(s *sluicev1.CanaryService) {
			s.TrafficPolicy = rawJSON(`{"loadBalancer":{"simple":"FASTEST"}}`)
		}, "spec.service.trafficPolicy"},
		{"trafficPolicy not JSON", func(s *sluicev1.CanaryService) { s.TrafficPolicy = rawJSON(`{`) }, "spec.service.trafficPolicy"},
		{"corsPolicy wrong type", func(s *sluicev1.CanaryService) {
			s.CorsPolicy = rawJSON(`{"allowMethods":"GET"}`)
		}, "spec.service.corsPolicy"},
		{"timeout", func(s *sluicev1.CanaryService) { s.Timeout = "10 seconds" }, "spec.service.timeout"},
		{"perTryTimeout", func(s *sluicev1.CanaryService) { s.Retries.PerTryTimeout = "x" }, "spec.service.retries.perTryTimeout"},
		{"match with two kinds", func(s *sluicev1.CanaryService) {
			s.Match[0].Headers["x-user"] = sluicev1.StringMatch{Exact: ptr.To("a"), Prefix: ptr.To("b")}
		}, "spec.service.match[0].headers.x-user"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			svc := fullService()
			tc.mutate(&svc)
			canary := &sluicev1.Canary{Spec: sluicev1.CanarySpec{
				TargetRef: sluicev1.TargetReference{Kind: "Deployment", Name: "web"}, Service: svc}}
			_, err := desiredVirtualService(canary, providers.CanaryWeight(0), false)
			if err == nil {
				_, err = convertTrafficPolicy(svc.TrafficPolicy)
			}
			if !errors.Is(err, ErrInvalidSpec) || !strings.Contains(err.Error(), tc.field) {
				t.Fatalf("error = %v, want ErrInvalidSpec naming %s", err, tc.field)
			}
			t.Log(err)
		})
	}
}

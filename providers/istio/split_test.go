package istio

import (
	"errors"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/protoadapt"
	networkingv1 "istio.io/api/networking/v1"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
	"sluice.dev/sluice/providers"
)

var testScope = scope{
	names:     sluicev1.ServiceNames{Apex: "web", Primary: "web-primary", Canary: "web-canary"},
	namespace: "shop",
}

// routes parses spec.http in Istio's JSON shape.
func routes(t *testing.T, js string) []*networkingv1.HTTPRoute {
	t.Helper()
	spec := &networkingv1.VirtualService{}
	if err := istioJSON.Unmarshal(strings.NewReader(`{"http":`+js+`}`), protoadapt.MessageV1Of(spec)); err != nil {
		t.Fatalf("parsing %s: %v", js, err)
	}
	return spec.GetHttp()
}

func TestNamesService(t *testing.T) {
	for _, tc := range []struct {
		host string
		want bool
	}{
		{"web", true},
		{"web.shop", true},
		{"web.shop.svc", true},
		{"web.shop.svc.cluster.local", true},
		{"web.shop.svc.corp.example", true},
		{"web.other.svc.cluster.local", false},
		{"web-primary", false},
		{"web.shop.example.com", false},
		{"webshop", false},
		{"", false},
	} {
		if got := namesService(tc.host, "web", "shop"); got != tc.want {
			t.Errorf("namesService(%q) = %v, want %v", tc.host, got, tc.want)
		}
	}
}

func TestSplitHTTP(t *testing.T) {
	w := providers.CanaryWeight(30)
	for _, tc := range []struct {
		name, in, want string
		managed        int
		err            error
	}{{
		name:    "apex short name with subset and port",
		in:      `[{"route":[{"destination":{"host":"web","subset":"v1","port":{"number":8080}}}]}]`,
		want:    `[{"route":[{"destination":{"host":"web-primary","port":{"number":8080}},"weight":70},{"destination":{"host":"web-canary","port":{"number":8080}},"weight":30}]}]`,
		managed: 1,
	}, {
		name:    "apex FQDN keeps its form and per-destination headers",
		in:      `[{"route":[{"destination":{"host":"web.shop.svc.cluster.local"},"headers":{"request":{"set":{"x":"1"}}}}]}]`,
		want:    `[{"route":[{"destination":{"host":"web-primary.shop.svc.cluster.local"},"headers":{"request":{"set":{"x":"1"}}},"weight":70},{"destination":{"host":"web-canary.shop.svc.cluster.local"},"headers":{"request":{"set":{"x":"1"}}},"weight":30}]}]`,
		managed: 1,
	}, {
		name:    "stable/canary subsets collapse into one pair",
		in:      `[{"route":[{"destination":{"host":"web","subset":"stable"},"weight":90},{"destination":{"host":"web","subset":"canary"},"weight":10}]}]`,
		want:    `[{"route":[{"destination":{"host":"web-primary"},"weight":70},{"destination":{"host":"web-canary"},"weight":30}]}]`,
		managed: 1,
	}, {
		name:    "user split: only weights change, subsets and order kept",
		in:      `[{"route":[{"destination":{"host":"web-canary","subset":"a"},"weight":50},{"destination":{"host":"web-primary","subset":"b"},"weight":50}]}]`,
		want:    `[{"route":[{"destination":{"host":"web-canary","subset":"a"},"weight":30},{"destination":{"host":"web-primary","subset":"b"},"weight":70}]}]`,
		managed: 1,
	}, {
		name:    "primary only gains a canary",
		in:      `[{"route":[{"destination":{"host":"web-primary","subset":"b","port":{"number":80}}}]}]`,
		want:    `[{"route":[{"destination":{"host":"web-primary","subset":"b","port":{"number":80}},"weight":70},{"destination":{"host":"web-canary","port":{"number":80}},"weight":30}]}]`,
		managed: 1,
	}, {
		name:    "canary only gains a primary in front",
		in:      `[{"route":[{"destination":{"host":"web-canary"}}]}]`,
		want:    `[{"route":[{"destination":{"host":"web-primary"},"weight":70},{"destination":{"host":"web-canary"},"weight":30}]}]`,
		managed: 1,
	}, {
		name:    "other routes, mirrors, retries untouched",
		in:      `[{"match":[{"uri":{"prefix":"/a"}}],"route":[{"destination":{"host":"other"}}]},{"route":[{"destination":{"host":"web"}}],"mirror":{"host":"web"},"retries":{"attempts":3,"perTryTimeout":"2s"},"timeout":"10s","fault":{"abort":{"httpStatus":503,"percentage":{"value":1}}}},{"redirect":{"uri":"/x"}}]`,
		want:    `[{"match":[{"uri":{"prefix":"/a"}}],"route":[{"destination":{"host":"other"}}]},{"route":[{"destination":{"host":"web-primary"},"weight":70},{"destination":{"host":"web-canary"},"weight":30}],"mirror":{"host":"web"},"retries":{"attempts":3,"perTryTimeout":"2s"},"timeout":"10s","fault":{"abort":{"httpStatus":503,"percentage":{"value":1}}}},{"redirect":{"uri":"/x"}}]`,
		managed: 1,
	}, {
		name: "no route to the apex",
		in:   `[{"route":[{"destination":{"host":"web.other.svc.cluster.local"}}]}]`,
		want: `[{"route":[{"destination":{"host":"web.other.svc.cluster.local"}}]}]`,
	}, {
		name: "apex mixed with another host",
		in:   `[{"route":[{"destination":{"host":"web"},"weight":80},{"destination":{"host":"legacy"},"weight":20}]}]`,
		err:  ErrUnsupportedRoute,
	}, {
		name: "apex mixed with primary",
		in:   `[{"route":[{"destination":{"host":"web"},"weight":80},{"destination":{"host":"web-primary"},"weight":20}]}]`,
		err:  ErrUnsupportedRoute,
	}, {
		name: "apex destinations on different ports",
		in:   `[{"route":[{"destination":{"host":"web","port":{"number":80}},"weight":80},{"destination":{"host":"web","port":{"number":81}},"weight":20}]}]`,
		err:  ErrUnsupportedRoute,
	}, {
		name: "two primaries",
		in:   `[{"route":[{"destination":{"host":"web-primary","subset":"a"},"weight":80},{"destination":{"host":"web-primary","subset":"b"},"weight":20}]}]`,
		err:  ErrUnsupportedRoute,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			in := routes(t, tc.in)
			before := cloneRoutes(in)
			got, managed, err := testScope.splitHTTP(in, w)
			if !errors.Is(err, tc.err) {
				t.Fatalf("error = %v, want %v", err, tc.err)
			}
			if !protosEqual(in, before) {
				t.Fatal("splitHTTP modified its input")
			}
			if tc.err != nil {
				return
			}
			if managed != tc.managed {
				t.Errorf("managed = %d, want %d", managed, tc.managed)
			}
			if want := routes(t, tc.want); !protosEqual(got, want) {
				t.Errorf("got  %v\nwant %v", got, want)
			}
			// Splitting again (the next step) only moves weights.
			again, _, err := testScope.splitHTTP(got, providers.CanaryWeight(30))
			if err != nil || !protosEqual(again, got) {
				t.Errorf("second split changed the routes: %v, %v", again, err)
			}
		})
	}
}

func cloneRoutes(in []*networkingv1.HTTPRoute) []*networkingv1.HTTPRoute {
	out := make([]*networkingv1.HTTPRoute, len(in))
	for i, r := range in {
		out[i] = proto.CloneOf(r)
	}
	return out
}

func TestWeightsOf(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     providers.Weights
		managed  int
		err      error
	}{
		{name: "apex reads 100/0", in: `[{"route":[{"destination":{"host":"web","subset":"stable"},"weight":90},{"destination":{"host":"web","subset":"canary"},"weight":10}]}]`,
			want: providers.CanaryWeight(0), managed: 1},
		{name: "split", in: `[{"route":[{"destination":{"host":"web-primary"},"weight":60},{"destination":{"host":"web-canary"},"weight":40}]},{"route":[{"destination":{"host":"x"}}]}]`,
			want: providers.CanaryWeight(40), managed: 1},
		{name: "zero weight omitted", in: `[{"route":[{"destination":{"host":"web-primary"},"weight":100},{"destination":{"host":"web-canary"}}]}]`,
			want: providers.CanaryWeight(0), managed: 1},
		{name: "single canary takes all", in: `[{"route":[{"destination":{"host":"web-canary"}}]}]`,
			want: providers.CanaryWeight(100), managed: 1},
		{name: "two routes agree", in: `[{"route":[{"destination":{"host":"web-primary"},"weight":80},{"destination":{"host":"web-canary"},"weight":20}]},{"route":[{"destination":{"host":"web-primary"},"weight":80},{"destination":{"host":"web-canary"},"weight":20}]}]`,
			want: providers.CanaryWeight(20), managed: 2},
		{name: "routes disagree", in: `[{"route":[{"destination":{"host":"web-primary"},"weight":80},{"destination":{"host":"web-canary"},"weight":20}]},{"route":[{"destination":{"host":"web-primary"},"weight":50},{"destination":{"host":"web-canary"},"weight":50}]}]`,
			err: providers.ErrWeightDrift},
		{name: "sum is not 100", in: `[{"route":[{"destination":{"host":"web-primary"},"weight":80},{"destination":{"host":"web-canary"},"weight":30}]}]`,
			err: providers.ErrWeightDrift},
		{name: "none", in: `[{"route":[{"destination":{"host":"x"}}]}]`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, managed, err := testScope.weightsOf(routes(t, tc.in))
			if !errors.Is(err, tc.err) {
				t.Fatalf("error = %v, want %v", err, tc.err)
			}
			if got != tc.want || managed != tc.managed {
				t.Errorf("got %+v (%d routes), want %+v (%d)", got, managed, tc.want, tc.managed)
			}
		})
	}
}

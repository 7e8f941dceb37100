package canary

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	istionetv1 "istio.io/client-go/pkg/apis/networking/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
	"sluice.dev/sluice/controllers/internal/reconcilekit"
	"sluice.dev/sluice/tenancy"
)

// routeObjects returns every route object Sluice may generate for the harness's Canary (HTTPRoute,
// VirtualService, DestinationRules), keyed by kind/name, with its spec as the apiserver serves it;
// missing ones are absent.
func (h *harness) routeObjects() map[string]string {
	h.t.Helper()
	out := map[string]string{}
	for _, o := range []struct {
		key string
		obj client.Object
	}{
		{"HTTPRoute/podinfo", &gwv1.HTTPRoute{}},
		{"VirtualService/podinfo", &istionetv1.VirtualService{}},
		{"DestinationRule/podinfo-primary", &istionetv1.DestinationRule{}},
		{"DestinationRule/podinfo-canary", &istionetv1.DestinationRule{}},
	} {
		name := o.key[strings.Index(o.key, "/")+1:]
		err := h.c.Get(h.ctx, client.ObjectKey{Namespace: h.ns, Name: name}, o.obj)
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			h.t.Fatal(err)
		}
		b, err := json.Marshal(o.obj)
		if err != nil {
			h.t.Fatal(err)
		}
		out[o.key] = string(b)
	}
	return out
}

// routeRefusedEvents counts the RouteRefused warnings in the harness's log (tick records every
// event there); each must name want.
func (h *harness) routeRefusedEvents(want string) int {
	h.t.Helper()
	n := 0
	for _, line := range h.log {
		for _, e := range strings.Split(line, "  [")[1:] {
			if strings.HasPrefix(e, sluicev1.ReasonRouteRefused+"]") {
				n++
				if !strings.Contains(e, want) {
					h.t.Errorf("RouteRefused event does not name %q: %s", want, e)
				}
			}
		}
	}
	return n
}

// mustStallOnRoute fails unless the Canary is Stalled with reason RouteRefused naming want.
func (h *harness) mustStallOnRoute(want string) {
	h.t.Helper()
	st := reconcilekit.FindCondition(h.canary(), sluicev1.ConditionStalled)
	if st == nil || st.Status != metav1.ConditionTrue || st.Reason != sluicev1.ReasonRouteRefused || !strings.Contains(st.Message, want) {
		h.t.Fatalf("Stalled = %+v, want RouteRefused naming %q", st, want)
	}
}

// A Canary whose generated route would name another namespace's host, a foreign gateway, a
// cross-namespace parent or a hostname no allow-list admits is Stalled at initialization naming
// the field, with one warning event, and nothing is written for it: no route, no primary, no
// Services. Once the operator allows exactly that entry, the same Canary initializes and its
// route carries it.
func TestRouteRefusedAtInitializationWritesNothing(t *testing.T) {
	for _, tc := range []struct {
		name     string
		provider sluicev1.Provider
		service  func(ns string, s *sluicev1.CanaryService)
		want     string
		allow    func() (tenancy.RoutePolicy, error)
		route    string // what the allowed route carries
	}{
		{
			name: "istio host of another namespace", provider: sluicev1.ProviderIstio,
			service: func(ns string, s *sluicev1.CanaryService) {
				s.Hosts = []string{"podinfo." + ns, "payments.tenant-b.svc.cluster.local"}
			},
			want: `spec.service.hosts[1] "payments.tenant-b.svc.cluster.local" names namespace tenant-b`,
			allow: func() (tenancy.RoutePolicy, error) {
				return tenancy.NewRoutePolicy([]string{"payments.tenant-b.svc.cluster.local"}, nil, "")
			},
			route: `"payments.tenant-b.svc.cluster.local"`,
		},
		{
			name: "istio gateway of another namespace", provider: sluicev1.ProviderIstio,
			service: func(_ string, s *sluicev1.CanaryService) { s.Gateways = []string{"mesh", "istio-system/ingress"} },
			want:    `spec.service.gateways[1] "istio-system/ingress" is a gateway of namespace istio-system`,
			allow: func() (tenancy.RoutePolicy, error) {
				return tenancy.NewRoutePolicy(nil, []string{"istio-system/ingress"}, "")
			},
			route: `"istio-system/ingress"`,
		},
		{
			name: "gateway api parent in another namespace", provider: sluicev1.ProviderGatewayAPI,
			service: func(_ string, s *sluicev1.CanaryService) {
				s.GatewayRefs = []gwv1.ParentReference{{Name: "public", Namespace: ptr.To(gwv1.Namespace("infra"))}}
				s.Hosts = []string{"shop.example.com"}
			},
			want: "spec.service.gatewayRefs[0] Gateway infra/public is in namespace infra",
			allow: func() (tenancy.RoutePolicy, error) {
				return tenancy.NewRoutePolicy([]string{"*.example.com"}, []string{"infra/public"}, "")
			},
			route: `"namespace":"infra"`,
		},
		{
			name: "gateway api hostname not allowed", provider: sluicev1.ProviderGatewayAPI,
			service: func(_ string, s *sluicev1.CanaryService) { s.Hosts = []string{"shop.example.com"} },
			want:    `spec.service.hosts[0] "shop.example.com" is not a name of namespace`,
			allow: func() (tenancy.RoutePolicy, error) {
				return tenancy.NewRoutePolicy([]string{"shop.example.com"}, nil, "")
			},
			route: `"hostnames":["shop.example.com"]`,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarnessFor(t, tc.provider)
			h.app(2, "6.0.0")
			c := h.canaryFor()
			tc.service(h.ns, &c.Spec.Service)
			h.create(c)
			for i := 0; i < 3; i++ {
				h.tick()
			}
			h.mustStallOnRoute(tc.want)
			if events := h.routeRefusedEvents(tc.want); events != 1 {
				t.Errorf("%d RouteRefused events, want 1", events)
			}
			if got := h.routeObjects(); len(got) > 0 {
				t.Errorf("route objects written for a refused Canary: %v", got)
			}
			for _, o := range []client.Object{&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "podinfo-primary"}},
				&corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "podinfo"}}, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "podinfo-primary"}},
				&corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "podinfo-canary"}}} {
				if err := h.c.Get(h.ctx, client.ObjectKey{Namespace: h.ns, Name: o.GetName()}, o); !apierrors.IsNotFound(err) {
					t.Errorf("%T %s exists (err %v): nothing may be written for a refused Canary", o, o.GetName(), err)
				}
			}

			policy, err := tc.allow()
			if err != nil {
				t.Fatal(err)
			}
			h.r = h.reconciler(env.Client, Options{StepEvents: true, Routes: policy})
			h.runUntil(sluicev1.CanaryPhaseInitialized, 20)
			if st := reconcilekit.FindCondition(h.canary(), sluicev1.ConditionStalled); st != nil {
				t.Errorf("still Stalled once allowed: %+v", st)
			}
			routes := h.routeObjects()
			key := "HTTPRoute/podinfo"
			if tc.provider == sluicev1.ProviderIstio {
				key = "VirtualService/podinfo"
			}
			if !strings.Contains(routes[key], tc.route) {
				t.Errorf("%s = %s, want it to carry %s", key, routes[key], tc.route)
			}
		})
	}
}

// A spec edited during a run to reach outside the namespace stalls the run naming the field and
// writes nothing: the route objects stay byte-identical while the checks go on and the weight
// holds. The progress deadline then rolls the run back, and the rollback moves the weights of the
// route as it is: its hosts, gateways and parents stay what they were, the refused ones never
// appear.
func TestRouteRefusedMidRunKeepsTheRouteAndRollsBackAtTheDeadline(t *testing.T) {
	for _, tc := range []struct {
		name     string
		provider sluicev1.Provider
		edit     func(s *sluicev1.CanaryService)
		want     string
		refused  string // must never appear in a route object
	}{
		{
			name: "istio host of another namespace", provider: sluicev1.ProviderIstio,
			edit: func(s *sluicev1.CanaryService) {
				s.Hosts = append(s.Hosts, "payments.tenant-b.svc.cluster.local")
				s.Gateways = []string{"istio-system/ingress"}
			},
			want:    `spec.service.hosts[0] "payments.tenant-b.svc.cluster.local" names namespace tenant-b`,
			refused: "tenant-b",
		},
		{
			name: "gateway api parent in another namespace", provider: sluicev1.ProviderGatewayAPI,
			edit: func(s *sluicev1.CanaryService) {
				s.GatewayRefs = []gwv1.ParentReference{{Name: "gw", Namespace: ptr.To(gwv1.Namespace("tenant-b"))}}
				s.Hosts = []string{"podinfo.tenant-b"}
			},
			want:    "spec.service.gatewayRefs[0] Gateway tenant-b/gw is in namespace tenant-b",
			refused: "tenant-b",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarnessFor(t, tc.provider)
			h.app(2, "6.0.0")
			c := h.canaryFor()
			c.Spec.ProgressDeadlineSeconds = ptr.To(int32(300))
			h.create(c)
			h.runUntil(sluicev1.CanaryPhaseInitialized, 20)
			h.setImage("6.0.1")
			for i := 0; i < 20 && h.canary().Status.CanaryWeight < 20; i++ {
				h.tick()
			}
			if w := h.canary().Status.CanaryWeight; w < 20 {
				t.Fatalf("canary weight %d, want 20 before the edit\n%s", w, strings.Join(h.log, "\n"))
			}
			before := h.routeObjects()
			weight := h.canary().Status.CanaryWeight

			cur := h.canary()
			patch := client.MergeFrom(cur.DeepCopy())
			tc.edit(&cur.Spec.Service)
			if err := h.c.Patch(h.ctx, cur, patch); err != nil {
				t.Fatal(err)
			}
			checks := h.analyzer.Calls()
			edited := h.clock.Now()
			for h.clock.Now().Sub(edited) < 4*time.Minute {
				h.tick()
			}
			h.mustStallOnRoute(tc.want)
			if got := h.routeObjects(); !equalRoutes(got, before) {
				t.Fatalf("route objects changed while the spec is refused:\nbefore %v\nafter  %v", before, got)
			}
			if s := h.canary().Status; s.Phase != sluicev1.CanaryPhaseProgressing || s.CanaryWeight != weight {
				t.Fatalf("phase %s weight %d while refused, want Progressing at %d (the run holds)", s.Phase, s.CanaryWeight, weight)
			}
			if h.analyzer.Calls() <= checks {
				t.Fatal("no check ran while the run held on the refused route")
			}

			h.runUntil(sluicev1.CanaryPhaseFailed, 20)
			if events := h.routeRefusedEvents(tc.want); events != 1 {
				t.Errorf("%d RouteRefused events, want 1", events)
			}
			if !strings.Contains(strings.Join(h.log, "\n"), "while stalled (RouteRefused") {
				t.Errorf("the rollback does not name the refused route:\n%s", strings.Join(h.log, "\n"))
			}
			if w := h.routeWeights(); w.Canary != 0 {
				t.Fatalf("route weights %+v after the rollback, want all traffic on the primary", w)
			}
			after := h.routeObjects()
			for key, spec := range after {
				if strings.Contains(spec, tc.refused) {
					t.Errorf("%s carries the refused %q after the rollback: %s", key, tc.refused, spec)
				}
				if before[key] == "" {
					t.Errorf("%s was created while the spec is refused", key)
				}
			}
			if !sameReach(t, tc.provider, before, after) {
				t.Errorf("the rollback changed what the route reaches:\nbefore %v\nafter  %v", before, after)
			}
		})
	}
}

// equalRoutes compares route objects byte for byte (their JSON includes the resourceVersion).
func equalRoutes(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// sameReach reports whether the generated route's hosts and gateways (VirtualService) or parents
// and hostnames (HTTPRoute) are the same in both snapshots.
func sameReach(t *testing.T, provider sluicev1.Provider, before, after map[string]string) bool {
	t.Helper()
	if provider == sluicev1.ProviderIstio {
		var a, b istionetv1.VirtualService
		if err := json.Unmarshal([]byte(before["VirtualService/podinfo"]), &a); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal([]byte(after["VirtualService/podinfo"]), &b); err != nil {
			t.Fatal(err)
		}
		return strings.Join(a.Spec.GetHosts(), ",") == strings.Join(b.Spec.GetHosts(), ",") &&
			strings.Join(a.Spec.GetGateways(), ",") == strings.Join(b.Spec.GetGateways(), ",")
	}
	var a, b gwv1.HTTPRoute
	if err := json.Unmarshal([]byte(before["HTTPRoute/podinfo"]), &a); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(after["HTTPRoute/podinfo"]), &b); err != nil {
		t.Fatal(err)
	}
	pa, _ := json.Marshal(a.Spec.ParentRefs)
	pb, _ := json.Marshal(b.Spec.ParentRefs)
	ha, _ := json.Marshal(a.Spec.Hostnames)
	hb, _ := json.Marshal(b.Spec.Hostnames)
	return string(pa) == string(pb) && string(ha) == string(hb)
}

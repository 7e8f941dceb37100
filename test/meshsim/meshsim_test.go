package meshsim_test

import (
	"context"
	"flag"
	"math"
	"net/http"
	"os"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	networkingv1alpha3 "istio.io/api/networking/v1alpha3"
	istionetv1 "istio.io/client-go/pkg/apis/networking/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"sluice.dev/sluice/test/meshsim"
	"sluice.dev/sluice/test/testenv"
)

var env *testenv.Env

func TestMain(m *testing.M) {
	flag.Parse() // testenv.Run reads testing.Short before m.Run would parse the flags
	os.Exit(testenv.Run(m, &env))
}

const apex = "podinfo"

// fixture creates the apex, primary and canary Services and the two Deployments behind them
// (podinfo-primary healthy, podinfo with canaryErrors), with readyReplicas written by hand (envtest
// runs no controllers).
func fixture(t *testing.T, ns string, canaryErrors string) {
	t.Helper()
	ctx := t.Context()
	for name, app := range map[string]string{apex: apex + "-primary", apex + "-primary": apex + "-primary", apex + "-canary": apex} {
		must(t, env.Client.Create(ctx, &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
			Spec: corev1.ServiceSpec{Selector: map[string]string{"app": app},
				Ports: []corev1.ServicePort{{Name: "http", Port: 9898}}},
		}))
	}
	deploy(t, ns, apex+"-primary", map[string]string{meshsim.AnnotationLatencyMs: "10"}, 2)
	deploy(t, ns, apex, map[string]string{meshsim.AnnotationErrorRate: canaryErrors, meshsim.AnnotationLatencyMs: "40"}, 1)
}

func deploy(t *testing.T, ns, name string, annotations map[string]string, ready int32) {
	t.Helper()
	labels := map[string]string{"app": name}
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(ready),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels, Annotations: annotations},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "example.com/podinfo:1"}}},
			},
		},
	}
	must(t, env.Client.Create(t.Context(), d))
	setReady(t, d, ready)
}

func setReady(t *testing.T, d *appsv1.Deployment, ready int32) {
	t.Helper()
	must(t, env.Client.Get(t.Context(), client.ObjectKeyFromObject(d), d))
	d.Status.Replicas, d.Status.ReadyReplicas, d.Status.AvailableReplicas = ready, ready, ready
	must(t, env.Client.Status().Update(t.Context(), d))
}

func httpRoute(ns string, primary, canary int32) *gwv1.HTTPRoute {
	port := gwv1.PortNumber(9898)
	backend := func(name string, w int32) gwv1.HTTPBackendRef {
		return gwv1.HTTPBackendRef{BackendRef: gwv1.BackendRef{
			BackendObjectReference: gwv1.BackendObjectReference{Name: gwv1.ObjectName(name), Port: &port},
			Weight:                 ptr.To(w),
		}}
	}
	return &gwv1.HTTPRoute{
		ObjectMeta: metav1.ObjectMeta{Name: apex, Namespace: ns},
		Spec: gwv1.HTTPRouteSpec{
			CommonRouteSpec: gwv1.CommonRouteSpec{ParentRefs: []gwv1.ParentReference{{
				Group: ptr.To(gwv1.Group("")), Kind: ptr.To(gwv1.Kind("Service")), Name: apex, Port: &port,
			}}},
			Rules: []gwv1.HTTPRouteRule{
				{ // a header-matched rule (A/B style) that plain traffic does not take
					Matches:     []gwv1.HTTPRouteMatch{{Headers: []gwv1.HTTPHeaderMatch{{Name: "x-canary", Value: "always"}}}},
					BackendRefs: []gwv1.HTTPBackendRef{backend(apex+"-canary", 100)},
				},
				{BackendRefs: []gwv1.HTTPBackendRef{backend(apex+"-primary", primary), backend(apex+"-canary", canary)}},
			},
		},
	}
}

func TestSplitAndErrorsFollowRouteAndDeployments(t *testing.T) {
	testenv.Require(t, env)
	ns := env.Namespace(t)
	fixture(t, ns, "0.2")
	must(t, env.Client.Create(t.Context(), httpRoute(ns, 80, 20)))

	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	sim, err := meshsim.New(env.Config, meshsim.Options{
		Namespace: ns, Service: apex, RPS: 1000, Metrics: meshsim.Istio | meshsim.Linkerd, Logf: t.Logf,
	})
	must(t, err)
	done := make(chan error, 1)
	go func() { done <- sim.Run(ctx) }()

	// Phase 1: HTTPRoute at 80/20, canary at 20 % errors.
	s1 := waitRequests(t, sim.URL(), nil, 2500)
	primary, canary := s1.total(apex+"-primary"), s1.total(apex)
	share := canary / (primary + canary)
	t.Logf("phase 1: %v primary, %v canary requests: canary share %.3f, canary errors %.3f, primary errors %.3f",
		primary, canary, share, s1.errorFraction(apex), s1.errorFraction(apex+"-primary"))
	near(t, "canary share", share, 0.20, 0.04)
	near(t, "canary error fraction", s1.errorFraction(apex), 0.20, 0.05)
	near(t, "primary error fraction", s1.errorFraction(apex+"-primary"), 0, 0)
	near(t, "canary failure fraction (linkerd response_total)", s1.linkerdFailures(apex), 0.20, 0.05)
	// Istio's standard labels and buckets.
	fam := s1.families["istio_requests_total"]
	labels := labelMap(fam.GetMetric()[0])
	for _, l := range []string{"reporter", "destination_workload", "destination_workload_namespace", "destination_service",
		"destination_service_name", "response_code", "source_workload"} {
		if labels[l] == "" {
			t.Errorf("istio_requests_total lacks label %s: %v", l, labels)
		}
	}
	if labels["reporter"] != "destination" || labels["destination_workload_namespace"] != ns {
		t.Errorf("unexpected labels %v", labels)
	}
	if svc := s1.serviceOf(apex); svc != apex+"-canary."+ns+".svc.cluster.local" {
		t.Errorf("canary destination_service %q", svc)
	}
	h := s1.families["istio_request_duration_milliseconds"].GetMetric()[0].GetHistogram()
	if n := len(h.GetBucket()); n != 19+1 { // the parser adds le="+Inf"
		t.Errorf("istio_request_duration_milliseconds has %d buckets, want Istio's 19 and +Inf", n)
	}

	// Phase 2: 50/50 with the canary scaled to zero ready replicas: its half gets 503s.
	route := &gwv1.HTTPRoute{}
	must(t, env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: apex}, route))
	route.Spec.Rules[1].BackendRefs[0].Weight = ptr.To[int32](50)
	route.Spec.Rules[1].BackendRefs[1].Weight = ptr.To[int32](50)
	must(t, env.Client.Update(ctx, route))
	setReady(t, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: apex, Namespace: ns}}, 0)
	waitBackends(t, sim, func(b []meshsim.Backend) bool {
		return len(b) == 2 && b[0].Weight == 50 && b[1].ReadyReplicas == 0
	})
	base := scrapeMetrics(t, sim.URL())
	s2 := waitRequests(t, sim.URL(), base, 1500)
	d := s2.minus(base)
	share = d.total(apex) / (d.total(apex) + d.total(apex+"-primary"))
	t.Logf("phase 2: canary share %.3f, canary 503 fraction %.3f", share, d.codeFraction(apex, "503"))
	near(t, "canary share", share, 0.50, 0.05)
	near(t, "canary 503 fraction", d.codeFraction(apex, "503"), 1, 0)

	// Phase 3: the HTTPRoute goes away; an Istio VirtualService sends everything to the primary.
	must(t, env.Client.Delete(ctx, route))
	must(t, env.Client.Create(ctx, &istionetv1.VirtualService{
		ObjectMeta: metav1.ObjectMeta{Name: apex, Namespace: ns},
		Spec: networkingv1alpha3.VirtualService{
			Hosts: []string{apex},
			Http: []*networkingv1alpha3.HTTPRoute{{Route: []*networkingv1alpha3.HTTPRouteDestination{
				{Destination: &networkingv1alpha3.Destination{Host: apex + "-primary." + ns + ".svc.cluster.local"}, Weight: 100},
				{Destination: &networkingv1alpha3.Destination{Host: apex + "-canary"}, Weight: 0},
			}}},
		},
	}))
	waitBackends(t, sim, func(b []meshsim.Backend) bool {
		return len(b) == 2 && b[0].Weight == 100 && b[1].Weight == 0
	})
	base = scrapeMetrics(t, sim.URL())
	d = waitRequests(t, sim.URL(), base, 500).minus(base)
	if d.total(apex) != 0 || d.total(apex+"-primary") < 500 {
		t.Errorf("phase 3: canary got %v and primary %v requests, want 0 and >= 500", d.total(apex), d.total(apex+"-primary"))
	}

	cancel()
	if err := <-done; err != nil {
		t.Errorf("Run: %v", err)
	}
}

func waitBackends(t *testing.T, sim *meshsim.Sim, ok func([]meshsim.Backend) bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !ok(sim.Backends()) {
		if time.Now().After(deadline) {
			t.Fatalf("simulator never saw the expected backends; has %v", sim.Backends())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// scrape is one parse of /metrics.
type scrape struct {
	families map[string]*dto.MetricFamily
	// requests[workload][code] from istio_requests_total
	requests map[string]map[string]float64
	// linkerd[workload][classification] from response_total
	linkerd map[string]map[string]float64
}

func scrapeMetrics(t *testing.T, url string) *scrape {
	t.Helper()
	resp, err := http.Get(url)
	must(t, err)
	defer resp.Body.Close()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(resp.Body)
	must(t, err)
	s := &scrape{families: fams, requests: map[string]map[string]float64{}, linkerd: map[string]map[string]float64{}}
	add := func(m map[string]map[string]float64, k1, k2 string, v float64) {
		if m[k1] == nil {
			m[k1] = map[string]float64{}
		}
		m[k1][k2] += v
	}
	for _, m := range fams["istio_requests_total"].GetMetric() {
		l := labelMap(m)
		add(s.requests, l["destination_workload"], l["response_code"], m.GetCounter().GetValue())
	}
	for _, m := range fams["response_total"].GetMetric() {
		l := labelMap(m)
		add(s.linkerd, l["deployment"], l["classification"], m.GetCounter().GetValue())
	}
	return s
}

// waitRequests scrapes until at least n requests were counted since prev (nil: since the start).
func waitRequests(t *testing.T, url string, prev *scrape, n float64) *scrape {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		s := scrapeMetrics(t, url)
		d := s
		if prev != nil {
			d = s.minus(prev)
		}
		var total float64
		for w := range d.requests {
			total += d.total(w)
		}
		if total >= n {
			return s
		}
		if time.Now().After(deadline) {
			t.Fatalf("only %v requests after 30s, want %v", total, n)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// minus returns the request counts of s minus those of prev (families are not subtracted).
func (s *scrape) minus(prev *scrape) *scrape {
	out := &scrape{families: s.families, requests: map[string]map[string]float64{}, linkerd: map[string]map[string]float64{}}
	for w, codes := range s.requests {
		out.requests[w] = map[string]float64{}
		for c, v := range codes {
			out.requests[w][c] = v - prev.requests[w][c]
		}
	}
	return out
}

func (s *scrape) total(workload string) float64 {
	var n float64
	for _, v := range s.requests[workload] {
		n += v
	}
	return n
}

func (s *scrape) codeFraction(workload, code string) float64 {
	if s.total(workload) == 0 {
		return math.NaN()
	}
	return s.requests[workload][code] / s.total(workload)
}

func (s *scrape) errorFraction(workload string) float64 {
	var errs float64
	for c, v := range s.requests[workload] {
		if c[0] == '5' {
			errs += v
		}
	}
	return errs / s.total(workload)
}

func (s *scrape) linkerdFailures(workload string) float64 {
	c := s.linkerd[workload]
	return c["failure"] / (c["failure"] + c["success"])
}

func (s *scrape) serviceOf(workload string) string {
	for _, m := range s.families["istio_requests_total"].GetMetric() {
		if l := labelMap(m); l["destination_workload"] == workload {
			return l["destination_service"]
		}
	}
	return ""
}

func labelMap(m *dto.Metric) map[string]string {
	out := map[string]string{}
	for _, l := range m.GetLabel() {
		out[l.GetName()] = l.GetValue()
	}
	return out
}

func near(t *testing.T, what string, got, want, tolerance float64) {
	t.Helper()
	if math.IsNaN(got) || math.Abs(got-want) > tolerance {
		t.Errorf("%s = %.3f, want %.3f ± %.3f", what, got, want, tolerance)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

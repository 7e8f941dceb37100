package manager_test

import (
	"net/http/httputil"
	"net/url"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
	"sluice.dev/sluice/controllers/manager"
	"sluice.dev/sluice/egress"
	"sluice.dev/sluice/test/promtest"
	"sluice.dev/sluice/test/testenv"
)

// TestTemplateCredentialsStayWithTheirAddress: a MetricTemplate with a bearer token in namespace A,
// used by a Canary in namespace B that names its own metricsServer. Both addresses are local
// receivers proxying to a real Prometheus and recording every Authorization header.
//   - By default the reference is refused: the Canary is Stalled naming it, and neither receiver
//     sees a request.
//   - With --allow-cross-namespace-refs the Canary initializes and completes a rollout analysed
//     with the template: the token reaches the template's address on every request, and the
//     Canary's metricsServer never sees an Authorization header.
func TestTemplateCredentialsStayWithTheirAddress(t *testing.T) {
	testenv.Require(t, env)
	prom := promtest.StartT(t, promtest.Config{})
	promURL, err := url.Parse(prom.Address())
	if err != nil {
		t.Fatal(err)
	}
	templateAddr := newRecorder(t, httputil.NewSingleHostReverseProxy(promURL))
	canaryAddr := newRecorder(t, httputil.NewSingleHostReverseProxy(promURL))

	shared, team, controllerNS := env.Namespace(t), env.Namespace(t), env.Namespace(t)
	create(t,
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "prom-token", Namespace: shared},
			Data: map[string][]byte{"token": []byte("s3cr3t")}},
		&sluicev1.MetricTemplate{ObjectMeta: metav1.ObjectMeta{Name: "always-good", Namespace: shared},
			Spec: sluicev1.MetricTemplateSpec{Query: "vector(100)", Provider: sluicev1.MetricTemplateProvider{
				Address: templateAddr.URL, SecretRef: &corev1.LocalObjectReference{Name: "prom-token"}}}})
	app(t, team, "web", nil)
	c := canaryFor(team, "web")
	c.Spec.MetricsServer = canaryAddr.URL
	c.Spec.Analysis.Metrics = []sluicev1.CanaryMetric{{Name: "good", Interval: "1m",
		TemplateRef:    &sluicev1.CrossNamespaceObjectReference{Name: "always-good", Namespace: shared},
		ThresholdRange: &sluicev1.ThresholdRange{Min: ptr.To(99.0)}}}
	create(t, c)

	// The run is judged within seconds: windows need only twice the scrape interval. The servers
	// listen on 127.0.0.1.
	opts := manager.Options{Namespaces: []string{shared, team}, ControllerNamespace: controllerNS,
		ScrapeInterval: time.Second, AllowEgressTo: []string{egress.Loopback}}
	func() {
		stop := startManagerUntil(t, opts)
		defer stop()
		waitCanary(t, team, "web", 30*time.Second, "Stalled naming the refused templateRef",
			stalledWith(sluicev1.ReasonCrossNamespaceRef, "MetricTemplate "+shared+"/always-good", `metric "good" templateRef`))
		time.Sleep(2 * time.Second) // a few more ticks
	}()
	if got := templateAddr.recorded(); len(got) > 0 {
		t.Fatalf("refused reference: the template's address got %d requests, want none: %+v", len(got), got)
	}
	if got := canaryAddr.recorded(); len(got) > 0 {
		t.Fatalf("refused reference: the Canary's metricsServer got %d requests, want none: %+v", len(got), got)
	}

	opts.AllowCrossNamespaceRefs = true
	startManager(t, nil, opts)
	waitCanary(t, team, "web", 30*time.Second, "Initialized", func(c *sluicev1.Canary) bool {
		return c.Status.Phase == sluicev1.CanaryPhaseInitialized
	})
	setImage(t, team, "web", "app:2")
	done := waitCanary(t, team, "web", 60*time.Second, "Succeeded", func(c *sluicev1.Canary) bool {
		return c.Status.Phase == sluicev1.CanaryPhaseSucceeded
	})
	if len(done.Status.Analysis) == 0 || done.Status.Analysis[0].Verdict != sluicev1.VerdictPass || done.Status.Analysis[0].Value != "100.00" {
		t.Fatalf("analysis did not run on the template: %+v", done.Status.Analysis)
	}
	got := templateAddr.recorded()
	if len(got) < 2 {
		t.Fatalf("the template's address got %d requests, want the readiness query and the checks", len(got))
	}
	for _, r := range got {
		if r.authorization != "Bearer s3cr3t" {
			t.Fatalf("request %s to the template's address carried Authorization %q, want the template's token", r.path, r.authorization)
		}
	}
	for _, r := range canaryAddr.recorded() {
		if r.authorization != "" {
			t.Fatalf("the Canary's metricsServer received Authorization %q on %s: credentials left their address", r.authorization, r.path)
		}
	}
	t.Logf("template address: %d requests, all with the template's token; canary metricsServer: %d requests, none with credentials",
		len(got), len(canaryAddr.recorded()))
}

package canary

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"sluice.dev/sluice/analysis"
	sluicev1 "sluice.dev/sluice/api/v1alpha1"
	"sluice.dev/sluice/test/promtest"
	"sluice.dev/sluice/test/testenv"
)

// TestHostileTemplatePastAdmissionStallsTheCanary writes a MetricTemplate that would spin forever
// as an older CRD without the query rule admitted it, with the real analysis engine: the Canary
// using it is Stalled InvalidQuery naming the template and the refused action, before any traffic
// moves, and no tick takes more than a moment.
func TestHostileTemplatePastAdmissionStallsTheCanary(t *testing.T) {
	h := newHarness(t)
	env.ChangeCRD(t, "metrictemplates.sluice.dev", func(crd *apiextensionsv1.CustomResourceDefinition) {
		for i := range crd.Spec.Versions {
			spec := crd.Spec.Versions[i].Schema.OpenAPIV3Schema.Properties["spec"]
			query := spec.Properties["query"]
			query.XValidations, query.MaxLength = nil, nil
			spec.Properties["query"] = query
			crd.Spec.Versions[i].Schema.OpenAPIV3Schema.Properties["spec"] = spec
		}
	})
	prom := promtest.StartT(t, promtest.Config{})
	h.r.Analyzer = analysis.NewEngine(env.Client, analysis.Options{DefaultAddress: prom.Address()})
	h.app(1, "1")
	tpl := &sluicev1.MetricTemplate{ObjectMeta: metav1.ObjectMeta{Name: "spin", Namespace: h.ns},
		Spec: sluicev1.MetricTemplateSpec{Query: `{{range 1000000000000}}{{end}}`}}
	if err := testenv.CreateEventually(h.ctx, h.c, tpl); err != nil {
		t.Fatalf("writing the template past admission: %v", err)
	}
	c := seedCanary(h.ns)
	c.Spec.Analysis.Metrics = []sluicev1.CanaryMetric{{Name: "spin", Interval: "1m",
		TemplateRef: &sluicev1.CrossNamespaceObjectReference{Name: "spin"}, ThresholdRange: &sluicev1.ThresholdRange{Min: ptr.To(1.0)}}}
	h.create(c)
	for i := 0; i < 5; i++ {
		start := time.Now()
		h.tick()
		if took := time.Since(start); took > 5*time.Second {
			t.Fatalf("tick %d took %s", i, took)
		}
	}
	got := h.canary()
	st := findCondition(got, sluicev1.ConditionStalled)
	if st == nil || st.Reason != sluicev1.ReasonInvalidQuery || !strings.Contains(st.Message, "MetricTemplate "+h.ns+"/spin") ||
		!strings.Contains(st.Message, "range {{range 1000000000000}}") {
		t.Fatalf("Stalled %+v; want InvalidQuery naming the template and its range action\n%s", st, strings.Join(h.log, "\n"))
	}
	if got.Status.CanaryWeight != 0 || h.routeWeights().Canary > 0 {
		t.Fatalf("traffic on the canary: weight %d route %+v", got.Status.CanaryWeight, h.routeWeights())
	}
}

// TestTooManyMetricsServersStallNamingTheMetrics: a Canary whose metrics use more distinct
// metrics servers than the engine allows is Stalled InvalidSpec naming the metrics beyond the
// cap, and no server is ever asked (each counts the requests it gets).
func TestTooManyMetricsServersStallNamingTheMetrics(t *testing.T) {
	h := newHarness(t)
	var asked atomic.Int32
	var servers []string
	for range 5 {
		s := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { asked.Add(1) }))
		t.Cleanup(s.Close)
		servers = append(servers, s.URL)
	}
	h.r.Analyzer = analysis.NewEngine(env.Client, analysis.Options{MaxMetricsServers: 4})
	h.app(1, "1")
	c := seedCanary(h.ns)
	c.Spec.Analysis.Metrics = nil
	for i, addr := range servers {
		name := fmt.Sprintf("m%d", i)
		tpl := &sluicev1.MetricTemplate{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: h.ns},
			Spec: sluicev1.MetricTemplateSpec{Query: `vector(1)`, Provider: sluicev1.MetricTemplateProvider{Address: addr}}}
		if err := h.c.Create(h.ctx, tpl); err != nil {
			t.Fatal(err)
		}
		c.Spec.Analysis.Metrics = append(c.Spec.Analysis.Metrics, sluicev1.CanaryMetric{Name: name, Interval: "1m",
			TemplateRef: &sluicev1.CrossNamespaceObjectReference{Name: name}, ThresholdRange: &sluicev1.ThresholdRange{Min: ptr.To(1.0)}})
	}
	h.create(c)
	for range 5 {
		h.tick()
	}
	st := findCondition(h.canary(), sluicev1.ConditionStalled)
	if st == nil || st.Reason != sluicev1.ReasonInvalidSpec || !strings.Contains(st.Message, `metrics "m4" would query servers beyond the first 4`) {
		t.Fatalf("Stalled %+v; want InvalidSpec naming metric m4\n%s", st, strings.Join(h.log, "\n"))
	}
	if n := asked.Load(); n != 0 {
		t.Fatalf("%d requests reached the metrics servers of a Canary over the cap", n)
	}
}

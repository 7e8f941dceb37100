package analysis

import (
	"errors"
	"strings"
	"testing"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
	"sluice.dev/sluice/tenancy"
)

func TestRenderQuery(t *testing.T) {
	vars := TemplateVars{
		Name: "web", Namespace: "shop", Target: "web-v2", Service: "web-apex", Interval: "1m30s",
		Variables: map[string]string{"path": `/api"x`, "re": `a\d+`},
	}
	for _, tc := range []struct {
		query, want string
		err         bool
	}{
		{`rate(x{ns="{{ .namespace }}",name="{{ .name }}",t="{{ .target }}",s="{{ .service }}"}[{{ .interval }}])`,
			`rate(x{ns="shop",name="web",t="web-v2",s="web-apex"}[1m30s])`, false},
		{`x{path="{{ .variables.path }}",re=~"{{ .variables.re }}"}`, `x{path="/api\"x",re=~"a\\d+"}`, false},
		{`x{a="{{ .variables.missing }}"}`, "", true},
		{`x{a="{{ .nope }}"}`, "", true},
		{`x{a="{{ .name }"}`, "", true},
		{`vector(1)`, `vector(1)`, false},
	} {
		got, err := RenderQuery(tc.query, vars)
		if tc.err {
			if !errors.Is(err, ErrTemplate) {
				t.Errorf("%s: err = %v, want ErrTemplate", tc.query, err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("%s:\n got %s (%v)\nwant %s", tc.query, got, err, tc.want)
		}
	}
}

func TestMetricTemplateLookup(t *testing.T) {
	addr := prom(t).Address()
	const query = `100 * (sum(rate(istio_requests_total{destination_workload_namespace="{{ .namespace }}",destination_workload="{{ .target }}",response_code!~"5.."}[{{ .interval }}])) or vector(0)) / sum(rate(istio_requests_total{destination_workload_namespace="{{ .namespace }}",destination_workload="{{ .target }}"}[{{ .interval }}]))`
	local := metricTemplate(ns, "rate", query)
	shared := metricTemplate("monitoring", "rate", query)
	shared.Spec.Provider.Address = addr // overrides the Canary's address
	noAddr := metricTemplate(ns, "noaddr", `vector(1)`)
	missingVar := metricTemplate(ns, "missing-var", `x{a="{{ .variables.absent }}"}`)
	badType := metricTemplate(ns, "bad-type", `vector(1)`)
	badType.Spec.Provider.Type = "datadog"
	// Templates in namespace monitoring are the controller's shared ones.
	e := NewEngine(reader(local, shared, noAddr, missingVar, badType), Options{Egress: loopbackAllowed, DefaultAddress: addr,
		Refs: tenancy.RefPolicy{ControllerNamespace: "monitoring"}})

	metric := func(name, tplNamespace, tpl string) sluicev1.CanaryMetric {
		m := templateMetric(name, tpl)
		m.TemplateRef.Namespace = tplNamespace
		m.ThresholdRange = &sluicev1.ThresholdRange{Min: ptr(90.0)}
		return m
	}
	cmp := metric("compared", "", "rate")
	cmp.CompareToPrimary = &sluicev1.PrimaryComparison{MaxDelta: 1, Direction: DirectionHigherIsBetter}
	c := newCanary("cmp", "http://127.0.0.1:1", // unreachable: every metric here must use another address
		metric("same-namespace", "", "rate"),
		metric("other-namespace", "monitoring", "rate"),
		metric("absent", "", "nope"),
		metric("absent-there", "monitoring", "noaddr"),
		metric("missing-var", "", "missing-var"),
		metric("bad-type", "", "bad-type"),
		cmp,
	)
	c.Spec.MetricsServer = ""
	check := analyze(t, e, c)
	for _, r := range check.Results {
		t.Logf("%s: %s value=%q primary=%q msg=%q", r.Name, r.Verdict, r.Value, r.PrimaryValue, r.Message)
	}
	want := []struct {
		verdict sluicev1.Verdict
		text    string // in Value, or in Message for errors
	}{
		{sluicev1.VerdictPass, "97.00"},
		{sluicev1.VerdictPass, "97.00"},
		{sluicev1.VerdictError, "MetricTemplate test/nope not found"},
		{sluicev1.VerdictError, "MetricTemplate monitoring/noaddr not found"},
		{sluicev1.VerdictError, "absent"},
		{sluicev1.VerdictError, `provider type "datadog"`},
		{sluicev1.VerdictFail, "97.00"},
	}
	for i, r := range check.Results {
		got := r.Value
		if r.Verdict == sluicev1.VerdictError {
			got = r.Message
		}
		if r.Verdict != want[i].verdict || !strings.Contains(got, want[i].text) {
			t.Errorf("%s: got %s %q, want %s with %q", r.Name, r.Verdict, got, want[i].verdict, want[i].text)
		}
	}
	if r := check.Results[6]; r.PrimaryValue != "99.00" || !strings.Contains(r.Query, `destination_workload="cmp"`) {
		t.Errorf("comparison via template: primary %q query %s", r.PrimaryValue, r.Query)
	}

	// By default a templateRef into another namespace is refused before anything is read or
	// queried.
	refusing := NewEngine(reader(local, shared), Options{Egress: loopbackAllowed, DefaultAddress: addr})
	r := analyzeOne(t, refusing, newCanary("cmp", "http://127.0.0.1:1", metric("other-namespace", "monitoring", "rate")))
	if r.Verdict != sluicev1.VerdictError || !strings.Contains(r.Message, "MetricTemplate monitoring/rate") ||
		!strings.Contains(r.Message, tenancy.ErrCrossNamespaceRef.Error()) || r.Query != "" {
		t.Errorf("cross-namespace templateRef with the default policy: %s %q (query %q)", r.Verdict, r.Message, r.Query)
	}

	// No address anywhere.
	e = NewEngine(reader(noAddr), Options{Egress: loopbackAllowed})
	c = newCanary("cmp", "", metric("m", "", "noaddr"))
	if r := analyzeOne(t, e, c); r.Verdict != sluicev1.VerdictError || !strings.Contains(r.Message, "spec.metricsServer") {
		t.Errorf("no address: got %s %q", r.Verdict, r.Message)
	}
}

func ptr[T any](v T) *T { return &v }

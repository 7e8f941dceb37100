package analysis

import (
	"errors"
	"strings"
	"testing"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
	"sluice.dev/sluice/tenancy"
)

func TestConfineQuery(t *testing.T) {
	for _, tc := range []struct{ query, want string }{
		{`sum(rate(http_requests_total{code=~"5.."}[5m]))`, `sum(rate(http_requests_total{code=~"5..",namespace="shop"}[5m]))`},
		{`x{namespace="other"}`, `x{namespace="other",namespace="shop"}`},
		{`max_over_time(up[10m:1m]) / on() group_left count({__name__=~"kube_.+"})`,
			`max_over_time(up{namespace="shop"}[10m:1m]) / on () group_left () count({__name__=~"kube_.+",namespace="shop"})`},
		{`absent(x offset 5m)`, `absent(x{namespace="shop"} offset 5m)`},
		{`vector(1) * 100`, `vector(1) * 100`},
	} {
		got, err := ConfineQuery(tc.query, "namespace", "shop")
		if err != nil || got != tc.want {
			t.Errorf("%s:\n got %s (%v)\nwant %s", tc.query, got, err, tc.want)
		}
	}
	if _, err := ConfineQuery(`sum(x`, "namespace", "shop"); !errors.Is(err, ErrInvalidQuery) {
		t.Errorf("unparsable query: %v, want ErrInvalidQuery", err)
	}
}

// TestTenantQueriesReadOnlyTheirNamespace runs against a real Prometheus holding a series of
// this namespace and one of namespace "other": with confinement on, an inline query and a tenant's
// MetricTemplate see only this namespace's series, even when they name the other; the platform's
// templates (controller namespace) and built-in metrics run as written; with confinement off, the
// inline query sees both.
func TestTenantQueriesReadOnlyTheirNamespace(t *testing.T) {
	addr := prom(t).Address()
	const sumAll = `sum(tenant_secret_info)`
	tenantTpl := metricTemplate(ns, "all", sumAll)
	platformTpl := metricTemplate("monitoring", "all", sumAll)
	e := NewEngine(reader(tenantTpl, platformTpl), Options{Egress: loopbackAllowed, DefaultAddress: addr, TenantNamespaceLabel: "namespace",
		Refs: tenancy.RefPolicy{ControllerNamespace: "monitoring"}})
	lowest := -1e9
	inline := func(name, q string) sluicev1.CanaryMetric {
		return sluicev1.CanaryMetric{Name: name, Query: q, ThresholdRange: &sluicev1.ThresholdRange{Min: &lowest}}
	}
	platform := templateMetric("platform", "all")
	platform.TemplateRef.Namespace = "monitoring"
	c := newCanary("app95", "", inline("inline", sumAll), inline("other", `count(tenant_secret_info{namespace="other"})`),
		templateMetric("tenant", "all"), platform, successRate(90))
	check := analyze(t, e, c)
	for _, tc := range []struct {
		verdict     sluicev1.Verdict
		value, text string
	}{
		{sluicev1.VerdictPass, "1.00", `tenant_secret_info{namespace="test"}`},
		{sluicev1.VerdictNoData, "", `namespace="other",namespace="test"`},
		{sluicev1.VerdictPass, "1.00", `tenant_secret_info{namespace="test"}`},
		{sluicev1.VerdictPass, "2.00", sumAll},
		{sluicev1.VerdictPass, "95.00", `destination_workload="app95"`},
	} {
		r := check.Results[0]
		check.Results = check.Results[1:]
		if r.Verdict != tc.verdict || r.Value != tc.value || !strings.Contains(r.Query, tc.text) {
			t.Errorf("%s: %s %q query %s (%s); want %s %q with a query containing %s", r.Name, r.Verdict, r.Value, r.Query, r.Message,
				tc.verdict, tc.value, tc.text)
		}
	}

	unconfined := NewEngine(reader(), Options{Egress: loopbackAllowed, DefaultAddress: addr})
	if r := analyzeOne(t, unconfined, newCanary("app95", "", inline("inline", sumAll))); r.Value != "2.00" || r.Query != sumAll {
		t.Errorf("without confinement: %s %q query %s", r.Verdict, r.Value, r.Query)
	}
}

// TestSeriesLabelsNeverInStatus runs queries that touch another namespace's series against a
// real Prometheus (confinement off): a result with two series and an execution error about
// duplicate series say what happened, and nothing of the series' labels.
func TestSeriesLabelsNeverInStatus(t *testing.T) {
	e := NewEngine(reader(), Options{Egress: loopbackAllowed, DefaultAddress: prom(t).Address()})
	lowest := -1e9
	for _, tc := range []struct{ query, want string }{
		{`tenant_secret_info`, "query returned 2 series, want 1"},
		{`tenant_secret_info + on() tenant_secret_info`, "many-to-many matching not allowed"},
	} {
		r := analyzeOne(t, e, newCanary("app95", "", sluicev1.CanaryMetric{Name: "m", Query: tc.query,
			ThresholdRange: &sluicev1.ThresholdRange{Min: &lowest}}))
		if r.Verdict != sluicev1.VerdictError || !strings.Contains(r.Message, tc.want) {
			t.Errorf("%s: %s %q; want Error saying %q", tc.query, r.Verdict, r.Message, tc.want)
		}
		for _, label := range []string{"payments-db-password", "secret=", `"other"`} {
			if strings.Contains(r.Message, label) {
				t.Errorf("%s: the message names a series label (%s): %s", tc.query, label, r.Message)
			}
		}
	}
}

func TestWithoutLabelSets(t *testing.T) {
	for in, want := range map[string]string{
		`found duplicate series for the match group {} on the left hand-side of the operation: [{__name__="x", secret="a}b"}, {secret="c\"}"}];many-to-many`: `found duplicate series for the match group {…} on the left hand-side of the operation: [{…}, {…}];many-to-many`,
		`vector cannot contain metrics with the same labelset`: `vector cannot contain metrics with the same labelset`,
		`unclosed {a="b"`: `unclosed {a="b"`,
	} {
		if got := withoutLabelSets(in); got != want {
			t.Errorf("%s:\n got %s\nwant %s", in, got, want)
		}
	}
}

package analysis

import (
	"context"
	"errors"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
)

// TestQueriesThatCanNeverBeJudged: Prometheus's parser types the rendered query; only an instant
// vector or a scalar can be judged.
func TestQueriesThatCanNeverBeJudged(t *testing.T) {
	for _, tc := range []struct {
		name, query, wantErr string
	}{
		{"range vector", `foo[5m]`, "returns a range vector"},
		{"templated range vector", `rate(foo[{{ .interval }}])[5m:1m]`, "returns a range vector"},
		{"string", `"hello"`, "returns a string"},
		{"scalar", `scalar(vector(1))`, ""},
		{"instant vector", `sum(rate(foo{ns="{{ .namespace }}"}[{{ .interval }}]))`, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := ValidateTemplateQuery(tc.query)
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("judgeable query rejected: %v", err)
				}
				return
			}
			if !errors.Is(err, ErrTemplate) || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("got %v, want ErrTemplate mentioning %q", err, tc.wantErr)
			}
		})
	}
}

func TestTemplateVariablesListsEachOnce(t *testing.T) {
	got := TemplateVariables(`x{a="{{ .variables.b }}",c="{{ .variables.a }}"} / y{a="{{ .variables.b }}"}`)
	if strings.Join(got, ",") != "a,b" {
		t.Fatalf("TemplateVariables = %v, want [a b]", got)
	}
}

// TestValidateQueriesNamesTheMetricAndTemplate: an InvalidQuery template, a variable the metric
// does not define, a range-vector template and inline query are ErrInvalidQuery naming the metric
// and the template; a missing template is ErrTemplate only; a valid one and built-ins pass.
func TestValidateQueriesNamesTheMetricAndTemplate(t *testing.T) {
	invalid := metricTemplate(ns, "badq", `sum(rate(foo[{{ .interval }}])`)
	invalid.Generation = 1
	invalid.Status.Conditions = []metav1.Condition{{Type: sluicev1.ConditionReady, Status: metav1.ConditionFalse,
		Reason: sluicev1.ReasonInvalidQuery, Message: "1:31: parse error: unclosed left parenthesis", ObservedGeneration: 1}}
	needsVar := metricTemplate(ns, "needs-var", `x{a="{{ .variables.missing }}"}`)
	rangeVec := metricTemplate(ns, "range", `foo[5m]`)
	ok := metricTemplate(ns, "ok", `vector(100)`)
	e := NewEngine(reader(invalid, needsVar, rangeVec, ok), Options{Egress: loopbackAllowed, DefaultAddress: "http://127.0.0.1:1"})
	judged := func(m sluicev1.CanaryMetric) sluicev1.CanaryMetric {
		m.ThresholdRange = &sluicev1.ThresholdRange{Min: ptr(1.0)}
		return m
	}
	inline := judged(sluicev1.CanaryMetric{Name: "inline", Query: `"text"`})
	for _, tc := range []struct {
		metric  sluicev1.CanaryMetric
		invalid bool
		want    string
	}{
		{judged(templateMetric("q", "badq")), true, `metric "q": MetricTemplate ` + ns + `/badq: metric template error: InvalidQuery: 1:31: parse error: unclosed left parenthesis`},
		{judged(templateMetric("v", "needs-var")), true, `map has no entry for key "missing"`},
		{judged(templateMetric("r", "range")), true, "returns a range vector"},
		{inline, true, `metric "inline": inline query`},
		{judged(templateMetric("gone", "nope")), false, "nope"},
		{judged(templateMetric("fine", "ok")), false, ""},
		{judged(sluicev1.CanaryMetric{Name: sluicev1.MetricRequestSuccessRate}), false, ""},
	} {
		c := newCanary("c", "http://127.0.0.1:1", tc.metric)
		err := e.ValidateQueries(context.Background(), c)
		if tc.want == "" {
			if err != nil {
				t.Errorf("%s: %v, want nil", tc.metric.Name, err)
			}
			continue
		}
		if err == nil || errors.Is(err, ErrInvalidQuery) != tc.invalid || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v; want ErrInvalidQuery=%v mentioning %q", tc.metric.Name, err, tc.invalid, tc.want)
		}
		if !tc.invalid && !errors.Is(err, ErrTemplate) {
			t.Errorf("%s: %v, want ErrTemplate", tc.metric.Name, err)
		}
	}
	c := newCanary("skip", "http://127.0.0.1:1", judged(templateMetric("q", "badq")))
	c.Spec.SkipAnalysis = true
	if err := e.ValidateQueries(context.Background(), c); err != nil {
		t.Errorf("skipAnalysis: %v, want nil", err)
	}
}

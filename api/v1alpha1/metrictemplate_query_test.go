package v1alpha1_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
	"sluice.dev/sluice/test/testenv"
)

// TestMetricTemplateQueryActionsAtAdmission runs the CRD's rules on a real apiserver: a query may
// only print {{ .name }}, {{ .namespace }}, {{ .target }}, {{ .service }}, {{ .interval }} and
// {{ .variables.KEY }} (with trim markers and comments) and is at most 4096 bytes; the templates
// that would render ~640 MB or spin forever, and every other action, are refused with a message
// naming the allowed fields.
func TestMetricTemplateQueryActionsAtAdmission(t *testing.T) {
	testenv.Require(t, env)
	ns := env.Namespace(t)
	ctx := context.Background()
	create := func(i int, query string) error {
		mt := &sluicev1.MetricTemplate{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("q%d", i), Namespace: ns},
			Spec: sluicev1.MetricTemplateSpec{Query: query}}
		return env.Client.Create(ctx, mt)
	}
	allowed := []string{
		`sum(rate(http_requests_total{namespace="{{ .namespace }}",pod=~"{{ .target }}-.*"}[{{ .interval }}]))`,
		`x{a="{{.name}}",b="{{- .target -}}",c="{{ .service }}",d="{{ .variables.path_1 }}"}`,
		"x{a=\"{{\n\t.name\n}}\"}",
		`{{/* a comment, even with {{ range }} in it */}}vector(1)`,
		`{{- /* trimmed */ -}} vector(1)`,
		`x{a="{"} or y{b="}}"}`,
		strings.Repeat("1+", 2047) + "1",
	}
	refused := []string{
		`{{range 64}}{{printf "%010000000d" 0}}{{end}}`,
		`{{range 1000000000000}}{{end}}`,
		`{{ printf "%s" .name }}`,
		`{{ .name | printf "%s" }}`,
		`{{ if .name }}x{{ end }}`,
		`{{ with .name }}{{ . }}{{ end }}`,
		`{{ define "x" }}y{{ end }}{{ template "x" }}`,
		`{{ block "x" . }}y{{ end }}`,
		`{{ $x := .name }}{{ $x }}`,
		`{{ len .variables }}`,
		`{{ index .variables "a" }}`,
		`{{ .variables }}`,
		`{{ .name.foo }}`,
		`{{ . }}`,
		`{{ "{{ .name }}" }}`,
		`{{/* c */}}{{ len .name }}`,
	}
	for i, q := range allowed {
		if err := create(i, q); err != nil {
			t.Errorf("allowed query %.60q refused: %v", q, err)
		}
	}
	for i, q := range refused {
		err := create(100+i, q)
		if err == nil || !strings.Contains(err.Error(), "a template action may only print {{ .name }}") {
			t.Errorf("query %q: got %v, want refused naming the allowed actions", q, err)
		}
	}
	if err := create(200, strings.Repeat("1+", 2048)+"1"); err == nil || !strings.Contains(err.Error(), "4096") {
		t.Errorf("a 4097-byte query: got %v, want refused naming the 4096 limit", err)
	}
}

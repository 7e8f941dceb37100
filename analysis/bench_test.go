package analysis

import (
	"testing"

	"github.com/prometheus/common/model"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
)

// BenchmarkRenderAndVerdict measures the CPU cost of one metric check without the network:
// rendering the query (built-in or MetricTemplate, with escaping), extracting the value from a
// decoded result, judging it against the threshold and formatting the MetricResult fields.
// One op is one metric.
func BenchmarkRenderAndVerdict(b *testing.B) {
	c := newCanary("web", "http://prometheus:9090")
	result := model.Vector{sample(97.5)}
	m := successRate(95)
	m.TemplateVariables = map[string]string{"path": `/api/"v1"`, "code": "5.."}
	const tpl = `100 * sum(rate(http_requests_total{namespace="{{ .namespace }}",deployment="{{ .target }}",path="{{ .variables.path }}",code!~"{{ .variables.code }}"}[{{ .interval }}])) / sum(rate(http_requests_total{namespace="{{ .namespace }}",deployment="{{ .target }}"}[{{ .interval }}]))`

	verdict := func(b *testing.B) {
		v, err := SampleValue(result)
		if err != nil {
			b.Fatal(err)
		}
		res := sluicev1.MetricResult{Value: FormatValue(v), ThresholdRange: FormatRange(m.ThresholdRange)}
		res.Verdict, res.Message = judgeThreshold(v, m.ThresholdRange)
		if res.Verdict != sluicev1.VerdictPass {
			b.Fatal(res.Message)
		}
	}
	for _, mesh := range []sluicev1.Mesh{sluicev1.MeshIstio, sluicev1.MeshLinkerd, sluicev1.MeshEnvoy} {
		b.Run("builtin-"+string(mesh), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := builtinQuery(mesh, m.Name, canaryWorkload(c), "1m"); err != nil {
					b.Fatal(err)
				}
				verdict(b)
			}
		})
	}
	b.Run("template", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := RenderQuery(tpl, templateVars(c, &m, c.Spec.TargetRef.Name, "1m")); err != nil {
				b.Fatal(err)
			}
			verdict(b)
		}
	})
}

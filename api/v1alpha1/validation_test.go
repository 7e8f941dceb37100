package v1alpha1_test

import (
	"context"
	"os"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
	"sluice.dev/sluice/test/testenv"
)

var env *testenv.Env

func TestMain(m *testing.M) { os.Exit(testenv.Run(m, &env)) }

// seedCanary is the Canary of seed 003_8198722ba9ac091d.txt: stepWeight 10, maxWeight 50,
// threshold 5, success rate min 99, duration max 500 ms, interval 1m.
func seedCanary() *sluicev1.Canary {
	return &sluicev1.Canary{
		ObjectMeta: metav1.ObjectMeta{Name: "user-service"},
		Spec: sluicev1.CanarySpec{
			TargetRef: sluicev1.TargetReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "user-service"},
			Service:   sluicev1.CanaryService{Port: 8080},
			Analysis: sluicev1.CanaryAnalysis{
				Interval: "1m", Threshold: 5, MaxWeight: 50, StepWeight: 10,
				Metrics: []sluicev1.CanaryMetric{
					{Name: "request-success-rate", Interval: "1m", ThresholdRange: &sluicev1.ThresholdRange{Min: ptr.To(99.0)}},
					{Name: "request-duration", Interval: "1m", ThresholdRange: &sluicev1.ThresholdRange{Max: ptr.To(500.0)}},
				},
			},
		},
	}
}

func TestValidCanariesAccepted(t *testing.T) {
	testenv.Require(t, env)
	ns := env.Namespace(t)
	for name, mutate := range map[string]func(*sluicev1.Canary){
		"seed": func(*sluicev1.Canary) {},
		"step weights with istio": func(c *sluicev1.Canary) {
			c.Spec.Provider = sluicev1.ProviderIstio
			c.Spec.Analysis.StepWeight, c.Spec.Analysis.MaxWeight = 0, 0
			c.Spec.Analysis.StepWeights = []int32{1, 10, 50}
		},
		"template metric and webhooks": func(c *sluicev1.Canary) {
			c.Spec.Analysis.Metrics = append(c.Spec.Analysis.Metrics, sluicev1.CanaryMetric{
				Name: "error-budget", TemplateRef: &sluicev1.CrossNamespaceObjectReference{Name: "errors"},
				ThresholdRange: &sluicev1.ThresholdRange{Min: ptr.To(0.0), Max: ptr.To(1.0)}, OnNoData: sluicev1.NoDataSkip,
			})
			c.Spec.Analysis.Webhooks = []sluicev1.CanaryWebhook{{Name: "load", Type: sluicev1.WebhookPreRollout, URL: "http://loadtester/", Timeout: "15s"},
				// The longest calls admitted: 5m with one retry, and 50s with ten.
				{Name: "helm-test", Type: sluicev1.WebhookPreRollout, URL: "http://loadtester/", Timeout: "5m", Retries: 1},
				{Name: "smoke", Type: sluicev1.WebhookRollout, URL: "http://loadtester/", Timeout: "50s", Retries: 10}}
			c.Spec.Analysis.Alerts = []sluicev1.CanaryAlert{{Name: "slack", Severity: sluicev1.SeverityWarn,
				ProviderRef: sluicev1.CrossNamespaceObjectReference{Name: "on-call"}}}
		},
		"stepWeight equal to maxWeight, 1s interval, windows": func(c *sluicev1.Canary) {
			c.Spec.Analysis.StepWeight, c.Spec.Analysis.MaxWeight, c.Spec.Analysis.Interval = 100, 100, "1s"
			c.Spec.Windows = []sluicev1.ProgressionWindow{{Schedule: "0 9 * * 1-5", Duration: "8h", TimeZone: "Europe/Berlin"}}
		},
	} {
		t.Run(name, func(t *testing.T) {
			c := seedCanary()
			c.Namespace = ns
			c.Name = strings.ToLower(strings.ReplaceAll(strings.ReplaceAll(name, " ", "-"), ",", ""))
			mutate(c)
			if err := env.Client.Create(context.Background(), c); err != nil {
				t.Fatalf("valid canary rejected: %v", err)
			}
		})
	}
	mt := &sluicev1.MetricTemplate{ObjectMeta: metav1.ObjectMeta{Name: "errors", Namespace: ns},
		Spec: sluicev1.MetricTemplateSpec{Provider: sluicev1.MetricTemplateProvider{Address: "http://prometheus:9090"},
			Query: `sum(rate(http_requests_total{namespace="{{ .namespace }}",status=~"5.."}[{{ .interval }}]))`}}
	if err := env.Client.Create(context.Background(), mt); err != nil {
		t.Fatalf("valid MetricTemplate rejected: %v", err)
	}
	got := &sluicev1.Canary{}
	if err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "seed"}, got); err != nil {
		t.Fatal(err)
	}
	if got.Spec.Provider != sluicev1.ProviderGatewayAPI || *got.Spec.ProgressDeadlineSeconds != 600 {
		t.Fatalf("defaults not applied: provider %q, progressDeadlineSeconds %v", got.Spec.Provider, got.Spec.ProgressDeadlineSeconds)
	}
}

func TestInvalidSpecsRejectedNamingTheField(t *testing.T) {
	testenv.Require(t, env)
	ns := env.Namespace(t)
	canaryCases := []struct {
		name   string
		mutate func(*sluicev1.Canary)
		want   string // a fragment of the error naming the field
	}{
		{"stepWeight above maxWeight", func(c *sluicev1.Canary) { c.Spec.Analysis.StepWeight = 60 }, "analysis.stepWeight must be between 1 and analysis.maxWeight"},
		{"stepWeight zero is below 1", func(c *sluicev1.Canary) { c.Spec.Analysis.StepWeight = -1 }, "spec.analysis.stepWeight"},
		{"maxWeight above 100", func(c *sluicev1.Canary) { c.Spec.Analysis.MaxWeight = 101 }, "spec.analysis.maxWeight"},
		{"stepWeights not increasing", func(c *sluicev1.Canary) {
			c.Spec.Analysis.StepWeight, c.Spec.Analysis.MaxWeight = 0, 0
			c.Spec.Analysis.StepWeights = []int32{10, 5, 50}
		}, "analysis.stepWeights must be strictly increasing"},
		{"stepWeights with a duplicate", func(c *sluicev1.Canary) {
			c.Spec.Analysis.StepWeight, c.Spec.Analysis.MaxWeight = 0, 0
			c.Spec.Analysis.StepWeights = []int32{10, 10, 50}
		}, "analysis.stepWeights must be strictly increasing"},
		{"stepWeights item above 100", func(c *sluicev1.Canary) {
			c.Spec.Analysis.StepWeight, c.Spec.Analysis.MaxWeight = 0, 0
			c.Spec.Analysis.StepWeights = []int32{10, 150}
		}, "spec.analysis.stepWeights[1]"},
		{"both stepWeight and stepWeights", func(c *sluicev1.Canary) { c.Spec.Analysis.StepWeights = []int32{10, 20} }, "set either stepWeight or stepWeights"},
		{"thresholdRange min above max", func(c *sluicev1.Canary) {
			c.Spec.Analysis.Metrics[0].ThresholdRange = &sluicev1.ThresholdRange{Min: ptr.To(99.0), Max: ptr.To(90.0)}
		}, "thresholdRange.min must be less than or equal to thresholdRange.max"},
		{"metric neither built-in nor template", func(c *sluicev1.Canary) { c.Spec.Analysis.Metrics[0].Name = "my-metric" }, "templateRef must be set"},
		{"threshold zero", func(c *sluicev1.Canary) { c.Spec.Analysis.Threshold = -2 }, "spec.analysis.threshold"},
		{"interval not a duration", func(c *sluicev1.Canary) { c.Spec.Analysis.Interval = "fast" }, "spec.analysis.interval"},
		{"interval without a unit", func(c *sluicev1.Canary) { c.Spec.Analysis.Interval = "5" }, "spec.analysis.interval"},
		{"metric interval without a unit", func(c *sluicev1.Canary) { c.Spec.Analysis.Metrics[0].Interval = "30" }, "spec.analysis.metrics[0].interval"},
		{"interval below 1s", func(c *sluicev1.Canary) { c.Spec.Analysis.Interval = "500ms" }, "analysis.interval must be a duration of at least 1s"},
		{"metric interval below 1s", func(c *sluicev1.Canary) { c.Spec.Analysis.Metrics[0].Interval = "10ms" }, "metric.interval must be a duration of at least 1s"},
		{"unknown webhook type", func(c *sluicev1.Canary) {
			c.Spec.Analysis.Webhooks = []sluicev1.CanaryWebhook{{Name: "x", Type: "pre-flight", URL: "http://x/"}}
		}, "spec.analysis.webhooks[0].type"},
		// A webhook call's time is bounded: one attempt at most 5m, all attempts at most 10m.
		{"webhook timeout above 5m", func(c *sluicev1.Canary) {
			c.Spec.Analysis.Webhooks = []sluicev1.CanaryWebhook{{Name: "x", URL: "http://x/", Timeout: "5m1s"}}
		}, "spec.analysis.webhooks[0].timeout: Invalid value: \"5m1s\": webhook timeout must be at most 5m"},
		{"webhook timeout of a thousand hours", func(c *sluicev1.Canary) {
			c.Spec.Analysis.Webhooks = []sluicev1.CanaryWebhook{{Name: "x", URL: "http://x/", Timeout: "1000h"}}
		}, "webhook timeout must be at most 5m"},
		{"webhook attempts beyond 10m", func(c *sluicev1.Canary) {
			c.Spec.Analysis.Webhooks = []sluicev1.CanaryWebhook{{Name: "x", URL: "http://x/", Timeout: "1m", Retries: 10}}
		}, "spec.analysis.webhooks[0]: Invalid value: webhook: timeout * (1 + retries) must be at most 10m"},
		{"unknown alert severity", func(c *sluicev1.Canary) {
			c.Spec.Analysis.Alerts = []sluicev1.CanaryAlert{{Name: "x", Severity: "critical", ProviderRef: sluicev1.CrossNamespaceObjectReference{Name: "p"}}}
		}, "spec.analysis.alerts[0].severity"},
		{"unsupported target kind", func(c *sluicev1.Canary) { c.Spec.TargetRef.Kind = "StatefulSet" }, "spec.targetRef.kind"},
		{"port out of range", func(c *sluicev1.Canary) { c.Spec.Service.Port = 70000 }, "spec.service.port"},
		{"unknown provider", func(c *sluicev1.Canary) { c.Spec.Provider = "nginx" }, "spec.provider"},
		// Admission refuses what would be ignored or would pass on nothing.
		{"metric without a threshold", func(c *sluicev1.Canary) { c.Spec.Analysis.Metrics[1].ThresholdRange = nil },
			"spec.analysis.metrics[1]: Invalid value: metric: set thresholdRange (or compareToPrimary)"},
		{"thresholdRange without bounds", func(c *sluicev1.Canary) { c.Spec.Analysis.Metrics[0].ThresholdRange = &sluicev1.ThresholdRange{} },
			"spec.analysis.metrics[0].thresholdRange: Invalid value: thresholdRange: set min, max or both"},
		{"duplicate metric names", func(c *sluicev1.Canary) { c.Spec.Analysis.Metrics[1].Name = c.Spec.Analysis.Metrics[0].Name },
			"spec.analysis.metrics[1]: Duplicate value"},
		{"duplicate webhook names", func(c *sluicev1.Canary) {
			c.Spec.Analysis.Webhooks = []sluicev1.CanaryWebhook{{Name: "load", URL: "http://a/"}, {Name: "load", Type: sluicev1.WebhookPreRollout, URL: "http://b/"}}
		}, "spec.analysis.webhooks[1]: Duplicate value"},
		{"window schedule with four fields", func(c *sluicev1.Canary) {
			c.Spec.Windows = []sluicev1.ProgressionWindow{{Schedule: "0 9 * *", Duration: "8h"}}
		}, "spec.windows[0].schedule: Invalid value: \"0 9 * *\": windows[].schedule must have five cron fields"},
		{"window of no length", func(c *sluicev1.Canary) {
			c.Spec.Windows = []sluicev1.ProgressionWindow{{Schedule: "0 9 * * 1-5", Duration: "0s"}}
		}, "spec.windows[0].duration: Invalid value: \"0s\": windows[].duration must be longer than zero"},
		{"consecutiveErrorLimit zero", func(c *sluicev1.Canary) { c.Spec.Analysis.ConsecutiveErrorLimit = ptr.To[int32](0) },
			"spec.analysis.consecutiveErrorLimit"},
		{"string match with two kinds", func(c *sluicev1.Canary) {
			c.Spec.Analysis.Match = []sluicev1.HTTPMatchRequest{{URI: &sluicev1.StringMatch{Exact: ptr.To("/a"), Prefix: ptr.To("/")}}}
		}, "set exactly one of exact, prefix or regex"},
	}
	for i, tt := range canaryCases {
		t.Run(tt.name, func(t *testing.T) {
			c := seedCanary()
			c.Namespace, c.Name = ns, "invalid-"+string(rune('a'+i))
			tt.mutate(c)
			err := env.Client.Create(context.Background(), c)
			if err == nil {
				t.Fatal("invalid canary accepted")
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error does not name the field (want %q):\n%v", tt.want, err)
			}
			if strings.Contains(err.Error(), "conversion error") || strings.Contains(err.Error(), "evaluating rule") {
				t.Fatalf("error leaks a CEL evaluation failure instead of only naming the field:\n%v", err)
			}
		})
	}
	templateCases := []struct {
		name string
		spec sluicev1.MetricTemplateSpec
		want string
	}{
		{"empty query", sluicev1.MetricTemplateSpec{}, "spec.query"},
		{"address without scheme", sluicev1.MetricTemplateSpec{Query: "up", Provider: sluicev1.MetricTemplateProvider{Address: "prometheus:9090"}}, "spec.provider.address"},
		{"unknown provider type", sluicev1.MetricTemplateSpec{Query: "up", Provider: sluicev1.MetricTemplateProvider{Type: "datadog"}}, "spec.provider.type"},
		{"credentials without their own address", sluicev1.MetricTemplateSpec{Query: "up", Provider: sluicev1.MetricTemplateProvider{
			SecretRef: &corev1.LocalObjectReference{Name: "prom-token"}}}, "credentials are sent only to the template's own address"},
	}
	for i, tt := range templateCases {
		t.Run("template "+tt.name, func(t *testing.T) {
			mt := &sluicev1.MetricTemplate{ObjectMeta: metav1.ObjectMeta{Name: "invalid-" + string(rune('a'+i)), Namespace: ns}, Spec: tt.spec}
			err := env.Client.Create(context.Background(), mt)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("want rejection naming %q, got %v", tt.want, err)
			}
		})
	}
	ap := &sluicev1.AlertProvider{ObjectMeta: metav1.ObjectMeta{Name: "invalid", Namespace: ns},
		Spec: sluicev1.AlertProviderSpec{Type: "pager"}}
	if err := env.Client.Create(context.Background(), ap); err == nil || !strings.Contains(err.Error(), "spec.type") {
		t.Fatalf("AlertProvider with unknown type: %v", err)
	}
}

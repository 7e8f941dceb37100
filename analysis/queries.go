package analysis

import (
	"context"
	"errors"
	"fmt"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
)

// ValidateQueries reports the metrics of canary whose query can never be judged, before a check
// runs (the canary controller stalls on it instead of putting traffic on the canary): a
// MetricTemplate its controller marked InvalidQuery (Ready=False for its current generation), a
// template that does not render with the metric's templateVariables (a {{ .variables.NAME }} the
// metric does not define) or whose rendered PromQL Prometheus's parser rejects or types as a range
// vector or a string, and an inline query the same. Built-in metrics are not checked (Sluice
// writes them). Reads only through the engine's reader (the cache). Returns nil when
// spec.skipAnalysis. It also refuses metrics that use more distinct servers than the engine
// allows. errors: ErrInvalidQuery (joined, one per metric) naming the metric and the template;
// ErrTemplate for a missing template; ErrTooManyServers naming the metrics beyond the cap; API
// errors.
func (e *Engine) ValidateQueries(ctx context.Context, canary *sluicev1.Canary) error {
	if canary.Spec.SkipAnalysis {
		return nil
	}
	var errs []error
	for i := range canary.Spec.Analysis.Metrics {
		m := &canary.Spec.Analysis.Metrics[i]
		switch {
		case m.TemplateRef != nil:
			tpl, err := e.getTemplate(ctx, canary, m)
			if err != nil {
				if !errors.Is(err, ErrTemplate) {
					return err
				}
				errs = append(errs, fmt.Errorf("metric %q: %w", m.Name, err))
				continue
			}
			if err := templateQueryError(canary, m, tpl); err != nil {
				errs = append(errs, fmt.Errorf("%w: metric %q: MetricTemplate %s/%s: %w", ErrInvalidQuery, m.Name, tpl.Namespace, tpl.Name, err))
			}
		case m.Query != "":
			if err := checkPromQL(m.Query, ""); err != nil {
				errs = append(errs, fmt.Errorf("%w: metric %q: inline query: %w", ErrInvalidQuery, m.Name, err))
			}
		}
	}
	if err := e.checkServerCap(e.metricServers(ctx, canary)); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// templateQueryError is why tpl's query can never be judged for metric m of canary, or nil.
func templateQueryError(c *sluicev1.Canary, m *sluicev1.CanaryMetric, tpl *sluicev1.MetricTemplate) error {
	if cond := apimeta.FindStatusCondition(tpl.Status.Conditions, sluicev1.ConditionReady); cond != nil &&
		cond.Status == metav1.ConditionFalse && cond.Reason == sluicev1.ReasonInvalidQuery && cond.ObservedGeneration == tpl.Generation {
		return fmt.Errorf("%w: %s: %s", ErrTemplate, cond.Reason, cond.Message)
	}
	// Rendered as a check would (the window's value does not change the query's validity).
	rendered, err := RenderQuery(tpl.Spec.Query, templateVars(c, m, c.Spec.TargetRef.Name, "1m"))
	if err != nil {
		return err
	}
	return checkPromQL(rendered, "once rendered ")
}

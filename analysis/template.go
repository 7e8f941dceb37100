package analysis

import (
	"context"
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
)

// TemplateVars are the values a MetricTemplate query sees, as {{ .name }}, {{ .namespace }},
// {{ .target }}, {{ .service }}, {{ .interval }} and {{ .variables.KEY }}. RenderQuery escapes each
// of them for a PromQL double-quoted string literal, so templates must put them inside double
// quotes (interval goes in a range selector, [{{ .interval }}], and is always a plain duration).
type TemplateVars struct {
	// Name of the Canary.
	Name string
	// Namespace of the Canary.
	Namespace string
	// Target is the workload queried: the target Deployment for the canary side, <target>-primary
	// for the primary comparison.
	Target string
	// Service is the apex Service name.
	Service string
	// Interval is the metric window as a PromQL duration, e.g. 1m or 1m30s.
	Interval string
	// Variables are the metric's templateVariables.
	Variables map[string]string
}

// RenderQuery renders a MetricTemplate query (Go text/template) with vars. Only field actions
// are allowed (parseTemplate); referring to a variable that does not exist is an error
// (missingkey=error), as is a template syntax error or a result longer than
// MaxRenderedQueryLength. Returns the PromQL text; errors wrap ErrTemplate.
func RenderQuery(query string, vars TemplateVars) (string, error) {
	t, err := parseTemplate(query)
	if err != nil {
		return "", err
	}
	variables := make(map[string]string, len(vars.Variables))
	for k, v := range vars.Variables {
		variables[k] = EscapeString(v)
	}
	data := map[string]any{
		"name":      EscapeString(vars.Name),
		"namespace": EscapeString(vars.Namespace),
		"target":    EscapeString(vars.Target),
		"service":   EscapeString(vars.Service),
		"interval":  EscapeString(vars.Interval),
		"variables": variables,
	}
	w := &boundedWriter{max: MaxRenderedQueryLength}
	if err := t.Execute(w, data); err != nil {
		if errors.Is(err, errRenderTooLong) {
			return "", fmt.Errorf("%w: rendering query: the result is longer than %d bytes (long templateVariables?)", ErrTemplate, MaxRenderedQueryLength)
		}
		return "", fmt.Errorf("%w: rendering query: %w", ErrTemplate, err)
	}
	return w.b.String(), nil
}

// templateVars returns the variables of metric m of canary c for workload target.
func templateVars(c *sluicev1.Canary, m *sluicev1.CanaryMetric, target, window string) TemplateVars {
	return TemplateVars{
		Name:      c.Name,
		Namespace: c.Namespace,
		Target:    target,
		Service:   c.ServiceNames().Apex,
		Interval:  window,
		Variables: m.TemplateVariables,
	}
}

// getTemplate reads the MetricTemplate metric m refers to; its namespace defaults to the Canary's.
// errors: ErrTemplate (not found, wrapping the API error), other API errors.
func (e *Engine) getTemplate(ctx context.Context, c *sluicev1.Canary, m *sluicev1.CanaryMetric) (*sluicev1.MetricTemplate, error) {
	key := types.NamespacedName{Namespace: m.TemplateRef.Namespace, Name: m.TemplateRef.Name}
	if key.Namespace == "" {
		key.Namespace = c.Namespace
	}
	if err := e.opts.Refs.Check(c.Namespace, fmt.Sprintf("metric %q templateRef", m.Name), "MetricTemplate", key.Namespace, key.Name); err != nil {
		return nil, err
	}
	var tpl sluicev1.MetricTemplate
	if err := e.reader.Get(ctx, key, &tpl); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("%w: MetricTemplate %s not found", ErrTemplate, key)
		}
		return nil, fmt.Errorf("reading MetricTemplate %s: %w", key, err)
	}
	return &tpl, nil
}

// Package metrictemplate is a small controller that checks every MetricTemplate's query when it
// is applied: rendered with placeholder values and parsed with Prometheus's own PromQL parser
// (analysis.ValidateTemplateQuery). The result is the template's Ready condition, so a broken
// query shows in `kubectl get metrictemplates` at once, not at the first check of a run.
package metrictemplate

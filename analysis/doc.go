// Package analysis evaluates a Canary's metrics at one step and returns a verdict per metric:
// Pass, Fail, NoData, Error or Skipped, with the value, the threshold range and the rendered query.
//
// Engine.Analyze runs instant queries against Prometheus (client_golang's api/prometheus/v1) at an
// explicit time and judges each result:
//
//   - the value must lie in the metric's inclusive thresholdRange;
//   - an empty result, NaN and ±Inf are NoData, never a pass; onNoData Skip turns NoData into
//     Skipped; built-in metrics with minRequestCount are Skipped while the canary served fewer
//     requests within the metric window;
//   - a result with several series, a range vector or a string is an Error naming what came back;
//   - compareToPrimary runs the same query for the primary and fails a canary worse by more than
//     maxDelta;
//   - an unreachable server is an Error whose message names the address and the reason.
//
// The canary engine counts a failed check when Check.Failed reports one. Engine.Ready checks that
// the servers answer before a run starts; ValidateSpec and ValidateIntervals report specs that can
// never be evaluated (the latter: windows shorter than twice the scrape interval, where rate()
// returns nothing); Engine.Validate runs both with the engine's scrape interval (the one place it
// is configured), and Engine.Evaluate checks a validated Canary (Analyze is Validate + Evaluate).
//
// Built-in metrics (request-success-rate in percent 0–100, request-duration as P99 in
// milliseconds) have PromQL per mesh (builtin.go). MetricTemplates are Go text/templates with
// missingkey=error whose actions may only print fields (templatecheck.go) and whose every value is
// escaped for a PromQL string literal (EscapeString).
//
// Every object is assumed written by a hostile tenant: a template renders in time and memory
// bounded by its size; a query a tenant wrote is confined to the Canary's namespace
// (confine.go, Options.TenantNamespaceLabel); a check and a reachability probe are bounded in time
// as a whole, and a Canary uses at most Options.MaxMetricsServers servers (servers.go); no series
// label reaches a message (labelsets.go, SampleValue).
//
// Files: engine.go (Engine, Analyze, Validate, Evaluate, Ready), metric.go (one metric: plan, queries, verdict),
// builtin.go, template.go, templatecheck.go, confine.go, servers.go, prometheus.go (client cache,
// queries), credentials.go, verdict.go (pure judging and formatting), labelsets.go, validate.go,
// escape.go, errors.go, check.go.
package analysis

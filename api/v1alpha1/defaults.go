package v1alpha1

import "time"

// DefaultAnalysisInterval is spec.analysis.interval when empty: how often a run checks its
// metrics and moves a step, and the query window of a metric without its own interval. The
// canary planner and the analysis engine both read it from here.
const DefaultAnalysisInterval = time.Minute

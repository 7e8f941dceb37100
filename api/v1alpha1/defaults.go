package v1alpha1

import "time"

// DefaultAnalysisInterval is spec.analysis.interval when empty: how often a run checks its
// metrics and moves a step, and the query window of a metric without its own interval. The
// canary planner and the analysis engine both read it from here.
const DefaultAnalysisInterval = time.Minute

// DurationOr is s parsed as a duration when it is a positive one, else def: how both controllers
// read their optional duration fields (intervals, bake times).
func DurationOr(s string, def time.Duration) time.Duration {
	if d, err := time.ParseDuration(s); err == nil && d > 0 {
		return d
	}
	return def
}

// CountOr is n when it is positive, else def (thresholds, limits).
func CountOr(n, def int32) int32 {
	if n > 0 {
		return n
	}
	return def
}

// SecondsOr is *p seconds when p is set and positive, else def (progress deadlines).
func SecondsOr(p *int32, def time.Duration) time.Duration {
	if p != nil && *p > 0 {
		return time.Duration(*p) * time.Second
	}
	return def
}

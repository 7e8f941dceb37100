package waves

import (
	"time"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
)

// Defaults of the spec fields, and the controller's timing.
const (
	DefaultBakeTime         = 5 * time.Minute
	DefaultInterval         = time.Minute
	DefaultThreshold        = 5
	DefaultMaxUnavailable   = 1
	DefaultProgressDeadline = 600 * time.Second
	// DefaultPollInterval is how soon to look again while pods restart (watch events usually
	// come first).
	DefaultPollInterval = 2 * time.Second
	// IdleResync is how often a finished run refreshes its counts and looks for drift (pod and
	// namespace events usually come first).
	IdleResync = 10 * time.Minute
)

// Target is the declared version (Linkerd) or revision (Istio).
func Target(spec sluicev1.DataPlaneSpec) string {
	switch spec.Mesh {
	case sluicev1.MeshLinkerd:
		return spec.Version
	case sluicev1.MeshIstio:
		return spec.Revision
	}
	return ""
}

// immediate reports whether the run in s moves straight back to the converged version: a
// rollback run under spec.rollback Immediate (one wave, no bake, analysis, approval or window).
func immediate(spec sluicev1.DataPlaneSpec, s *sluicev1.DataPlaneStatus) bool {
	return s.Rollback && spec.Rollback == sluicev1.RollbackImmediate
}

// bakeTime is the bake of the run in s: 0 for an immediate rollback, else spec.bakeTime.
func bakeTime(spec sluicev1.DataPlaneSpec, s *sluicev1.DataPlaneStatus) time.Duration {
	if immediate(spec, s) {
		return 0
	}
	return BakeTime(spec)
}

// hasAnalysis reports whether the waves of the run in s are analysed.
func hasAnalysis(spec sluicev1.DataPlaneSpec, s *sluicev1.DataPlaneStatus) bool {
	return len(spec.Analysis.Metrics) > 0 && !immediate(spec, s)
}

// BakeTime is spec.bakeTime (default 5m).
func BakeTime(spec sluicev1.DataPlaneSpec) time.Duration {
	if d, err := time.ParseDuration(spec.BakeTime); err == nil && d >= 0 && spec.BakeTime != "" {
		return d
	}
	return DefaultBakeTime
}

// Interval is spec.analysis.interval (default 1m).
func Interval(spec sluicev1.DataPlaneSpec) time.Duration {
	return sluicev1.DurationOr(spec.Analysis.Interval, DefaultInterval)
}

// Threshold is spec.analysis.threshold (default 5).
func Threshold(spec sluicev1.DataPlaneSpec) int32 {
	return sluicev1.CountOr(spec.Analysis.Threshold, DefaultThreshold)
}

// MaxUnavailable is spec.maxUnavailable (default 1).
func MaxUnavailable(spec sluicev1.DataPlaneSpec) int {
	if spec.MaxUnavailable != nil && *spec.MaxUnavailable > 0 {
		return int(*spec.MaxUnavailable)
	}
	return DefaultMaxUnavailable
}

// ProgressDeadline is spec.progressDeadlineSeconds (default 600 s).
func ProgressDeadline(spec sluicev1.DataPlaneSpec) time.Duration {
	return sluicev1.SecondsOr(spec.ProgressDeadlineSeconds, DefaultProgressDeadline)
}

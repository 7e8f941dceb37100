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
	// IdleResync is how often a finished upgrade refreshes its DESIRED and CURRENT counts.
	IdleResync = 10 * time.Minute
)

// Target is the version (Linkerd) or revision (Istio) spec moves to.
func Target(spec sluicev1.ProxyUpgradeSpec) string {
	switch {
	case spec.Mesh == sluicev1.MeshLinkerd && spec.Linkerd != nil:
		return spec.Linkerd.ProxyVersion
	case spec.Mesh == sluicev1.MeshIstio && spec.Istio != nil:
		return spec.Istio.Revision
	}
	return ""
}

// BakeTime is spec.bakeTime (default 5m).
func BakeTime(spec sluicev1.ProxyUpgradeSpec) time.Duration {
	if d, err := time.ParseDuration(spec.BakeTime); err == nil && d >= 0 && spec.BakeTime != "" {
		return d
	}
	return DefaultBakeTime
}

// Interval is spec.analysis.interval (default 1m).
func Interval(spec sluicev1.ProxyUpgradeSpec) time.Duration {
	if d, err := time.ParseDuration(spec.Analysis.Interval); err == nil && d > 0 {
		return d
	}
	return DefaultInterval
}

// Threshold is spec.analysis.threshold (default 5).
func Threshold(spec sluicev1.ProxyUpgradeSpec) int32 {
	if spec.Analysis.Threshold > 0 {
		return spec.Analysis.Threshold
	}
	return DefaultThreshold
}

// MaxUnavailable is spec.maxUnavailable (default 1).
func MaxUnavailable(spec sluicev1.ProxyUpgradeSpec) int {
	if spec.MaxUnavailable != nil && *spec.MaxUnavailable > 0 {
		return int(*spec.MaxUnavailable)
	}
	return DefaultMaxUnavailable
}

// ProgressDeadline is spec.progressDeadlineSeconds (default 600 s).
func ProgressDeadline(spec sluicev1.ProxyUpgradeSpec) time.Duration {
	if spec.ProgressDeadlineSeconds != nil && *spec.ProgressDeadlineSeconds > 0 {
		return time.Duration(*spec.ProgressDeadlineSeconds) * time.Second
	}
	return DefaultProgressDeadline
}

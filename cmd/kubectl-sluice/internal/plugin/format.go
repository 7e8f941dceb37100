package plugin

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/duration"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
)

// defaultInterval is the analysis interval when the spec leaves it empty (the CRD's default).
const defaultInterval = time.Minute

// phaseText is the phase; "Stalled" when the controller cannot make progress before it set one
// (target missing, invalid spec); "-" before the controller looked at it.
func phaseText(cn *sluicev1.Canary) string {
	if cn.Status.Phase == "" {
		for _, c := range cn.Status.Conditions {
			if c.Type == sluicev1.ConditionStalled && c.Status == "True" {
				return "Stalled"
			}
		}
		return "-"
	}
	return string(cn.Status.Phase)
}

// maxWeight is the weight at which a run stops shifting traffic: analysis.maxWeight, else the
// last of analysis.stepWeights, else 100.
func maxWeight(a sluicev1.CanaryAnalysis) int32 {
	switch {
	case a.MaxWeight > 0:
		return a.MaxWeight
	case len(a.StepWeights) > 0:
		return a.StepWeights[len(a.StepWeights)-1]
	default:
		return 100
	}
}

// interval is the analysis interval; an empty or unparsable one counts as the default.
func interval(a sluicev1.CanaryAnalysis) time.Duration {
	if d, err := time.ParseDuration(a.Interval); err == nil && d > 0 {
		return d
	}
	return defaultInterval
}

// nextStep is when the next step (or check) of the run in flight is due: status.lastStepTime plus
// the analysis interval. ok is false when no step is pending.
func nextStep(cn *sluicev1.Canary) (time.Time, bool) {
	switch cn.Status.Phase {
	case sluicev1.CanaryPhaseProgressing, sluicev1.CanaryPhaseWaitingPromotion:
	default:
		return time.Time{}, false
	}
	if cn.Status.LastStepTime == nil {
		return time.Time{}, false
	}
	return cn.Status.LastStepTime.Add(interval(cn.Spec.Analysis)), true
}

// age renders how long ago t was, as kubectl's AGE column does; "-" for no time.
func age(t *metav1.Time, now time.Time) string {
	if t == nil || t.IsZero() {
		return "-"
	}
	return duration.HumanDuration(now.Sub(t.Time))
}

// when renders t with how far it is from now: "2026-01-02T15:04:05Z (3m ago)" or "(in 40s)".
func when(t time.Time, now time.Time) string {
	s := t.UTC().Format(time.RFC3339)
	switch d := t.Sub(now); {
	case d > 0:
		return s + " (in " + duration.HumanDuration(d) + ")"
	case d > -time.Second:
		return s + " (now)"
	default:
		return s + " (" + duration.HumanDuration(-d) + " ago)"
	}
}

package view

import (
	"fmt"
	"strings"
	"time"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
)

// DefaultInterval is the analysis interval when the spec leaves it empty (the CRD's default).
const DefaultInterval = time.Minute

// Phase is the phase; "Stalled" when the controller cannot make progress before it set one
// (target missing, invalid spec); "-" before the controller looked at it.
func Phase(cn *sluicev1.Canary) string {
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

// MaxWeight is the weight at which a run stops shifting traffic: analysis.maxWeight, else the
// last of analysis.stepWeights, else 100.
func MaxWeight(a sluicev1.CanaryAnalysis) int32 {
	switch {
	case a.MaxWeight > 0:
		return a.MaxWeight
	case len(a.StepWeights) > 0:
		return a.StepWeights[len(a.StepWeights)-1]
	default:
		return 100
	}
}

// Interval is the analysis interval; an empty or unparsable one counts as the default.
func Interval(a sluicev1.CanaryAnalysis) time.Duration {
	if d, err := time.ParseDuration(a.Interval); err == nil && d > 0 {
		return d
	}
	return DefaultInterval
}

// NextStep is when the next step (or check) of the run in flight is due: status.lastStepTime plus
// the analysis interval. ok is false when no step is pending.
func NextStep(cn *sluicev1.Canary) (time.Time, bool) {
	switch cn.Status.Phase {
	case sluicev1.CanaryPhaseProgressing, sluicev1.CanaryPhaseWaitingPromotion:
	default:
		return time.Time{}, false
	}
	if cn.Status.LastStepTime == nil {
		return time.Time{}, false
	}
	return cn.Status.LastStepTime.Add(Interval(cn.Spec.Analysis)), true
}

// StepText describes the steps: ", step 10%" or ", steps 5,10,20%".
func StepText(a sluicev1.CanaryAnalysis) string {
	switch {
	case len(a.StepWeights) > 0:
		s := make([]string, len(a.StepWeights))
		for i, w := range a.StepWeights {
			s[i] = fmt.Sprint(w)
		}
		return ", steps " + strings.Join(s, ",") + "%"
	case a.StepWeight > 0:
		return fmt.Sprintf(", step %d%%", a.StepWeight)
	}
	return ""
}

// Requests lists the lever annotations on cn the controller has not handled yet, as
// "annotation=value" joined by ", ".
func Requests(cn *sluicev1.Canary) string {
	var out []string
	for _, k := range []string{sluicev1.AnnotationPromote, sluicev1.AnnotationAbort, sluicev1.AnnotationRetry} {
		// Requests the controller already handled are history, not pending.
		if v, ok := cn.Annotations[k]; ok && cn.Status.LastHandledRequests[k] != v {
			out = append(out, k+"="+v)
		}
	}
	return strings.Join(out, ", ")
}

// PendingGate names the gate the run waits at, with its webhooks and why they hold it: the
// confirm-rollout gate while Waiting, confirm-promotion while WaitingPromotion, and
// confirm-traffic-increase while a run is held at it. Empty when no gate holds the run.
func PendingGate(cn *sluicev1.Canary) string {
	st := cn.Status
	var t sluicev1.WebhookType
	switch st.Phase {
	case sluicev1.CanaryPhaseWaiting:
		t = sluicev1.WebhookConfirmRollout
	case sluicev1.CanaryPhaseWaitingPromotion:
		t = sluicev1.WebhookConfirmPromotion
	case sluicev1.CanaryPhaseProgressing:
		t = sluicev1.WebhookConfirmTrafficIncrease
	default:
		return ""
	}
	var held []string
	for _, h := range cn.Spec.Analysis.Webhooks {
		if h.Type != t {
			continue
		}
		if h.Manual {
			held = append(held, h.Name+" (manual: approve with `kubectl sluice promote`)")
			continue
		}
		for _, a := range st.Webhooks {
			switch {
			case a.Name != h.Name || a.Passed:
			case a.Pending:
				held = append(held, h.Name+" (no answer yet)")
			default:
				held = append(held, fmt.Sprintf("%s (refused: %s)", h.Name, a.Message))
			}
		}
		if st.Phase != sluicev1.CanaryPhaseProgressing && !answered(st, h.Name) {
			held = append(held, h.Name+" (asking)")
		}
	}
	if len(held) == 0 {
		return ""
	}
	return fmt.Sprintf("%s gate: %s", t, strings.Join(held, ", "))
}

func answered(st sluicev1.CanaryStatus, name string) bool {
	for _, a := range st.Webhooks {
		if a.Name == name {
			return true
		}
	}
	return false
}

// Hold is what keeps a run from moving on: a short reason and the controller's message.
type Hold struct {
	Reason  string `json:"reason"`
	Message string `json:"message,omitempty"`
}

// Holds says what holds cn's run: a gate (PendingGate), a pause, a stall, or the reason the
// controller gave in the Ready condition while a run waits or is in flight (a closed window, the
// rollout cap, a check without evidence, an unready canary). nil when nothing holds it.
func Holds(cn *sluicev1.Canary) *Hold {
	if g := PendingGate(cn); g != "" {
		return &Hold{Reason: "Gate", Message: g}
	}
	if cn.Spec.Suspend {
		return &Hold{Reason: sluicev1.ReasonSuspended, Message: "paused: spec.suspend is true (`kubectl sluice resume` continues)"}
	}
	for _, c := range cn.Status.Conditions {
		if c.Type == sluicev1.ConditionStalled && c.Status == "True" {
			return &Hold{Reason: c.Reason, Message: c.Message}
		}
	}
	switch cn.Status.Phase {
	case sluicev1.CanaryPhaseWaiting, sluicev1.CanaryPhaseProgressing, sluicev1.CanaryPhaseWaitingPromotion:
	default:
		return nil
	}
	for _, c := range cn.Status.Conditions {
		if c.Type == sluicev1.ConditionReady && c.Reason != sluicev1.ReasonProgressing {
			return &Hold{Reason: c.Reason, Message: c.Message}
		}
	}
	return nil
}

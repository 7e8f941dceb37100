package plugin

import (
	"context"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
)

// Status prints one Canary: phase, weight, failed checks against the threshold, the last verdict
// of every analysis metric with its value and threshold, the next step time, pending requests
// and conditions.
// errors: the Canary not found or unreadable.
func Status(ctx context.Context, c client.Client, w io.Writer, key types.NamespacedName, now time.Time) error {
	cn, err := fetch(ctx, c, key)
	if err != nil {
		return err
	}
	return PrintStatus(w, cn, now)
}

// PrintStatus writes the status report of cn as of now.
func PrintStatus(w io.Writer, cn *sluicev1.Canary, now time.Time) error {
	st, a := cn.Status, cn.Spec.Analysis
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	field := func(name, format string, args ...any) {
		fmt.Fprintf(tw, "%s:\t%s\n", name, fmt.Sprintf(format, args...))
	}
	field("Canary", "%s/%s", cn.Namespace, cn.Name)
	field("Target", "%s/%s", cn.Spec.TargetRef.Kind, cn.Spec.TargetRef.Name)
	phase := phaseText(cn)
	if cn.Spec.Suspend {
		phase += " (paused: `kubectl sluice resume` continues)"
	}
	field("Phase", "%s", phase)
	if len(a.Match) > 0 && a.Iterations > 0 {
		field("Iterations", "%d/%d (A/B test)", st.Iterations, a.Iterations)
	} else {
		field("Weight", "%d%% (max %d%%%s)", st.CanaryWeight, maxWeight(a), stepText(a))
	}
	field("Failed checks", "%d/%d", st.FailedChecks, a.Threshold)
	if a.Interval != "" {
		field("Interval", "%s", a.Interval)
	} else {
		field("Interval", "%s (default)", defaultInterval)
	}
	if st.LastTransitionTime != nil {
		field("Last transition", "%s", when(st.LastTransitionTime.Time, now))
	}
	if next, ok := nextStep(cn); ok && !cn.Spec.Suspend {
		field("Next step", "%s", when(next, now))
	}
	if gate := pendingGate(cn); gate != "" {
		field("Waiting at", "%s", gate)
	}
	if lc := st.LastCheck; lc != nil {
		text := string(lc.Outcome)
		if lc.WindowStart != nil {
			text += fmt.Sprintf(", window %s to %s", lc.WindowStart.UTC().Format(time.RFC3339), lc.Time.UTC().Format(time.RFC3339))
		}
		if lc.AdvancedWithoutData {
			text += ", advanced without data (analysis.advanceWithoutData)"
		}
		if st.ConsecutiveErrors > 0 {
			text += fmt.Sprintf(", %d consecutive errors", st.ConsecutiveErrors)
		}
		field("Last check", "%s", text)
	}
	if st.LastAppliedSpec != "" || st.LastPromotedSpec != "" {
		field("Revision", "%s (primary %s)", orDash(st.LastAppliedSpec), orDash(st.LastPromotedSpec))
	}
	if req := requests(cn); req != "" {
		field("Requested", "%s", req)
	}
	if err := tw.Flush(); err != nil {
		return err
	}

	if len(st.Analysis) > 0 {
		fmt.Fprintln(w, "Analysis:")
		tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "  METRIC\tVERDICT\tVALUE\tPRIMARY\tTHRESHOLD\tCHECKED")
		for _, m := range st.Analysis {
			checked := "-"
			if m.CheckedAt != nil {
				checked = age(m.CheckedAt, now) + " ago"
			}
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\t%s\n", m.Name, m.Verdict, orDash(m.Value),
				orDash(m.PrimaryValue), orDash(m.ThresholdRange), checked)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		for _, m := range st.Analysis {
			if m.Message != "" && m.Verdict != sluicev1.VerdictPass {
				fmt.Fprintf(w, "  %s: %s\n", m.Name, m.Message)
			}
		}
	}

	if len(st.Conditions) > 0 {
		fmt.Fprintln(w, "Conditions:")
		tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "  TYPE\tSTATUS\tREASON\tAGE\tMESSAGE")
		for _, cond := range st.Conditions {
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\n", cond.Type, cond.Status, cond.Reason,
				age(&cond.LastTransitionTime, now), cond.Message)
		}
		return tw.Flush()
	}
	return nil
}

// stepText describes the steps: ", step 10%" or ", steps 5,10,20%".
func stepText(a sluicev1.CanaryAnalysis) string {
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

// requests lists the lever annotations present on cn.
func requests(cn *sluicev1.Canary) string {
	var out []string
	for _, k := range []string{AnnotationPromote, AnnotationAbort, AnnotationRetry} {
		// Requests the controller already handled are history, not pending.
		if v, ok := cn.Annotations[k]; ok && cn.Status.LastHandledRequests[k] != v {
			out = append(out, k+"="+v)
		}
	}
	return strings.Join(out, ", ")
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// pendingGate names the gate the run waits at, with its webhooks and why they hold it: the
// confirm-rollout gate while Waiting, confirm-promotion while WaitingPromotion, and
// confirm-traffic-increase while a run is held at it. Empty when no gate holds the run.
func pendingGate(cn *sluicev1.Canary) string {
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

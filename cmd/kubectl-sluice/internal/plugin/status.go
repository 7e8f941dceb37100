package plugin

import (
	"context"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
	"sluice.dev/sluice/cmd/kubectl-sluice/internal/view"
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
	phase := view.Phase(cn)
	if cn.Spec.Suspend {
		phase += " (paused: `kubectl sluice resume` continues)"
	}
	field("Phase", "%s", phase)
	if len(a.Match) > 0 && a.Iterations > 0 {
		field("Iterations", "%d/%d (A/B test)", st.Iterations, a.Iterations)
	} else {
		field("Weight", "%d%% (max %d%%%s)", st.CanaryWeight, view.MaxWeight(a), view.StepText(a))
	}
	field("Failed checks", "%d/%d", st.FailedChecks, a.Threshold)
	if a.Interval != "" {
		field("Interval", "%s", a.Interval)
	} else {
		field("Interval", "%s (default)", view.DefaultInterval)
	}
	if st.LastTransitionTime != nil {
		field("Last transition", "%s", when(st.LastTransitionTime.Time, now))
	}
	if next, ok := view.NextStep(cn); ok && !cn.Spec.Suspend {
		field("Next step", "%s", when(next, now))
	}
	if gate := view.PendingGate(cn); gate != "" {
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
	if req := view.Requests(cn); req != "" {
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

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

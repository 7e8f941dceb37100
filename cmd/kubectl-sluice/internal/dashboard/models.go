package dashboard

import (
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
	"sluice.dev/sluice/cmd/kubectl-sluice/internal/view"
)

// CanaryRow is one line of the overview's Canary table.
type CanaryRow struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	// Phase as `kubectl sluice get` prints it (Stalled before a phase, "-" before the controller
	// looked); Paused is spec.suspend.
	Phase  string `json:"phase"`
	Paused bool   `json:"paused,omitempty"`
	// Strategy is canary, A/B or blue/green.
	Strategy     string `json:"strategy"`
	Weight       int32  `json:"weight"`
	MaxWeight    int32  `json:"maxWeight"`
	FailedChecks int32  `json:"failedChecks"`
	Threshold    int32  `json:"threshold"`
	// Revision the run delivers, and the one the primary runs.
	Revision         string `json:"revision,omitempty"`
	PromotedRevision string `json:"promotedRevision,omitempty"`
	// CurrentImages are the primary's (as of the last run); NewImages the run's in flight.
	CurrentImages []string `json:"currentImages,omitempty"`
	NewImages     []string `json:"newImages,omitempty"`
	// Holds says what holds the run, if anything.
	Holds          *view.Hold   `json:"holds,omitempty"`
	LastTransition *metav1.Time `json:"lastTransition,omitempty"`
	Created        metav1.Time  `json:"created"`
}

// CanaryView is a Canary's page: the row, the run with every check, the gates, the conditions,
// what changed and the last runs.
type CanaryView struct {
	CanaryRow
	Target   string `json:"target"`
	Provider string `json:"provider,omitempty"`
	Interval string `json:"interval"`
	Steps    string `json:"steps,omitempty"`
	// NextStep is when the next step or check is due while a run is in flight.
	NextStep *metav1.Time `json:"nextStep,omitempty"`
	// Requests are lever annotations the controller has not handled yet.
	Requests  string                  `json:"requests,omitempty"`
	LastCheck *sluicev1.CheckStatus   `json:"lastCheck,omitempty"`
	Analysis  []sluicev1.MetricResult `json:"analysis,omitempty"`
	Gates     []GateView              `json:"gates,omitempty"`
	// Configs are the tracked ConfigMaps and Secrets by name with their checksum (never their
	// contents).
	Configs    []ConfigView          `json:"configs,omitempty"`
	Conditions []metav1.Condition    `json:"conditions,omitempty"`
	Run        *sluicev1.RunRecord   `json:"run,omitempty"`
	Runs       []sluicev1.RunSummary `json:"runs,omitempty"`
	Levers     []string              `json:"levers,omitempty"`
	Events     []EventView           `json:"events,omitempty"`
	// Metrics are the spec's metrics by name, for those the run has not checked yet.
	Metrics map[string]MetricConfig `json:"metrics,omitempty"`
	// Generated is when a report was written.
	Generated *metav1.Time `json:"generated,omitempty"`
}

// MetricConfig is a metric as the spec declares it, for the metrics the run has not checked yet.
type MetricConfig struct {
	ThresholdRange *sluicev1.ThresholdRange `json:"thresholdRange,omitempty"`
	Interval       string                   `json:"interval,omitempty"`
}

// GateView is a webhook of the spec with its last answer in the current revision.
type GateView struct {
	Name   string               `json:"name"`
	Type   sluicev1.WebhookType `json:"type"`
	Manual bool                 `json:"manual,omitempty"`
	// Answered is false until the webhook answered in the current revision.
	Answered   bool         `json:"answered"`
	Passed     bool         `json:"passed,omitempty"`
	Message    string       `json:"message,omitempty"`
	AnsweredAt *metav1.Time `json:"answeredAt,omitempty"`
}

// ConfigView is a tracked ConfigMap or Secret.
type ConfigView struct {
	Name     string `json:"name"`
	Checksum string `json:"checksum"`
}

// EventView is one Kubernetes event of an object.
type EventView struct {
	Type    string      `json:"type"`
	Reason  string      `json:"reason"`
	Message string      `json:"message"`
	Count   int32       `json:"count,omitempty"`
	Last    metav1.Time `json:"last"`
}

// DataPlaneRow is one line of the overview's DataPlane table.
type DataPlaneRow struct {
	Name                string `json:"name"`
	Mesh                string `json:"mesh"`
	Version             string `json:"version"`
	ControlPlaneVersion string `json:"controlPlaneVersion,omitempty"`
	ControlPlaneReady   bool   `json:"controlPlaneReady"`
	Desired             int32  `json:"desired"`
	Current             int32  `json:"current"`
	Wave                int32  `json:"wave"`
	WaveCount           int32  `json:"waveCount"`
	Phase               string `json:"phase"`
	Paused              bool   `json:"paused,omitempty"`
}

// DataPlaneView is a DataPlane's page.
type DataPlaneView struct {
	DataPlaneRow
	ControlPlaneMessage string                           `json:"controlPlaneMessage,omitempty"`
	ConvergedVersion    string                           `json:"convergedVersion,omitempty"`
	Rollback            bool                             `json:"rollback,omitempty"`
	Waves               []sluicev1.DataPlaneWave         `json:"waves,omitempty"`
	Namespaces          []sluicev1.DataPlaneNamespace    `json:"namespaces,omitempty"`
	Skipped             []sluicev1.SkippedNamespace      `json:"skipped,omitempty"`
	UnmanagedPods       []string                         `json:"unmanagedPods,omitempty"`
	UnmeshedPods        []string                         `json:"unmeshedPods,omitempty"`
	DriftedPods         []string                         `json:"driftedPods,omitempty"`
	Analysis            []sluicev1.NamespaceMetricResult `json:"analysis,omitempty"`
	LastUpdateAttempt   *metav1.Time                     `json:"lastUpdateAttempt,omitempty"`
	LastUpdateResult    sluicev1.UpdateAttemptResult     `json:"lastUpdateResult,omitempty"`
	LastUpdateMessage   string                           `json:"lastUpdateMessage,omitempty"`
	Requests            string                           `json:"requests,omitempty"`
	Conditions          []metav1.Condition               `json:"conditions,omitempty"`
	Levers              []string                         `json:"levers,omitempty"`
	Events              []EventView                      `json:"events,omitempty"`
}

// canaryRow builds the overview line of cn.
func canaryRow(cn *sluicev1.Canary) CanaryRow {
	st, a := cn.Status, cn.Spec.Analysis
	r := CanaryRow{
		Namespace: cn.Namespace, Name: cn.Name, Phase: view.Phase(cn), Paused: cn.Spec.Suspend, Strategy: strategy(a),
		Weight: st.CanaryWeight, MaxWeight: view.MaxWeight(a), FailedChecks: st.FailedChecks, Threshold: threshold(a),
		Revision: st.LastAppliedSpec, PromotedRevision: st.LastPromotedSpec, Holds: view.Holds(cn),
		LastTransition: st.LastTransitionTime, Created: cn.CreationTimestamp,
	}
	if run := st.Run; run != nil {
		switch {
		case run.EndTime == nil:
			r.CurrentImages, r.NewImages = images(run.PrimaryImages), images(run.Images)
		case run.Outcome == sluicev1.RunPromoted:
			r.CurrentImages = images(run.Images)
		default:
			r.CurrentImages = images(run.PrimaryImages)
		}
	}
	return r
}

// canaryView builds the page of cn; events are added by the caller.
func canaryView(cn *sluicev1.Canary, readOnly bool) CanaryView {
	st, a := cn.Status, cn.Spec.Analysis
	v := CanaryView{
		CanaryRow: canaryRow(cn),
		Target:    cn.Spec.TargetRef.Kind + "/" + cn.Spec.TargetRef.Name,
		Provider:  string(cn.Spec.Provider),
		Interval:  orDefault(a.Interval, view.DefaultInterval.String()),
		Steps:     strings.TrimPrefix(view.StepText(a), ", "),
		Requests:  view.Requests(cn),
		LastCheck: st.LastCheck, Analysis: st.Analysis, Conditions: st.Conditions,
		Run: st.Run, Runs: slices.Clone(st.Runs),
		Metrics: map[string]MetricConfig{},
	}
	if next, ok := view.NextStep(cn); ok && !cn.Spec.Suspend {
		t := metav1.NewTime(next)
		v.NextStep = &t
	}
	for _, m := range a.Metrics {
		v.Metrics[m.Name] = MetricConfig{ThresholdRange: m.ThresholdRange, Interval: orDefault(m.Interval, v.Interval)}
	}
	for _, h := range a.Webhooks {
		g := GateView{Name: h.Name, Type: h.Type, Manual: h.Manual}
		for _, ans := range st.Webhooks {
			if ans.Name == h.Name {
				g.Answered, g.Passed, g.Message, g.AnsweredAt = true, ans.Passed, ans.Message, ans.AnsweredAt
			}
		}
		v.Gates = append(v.Gates, g)
	}
	for name, sum := range st.TrackedConfigs {
		v.Configs = append(v.Configs, ConfigView{Name: name, Checksum: sum})
	}
	sort.Slice(v.Configs, func(i, j int) bool { return v.Configs[i].Name < v.Configs[j].Name })
	slices.Reverse(v.Runs) // newest first
	if !readOnly {
		v.Levers = canaryLevers(cn)
	}
	return v
}

// canaryLevers lists the levers that make sense in cn's phase, as the plugin's commands accept
// them without --force.
func canaryLevers(cn *sluicev1.Canary) []string {
	var out []string
	switch cn.Status.Phase {
	case sluicev1.CanaryPhaseWaiting, sluicev1.CanaryPhaseProgressing, sluicev1.CanaryPhaseWaitingPromotion:
		out = append(out, "promote", "abort")
	case sluicev1.CanaryPhaseFailed:
		out = append(out, "retry")
	}
	if cn.Spec.Suspend {
		return append(out, "resume")
	}
	return append(out, "pause")
}

// dataPlaneRow builds the overview line of dp.
func dataPlaneRow(dp *sluicev1.DataPlane) DataPlaneRow {
	s := dp.Status
	return DataPlaneRow{
		Name: dp.Name, Mesh: string(dp.Spec.Mesh), Version: view.Declared(dp), ControlPlaneVersion: s.ControlPlane.Version,
		ControlPlaneReady: s.ControlPlane.Ready, Desired: s.Desired, Current: s.Current, Wave: s.CurrentWave,
		WaveCount: int32(len(s.Waves)), Phase: strings.TrimSuffix(view.DataPlanePhase(dp), " (paused)"), Paused: dp.Spec.Suspend,
	}
}

// dataPlaneView builds the page of dp; events are added by the caller.
func dataPlaneView(dp *sluicev1.DataPlane, readOnly bool) DataPlaneView {
	s := dp.Status
	v := DataPlaneView{
		DataPlaneRow: dataPlaneRow(dp), ControlPlaneMessage: s.ControlPlane.Message, ConvergedVersion: s.ConvergedVersion,
		Rollback: s.Rollback, Waves: s.Waves, Namespaces: s.Namespaces, Skipped: s.Skipped, UnmanagedPods: s.UnmanagedPods,
		UnmeshedPods: s.UnmeshedPods, DriftedPods: s.DriftedPods, Analysis: s.Analysis, LastUpdateAttempt: s.LastUpdateAttempt,
		LastUpdateResult: s.LastUpdateAttemptResult, LastUpdateMessage: s.LastUpdateAttemptMessage,
		Requests: view.DataPlaneRequests(dp), Conditions: s.Conditions,
	}
	if !readOnly {
		v.Levers = dataPlaneLevers(dp)
	}
	return v
}

// dataPlaneLevers lists the levers that make sense in dp's phase, as the plugin's commands accept
// them without --force.
func dataPlaneLevers(dp *sluicev1.DataPlane) []string {
	var out []string
	switch dp.Status.Phase {
	case sluicev1.DataPlanePending, sluicev1.DataPlaneWaiting, sluicev1.DataPlaneProgressing:
		out = append(out, "abort")
	case sluicev1.DataPlaneRolledBack, sluicev1.DataPlaneFailed:
		out = append(out, "retry")
	}
	for _, c := range dp.Status.Conditions {
		if c.Type == sluicev1.ConditionReady && c.Reason == sluicev1.ReasonAwaitingApproval {
			out = append([]string{"approve"}, out...)
		}
	}
	if dp.Spec.Suspend {
		return append(out, "resume")
	}
	return append(out, "pause")
}

// eventViews turns events into views, newest first.
func eventViews(events []corev1.Event) []EventView {
	out := make([]EventView, 0, len(events))
	for _, e := range events {
		last := e.LastTimestamp
		if last.IsZero() {
			last = metav1.NewTime(e.EventTime.Time)
		}
		if last.IsZero() {
			last = e.CreationTimestamp
		}
		count := e.Count
		if e.Series != nil {
			count = e.Series.Count
		}
		out = append(out, EventView{Type: e.Type, Reason: e.Reason, Message: e.Message, Count: count, Last: last})
	}
	sort.SliceStable(out, func(i, j int) bool { return out[j].Last.Before(&out[i].Last) })
	return out
}

func strategy(a sluicev1.CanaryAnalysis) string {
	switch {
	case len(a.Match) > 0 && a.Iterations > 0:
		return "A/B"
	case a.Iterations > 0:
		return "blue/green"
	}
	return "canary"
}

// threshold is analysis.threshold, 5 when unset (the CRD's default).
func threshold(a sluicev1.CanaryAnalysis) int32 {
	if a.Threshold > 0 {
		return a.Threshold
	}
	return 5
}

func images(in []sluicev1.ContainerImage) []string {
	var out []string
	for _, c := range in {
		out = append(out, c.Container+"="+c.Image)
	}
	return out
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

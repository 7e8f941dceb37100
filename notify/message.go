package notify

import (
	sluicev1 "sluice.dev/sluice/api/v1alpha1"
)

// Event is a short, stable name of the transition a Message reports. It is part of the
// controller's dedup key, so its values never change.
type Event string

// Events the canary controller reports.
const (
	// EventNewRevision: a new revision of the target was detected and a run starts.
	EventNewRevision Event = "NewRevision"
	// EventWeightAdvanced: the canary weight moved to the next step.
	EventWeightAdvanced Event = "WeightAdvanced"
	// EventWaitingAtGate: the run waits for a confirm-* webhook or the manual gate.
	EventWaitingAtGate Event = "WaitingAtGate"
	// EventPromoted: the canary revision was promoted to the primary.
	EventPromoted Event = "Promoted"
	// EventRolledBack: the run was rolled back (failed checks, a failed gate, or an abort).
	EventRolledBack Event = "RolledBack"
	// EventProgressDeadline: the run made no progress within progressDeadlineSeconds.
	EventProgressDeadline Event = "ProgressDeadline"
	// EventPreRolloutFailed: a pre-rollout webhook failed.
	EventPreRolloutFailed Event = "PreRolloutFailed"
)

// Title is the event as a short human phrase, e.g. "Rolled back"; unknown events are returned
// as they are.
func (e Event) Title() string {
	switch e {
	case EventNewRevision:
		return "New revision detected"
	case EventWeightAdvanced:
		return "Traffic weight advanced"
	case EventWaitingAtGate:
		return "Waiting at gate"
	case EventPromoted:
		return "Promoted"
	case EventRolledBack:
		return "Rolled back"
	case EventProgressDeadline:
		return "Progress deadline exceeded"
	case EventPreRolloutFailed:
		return "Pre-rollout webhook failed"
	}
	return string(e)
}

// Subject is the object a notification is about: a Canary, a data-plane upgrade, any kind.
type Subject struct {
	// Kind of the object, e.g. "Canary"; it labels the name in every card.
	Kind string
	// Name and Namespace of the object; Namespace is empty for a cluster-scoped one. An alert's
	// providerRef without a namespace is looked up in Namespace.
	Name      string
	Namespace string
	// Phase of the object after the transition.
	Phase string
}

// String is "namespace/name", or "name" for a cluster-scoped subject.
func (s Subject) String() string {
	if s.Namespace == "" {
		return s.Name
	}
	return s.Namespace + "/" + s.Name
}

// Message is one notification about a Subject.
type Message struct {
	// Subject is the object the transition happened to.
	Subject Subject
	// Event names the transition.
	Event Event
	// Severity routes the message (see Accepts). Empty means info.
	Severity sluicev1.AlertSeverity
	// Weight is a canary's share of traffic in percent (0–100); nil for subjects without one
	// (then the cards show no weight).
	Weight *int32
	// Revision is the revision or version the run delivers (a Canary's status.lastAppliedSpec).
	Revision string
	// Text is one line explaining the transition, e.g. "Canary weight 10% -> 50%".
	Text string
	// Metric is the metric whose failure caused the transition, if any.
	Metric *FailingMetric
}

// FailingMetric describes the metric check that failed; its fields are the formatted values of a
// sluicev1.MetricResult.
type FailingMetric struct {
	// Name of the metric, e.g. request-success-rate.
	Name string `json:"name"`
	// Value measured, formatted (e.g. "97.5"); empty when there was none (no data).
	Value string `json:"value"`
	// ThresholdRange as text, e.g. "[99, +Inf]".
	ThresholdRange string `json:"thresholdRange"`
}

// MetricFromResult returns the FailingMetric of a status.analysis entry.
func MetricFromResult(r sluicev1.MetricResult) *FailingMetric {
	return &FailingMetric{Name: r.Name, Value: r.Value, ThresholdRange: r.ThresholdRange}
}

// severityRank orders severities; empty and unknown values rank as info.
func severityRank(s sluicev1.AlertSeverity) int {
	switch s {
	case sluicev1.SeverityWarn:
		return 1
	case sluicev1.SeverityError:
		return 2
	}
	return 0
}

// Accepts reports whether an alert of severity alert receives a message of severity msg: info
// gets everything, warn gets warn and error, error gets only error. Empty (and unknown) severities
// count as info on both sides.
func Accepts(alert, msg sluicev1.AlertSeverity) bool {
	return severityRank(msg) >= severityRank(alert)
}

// withDefaults fills an info severity.
func (m Message) withDefaults() Message {
	if m.Severity == "" {
		m.Severity = sluicev1.SeverityInfo
	}
	return m
}

// title is the headline: "Rolled back: test/podinfo".
func (m Message) title() string { return m.Event.Title() + ": " + m.Subject.String() }

// summary is the one-line plain-text form of m: "Rolled back: test/podinfo: <text>".
func (m Message) summary() string {
	s := m.title()
	if m.Text != "" {
		s += ": " + m.Text
	}
	return s
}

// orDash returns s, or "-" when s is empty (chat services reject empty fields).
func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// truncate shortens s to at most n runes, ending in "…" when shortened.
func truncate(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

// Package planevent is the one Event type the pure planners (controllers/canary/plan and the
// data-plane planner) return: a Kubernetes event their controller records once the tick's status
// patch succeeded (see package reconcilekit). It imports only the core API constants, so a
// planner stays free of I/O.
package planevent

import corev1 "k8s.io/api/core/v1"

// Event is a Kubernetes event a planner asks its controller to record on the reconciled object,
// one per transition.
type Event struct {
	// Type is corev1.EventTypeNormal or corev1.EventTypeWarning.
	Type string
	// Reason is a CamelCase reason, e.g. "Promoted".
	Reason string
	// Message is one human sentence, kept whole (it keeps the root cause).
	Message string
	// Muted events are recorded but send no alert notification: every webhook behind them has
	// webhooks[].muteAlert.
	Muted bool
}

// Normal is an event of type Normal.
func Normal(reason, msg string) Event {
	return Event{Type: corev1.EventTypeNormal, Reason: reason, Message: msg}
}

// Warning is an event of type Warning.
func Warning(reason, msg string) Event {
	return Event{Type: corev1.EventTypeWarning, Reason: reason, Message: msg}
}

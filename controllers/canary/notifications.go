package canary

import (
	"context"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"sluice.dev/sluice/analysis"
	sluicev1 "sluice.dev/sluice/api/v1alpha1"
	"sluice.dev/sluice/controllers/canary/plan"
	"sluice.dev/sluice/notify"
)

// Notifier delivers notifications to a Canary's AlertProviders; notify.Notifier implements it.
type Notifier interface {
	// Check resolves every AlertProvider and Secret the Canary's alerts name, without sending.
	// errors: notify.ErrProviderConfig naming the missing object or key.
	Check(ctx context.Context, canary *sluicev1.Canary) error
	// Send delivers msg to the alerts whose severity accepts it.
	Send(ctx context.Context, canary *sluicev1.Canary, msg notify.Message) error
}

// notification maps a planner event to the notification it deserves, if any, with its severity.
var notification = map[string]struct {
	event    notify.Event
	severity sluicev1.AlertSeverity
}{
	plan.EventNewRevision:      {notify.EventNewRevision, sluicev1.SeverityInfo},
	plan.EventAdvanced:         {notify.EventWeightAdvanced, sluicev1.SeverityInfo},
	plan.EventWaitingAtGate:    {notify.EventWaitingAtGate, sluicev1.SeverityWarn},
	plan.EventSucceeded:        {notify.EventPromoted, sluicev1.SeverityInfo},
	plan.EventRollback:         {notify.EventRolledBack, sluicev1.SeverityError},
	plan.EventDeadline:         {notify.EventProgressDeadline, sluicev1.SeverityError},
	plan.EventPreRolloutFailed: {notify.EventPreRolloutFailed, sluicev1.SeverityError},
}

// outbox holds what a tick delivers once its status patch succeeded: the decision's events (also
// sent to event and post-rollout webhooks) and the notifications whose dedup keys that patch
// records. If the patch fails nothing is recorded or
// sent, and the next tick decides again: one event and one message per transition.
type outbox struct {
	messages []notify.Message
	events   []plan.Event
	// base is the Canary as read at the start of the tick, the base of its status patch.
	base *sluicev1.Canary
}

// queueNotifications turns this tick's events into messages, skipping those whose dedup key
// (canary UID, revision, event, and the weight for steps and gate waits) status already records,
// and records the new keys: each transition is notified once per run, and a pre-rollout failure
// or a gate wait once per run (per weight) however many checks it lasts.
func queueNotifications(c *sluicev1.Canary, events []plan.Event, out *outbox) {
	if len(c.Spec.Analysis.Alerts) == 0 {
		return
	}
	for _, e := range events {
		n, ok := notification[e.Reason]
		if !ok {
			continue
		}
		detail := ""
		switch n.event {
		case notify.EventWeightAdvanced:
			detail = fmt.Sprint(c.Status.CanaryWeight)
		case notify.EventWaitingAtGate:
			detail = fmt.Sprint(c.Status.CanaryWeight)
		}
		key := fmt.Sprintf("%s/%s/%s/%s", c.UID, c.Status.LastAppliedSpec, n.event, detail)
		if slices.Contains(c.Status.Notifications, key) {
			continue
		}
		c.Status.Notifications = append(c.Status.Notifications, key)
		msg := notify.Message{Event: n.event, Severity: n.severity, Phase: c.Status.Phase, Weight: c.Status.CanaryWeight,
			Revision: c.Status.LastAppliedSpec, Text: e.Message}
		if n.event == notify.EventRolledBack {
			if failures := (analysis.Check{Results: c.Status.Analysis}).Failures(); len(failures) > 0 {
				msg.Metric = notify.MetricFromResult(failures[0])
			}
		}
		out.messages = append(out.messages, msg)
	}
}

// deliver records the outbox's Kubernetes events, fires the event and post-rollout webhooks for
// them and sends its notifications; failures become warning events (the condition comes from
// Notifier.Check on the next tick).
func (r *Reconciler) deliver(ctx context.Context, c *sluicev1.Canary, out *outbox) {
	for _, e := range out.events {
		r.record(ctx, c, e.Type, e.Reason, e.Message)
	}
	r.fireHooks(c, out.events)
	if r.Notifier == nil {
		return
	}
	for _, m := range out.messages {
		if err := r.Notifier.Send(ctx, c, m); err != nil {
			log.FromContext(ctx).Error(err, "Sending notification failed", "event", m.Event)
			r.record(ctx, c, corev1.EventTypeWarning, sluicev1.ReasonAlertProviderError, fmt.Sprintf("Notification %s not delivered: %v", m.Event, err))
		}
	}
}

// checkAlertProviders sets or clears the AlertProviderError condition: a missing AlertProvider,
// Secret or key is a clear condition on the Canary, not a crash.
func (r *Reconciler) checkAlertProviders(ctx context.Context, c *sluicev1.Canary) {
	if r.Notifier == nil || len(c.Spec.Analysis.Alerts) == 0 {
		removeCondition(c, conditionAlerts)
		return
	}
	if err := r.Notifier.Check(ctx, c); err != nil {
		setCondition(c, conditionAlerts, "True", sluicev1.ReasonAlertProviderError, err.Error())
		return
	}
	removeCondition(c, conditionAlerts)
}

// conditionAlerts is True while an AlertProvider of the Canary is misconfigured.
const conditionAlerts = "AlertProviderError"

package canary

import (
	"context"
	"fmt"

	"k8s.io/utils/ptr"

	"sluice.dev/sluice/analysis"
	sluicev1 "sluice.dev/sluice/api/v1alpha1"
	"sluice.dev/sluice/controllers/canary/plan"
	"sluice.dev/sluice/controllers/internal/planevent"
	"sluice.dev/sluice/controllers/internal/reconcilekit"
	"sluice.dev/sluice/notify"
)

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

// queueNotifications turns this tick's events into messages in the tick's outbox (sent once the
// status patch succeeded), skipping those whose dedup key (canary UID, revision, event, and the
// weight for steps and gate waits) status already records, and records the new keys: each
// transition is notified once per run, and a pre-rollout failure or a gate wait once per run
// (per weight) however many checks it lasts.
func (r *Reconciler) queueNotifications(tick *reconcilekit.Tick, c *sluicev1.Canary, events []planevent.Event) {
	alerts := c.Spec.Analysis.Alerts
	if len(alerts) == 0 {
		return
	}
	for _, e := range events {
		n, ok := notification[e.Reason]
		if !ok || e.Muted {
			continue // a muted event (webhooks[].muteAlert) is recorded, never alerted
		}
		detail := ""
		if n.event == notify.EventWeightAdvanced || n.event == notify.EventWaitingAtGate {
			detail = fmt.Sprint(c.Status.CanaryWeight)
		}
		key := fmt.Sprintf("%s/%s/%s/%s", c.UID, c.Status.LastAppliedSpec, n.event, detail)
		if !reconcilekit.FirstNotice(&c.Status.Notifications, key) {
			continue
		}
		msg := notify.Message{Subject: subjectOf(c), Event: n.event, Severity: n.severity,
			Weight: ptr.To(c.Status.CanaryWeight), Revision: c.Status.LastAppliedSpec, Text: e.Message}
		if n.event == notify.EventRolledBack {
			if failures := (analysis.Check{Results: c.Status.Analysis}).Failures(); len(failures) > 0 {
				msg.Metric = notify.MetricFromResult(failures[0])
			}
		}
		tick.Notify(r.Notifier, alerts, msg)
	}
}

// subjectOf is the Canary as the subject of a notification.
func subjectOf(c *sluicev1.Canary) notify.Subject {
	return notify.Subject{Kind: sluicev1.KindCanary, Name: c.Name, Namespace: c.Namespace, Phase: string(c.Status.Phase)}
}

// checkAlertProviders sets or clears the AlertProviderError condition: a missing AlertProvider,
// Secret or key is a clear condition on the Canary, not a crash.
func (r *Reconciler) checkAlertProviders(ctx context.Context, tick *reconcilekit.Tick, c *sluicev1.Canary) {
	tick.CheckAlerts(ctx, r.Notifier, c.Namespace, c.Spec.Analysis.Alerts)
}

package dataplane

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
	"sluice.dev/sluice/controllers/dataplane/waves"
	"sluice.dev/sluice/notify"
)

// MessageSender delivers a notification to the AlertProviders of a Canary's analysis.alerts;
// notify.Notifier implements it.
type MessageSender interface {
	Send(ctx context.Context, canary *sluicev1.Canary, msg notify.Message) error
}

// AlertNotifier delivers a DataPlane's notifications through the same AlertProviders, severity
// routing and formats as Canaries (Slack, MS Teams, Discord, generic webhooks).
type AlertNotifier struct {
	Sender MessageSender
}

// Notify sends n to the alerts of dp.spec.analysis.alerts (their providerRef namespaces are
// required, the DataPlane being cluster-scoped). errors: the sender's, per failed alert.
func (a AlertNotifier) Notify(ctx context.Context, dp *sluicev1.DataPlane, n waves.Notification) error {
	if len(dp.Spec.Analysis.Alerts) == 0 {
		return nil
	}
	// notify addresses alerts through a Canary: carry the DataPlane's alerts in one.
	carrier := &sluicev1.Canary{ObjectMeta: metav1.ObjectMeta{Name: dp.Name},
		Spec: sluicev1.CanarySpec{Analysis: sluicev1.CanaryAnalysis{Alerts: dp.Spec.Analysis.Alerts}}}
	return a.Sender.Send(ctx, carrier, notify.Message{
		Name: dp.Name, Event: notify.Event("DataPlane" + n.Event), Severity: n.Severity,
		Phase: sluicev1.CanaryPhase(dp.Status.Phase), Revision: dp.Status.Version, Text: n.Message,
	})
}

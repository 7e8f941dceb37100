package proxyupgrade

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
	"sluice.dev/sluice/controllers/proxyupgrade/waves"
	"sluice.dev/sluice/notify"
)

// MessageSender delivers a notification to the AlertProviders of a Canary's analysis.alerts;
// notify.Notifier implements it.
type MessageSender interface {
	Send(ctx context.Context, canary *sluicev1.Canary, msg notify.Message) error
}

// AlertNotifier delivers a ProxyUpgrade's notifications through the same AlertProviders, severity
// routing and formats as Canaries (Slack, MS Teams, Discord, generic webhooks).
type AlertNotifier struct {
	Sender MessageSender
}

// Notify sends n to the alerts of pu.spec.analysis.alerts (their providerRef namespaces are
// required, the ProxyUpgrade being cluster-scoped). errors: the sender's, per failed alert.
func (a AlertNotifier) Notify(ctx context.Context, pu *sluicev1.ProxyUpgrade, n waves.Notification) error {
	if len(pu.Spec.Analysis.Alerts) == 0 {
		return nil
	}
	// notify addresses alerts through a Canary: carry the ProxyUpgrade's alerts in one.
	carrier := &sluicev1.Canary{ObjectMeta: metav1.ObjectMeta{Name: pu.Name},
		Spec: sluicev1.CanarySpec{Analysis: sluicev1.CanaryAnalysis{Alerts: pu.Spec.Analysis.Alerts}}}
	return a.Sender.Send(ctx, carrier, notify.Message{
		Name: pu.Name, Event: notify.Event("ProxyUpgrade" + n.Event), Severity: n.Severity,
		Phase: sluicev1.CanaryPhase(pu.Status.Phase), Revision: pu.Status.Target, Text: n.Message,
	})
}

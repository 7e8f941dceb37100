package proxyupgrade

import (
	"context"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
	"sluice.dev/sluice/controllers/proxyupgrade/waves"
	"sluice.dev/sluice/notify"
)

// MessageSender delivers a notification to the AlertProviders of a list of alerts;
// notify.Notifier implements it.
type MessageSender interface {
	Send(ctx context.Context, alerts []sluicev1.CanaryAlert, msg notify.Message) error
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
	return a.Sender.Send(ctx, pu.Spec.Analysis.Alerts, notify.Message{
		Subject: notify.Subject{Kind: sluicev1.KindProxyUpgrade, Name: pu.Name, Phase: string(pu.Status.Phase)},
		Event:   notify.Event("ProxyUpgrade" + n.Event), Severity: n.Severity, Revision: pu.Status.Target, Text: n.Message,
	})
}

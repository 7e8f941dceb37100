package proxyupgrade

import (
	"context"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
	"sluice.dev/sluice/controllers/proxyupgrade/waves"
)

// Notifier delivers a ProxyUpgrade's notifications (succeeded, failed) to the AlertProviders of
// spec.analysis.alerts. The controller calls it at most once per notification (n.Key, recorded
// in status.notifications) after the status that records it was written; an error is logged and
// recorded as an event, the notification is not retried.
type Notifier interface {
	Notify(ctx context.Context, pu *sluicev1.ProxyUpgrade, n waves.Notification) error
}

// NopNotifier drops every notification: the default when Reconciler.Notifier is nil (the manager
// wires AlertNotifier).
type NopNotifier struct{}

// Notify does nothing.
func (NopNotifier) Notify(context.Context, *sluicev1.ProxyUpgrade, waves.Notification) error {
	return nil
}

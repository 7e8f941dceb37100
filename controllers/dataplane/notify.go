package dataplane

import (
	"context"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
	"sluice.dev/sluice/controllers/dataplane/waves"
)

// Notifier delivers a DataPlane's notifications (succeeded, failed) to the AlertProviders of
// spec.analysis.alerts. The controller calls it at most once per notification (n.Key, recorded
// in status.notifications) after the status that records it was written; an error is logged and
// recorded as an event, the notification is not retried.
type Notifier interface {
	Notify(ctx context.Context, dp *sluicev1.DataPlane, n waves.Notification) error
}

// NopNotifier drops every notification: the default when Reconciler.Notifier is nil (the manager
// wires AlertNotifier).
type NopNotifier struct{}

// Notify does nothing.
func (NopNotifier) Notify(context.Context, *sluicev1.DataPlane, waves.Notification) error {
	return nil
}

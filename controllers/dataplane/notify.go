package dataplane

import (
	sluicev1 "sluice.dev/sluice/api/v1alpha1"
	"sluice.dev/sluice/controllers/dataplane/waves"
	"sluice.dev/sluice/notify"
)

// notification is the message of waves notification n about dp, for the AlertProviders of
// spec.analysis.alerts (their providerRefs name their namespaces: a DataPlane is cluster-scoped).
// The tick sends it once its status patch, which records n's dedup key, succeeded.
func notification(dp *sluicev1.DataPlane, n waves.Notification) notify.Message {
	return notify.Message{
		Subject:  notify.Subject{Kind: sluicev1.KindDataPlane, Name: dp.Name, Phase: string(dp.Status.Phase)},
		Event:    notify.Event("DataPlane" + n.Event),
		Severity: n.Severity,
		Revision: dp.Status.Version,
		Text:     n.Message,
	}
}

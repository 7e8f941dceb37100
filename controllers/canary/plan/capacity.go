package plan

import (
	"fmt"
)

// ActionScalePrimaryUp sets the primary's replicas to Decision.PrimaryReplicas (never lowering
// them): the primary is about to take the traffic the canary serves.
const ActionScalePrimaryUp Action = "ScalePrimaryUp"

// EventPrimaryScaled is recorded when the primary is scaled up before taking over.
const EventPrimaryScaled = "PrimaryScaledUp"

// scalePrimary asks for the primary at n replicas at least.
func (d *Decision) scalePrimary(n int32) {
	if n > d.PrimaryReplicas {
		d.PrimaryReplicas = n
	}
	if !d.Has(ActionScalePrimaryUp) {
		d.do(ActionScalePrimaryUp)
	}
}

// primaryCanTakeOver reports whether the promoted primary may take all the traffic now: it must
// have at least as many ready replicas as the canary serving it (an autoscaler may have scaled the
// canary far beyond the primary, which saw little traffic: flagger#1600's thundering herd).
// Otherwise it scales the primary up to the canary's ready replicas and waits.
func primaryCanTakeOver(o Observed, d *Decision) bool {
	if o.Primary.Ready >= o.Canary.Ready {
		return true
	}
	if o.Primary.Desired < o.Canary.Ready {
		d.scalePrimary(o.Canary.Ready)
		d.normal(EventPrimaryScaled, fmt.Sprintf("Scaling the primary to %d replicas, as many as the canary serves with, before it takes all traffic",
			o.Canary.Ready))
	}
	d.RequeueAfter = PollInterval
	return false
}

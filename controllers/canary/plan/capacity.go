package plan

import (
	"fmt"
	"time"
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
// Otherwise it scales the primary up to the canary's ready replicas and waits. It also waits for
// the primary Service's endpoints to show that rollout (primaryEndpointsCaughtUp): the data plane
// routes by them, not by the Deployment's status.
func primaryCanTakeOver(o Observed, d *Decision) bool {
	if o.Primary.Available() >= o.Canary.Ready {
		if primaryEndpointsCaughtUp(o, o.Canary.Ready) {
			return true
		}
		awaitEndpoints(o, d, runWaitSince(o))
		return false
	}
	if o.Primary.Desired < o.Canary.Ready {
		d.scalePrimary(o.Canary.Ready)
		d.normal(EventPrimaryScaled, fmt.Sprintf("Scaling the primary to %d replicas, as many as the canary serves with, before it takes all traffic",
			o.Canary.Ready))
	}
	awaitWatched(o, d, runWaitSince(o))
	return false
}

// primaryEndpointsCaughtUp reports whether the primary Service's endpoints (when read) show the
// rollout its workload reports: at least need ready endpoints, at least the primary's ready
// threshold of its desired replicas, and no endpoint beyond its updated pods (a pod of the old
// revision the EndpointSlice controller has not removed yet). Without it, all traffic could go to
// a Service that, for a moment, still serves a pod of the old revision or fewer ready pods than
// the canary carried the traffic with.
//
// The counts alone cannot tell an old pod from a new one: slices that lag the rollout by all of
// it (an EndpointSlice controller behind, or the controller's cache of the slices behind the
// Deployment's) list the old revision's pods, as many and as ready as the new ones, and would pass.
// So no serving endpoint may be of another ReplicaSet than the primary's current one
// (Endpoints.OtherRevision, when the Deployment names it). With that rule older slices are never
// more permissive than newer ones during a rollout — the new ReplicaSet's ready pods only grow and
// the old ones only go — so a lagging read can delay the switch, never bring it forward.
func primaryEndpointsCaughtUp(o Observed, need int32) bool {
	e := o.PrimaryEndpoints
	if e == nil {
		return true
	}
	return e.Ready >= max(need, 1) && e.Ready*100 >= PrimaryReadyThreshold(o.Spec)*o.Primary.Desired &&
		e.Serving <= o.Primary.Updated && e.OtherRevision == 0
}

// ReturnsAllTraffic reports whether decision d, taken on o, moves all traffic from the canary
// back to the primary (a promotion's takeover, a rollback's return): the tick the controller
// reads the primary's endpoints for (Observed.PrimaryEndpoints) and decides again, when it has
// not read them yet.
func ReturnsAllTraffic(o Observed, d Decision) bool {
	return o.PrimaryEndpoints == nil && o.Status.CanaryWeight > 0 && d.Status.CanaryWeight == 0
}

// endpointsLag names, for a deadline message, primary endpoints that keep the takeover waiting
// (": the primary Service has ..."); "" when they do not.
func endpointsLag(o Observed) string {
	e := o.PrimaryEndpoints
	if e == nil || primaryEndpointsCaughtUp(o, o.Canary.Ready) {
		return ""
	}
	lag := fmt.Sprintf(": the primary Service has %d ready endpoints and %d not terminating, for %d updated pods (the canary served with %d ready)",
		e.Ready, e.Serving, o.Primary.Updated, o.Canary.Ready)
	if e.OtherRevision > 0 {
		lag += fmt.Sprintf("; %d of them are pods of an older ReplicaSet", e.OtherRevision)
	}
	return lag
}

// awaitEndpoints sets the next look of a wait for the primary's endpoints: when the slices read
// are watched (Endpoints.Watched: they carry the role label the controller's EndpointSlice watch
// selects), their change wakes the Canary and the wait needs no poll (awaitWatched); slices read
// without the label (a Service not relabelled yet) wake nobody, and are polled every
// PollInterval.
func awaitEndpoints(o Observed, d *Decision, since time.Time) {
	if e := o.PrimaryEndpoints; e != nil && e.Watched {
		awaitWatched(o, d, since)
		return
	}
	d.RequeueAfter = PollInterval
}

// EventTrafficHeld is recorded when a rollback or a cancelled run keeps the canary's traffic
// share until the primary has the ready replicas to carry it; EventTrafficReturned when it moves.
const (
	EventTrafficHeld     = "TrafficHeldForPrimary"
	EventTrafficReturned = "TrafficReturned"
)

// returnTraffic moves the canary's traffic share back to the primary after a run ended
// (rollback, abort, cancel) — but never to a primary below its share: while the canary serves
// traffic with more ready replicas than the primary has, the canary keeps its share, the primary
// is scaled up to the canary's ready replicas, and the share returns once the primary has them
// ready. It moves at once when the canary has no ready pods left (nothing to hold), and when the
// primary has not caught up within progressDeadlineSeconds of the run's end (with a warning: a
// rollback must end). It reports whether traffic is still held on the canary; when it returns
// the traffic it asks for the canary to scale down.
func returnTraffic(o Observed, d *Decision) (held bool) {
	w := d.Status.CanaryWeight
	if w == 0 {
		return false
	}
	need := o.Canary.Ready
	capable := o.Primary.Ready >= need && o.Primary.Ready > 0 &&
		(o.PrimaryEndpoints == nil || o.PrimaryEndpoints.Ready >= max(need, 1))
	canaryServes := o.Canary.IsReady(CanaryReadyThreshold(o.Spec))
	ended := o.Now
	if t := d.Status.LastTransitionTime; t != nil {
		ended = t.Time
	}
	overdue := !o.Now.Before(ended.Add(ProgressDeadline(o.Spec)))
	if capable || !canaryServes || overdue {
		d.setWeight(0)
		d.do(ActionScaleCanaryDown)
		d.StatusFirst = true
		afterHold := o.Status.Phase == d.Status.Phase // a later tick of the ended run: it held the traffic
		switch {
		case overdue:
			d.warning(EventTrafficReturned, fmt.Sprintf("All traffic back on the primary with %d ready replicas, fewer than the %d the canary served %d%% with: "+
				"the primary did not scale up within %s (progressDeadlineSeconds)", o.Primary.Ready, need, w, ProgressDeadline(o.Spec)))
		case afterHold && capable:
			d.normal(EventTrafficReturned, fmt.Sprintf("All traffic back on the primary: it has %d ready replicas, the canary served %d%% with %d",
				o.Primary.Ready, w, need))
		case afterHold:
			d.warning(EventTrafficReturned, fmt.Sprintf("All traffic back on the primary (%d ready replicas): the canary has no ready replicas left to serve its %d%%",
				o.Primary.Ready, w))
		}
		return false
	}
	if o.Primary.Desired < need {
		d.scalePrimary(need)
	}
	if o.Status.Phase != d.Status.Phase { // the tick the run ended: say why the traffic stays
		d.normal(EventTrafficHeld, fmt.Sprintf("The canary keeps its %d%% until the primary has %d ready replicas (it has %d): the primary is never below its share of traffic",
			w, need, o.Primary.Ready))
	}
	if o.Primary.Ready >= need && o.Primary.Ready > 0 {
		awaitEndpoints(o, d, ended) // the endpoints lag the primary's pods
	} else {
		awaitWatched(o, d, ended)
	}
	return true
}

package canary

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
	"sluice.dev/sluice/controllers/canary/plan"
	"sluice.dev/sluice/controllers/internal/reconcilekit"
)

// Requeue policy: idle is free.
//
// A Canary with no run in flight (Initialized, Succeeded, Failed) has nothing to do until
// something it watches changes, and every such change wakes it: its own spec and request
// annotations (the Canary watch), its target Deployment (by index), the primary, the Services and
// the generated route (owned), a user's route named by routeRef (by index), and the ConfigMaps and
// Secrets its target references (by index). So an idle tick that settled cleanly asks for no
// periodic look: idle Canaries cost no reconcile, no CPU and no request, however many there are.
// A new leader reconciles every Canary once when its cache fills, and controller-runtime's
// informer resync (10 h) bounds what a lost watch event could hide.
//
// Everything else keeps the planner's time: a run in flight (steps, checks, deadlines), Waiting
// (progression windows, the rollout cap), Initializing, a stall (its cause may be outside what
// Sluice watches) and any retry shorter than an interval (a stale cache, a poll for readiness).

// idlePhases are the phases without a run in flight.
var idlePhases = map[sluicev1.CanaryPhase]bool{
	sluicev1.CanaryPhaseInitialized: true,
	sluicev1.CanaryPhaseSucceeded:   true,
	sluicev1.CanaryPhaseFailed:      true,
}

// nextLook applies the requeue policy to the result of a tick of c (whose status is what the tick
// wrote, or tried to).
func nextLook(c *sluicev1.Canary, res ctrl.Result, err error) ctrl.Result {
	if err != nil || !idlePhases[c.Status.Phase] || c.Spec.Suspend {
		return res
	}
	if st := reconcilekit.FindCondition(c, sluicev1.ConditionStalled); st != nil && st.Status == metav1.ConditionTrue {
		return res
	}
	if res.RequeueAfter > 0 && res.RequeueAfter < plan.Interval(c.Spec) {
		return res // a retry the tick asked for (stale cache, readiness poll)
	}
	return ctrl.Result{}
}

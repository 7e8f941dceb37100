package plan

import (
	"fmt"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
)

// requestKeys are the request annotations, in the order they are handled.
var requestKeys = []string{sluicev1.AnnotationAbort, sluicev1.AnnotationPromote, sluicev1.AnnotationRetry}

// handleRequests acts on new request annotations (abort before promote before retry) and records
// every new value as handled, whether it applied or not, so a leftover annotation never acts on a
// later run. While the Canary is paused (spec.suspend; its checks may still run, see
// PausedWithTraffic) promote and retry stay pending and act once it is resumed; an abort acts at
// once. It reports whether a request decided this tick.
func handleRequests(o Observed, d *Decision) bool {
	fresh := map[string]bool{}
	for _, key := range requestKeys {
		v := o.Requests[key]
		if v == "" || o.Status.LastHandledRequests[key] == v {
			continue
		}
		if o.Spec.Suspend && key != sluicev1.AnnotationAbort {
			continue // pending until resumed
		}
		fresh[key] = true
		if d.Status.LastHandledRequests == nil {
			d.Status.LastHandledRequests = map[string]string{}
		}
		d.Status.LastHandledRequests[key] = v
	}
	phase := o.Status.Phase
	inFlight := phase == sluicev1.CanaryPhaseProgressing || phase == sluicev1.CanaryPhaseWaitingPromotion
	switch {
	case fresh[sluicev1.AnnotationAbort] && inFlight:
		rollback(o, d, "aborted by request ("+sluicev1.AnnotationAbort+")")
	case fresh[sluicev1.AnnotationAbort] && phase == sluicev1.CanaryPhaseWaiting:
		d.Status.LastAppliedSpec = o.Revision
		d.Status.TrackedConfigs = o.TrackedConfigs
		d.setPhase(sluicev1.CanaryPhaseFailed, o.Now)
		d.warning(EventRollback, fmt.Sprintf("Run of %s aborted by request before it started", o.Revision))
	case fresh[sluicev1.AnnotationPromote] && inFlight && o.Revision == o.Status.LastAppliedSpec:
		d.normal(EventRequest, "Promotion requested ("+sluicev1.AnnotationPromote+"): skipping the remaining steps")
		if IsBlueGreen(o.Spec) && o.Canary.IsReady(CanaryReadyThreshold(o.Spec)) {
			// A blue/green promotion switches first, so the primary updates without serving.
			d.setWeight(100)
			d.normal(EventSwitched, fmt.Sprintf("All traffic switched to the canary %s", o.Status.LastAppliedSpec))
		}
		startPromotion(o, d)
	case fresh[sluicev1.AnnotationPromote] && phase == sluicev1.CanaryPhaseWaiting:
		d.normal(EventRequest, "Run approved by request ("+sluicev1.AnnotationPromote+")")
		startRun(o, d)
		d.normal(EventNewRevision, fmt.Sprintf("New revision %s, starting canary analysis", o.Revision))
	case fresh[sluicev1.AnnotationRetry] && phase == sluicev1.CanaryPhaseFailed:
		d.normal(EventRequest, fmt.Sprintf("Retry requested (%s): running %s again", sluicev1.AnnotationRetry, o.Revision))
		startRun(o, d)
	default:
		for _, key := range requestKeys {
			if fresh[key] {
				d.normal(EventRequest, fmt.Sprintf("Request %s=%s ignored: nothing to act on in phase %s", key, o.Requests[key], phase))
			}
		}
		return false
	}
	return true
}

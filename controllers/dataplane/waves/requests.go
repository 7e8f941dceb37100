package waves

import (
	"fmt"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
)

// handled records that the controller acted on the current value of request annotation key.
func (d *Decision) handled(o Observed, key string) {
	if d.Status.LastHandledRequests == nil {
		d.Status.LastHandledRequests = map[string]string{}
	}
	d.Status.LastHandledRequests[key] = o.Requests[key]
}

// retry runs the declared version again after a run ended RolledBack or Failed (a new plan from
// what runs now). On any other phase the request is only acknowledged.
func (d *Decision) retry(o Observed, target string) {
	phase := d.Status.Phase
	d.handled(o, sluicev1.AnnotationRetry)
	if phase != sluicev1.DataPlaneRolledBack && phase != sluicev1.DataPlaneFailed {
		d.normal(sluicev1.ReasonRetried, "Retry requested while %s: nothing to retry", phase)
		d.addNamespaces(o)
		return
	}
	d.normal(sluicev1.ReasonRetried, "Retrying the run to %s after it ended %s (%s=%s)", target, phase,
		sluicev1.AnnotationRetry, o.Requests[sluicev1.AnnotationRetry])
	handled := d.Status.LastHandledRequests
	d.plan(o, target)
	d.Status.LastHandledRequests = handled
}

// abort rolls the wave in flight back now, or, between waves, ends the run before the next wave
// starts. A run rolling back, finished or converged has nothing to abort.
func (d *Decision) abort(o Observed) {
	s := &d.Status
	d.handled(o, sluicev1.AnnotationAbort)
	why := fmt.Sprintf("aborted on request (%s=%s)", sluicev1.AnnotationAbort, o.Requests[sluicev1.AnnotationAbort])
	i, ok := activeWave(s)
	if !ok || isConverged(s.Phase) {
		d.normal(sluicev1.ReasonAborted, "Abort requested while %s: nothing to abort", s.Phase)
		return
	}
	w := &s.Waves[i]
	switch w.Phase {
	case sluicev1.WaveRestarting, sluicev1.WaveBaking:
		d.startRollback(o, i, sluicev1.ReasonAborted, why)
	case sluicev1.WavePending:
		w.Phase = sluicev1.WaveFailed
		w.CompletedAt = stamp(o.Now)
		w.Reason = sluicev1.ReasonAborted
		w.Message = fmt.Sprintf("Wave %d did not start: %s; waves before it keep %s (set the version back to roll them back)",
			i, why, s.Version)
		s.CurrentWave = int32(i)
		d.setPhase(sluicev1.DataPlaneFailed, o.Now)
		d.warning(sluicev1.ReasonAborted, "%s", w.Message)
		d.notify("Failed", sluicev1.SeverityError, fmt.Sprintf("Data plane run to %s aborted before wave %d: %s", s.Version, i, why))
	default:
		d.normal(sluicev1.ReasonAborted, "Abort requested while wave %d is %s: nothing to abort", i, w.Phase)
	}
}

package waves

import (
	"fmt"
	"strings"
	"time"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
)

// startRollback turns wave i back towards the version each of its namespaces ran before; later
// waves will not start. reason and why are kept on the wave: they are the root cause every later
// message repeats.
func (d *Decision) startRollback(o Observed, i int, reason, why string) {
	s := &d.Status
	w := &s.Waves[i]
	at := o.Now
	if w.StartedAt != nil && !at.After(w.StartedAt.Add(time.Second)) {
		at = w.StartedAt.Add(time.Second) // a token distinct from the wave's own
	}
	w.Phase = sluicev1.WaveRollingBack
	w.RollbackStartedAt = stamp(at)
	w.LastProgressTime = stamp(o.Now)
	w.Reason, w.Message = reason, why
	s.CurrentWave = int32(i)
	d.setPhase(sluicev1.DataPlaneRollingBack, o.Now)
	d.warning(sluicev1.ReasonWaveRollingBack, "Wave %d failed (%s): %s; rolling %s back to %s; later waves will not start",
		i, reason, why, strings.Join(w.Namespaces, ", "), describePrevious(w))
	d.requeue(o.PollInterval)
}

func describePrevious(w *sluicev1.DataPlaneWave) string {
	seen := map[string]bool{}
	var vs []string
	for _, ns := range w.Namespaces {
		if v := w.Previous[ns]; v != "" && !seen[v] {
			seen[v] = true
			vs = append(vs, v)
		}
	}
	if len(vs) == 0 {
		return "their previous version"
	}
	return strings.Join(vs, ", ")
}

// rollBack advances a wave rolling back. When every pod runs its namespace's previous version the
// wave is RolledBack; when the rollback makes no progress within the progress deadline (the
// injector down, a PodDisruptionBudget that never allows the eviction) the wave and the run end
// Failed. Either way the run ends, with the root cause in the wave's message.
func (d *Decision) rollBack(o Observed, i int) []Action {
	s := &d.Status
	w := &s.Waves[i]
	dir := direction{token: token(w.RollbackStartedAt), want: func(ns string) string { return w.Previous[ns] }}
	actions, done := d.restartStep(o, i, dir)
	if !o.ControlPlane.InjectorAvailable {
		actions, done = nil, false
		d.block("", sluicev1.ReasonControlPlaneNotReady, "no rollback restart while new pods get no proxy: %s", o.ControlPlane.InjectorMessage)
	}
	if done {
		w.Phase = sluicev1.WaveRolledBack
		w.CompletedAt = stamp(o.Now)
		w.Restarts = nil
		d.setPhase(sluicev1.DataPlaneRolledBack, o.Now)
		d.normal(sluicev1.ReasonWaveRolledBack, "Wave %d rolled back: every meshed pod of %s runs %s again", i,
			strings.Join(w.Namespaces, ", "), describePrevious(w))
		d.notify("RolledBack", sluicev1.SeverityError, fmt.Sprintf(
			"Data plane run to %s rolled back in wave %d (%s): %s. Later waves did not start.",
			s.Version, i, strings.Join(w.Namespaces, ", "), w.Message))
		d.requeue(IdleResync)
		return actions
	}
	d.trackProgress(o, i, false)
	if deadline := ProgressDeadline(o.Spec); o.Now.Sub(w.LastProgressTime.Time) > deadline {
		why := fmt.Sprintf("the rollback made no progress for %s (%d of %d meshed pods still on %s): %s",
			deadline, w.Current, w.Desired, s.Version, d.rootCause())
		d.fail(o, i, sluicev1.ReasonRollbackFailed, w.Message+"; "+why)
		return nil
	}
	d.requeue(o.PollInterval)
	return actions
}

// fail ends wave i and the run Failed without (further) rollback, keeping the root cause.
func (d *Decision) fail(o Observed, i int, reason, why string) {
	s := &d.Status
	w := &s.Waves[i]
	w.Phase = sluicev1.WaveFailed
	w.CompletedAt = stamp(o.Now)
	w.Restarts = nil
	if w.Reason == "" {
		w.Reason = reason
	}
	w.Message = why
	s.CurrentWave = int32(i)
	d.setPhase(sluicev1.DataPlaneFailed, o.Now)
	d.warning(reason, "Wave %d (%s) failed and was not rolled back: %s", i, strings.Join(w.Namespaces, ", "), why)
	d.notify("Failed", sluicev1.SeverityError, fmt.Sprintf("Data plane run to %s failed in wave %d (%s): %s",
		s.Version, i, strings.Join(w.Namespaces, ", "), why))
	d.requeue(IdleResync)
}

// trackProgress stamps lastProgressTime when one more pod reached the version the wave moves to.
func (d *Decision) trackProgress(o Observed, i int, up bool) {
	if i >= len(o.Status.Waves) {
		return
	}
	before, now := o.Status.Waves[i].Current, d.Status.Waves[i].Current
	if (up && now > before) || (!up && now < before) {
		d.Status.Waves[i].LastProgressTime = stamp(o.Now)
	}
}

package waves

import (
	"fmt"
	"strings"
	"time"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
)

// startRollback turns wave i back towards the previous version and fails the upgrade.
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
	d.setPhase(sluicev1.ProxyUpgradeRollingBack, o.Now)
	prev := describePrevious(w)
	d.warning(sluicev1.ReasonWaveRollingBack, "Wave %d failed (%s): %s; rolling %s back to %s; later waves will not start",
		i, reason, why, strings.Join(w.Namespaces, ", "), prev)
	d.notify("Failed", sluicev1.SeverityError, fmt.Sprintf("Proxy upgrade to %s failed in wave %d (%s): %s. Rolling %s back to %s; later waves will not start.",
		s.Target, i, strings.Join(w.Namespaces, ", "), why, strings.Join(w.Namespaces, ", "), prev))
	d.requeue(o.PollInterval)
}

func describePrevious(w *sluicev1.ProxyUpgradeWave) string {
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

// rollBack advances a wave rolling back; when every pod runs its namespace's previous version,
// the wave is RolledBack and the upgrade Failed.
func (d *Decision) rollBack(o Observed, i int) []Action {
	s := &d.Status
	w := &s.Waves[i]
	dir := direction{token: token(w.RollbackStartedAt), want: func(ns string) string { return w.Previous[ns] }}
	actions, done := d.restartStep(o, i, dir)
	if done {
		w.Phase = sluicev1.WaveRolledBack
		w.CompletedAt = stamp(o.Now)
		w.Restarts = nil
		d.setPhase(sluicev1.ProxyUpgradeFailed, o.Now)
		d.normal("WaveRolledBack", "Wave %d rolled back: every running meshed pod of %s runs %s again", i,
			strings.Join(w.Namespaces, ", "), describePrevious(w))
		d.requeue(IdleResync)
		return actions
	}
	d.trackProgress(o, i, false)
	d.requeue(o.PollInterval)
	return actions
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

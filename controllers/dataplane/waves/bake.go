package waves

import (
	"fmt"
	"strings"
	"time"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
)

// bake evaluates a baking wave; it reports whether the wave succeeded in this tick.
//
// A baking wave whose pods leave the declared version (restarted onto another one, or without the
// proxy) goes back to restarting, where the progress deadline applies again.
func (d *Decision) bake(o Observed, i int) bool {
	s := &d.Status
	w := &s.Waves[i]
	if unmeshed := unmeshedIn(o, w.Namespaces); staleWave(o, w.Namespaces, s.Version) || len(unmeshed) > 0 {
		w.Phase = sluicev1.WaveRestarting
		w.LastProgressTime = stamp(o.Now)
		w.BakeStartedAt = nil
		d.warning(sluicev1.ReasonWaveRestarting, "Wave %d left %s while it baked (%d of %d meshed pods on it, %d without the proxy): restarting again",
			i, s.Version, w.Current, w.Desired, len(unmeshed))
		d.requeue(o.PollInterval)
		return false
	}
	if o.Check != nil {
		w.LastCheckTime = stamp(o.Now)
		s.Analysis = o.Check.Results
		if o.Check.Failed {
			w.FailedChecks++
			threshold := Threshold(o.Spec)
			d.warning(sluicev1.ReasonCheckFailed, "Wave %d check failed (%d/%d): %s", i, w.FailedChecks, threshold, o.Check.Summary)
			if w.FailedChecks >= threshold {
				d.startRollback(o, i, sluicev1.ReasonAnalysisFailed,
					fmt.Sprintf("failed checks threshold reached (%d): %s", threshold, o.Check.Summary))
				return false
			}
		}
	}
	end := w.BakeStartedAt.Add(bakeTime(o.Spec, s))
	checked := !hasAnalysis(o.Spec, s) || (w.LastCheckTime != nil && !w.LastCheckTime.Time.Before(end))
	if !o.Now.Before(end) && checked {
		w.Phase = sluicev1.WaveSucceeded
		w.CompletedAt = stamp(o.Now)
		w.Restarts = nil
		d.normal(sluicev1.ReasonWaveSucceeded, "Wave %d (%s) baked for %s on %s with %d failed checks", i,
			strings.Join(w.Namespaces, ", "), bakeTime(o.Spec, s), s.Version, w.FailedChecks)
		return true
	}
	next := end
	if hasAnalysis(o.Spec, s) {
		next = nextCheck(o.Spec, w)
	}
	d.requeue(next.Sub(o.Now))
	return false
}

// AnalysisDue reports whether the controller must run the analysis in this tick: the current
// wave bakes, has metrics, and its next check is due (every interval from the start of the bake,
// the last one at the end of the bake).
func AnalysisDue(o Observed) bool {
	if !hasAnalysis(o.Spec, &o.Status) || Target(o.Spec) != o.Status.Version {
		return false
	}
	i, ok := activeWave(&o.Status)
	if !ok || o.Status.Waves[i].Phase != sluicev1.WaveBaking || o.Status.Waves[i].BakeStartedAt == nil {
		return false
	}
	w := &o.Status.Waves[i]
	end := w.BakeStartedAt.Add(BakeTime(o.Spec))
	if w.LastCheckTime != nil && !w.LastCheckTime.Time.Before(end) {
		return false
	}
	return !o.Now.Before(nextCheck(o.Spec, w))
}

// BakingWave returns the namespaces of the wave that bakes, for the analysis.
func BakingWave(s *sluicev1.DataPlaneStatus) []string {
	if i, ok := activeWave(s); ok && s.Waves[i].Phase == sluicev1.WaveBaking {
		return s.Waves[i].Namespaces
	}
	return nil
}

func nextCheck(spec sluicev1.DataPlaneSpec, w *sluicev1.DataPlaneWave) time.Time {
	end := w.BakeStartedAt.Add(BakeTime(spec))
	from := w.BakeStartedAt.Time
	if w.LastCheckTime != nil {
		from = w.LastCheckTime.Time
	}
	if n := from.Add(Interval(spec)); n.Before(end) {
		return n
	}
	return end
}

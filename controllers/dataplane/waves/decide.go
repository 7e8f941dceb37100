package waves

import (
	"fmt"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
)

// Decide chooses what to do in this tick. It is a pure function of o. The order is fixed: plan a
// new run (or retry one, or add namespaces that appeared), count the pods, handle an abort,
// advance the current wave (start it, restart its workloads, bake it, roll it back) or, once
// every wave succeeded, watch for drift; then put the pins of the waves that restart where they
// want them, and derive the namespace rows.
func Decide(o Observed) Decision {
	if o.PollInterval <= 0 {
		o.PollInterval = DefaultPollInterval
	}
	d := Decision{Status: *o.Status.DeepCopy()}
	s := &d.Status
	s.ControlPlane = sluicev1.ControlPlaneStatus{Version: o.ControlPlane.Version, Ready: o.ControlPlane.Ready,
		Message: o.ControlPlane.Message}
	target := Target(o.Spec)
	switch {
	case s.Version != target || s.Phase == "":
		d.plan(o, target)
	case o.pending(sluicev1.AnnotationRetry):
		d.retry(o, target)
	default:
		d.addNamespaces(o)
	}
	s.Skipped = o.Skipped
	d.count(o)
	if o.pending(sluicev1.AnnotationAbort) {
		d.abort(o)
	}

	var restarts []Action
	switch {
	case s.Phase == sluicev1.DataPlaneRolledBack || s.Phase == sluicev1.DataPlaneFailed:
		d.requeue(IdleResync)
	default:
		restarts = d.advance(o)
	}
	d.Actions = append(d.pins(o), restarts...)
	d.rows(o)
	return d
}

// isConverged reports whether a run in phase p finished its waves and watches for drift.
func isConverged(p sluicev1.DataPlanePhase) bool {
	return p == sluicev1.DataPlaneUpToDate || p == sluicev1.DataPlaneIncomplete || p == sluicev1.DataPlaneDrifted
}

// activeWave returns the first wave that has not succeeded.
func activeWave(s *sluicev1.DataPlaneStatus) (int, bool) {
	for i := range s.Waves {
		if s.Waves[i].Phase != sluicev1.WaveSucceeded {
			return i, true
		}
	}
	return 0, false
}

// advance moves the current wave; a wave that completes hands over to the next in the same tick.
// Once every wave succeeded it watches the converged data plane. It returns the restart and
// eviction actions.
func (d *Decision) advance(o Observed) []Action {
	s := &d.Status
	if len(s.Waves) == 0 {
		d.requeue(time.Minute)
		return nil
	}
	var actions []Action
	for i := range s.Waves {
		switch s.Waves[i].Phase {
		case sluicev1.WaveSucceeded:
			continue
		case sluicev1.WavePending:
			d.start(o, i)
		case sluicev1.WaveRestarting:
			var next bool
			actions, next = d.restart(o, i)
			if next {
				continue
			}
		case sluicev1.WaveBaking:
			if d.bake(o, i) {
				continue
			}
		case sluicev1.WaveRollingBack:
			actions = d.rollBack(o, i)
		case sluicev1.WaveRolledBack:
			d.setPhase(sluicev1.DataPlaneRolledBack, o.Now)
			d.requeue(IdleResync)
		case sluicev1.WaveFailed:
			d.setPhase(sluicev1.DataPlaneFailed, o.Now)
			d.requeue(IdleResync)
		}
		return actions
	}
	return d.converge(o)
}

// start starts wave i unless the control plane, a window or the approval holds it. An immediate
// rollback waits for nothing but the control plane.
func (d *Decision) start(o Observed, i int) {
	s := &d.Status
	w := &s.Waves[i]
	hold := func(h Hold, after time.Duration) {
		d.Hold = &h
		d.setPhase(sluicev1.DataPlaneWaiting, o.Now)
		d.requeue(after)
	}
	if !o.ControlPlane.Ready {
		hold(Hold{Reason: sluicev1.ReasonControlPlaneNotReady, Message: fmt.Sprintf(
			"Wave %d waits for the control plane: %s", i, o.ControlPlane.Message)}, time.Minute)
		return
	}
	if !immediate(o.Spec, s) {
		if !o.Window.Open {
			hold(Hold{Reason: sluicev1.ReasonOutsideWindow, Message: fmt.Sprintf(
				"Wave %d waits outside the upgrade windows; the next window opens at %s", i, o.Window.NextOpen.UTC().Format(time.RFC3339))},
				o.Window.NextOpen.Sub(o.Now))
			return
		}
		if o.Spec.RequireApproval && i == 1 && isCanaryWave(o.Spec, s) {
			if !o.pending(sluicev1.AnnotationApproveFleet) {
				hold(Hold{Reason: sluicev1.ReasonAwaitingApproval, Message: fmt.Sprintf(
					"The canary wave succeeded; approve the fleet (kubectl sluice approve dataplane, or a new value of the annotation %s)",
					sluicev1.AnnotationApproveFleet)}, time.Minute)
				return
			}
			d.handled(o, sluicev1.AnnotationApproveFleet)
			d.normal(sluicev1.ReasonApproved, "The fleet was approved (%s=%s)", sluicev1.AnnotationApproveFleet,
				o.Requests[sluicev1.AnnotationApproveFleet])
		}
	}
	w.Phase = sluicev1.WaveRestarting
	s.Analysis = nil
	w.StartedAt = stamp(o.Now)
	w.LastProgressTime = stamp(o.Now)
	s.CurrentWave = int32(i)
	d.setPhase(sluicev1.DataPlaneProgressing, o.Now)
	kind := "Wave"
	if i == 0 && isCanaryWave(o.Spec, s) {
		kind = "Canary wave"
	}
	msg := fmt.Sprintf("%s %d of %d started: %s move to %s (%d meshed pods)", kind, i, len(s.Waves)-1,
		strings.Join(w.Namespaces, ", "), s.Version, w.Desired)
	var unmanaged []string
	for _, name := range w.Namespaces {
		if ns := o.namespace(name); ns != nil {
			for _, p := range ns.Unmanaged {
				if p.Version != s.Version {
					unmanaged = append(unmanaged, name+"/"+p.Name)
				}
			}
		}
	}
	if len(unmanaged) > 0 {
		msg += fmt.Sprintf("; %d meshed pods Sluice cannot restart (no Deployment, StatefulSet, DaemonSet or Rollout owns them) keep the data plane from being up to date: %s",
			len(unmanaged), strings.Join(capped(unmanaged, 5), ", "))
	}
	d.normal(sluicev1.ReasonWaveStarted, "%s", msg)
	d.requeue(o.PollInterval)
}

// restart advances a restarting wave: the restarts and evictions it needs while the control
// plane is ready, and once it converged, the start of its bake. It reports whether the wave also
// completed (a zero bake without metrics), so that the next wave may start in this tick.
func (d *Decision) restart(o Observed, i int) ([]Action, bool) {
	s := &d.Status
	w := &s.Waves[i]
	dir := direction{token: token(w.StartedAt), want: func(string) string { return s.Version }}
	actions, done := d.restartStep(o, i, dir)
	if !o.ControlPlane.Ready {
		actions, done = nil, false
		d.block("", sluicev1.ReasonControlPlaneNotReady, "control plane not ready, no restart: %s", o.ControlPlane.Message)
	}
	if done {
		w.Phase = sluicev1.WaveBaking
		w.BakeStartedAt = stamp(o.Now)
		w.FailedChecks = 0
		w.LastCheckTime = nil
		s.Analysis = nil
		d.normal(sluicev1.ReasonWaveUpgraded, "Wave %d: all %d meshed pods of %s run %s; baking for %s", i, w.Current,
			strings.Join(w.Namespaces, ", "), s.Version, bakeTime(o.Spec, s))
		return actions, d.bake(o, i)
	}
	d.trackProgress(o, i, true)
	if deadline := ProgressDeadline(o.Spec); o.Now.Sub(w.LastProgressTime.Time) > deadline {
		why := fmt.Sprintf("no further pod reached %s for %s (%d of %d meshed pods on it): %s",
			s.Version, deadline, w.Current, w.Desired, d.rootCause())
		if !o.ControlPlane.InjectorAvailable {
			// Restarting pods back would only take more of them out of the mesh.
			d.fail(o, i, sluicev1.ReasonProgressDeadline, why+"; no rollback while new pods get no proxy")
			return nil, false
		}
		d.startRollback(o, i, sluicev1.ReasonProgressDeadline, why)
		return nil, false
	}
	d.requeue(o.PollInterval)
	return actions, false
}

// rootCause describes the blockers of this tick, for the message of a failure. Blockers found
// while carrying out actions (an eviction a PodDisruptionBudget refused) are only known after
// Decide: without blockers of its own, the tick falls back to the last update attempt when it was
// blocked, which names them.
func (d *Decision) rootCause() string {
	if len(d.Blockers) == 0 {
		if s := d.Status; s.LastUpdateAttemptResult == sluicev1.UpdateAttemptBlocked && s.LastUpdateAttemptMessage != "" {
			return s.LastUpdateAttemptMessage
		}
		return "the pods were restarted and did not come back on it"
	}
	var parts []string
	for _, b := range d.Blockers {
		parts = append(parts, b.Message)
	}
	return strings.Join(capped(parts, 4), "; ")
}

// token is a wave's restart token: the time it (or its rollback) started, to the second, which
// survives the round trip through status unchanged.
func token(t *metav1.Time) string {
	if t == nil {
		return ""
	}
	return t.UTC().Format(time.RFC3339)
}

// pins returns the Pin actions of the waves that move their namespaces: a restarting wave pins
// its namespaces to the declared version (once the control plane runs it), a rollback back to the
// version each ran before. Nothing else is ever pinned: pending namespaces are not pinned before
// their wave, and finished waves are left as they are (a changed pin after convergence is drift).
// Namespaces the DataPlane may not pin (see Namespace.Pinnable) are left alone.
func (d *Decision) pins(o Observed) []Action {
	s := &d.Status
	var out []Action
	for i := range s.Waves {
		w := &s.Waves[i]
		want := func(string) string { return "" }
		switch {
		case w.Phase == sluicev1.WaveRestarting && o.ControlPlane.Ready:
			want = func(string) string { return s.Version }
		case w.Phase == sluicev1.WaveRollingBack:
			want = func(ns string) string { return w.Previous[ns] }
		}
		for _, name := range w.Namespaces {
			ns := o.namespace(name)
			if v := want(name); ns != nil && ns.Pinnable && v != "" && ns.Pin != v {
				out = append(out, Action{Type: ActionPin, Wave: i, Namespace: name, Value: v})
			}
		}
	}
	return out
}

// recordPin remembers a pin the DataPlane wrote.
func (d *Decision) recordPin(ns, v string) {
	if d.Status.Pins == nil {
		d.Status.Pins = map[string]string{}
	}
	d.Status.Pins[ns] = v
}

// plural formats n things: "1 wave", "3 waves".
func plural(n int, thing string) string {
	if n == 1 {
		return "1 " + thing
	}
	return fmt.Sprintf("%d %ss", n, thing)
}

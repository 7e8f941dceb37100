package waves

import (
	"fmt"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
)

// Decide chooses what to do in this tick. It is a pure function of o. The order is fixed: plan a
// new run (or add namespaces that appeared), count the pods, advance the current wave (start it,
// restart its workloads, bake it, or roll it back), then keep every namespace's pin where its
// wave wants it.
func Decide(o Observed) Decision {
	if o.PollInterval <= 0 {
		o.PollInterval = DefaultPollInterval
	}
	d := Decision{Status: *o.Status.DeepCopy()}
	s := &d.Status
	target := Target(o.Spec)
	if s.Target != target || s.Phase == "" {
		d.plan(o, target)
	} else if s.Phase != sluicev1.ProxyUpgradeSucceeded && s.Phase != sluicev1.ProxyUpgradeFailed {
		d.addNamespaces(o)
	}
	s.Skipped = o.Skipped
	d.count(o)

	var restarts []Action
	switch s.Phase {
	case sluicev1.ProxyUpgradeSucceeded, sluicev1.ProxyUpgradeFailed:
		d.requeue(IdleResync)
	default:
		restarts = d.advance(o)
	}
	d.Actions = append(d.pins(o), restarts...)
	return d
}

// count sets desired and current (running meshed pods, and those on the target) for every wave
// and the fleet.
func (d *Decision) count(o Observed) {
	s := &d.Status
	s.Desired, s.Current = 0, 0
	for i := range s.Waves {
		w := &s.Waves[i]
		w.Desired, w.Current = 0, 0
		for _, name := range w.Namespaces {
			ns := o.namespace(name)
			if ns == nil {
				continue
			}
			for _, wl := range ns.Workloads {
				for _, p := range wl.Pods {
					w.Desired++
					if p.Version == s.Target {
						w.Current++
					}
				}
			}
		}
		s.Desired += w.Desired
		s.Current += w.Current
	}
}

// activeWave returns the first wave that has not succeeded.
func activeWave(s *sluicev1.ProxyUpgradeStatus) (int, bool) {
	for i := range s.Waves {
		if s.Waves[i].Phase != sluicev1.WaveSucceeded {
			return i, true
		}
	}
	return 0, false
}

// advance moves the current wave; a wave that completes hands over to the next in the same tick.
// It returns the restart and eviction actions.
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
			d.setPhase(sluicev1.ProxyUpgradeFailed, o.Now)
			d.requeue(IdleResync)
		}
		return actions
	}
	d.setPhase(sluicev1.ProxyUpgradeSucceeded, o.Now)
	d.normal("Succeeded", "All %s upgraded: %d of %d running meshed pods run %s", plural(len(s.Waves), "wave"), s.Current, s.Desired, s.Target)
	d.notify("Succeeded", sluicev1.SeverityInfo, fmt.Sprintf("Proxy upgrade to %s succeeded: %s, %d of %d running meshed pods on %s",
		s.Target, plural(len(s.Waves), "wave"), s.Current, s.Desired, s.Target))
	d.requeue(IdleResync)
	return actions
}

// start starts wave i unless a window or the approval holds it.
func (d *Decision) start(o Observed, i int) {
	s := &d.Status
	w := &s.Waves[i]
	if !o.Window.Open {
		d.Hold = &Hold{Reason: sluicev1.ReasonOutsideWindow, Message: fmt.Sprintf(
			"Wave %d waits outside the upgrade windows; the next window opens at %s", i, o.Window.NextOpen.UTC().Format(time.RFC3339))}
		d.setPhase(sluicev1.ProxyUpgradeWaiting, o.Now)
		d.requeue(o.Window.NextOpen.Sub(o.Now))
		return
	}
	if o.Spec.RequireApproval && i == 1 && isCanaryWave(o.Spec, s) && !o.Approved {
		d.Hold = &Hold{Reason: sluicev1.ReasonAwaitingApproval, Message: fmt.Sprintf(
			"The canary wave succeeded; annotate the ProxyUpgrade %s=true to start the fleet waves", sluicev1.AnnotationApproveFleet)}
		d.setPhase(sluicev1.ProxyUpgradeWaiting, o.Now)
		d.requeue(time.Minute)
		return
	}
	w.Phase = sluicev1.WaveRestarting
	s.Analysis = nil
	w.StartedAt = stamp(o.Now)
	w.LastProgressTime = stamp(o.Now)
	s.CurrentWave = int32(i)
	d.setPhase(sluicev1.ProxyUpgradeProgressing, o.Now)
	kind := "Wave"
	if i == 0 && isCanaryWave(o.Spec, s) {
		kind = "Canary wave"
	}
	msg := fmt.Sprintf("%s %d of %d started: %s move to %s (%d running meshed pods)", kind, i, len(s.Waves)-1,
		strings.Join(w.Namespaces, ", "), s.Target, w.Desired)
	var unmanaged []string
	for _, name := range w.Namespaces {
		if ns := o.namespace(name); ns != nil {
			for _, p := range ns.Unmanaged {
				unmanaged = append(unmanaged, name+"/"+p)
			}
		}
	}
	if len(unmanaged) > 0 {
		msg += fmt.Sprintf("; %d meshed pods without a Deployment, StatefulSet or DaemonSet are left alone: %s",
			len(unmanaged), strings.Join(capped(unmanaged, 5), ", "))
	}
	d.normal("WaveStarted", "%s", msg)
	d.requeue(o.PollInterval)
}

// restart advances a restarting wave: the restarts and evictions it needs, and once it converged,
// the start of its bake. It reports whether the wave also completed (a zero bake without metrics),
// so that the next wave may start in this tick.
func (d *Decision) restart(o Observed, i int) ([]Action, bool) {
	s := &d.Status
	w := &s.Waves[i]
	dir := direction{token: token(w.StartedAt), want: func(string) string { return s.Target }}
	actions, done := d.restartStep(o, i, dir)
	if done {
		w.Phase = sluicev1.WaveBaking
		w.BakeStartedAt = stamp(o.Now)
		w.FailedChecks = 0
		w.LastCheckTime = nil
		s.Analysis = nil
		d.normal("WaveUpgraded", "Wave %d: all %d running meshed pods of %s run %s; baking for %s", i, w.Current,
			strings.Join(w.Namespaces, ", "), s.Target, BakeTime(o.Spec))
		return actions, d.bake(o, i)
	}
	d.trackProgress(o, i, true)
	if deadline := ProgressDeadline(o.Spec); o.Now.Sub(w.LastProgressTime.Time) > deadline {
		d.startRollback(o, i, sluicev1.ReasonProgressDeadline, fmt.Sprintf("no pod reached %s for %s (%d of %d running meshed pods on it)",
			s.Target, deadline, w.Current, w.Desired))
		return nil, false
	}
	d.requeue(o.PollInterval)
	return actions, false
}

// token is a wave's restart token: the time it (or its rollback) started, to the second, which
// survives the round trip through status unchanged.
func token(t *metav1.Time) string {
	if t == nil {
		return ""
	}
	return t.UTC().Format(time.RFC3339)
}

// pins returns the Pin actions that put every planned namespace's pin where its wave wants it:
// Linkerd namespaces stay pinned to their previous version until their wave and after a rollback,
// and on the target from their wave on; Istio namespaces are relabelled at their wave and back on
// rollback (before its wave an Istio namespace's label already pins it).
func (d *Decision) pins(o Observed) []Action {
	s := &d.Status
	var out []Action
	for i := range s.Waves {
		w := &s.Waves[i]
		for _, name := range w.Namespaces {
			ns := o.namespace(name)
			if ns == nil {
				continue
			}
			want := ""
			switch w.Phase {
			case sluicev1.WaveRestarting, sluicev1.WaveBaking, sluicev1.WaveSucceeded:
				want = s.Target
			case sluicev1.WaveRollingBack, sluicev1.WaveRolledBack:
				want = w.Previous[name]
			case sluicev1.WavePending:
				if o.Spec.Mesh == sluicev1.MeshLinkerd {
					want = w.Previous[name]
				}
			}
			if want != "" && ns.Pin != want {
				out = append(out, Action{Type: ActionPin, Wave: i, Namespace: name, Value: want})
			}
		}
	}
	return out
}

// plural formats n things: "1 wave", "3 waves".
func plural(n int, thing string) string {
	if n == 1 {
		return "1 " + thing
	}
	return fmt.Sprintf("%d %ss", n, thing)
}

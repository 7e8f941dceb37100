package waves

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"k8s.io/utils/ptr"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
	"sluice.dev/sluice/controllers/windows"
)

var t0 = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

// ns builds an observed namespace with one Deployment of pods at the given versions.
func ns(name, pin string, versions ...string) Namespace {
	w := Workload{Kind: "Deployment", Name: "web", Method: sluicev1.RestartRollout, RolledOut: true, Desired: int32(len(versions))}
	for i, v := range versions {
		w.Pods = append(w.Pods, Pod{Name: fmt.Sprintf("web-%d", i), UID: fmt.Sprintf("%s-%d", name, i), Version: v, Ready: true})
	}
	return Namespace{Name: name, Pin: pin, Workloads: []Workload{w}, Pinnable: true, InjectionEnabled: true}
}

func linkerdSpec() sluicev1.DataPlaneSpec {
	return sluicev1.DataPlaneSpec{Mesh: sluicev1.MeshLinkerd, Version: newVersion, CanaryNamespaces: []string{"a"}, BakeTime: "1m"}
}

func observed(s sluicev1.DataPlaneStatus, nss ...Namespace) Observed {
	return Observed{Now: t0, Spec: linkerdSpec(), Status: s, Namespaces: nss, Window: windows.State{Open: true}, ControlPlane: readyCP}
}

var readyCP = ControlPlane{Version: newVersion, Ready: true, InjectorAvailable: true}

func actions(d Decision) string {
	var out []string
	for _, a := range d.Actions {
		out = append(out, a.String())
	}
	return strings.Join(out, "; ")
}

func TestDecideTable(t *testing.T) {
	planned := func(phases ...sluicev1.WavePhase) sluicev1.DataPlaneStatus {
		s := sluicev1.DataPlaneStatus{Phase: sluicev1.DataPlaneProgressing, Version: newVersion}
		for i, p := range phases {
			w := sluicev1.DataPlaneWave{Namespaces: []string{string(rune('a' + i))}, Phase: p,
				Previous: map[string]string{string(rune('a' + i)): oldVersion}}
			if p != sluicev1.WavePending {
				w.StartedAt, w.LastProgressTime = stamp(t0.Add(-time.Minute)), stamp(t0.Add(-time.Minute))
			}
			s.Waves = append(s.Waves, w)
		}
		return s
	}
	for _, tc := range []struct {
		name    string
		o       Observed
		phase   sluicev1.DataPlanePhase
		waves   string
		actions string
		events  string
	}{
		{"a run starts: plan, start the canary wave; only its namespace is pinned",
			observed(sluicev1.DataPlaneStatus{}, ns("a", "", oldVersion), ns("b", "", oldVersion, "edge-26.5.0", oldVersion), ns("c", "", "")),
			sluicev1.DataPlaneProgressing, "[Restarting Pending Pending]", "pin namespace a to edge-26.8.3", "Planned WaveStarted"},
		{"no namespace yet: pending, nothing to do",
			observed(sluicev1.DataPlaneStatus{}), sluicev1.DataPlanePending, "[]", "", "Planned"},
		{"a new version restarts the run from a converged one",
			observed(sluicev1.DataPlaneStatus{Phase: sluicev1.DataPlaneUpToDate, Version: "edge-26.1.0", ConvergedVersion: "edge-26.1.0",
				Notifications: []string{"edge-26.1.0/UpToDate"}}, ns("a", "edge-26.1.0", oldVersion)),
			sluicev1.DataPlaneProgressing, "[Restarting]", "pin namespace a to edge-26.8.3", "Planned WaveStarted"},
		{"restarts wait until the namespace's pin is in place",
			observed(planned(sluicev1.WaveRestarting), ns("a", oldVersion, oldVersion)),
			sluicev1.DataPlaneProgressing, "[Restarting]", "pin namespace a to edge-26.8.3", ""},
		{"pinned: restart",
			observed(planned(sluicev1.WaveRestarting), ns("a", newVersion, oldVersion)),
			sluicev1.DataPlaneProgressing, "[Restarting]", "restart Deployment a/web", ""},
		{"a namespace appearing mid-run joins a new wave and is not pinned before it",
			observed(planned(sluicev1.WaveSucceeded, sluicev1.WaveRestarting), ns("a", newVersion, newVersion), ns("b", newVersion, newVersion),
				ns("z", "", oldVersion)),
			sluicev1.DataPlaneProgressing, "[Succeeded Baking Pending]", "", "NamespaceAdded WaveUpgraded"},
		{"a pending namespace is never pinned, whatever its pin",
			observed(planned(sluicev1.WaveRestarting, sluicev1.WavePending), ns("a", newVersion, newVersion), ns("b", newVersion, oldVersion)),
			sluicev1.DataPlaneProgressing, "[Baking Pending]", "", "WaveUpgraded"},
		{"a rolled-back run writes nothing",
			func() Observed {
				s := planned(sluicev1.WaveSucceeded, sluicev1.WaveRolledBack, sluicev1.WavePending)
				s.Phase = sluicev1.DataPlaneRolledBack
				return observed(s, ns("a", newVersion, newVersion), ns("b", "", oldVersion), ns("c", "", oldVersion))
			}(),
			sluicev1.DataPlaneRolledBack, "[Succeeded RolledBack Pending]", "", ""},
		{"control plane behind the declared version: the first wave waits, nothing is pinned",
			func() Observed {
				o := observed(sluicev1.DataPlaneStatus{}, ns("a", "", oldVersion))
				o.ControlPlane = ControlPlane{Version: oldVersion, Message: "linkerd/linkerd-destination runs edge-26.6.3", InjectorAvailable: true}
				return o
			}(),
			sluicev1.DataPlaneWaiting, "[Pending]", "", "Planned"},
		{"control plane not ready mid-wave: no pin, no restart",
			func() Observed {
				o := observed(planned(sluicev1.WaveRestarting), ns("a", oldVersion, oldVersion))
				o.ControlPlane = ControlPlane{Version: oldVersion, Message: "linkerd/linkerd-destination runs edge-26.6.3"}
				return o
			}(),
			sluicev1.DataPlaneProgressing, "[Restarting]", "", ""},
		{"abort mid-wave rolls the wave back",
			func() Observed {
				o := observed(planned(sluicev1.WaveRestarting, sluicev1.WavePending), ns("a", newVersion, newVersion, oldVersion), ns("b", "", oldVersion))
				o.Requests = map[string]string{sluicev1.AnnotationAbort: "2026-11-30T12:00:00Z"}
				return o
			}(),
			sluicev1.DataPlaneRollingBack, "[RollingBack Pending]", "pin namespace a to edge-26.6.3", "WaveRollingBack"},
		{"abort between waves ends the run before the next one",
			func() Observed {
				s := planned(sluicev1.WaveSucceeded, sluicev1.WavePending)
				s.Phase = sluicev1.DataPlaneWaiting
				o := observed(s, ns("a", newVersion, newVersion), ns("b", "", oldVersion))
				o.Requests = map[string]string{sluicev1.AnnotationAbort: "2026-11-30T12:00:00Z"}
				return o
			}(),
			sluicev1.DataPlaneFailed, "[Succeeded Failed]", "", "Aborted"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := Decide(tc.o)
			var phases []sluicev1.WavePhase
			for _, w := range d.Status.Waves {
				phases = append(phases, w.Phase)
			}
			var events []string
			for _, e := range d.Events {
				events = append(events, e.Reason)
			}
			if d.Status.Phase != tc.phase || fmt.Sprint(phases) != tc.waves || actions(d) != tc.actions || strings.Join(events, " ") != tc.events {
				t.Errorf("got phase %s waves %v\n  actions %q\n  events %q\nwant phase %s waves %s\n  actions %q\n  events %q",
					d.Status.Phase, phases, actions(d), strings.Join(events, " "), tc.phase, tc.waves, tc.actions, tc.events)
			}
		})
	}
}

func TestPreviousVersions(t *testing.T) {
	o := observed(sluicev1.DataPlaneStatus{},
		ns("a", "", oldVersion, oldVersion, "edge-26.5.0"),
		ns("b", "", newVersion, "edge-26.5.0"),          // already partly on the target
		ns("c", "stable-2.14.10", newVersion),           // all on the target: keep the human's pin
		ns("d", "", newVersion),                         // nothing to return to
		ns("e", "", "", "edge-26.5.0", "edge-26.5.1"),   // unknown versions do not count; ties break by name
		ns("f", newVersion, oldVersion, oldVersion, ""), // the pin says target, the pods do not
	)
	got := previous(o, []string{"a", "b", "c", "d", "e", "f"}, newVersion)
	want := map[string]string{"a": oldVersion, "b": "edge-26.5.0", "c": "stable-2.14.10", "e": "edge-26.5.0", "f": oldVersion}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("previous = %v, want %v", got, want)
	}
	o.Spec = sluicev1.DataPlaneSpec{Mesh: sluicev1.MeshIstio, Revision: "1-27-1"}
	o.Namespaces = []Namespace{ns("a", "1-26-0", "1-26-0"), ns("b", "1-27-1", "1-26-0", "1-27-1"), ns("c", "1-26-0")}
	if got := previous(o, []string{"a", "b", "c", "zz"}, "1-27-1"); fmt.Sprint(got) != "map[a:1-26-0 b:1-26-0 c:1-26-0]" {
		t.Fatalf("istio previous = %v", got)
	}
}

func TestAnalysisDue(t *testing.T) {
	spec := linkerdSpec()
	spec.BakeTime = "3m"
	spec.Analysis = sluicev1.DataPlaneAnalysis{Interval: "1m", Metrics: []sluicev1.CanaryMetric{{Name: sluicev1.MetricRequestSuccessRate}}}
	bake := func(lastCheck *time.Time) sluicev1.DataPlaneStatus {
		w := sluicev1.DataPlaneWave{Namespaces: []string{"a"}, Phase: sluicev1.WaveBaking, BakeStartedAt: stamp(t0)}
		if lastCheck != nil {
			w.LastCheckTime = stamp(*lastCheck)
		}
		return sluicev1.DataPlaneStatus{Phase: sluicev1.DataPlaneProgressing, Version: newVersion, Waves: []sluicev1.DataPlaneWave{w}}
	}
	at := func(d time.Duration) *time.Time { x := t0.Add(d); return &x }
	for _, tc := range []struct {
		now       time.Duration
		lastCheck *time.Time
		due       bool
	}{
		{30 * time.Second, nil, false},
		{time.Minute, nil, true},
		{90 * time.Second, at(time.Minute), false},
		{2 * time.Minute, at(time.Minute), true},
		{3 * time.Minute, at(2 * time.Minute), true}, // the last check at the end of the bake
		{4 * time.Minute, at(3 * time.Minute), false},
	} {
		o := Observed{Now: t0.Add(tc.now), Spec: spec, Status: bake(tc.lastCheck)}
		if got := AnalysisDue(o); got != tc.due {
			t.Errorf("at %s after a check at %v: due %v, want %v", tc.now, tc.lastCheck, got, tc.due)
		}
	}
	// No metrics, a wave not baking, or a spec with another target: never.
	o := Observed{Now: t0.Add(time.Hour), Spec: linkerdSpec(), Status: bake(nil)}
	if AnalysisDue(o) {
		t.Error("due without metrics")
	}
	o.Spec = spec
	o.Spec.Version = "edge-27.1.1"
	if AnalysisDue(o) {
		t.Error("due for a spec whose target changed")
	}
	// The bake completes only once the last check ran.
	o = Observed{Now: t0.Add(3 * time.Minute), Spec: spec, Status: bake(at(2 * time.Minute)), Namespaces: []Namespace{ns("a", newVersion, newVersion)},
		Window: windows.State{Open: true}, ControlPlane: readyCP}
	if d := Decide(o); d.Status.Waves[0].Phase != sluicev1.WaveBaking {
		t.Errorf("wave %s before its last check", d.Status.Waves[0].Phase)
	}
	o.Check = &Check{}
	if d := Decide(o); d.Status.Waves[0].Phase != sluicev1.WaveSucceeded {
		t.Errorf("wave %s after its last check", d.Status.Waves[0].Phase)
	}
}

func TestRestartConcurrency(t *testing.T) {
	spec := linkerdSpec()
	spec.MaxUnavailable = ptr.To[int32](2)
	w := sluicev1.DataPlaneWave{Namespaces: []string{"a"}, Phase: sluicev1.WaveRestarting, StartedAt: stamp(t0), LastProgressTime: stamp(t0)}
	tok := token(w.StartedAt)
	a := Namespace{Name: "a", Pin: newVersion, Pinnable: true}
	for _, name := range []string{"w1", "w2", "w3", "w4"} {
		a.Workloads = append(a.Workloads, Workload{Kind: "Deployment", Name: name, Method: sluicev1.RestartRollout, RolledOut: true, Desired: 1,
			Pods: []Pod{{Name: name + "-0", UID: name, Version: oldVersion, Ready: true}}})
	}
	s := sluicev1.DataPlaneStatus{Phase: sluicev1.DataPlaneProgressing, Version: newVersion, Waves: []sluicev1.DataPlaneWave{w}}
	o := Observed{Now: t0, Spec: spec, Status: s, Namespaces: []Namespace{a}, Window: windows.State{Open: true}, ControlPlane: readyCP}

	d := Decide(o)
	if got := actions(d); got != "restart Deployment a/w1; restart Deployment a/w2" {
		t.Fatalf("first tick: %s", got)
	}
	// w1's template already carries the token (its restart's status write was lost): recorded,
	// not repeated, and it takes a slot.
	o.Namespaces[0].Workloads[0].Token = tok
	d = Decide(o)
	if got := actions(d); got != "restart Deployment a/w2" || len(d.Status.Waves[0].Restarts) != 1 {
		t.Fatalf("with w1 restarted: %s, restarts %+v", got, d.Status.Waves[0].Restarts)
	}
	// A workload rolled out that still runs the old version is reported, not restarted again.
	o.Status = d.Status
	o.Namespaces[0].Workloads[0].Pods[0].UID = "w1-new"
	d = Decide(o)
	if got := d.Blockers; len(got) != 1 || got[0].Reason != sluicev1.ReasonVersionPinnedInTemplate ||
		!strings.Contains(got[0].Message, "Deployment a/w1 was restarted and 1 of its pods still run edge-26.6.3") {
		t.Fatalf("blockers %+v", got)
	}
	if got := actions(d); got != "restart Deployment a/w2; restart Deployment a/w3" {
		t.Fatalf("after w1 got stuck: %s", got)
	}
}

func TestWaveSizeAppend(t *testing.T) {
	// Three planned waves of 2 (canary + 2 + 1): new namespaces fill the last pending wave, then
	// open new ones.
	spec := linkerdSpec()
	spec.Waves.MaxNamespaces = ptr.To[int32](2)
	s := sluicev1.DataPlaneStatus{Phase: sluicev1.DataPlaneProgressing, Version: newVersion, Waves: []sluicev1.DataPlaneWave{
		{Namespaces: []string{"a"}, Phase: sluicev1.WaveRestarting, StartedAt: stamp(t0), LastProgressTime: stamp(t0)},
		{Namespaces: []string{"b", "c"}, Phase: sluicev1.WavePending},
		{Namespaces: []string{"d"}, Phase: sluicev1.WavePending},
	}}
	var nss []Namespace
	for _, n := range []string{"a", "b", "c", "d", "e", "f", "g"} {
		nss = append(nss, ns(n, "", oldVersion))
	}
	o := Observed{Now: t0, Spec: spec, Status: s, Namespaces: nss, Window: windows.State{Open: true}, ControlPlane: readyCP}
	d := Decide(o)
	var got []string
	for _, w := range d.Status.Waves {
		got = append(got, fmt.Sprint(w.Namespaces))
	}
	if fmt.Sprint(got) != "[[a] [b c] [d e] [f g]]" {
		t.Fatalf("waves %v", got)
	}
}

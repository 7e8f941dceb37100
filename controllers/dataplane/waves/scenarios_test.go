package waves

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/utils/ptr"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
	"sluice.dev/sluice/test/golden"
)

// quietSpec is fleetSpec without analysis and without a canary namespace, waves of one.
func quietSpec() sluicev1.DataPlaneSpec {
	spec := fleetSpec()
	spec.Analysis.Metrics = nil
	spec.CanaryNamespaces = nil
	spec.BakeTime = "1m"
	spec.Waves.MaxNamespaces = ptr.To[int32](1)
	return spec
}

// TestGoldenControlPlaneFirst: the version is declared before the control plane runs it. No
// namespace is pinned and no pod restarted until the control plane is upgraded; then the waves
// start.
func TestGoldenControlPlaneFirst(t *testing.T) {
	w := newWorld(quietSpec())
	w.fleet(2, oldVersion)
	w.cp = ControlPlane{Version: oldVersion, Message: "linkerd/linkerd-destination runs edge-26.6.3, not edge-26.8.3", InjectorAvailable: true}
	for i := 0; i < 5; i++ {
		d := w.tick(t)
		if len(d.Actions) > 0 || w.status.Phase != sluicev1.DataPlaneWaiting || d.Hold == nil || d.Hold.Reason != sluicev1.ReasonControlPlaneNotReady {
			t.Fatalf("tick %d: phase %s, hold %+v, actions %s", i, w.status.Phase, d.Hold, actions(d))
		}
	}
	if len(w.firstTouched) > 0 {
		t.Fatalf("pods restarted ahead of the control plane: %v", w.firstTouched)
	}
	w.log = append(w.log, "        (the control plane is upgraded to edge-26.8.3)")
	w.cp = ControlPlane{Version: newVersion, Ready: true, InjectorAvailable: true}
	w.defaultVersion = newVersion
	w.runUntil(t, 200, sluicev1.DataPlaneUpToDate)
	golden.Assert(t, "control-plane-first", w.log)
}

// TestGoldenInjectorDownMidWave: the injector stops in the middle of the first wave, pods come
// back without the proxy. The wave does not succeed; the run ends Failed once the progress
// deadline passes (no rollback restart while new pods get no proxy), naming the pods and the
// injector.
func TestGoldenInjectorDownMidWave(t *testing.T) {
	spec := quietSpec()
	spec.ProgressDeadlineSeconds = ptr.To[int32](60)
	w := newWorld(spec)
	w.fleet(2, oldVersion)
	w.defaultVersion = newVersion
	w.tick(t) // the first wave starts and pins ns-1
	w.log = append(w.log, "        (the proxy injector stops; failurePolicy Ignore lets pods start without the proxy)")
	w.injectorDown = true
	down := w.now
	w.tick(t) // the controller does not know yet: it restarts, and the pods come back without the proxy
	w.cp = ControlPlane{Version: newVersion, Message: "proxy injector linkerd/linkerd-proxy-injector has 0 of 1 replicas available",
		InjectorMessage: "proxy injector linkerd/linkerd-proxy-injector has 0 of 1 replicas available"}
	w.runUntil(t, 200, sluicev1.DataPlaneFailed, sluicev1.DataPlaneRolledBack, sluicev1.DataPlaneUpToDate)
	if w.status.Phase != sluicev1.DataPlaneFailed {
		t.Fatalf("phase %s", w.status.Phase)
	}
	if took := w.status.Waves[0].CompletedAt.Sub(down); took > 90*time.Second {
		t.Errorf("the run ended %s after the injector stopped, more than the 60s deadline and a poll", took)
	}
	wv := w.status.Waves[0]
	if !strings.Contains(wv.Message, "came back without the proxy") || !strings.Contains(wv.Message, "linkerd-proxy-injector has 0 of 1") {
		t.Errorf("wave message lacks the root cause: %q", wv.Message)
	}
	if len(w.status.UnmeshedPods) == 0 || !strings.HasPrefix(w.status.UnmeshedPods[0], "ns-1/") {
		t.Errorf("unmeshed pods %v", w.status.UnmeshedPods)
	}
	if _, ok := w.firstTouched["ns-2"]; ok {
		t.Error("ns-2 was touched")
	}
	if len(w.notifications) != 1 || w.notifications[0].Event != "Failed" {
		t.Errorf("notifications %+v", w.notifications)
	}
	// The injector is back; `kubectl sluice retry` runs the version again: the pods without the
	// proxy are restarted like any stale pod, and the data plane converges.
	w.log = append(w.log, "        (the injector is back; sluice.dev/retry=2026-11-30T13:00:00Z)")
	w.injectorDown = false
	w.cp = ControlPlane{Version: newVersion, Ready: true, InjectorAvailable: true}
	w.requests[sluicev1.AnnotationRetry] = "2026-11-30T13:00:00Z"
	w.runUntil(t, 200, sluicev1.DataPlaneUpToDate)
	for _, ns := range []string{"ns-1", "ns-2"} {
		if v := w.versions(ns); v != newVersion+" x6" {
			t.Errorf("%s runs %s", ns, v)
		}
	}
	golden.Assert(t, "injector-down-mid-wave", w.log)
}

// TestGoldenUnmanagedPodKeepsItIncomplete: a bare pod on the old proxy keeps the data plane from
// being up to date, named in status; excluding it lets the data plane converge.
func TestGoldenUnmanagedPodKeepsItIncomplete(t *testing.T) {
	w := newWorld(quietSpec())
	w.fleet(2, oldVersion)
	w.defaultVersion = newVersion
	w.namespace("ns-1").unmanaged = []Pod{{Name: "debug", UID: "bare", Version: oldVersion, Ready: true}}
	w.runUntil(t, 200, sluicev1.DataPlaneIncomplete, sluicev1.DataPlaneUpToDate)
	if w.status.Phase != sluicev1.DataPlaneIncomplete || fmt.Sprint(w.status.UnmanagedPods) != "[ns-1/debug]" ||
		w.status.Desired != 13 || w.status.Current != 12 {
		t.Fatalf("phase %s unmanaged %v desired %d current %d", w.status.Phase, w.status.UnmanagedPods, w.status.Desired, w.status.Current)
	}
	for i := 0; i < 3; i++ {
		if d := w.tick(t); len(d.Actions)+len(d.Events)+len(d.Notifications) != 0 || w.status.Phase != sluicev1.DataPlaneIncomplete {
			t.Fatalf("incomplete data plane acted or moved: %s %+v", w.status.Phase, d)
		}
	}
	w.log = append(w.log, "        (ns-1/debug is excluded: annotation sluice.dev/dataplane-exclude=true)")
	w.namespace("ns-1").unmanaged = nil
	w.runUntil(t, 10, sluicev1.DataPlaneUpToDate)
	if len(w.notifications) != 1 || w.notifications[0].Event != "UpToDate" {
		t.Errorf("notifications %+v", w.notifications)
	}
	golden.Assert(t, "unmanaged-pod-incomplete", w.log)
}

// TestGoldenDriftReportedOnce: after convergence someone pins the old proxy in a Deployment's
// template; its pods come back old. The data plane reports Drifted, one event and one
// notification, naming the pods, and stays so (driftPolicy Report) until the pods are back.
func TestGoldenDriftReportedOnce(t *testing.T) {
	w := newWorld(quietSpec())
	w.fleet(2, oldVersion)
	w.defaultVersion = newVersion
	w.runUntil(t, 200, sluicev1.DataPlaneUpToDate)
	w.log = append(w.log, "        (ns-2/web's template pins edge-26.6.3 and rolls out)")
	web := w.workload(w.namespace("ns-2"), "Deployment", "web")
	web.templatePin, web.rollout = oldVersion, true
	w.step()
	drifts := 0
	for i := 0; i < 10; i++ {
		d := w.tick(t)
		for _, e := range d.Events {
			if e.Reason == sluicev1.ReasonDrifted {
				drifts++
			}
		}
	}
	if w.status.Phase != sluicev1.DataPlaneDrifted || drifts != 1 || len(w.status.DriftedPods) != 2 ||
		!strings.HasPrefix(w.status.DriftedPods[0], "ns-2/web-") {
		t.Fatalf("phase %s, %d Drifted events, drifted pods %v", w.status.Phase, drifts, w.status.DriftedPods)
	}
	if got := w.notifications; len(got) != 2 || got[0].Event != "UpToDate" || !strings.HasPrefix(got[1].Event, "Drifted") {
		t.Fatalf("notifications %+v", got)
	}
	w.log = append(w.log, "        (the pin is removed from the template; ns-2/web rolls out)")
	web.templatePin, web.rollout = "", true
	w.step()
	w.runUntil(t, 10, sluicev1.DataPlaneUpToDate)
	golden.Assert(t, "drift-reported-once", w.log)
}

// TestGoldenDriftRestart: with driftPolicy Restart, a namespace whose pin a human set back and
// whose pods came back old is moved back by a new wave.
func TestGoldenDriftRestart(t *testing.T) {
	spec := quietSpec()
	spec.DriftPolicy = sluicev1.DriftRestart
	w := newWorld(spec)
	w.fleet(2, oldVersion)
	w.defaultVersion = newVersion
	w.runUntil(t, 200, sluicev1.DataPlaneUpToDate)
	w.log = append(w.log, "        (ns-1 is pinned to edge-26.6.3 by hand and ns-1/web rolls out)")
	w.namespace("ns-1").pin = oldVersion
	w.workload(w.namespace("ns-1"), "Deployment", "web").rollout = true
	w.step()
	w.runUntil(t, 5, sluicev1.DataPlaneProgressing)
	w.runUntil(t, 200, sluicev1.DataPlaneUpToDate)
	if v := w.versions("ns-1"); v != newVersion+" x6" || w.namespace("ns-1").pin != newVersion {
		t.Fatalf("ns-1 runs %s, pinned %s", v, w.namespace("ns-1").pin)
	}
	// The drift wave moves ns-1 again: the fleet still has 12 meshed pods, not 18.
	if s := w.status; s.Desired != 12 || s.Current != 12 {
		t.Fatalf("DESIRED %d CURRENT %d after the drift wave: want 12/12 (each namespace counted once)", s.Desired, s.Current)
	}
	golden.Assert(t, "drift-restart", w.log)
}

// TestTwoVersionEditsNeverGoBack: the version is edited twice in a row while the first run is in
// its second wave, with the control plane following each edit and workloads restarting on their
// own (autoscaling, node drains) all along. Only declared versions are ever pinned, nothing is
// pinned back to the first version, no pod of a namespace returns to the first version once it
// left it, and every OnDelete pod is evicted at most once per version.
func TestTwoVersionEditsNeverGoBack(t *testing.T) {
	const third = "edge-26.9.0"
	spec := quietSpec()
	spec.MaxUnavailable = ptr.To[int32](3)
	w := newWorld(spec)
	w.fleet(4, oldVersion)
	w.defaultVersion = newVersion
	left := map[string]bool{}
	for i := 0; i < 400 && w.status.Phase != sluicev1.DataPlaneUpToDate; i++ {
		if i == 0 || w.status.Version != third {
			if len(w.status.Waves) > 1 && w.status.Waves[1].Phase == sluicev1.WaveRestarting {
				w.spec.Version, w.defaultVersion = third, third
				w.cp = ControlPlane{Version: third, Ready: true, InjectorAvailable: true}
			}
		}
		if i%7 == 3 { // a workload restarts by itself
			ns := w.namespaces[i%len(w.namespaces)]
			ns.workloads[1].rollout = true
		}
		d := w.tick(t)
		for _, a := range d.Actions {
			if a.Type == ActionPin && a.Value != newVersion && a.Value != third {
				t.Fatalf("pinned %s to %s", a.Namespace, a.Value)
			}
			if a.Type == ActionPin && w.spec.Version == third && a.Value != third {
				t.Fatalf("pinned %s to %s after the second edit", a.Namespace, a.Value)
			}
		}
		for _, ns := range w.namespaces {
			v := w.versions(ns.name)
			if !strings.Contains(v, oldVersion) {
				left[ns.name] = true
			} else if left[ns.name] {
				t.Fatalf("%s went back to %s: %s", ns.name, oldVersion, v)
			}
		}
	}
	if w.status.Phase != sluicev1.DataPlaneUpToDate || w.status.Version != third {
		t.Fatalf("phase %s version %s\n%s", w.status.Phase, w.status.Version, strings.Join(w.log, "\n"))
	}
	for _, ns := range w.namespaces {
		if v := w.versions(ns.name); v != third+" x6" {
			t.Errorf("%s runs %s", ns.name, v)
		}
	}
	w.assertRestartedAtMostOnce(t)
}

// TestImmediateRollback: after convergence the version is set back, with rollback Immediate:
// one wave of every namespace, no bake, and the data plane converges on the old version again.
func TestImmediateRollback(t *testing.T) {
	w := newWorld(fleetSpec())
	w.fleet(3, oldVersion)
	w.defaultVersion = newVersion
	w.runUntil(t, 400, sluicev1.DataPlaneUpToDate)
	w.spec.Version, w.spec.Rollback, w.defaultVersion = oldVersion, sluicev1.RollbackImmediate, oldVersion
	w.cp = ControlPlane{Version: oldVersion, Ready: true, InjectorAvailable: true}
	start := w.now
	w.runUntil(t, 200, sluicev1.DataPlaneUpToDate)
	s := w.status
	if !s.Rollback || len(s.Waves) != 1 || len(s.Waves[0].Namespaces) != 3 || s.ConvergedVersion != oldVersion || s.PreviousVersion != newVersion {
		t.Fatalf("rollback %v waves %d converged %s previous %s", s.Rollback, len(s.Waves), s.ConvergedVersion, s.PreviousVersion)
	}
	if took := s.Waves[0].CompletedAt.Sub(start); took > 2*time.Minute {
		t.Errorf("the immediate rollback took %s (no bake expected)\n%s", took, strings.Join(w.log, "\n"))
	}
	for _, ns := range []string{"ns-1", "ns-2", "ns-3"} {
		if v := w.versions(ns); v != oldVersion+" x6" {
			t.Errorf("%s runs %s", ns, v)
		}
	}
	if !slices.ContainsFunc(w.notifications, func(n Notification) bool { return n.Key == oldVersion+"/UpToDate" }) {
		t.Errorf("notifications %+v", w.notifications)
	}
}

// TestPodDisruptionBudgetBlockingForeverKeepsRootCause: a PodDisruptionBudget refuses every
// eviction of the wave's OnDelete pods. The run ends (rolled back at the progress deadline) and the
// wave's message, which the Ready condition repeats, names the refused eviction, not "the pods
// were restarted and did not come back on it" (they were never evicted).
func TestPodDisruptionBudgetBlockingForeverKeepsRootCause(t *testing.T) {
	spec := quietSpec()
	spec.ProgressDeadlineSeconds = ptr.To[int32](60)
	w := newWorld(spec)
	w.fleet(1, oldVersion)
	w.defaultVersion = newVersion
	w.evictionBlocked = func(*world, Action) bool { return true }
	w.runUntil(t, 200, sluicev1.DataPlaneRolledBack, sluicev1.DataPlaneFailed)
	msg := w.status.Waves[0].Message
	if !strings.Contains(msg, "disruption budget") || strings.Contains(msg, "did not come back") {
		t.Fatalf("wave 0 ended %s with message %q: want the refused eviction as the root cause", w.status.Waves[0].Phase, msg)
	}
}

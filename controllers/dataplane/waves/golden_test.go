package waves

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"k8s.io/utils/ptr"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
	"sluice.dev/sluice/controllers/windows"
	"sluice.dev/sluice/test/golden"
)

// fleetSpec is the acceptance fleet: Linkerd edge-26.6.3 → edge-26.8.3, canary ns-1,
// waves of 2, two workloads restarting at once, a 5m bake checked every minute.
func fleetSpec() sluicev1.DataPlaneSpec {
	return sluicev1.DataPlaneSpec{
		Mesh:             sluicev1.MeshLinkerd,
		Version:          newVersion,
		CanaryNamespaces: []string{"ns-1"},
		Waves:            sluicev1.DataPlaneWaves{MaxNamespaces: ptr.To[int32](2)},
		BakeTime:         "5m",
		MaxUnavailable:   ptr.To[int32](2),
		Analysis: sluicev1.DataPlaneAnalysis{Interval: "1m", Threshold: 2, Metrics: []sluicev1.CanaryMetric{
			{Name: sluicev1.MetricRequestSuccessRate, ThresholdRange: &sluicev1.ThresholdRange{Min: ptr.To(99.0)}}}},
	}
}

func TestGoldenLinkerdFleetSucceeds(t *testing.T) {
	w := newWorld(fleetSpec())
	w.fleet(6, oldVersion)
	w.defaultVersion = newVersion // the control plane was upgraded first
	w.runUntil(t, 300, sluicev1.DataPlaneUpToDate)

	for _, ns := range w.namespaces {
		if v := w.versions(ns.name); v != newVersion+" x6" {
			t.Errorf("%s runs %s", ns.name, v)
		}
	}
	if w.status.Desired != 36 || w.status.Current != 36 {
		t.Errorf("desired %d current %d, want 36/36", w.status.Desired, w.status.Current)
	}
	// The canary namespace baked before any other namespace was touched.
	canaryDone := w.status.Waves[0].CompletedAt.Sub(w.start)
	for ns, at := range w.firstTouched {
		if ns != "ns-1" && at < canaryDone {
			t.Errorf("%s restarted at %s, before the canary wave completed at %s", ns, at, canaryDone)
		}
	}
	if bake := w.status.Waves[0].CompletedAt.Sub(w.status.Waves[0].BakeStartedAt.Time); bake < 5*time.Minute {
		t.Errorf("canary wave baked %s", bake)
	}
	w.assertRestartedAtMostOnce(t)
	if len(w.notifications) != 1 || w.notifications[0].Event != "UpToDate" {
		t.Errorf("notifications %+v", w.notifications)
	}
	// UpToDate is stable and quiet.
	for i := 0; i < 3; i++ {
		if d := w.tick(t); len(d.Actions)+len(d.Events)+len(d.Notifications) != 0 {
			t.Fatalf("succeeded upgrade acted: %+v", d)
		}
	}
	golden.Assert(t, "linkerd-fleet-succeeds", w.log)
}

func TestGoldenSecondWaveFailsAndRollsBack(t *testing.T) {
	w := newWorld(fleetSpec())
	w.fleet(6, oldVersion)
	w.defaultVersion = newVersion
	w.analysis = func(w *world, wave int, ns string) (bool, string) {
		if wave == 1 && ns == "ns-3" {
			return true, "request-success-rate: Fail, value 80.00 outside [99, +Inf]"
		}
		return false, ""
	}
	w.runUntil(t, 300, sluicev1.DataPlaneRolledBack)
	for _, ns := range []string{"ns-2", "ns-3", "ns-4", "ns-5", "ns-6"} {
		if v := w.versions(ns); v != oldVersion+" x6" {
			t.Errorf("%s runs %s, want %s everywhere", ns, v, oldVersion)
		}
	}
	// The rolled-back wave is pinned back to what it ran; the later waves were never pinned.
	for ns, want := range map[string]string{"ns-2": oldVersion, "ns-3": oldVersion, "ns-4": "", "ns-5": "", "ns-6": ""} {
		if pin := w.namespace(ns).pin; pin != want {
			t.Errorf("%s pinned to %q, want %q", ns, pin, want)
		}
	}
	if v := w.versions("ns-1"); v != newVersion+" x6" {
		t.Errorf("canary ns-1 runs %s", v)
	}
	for _, ns := range []string{"ns-4", "ns-5", "ns-6"} {
		if _, ok := w.firstTouched[ns]; ok {
			t.Errorf("%s was touched: a later wave started", ns)
		}
	}
	phases := []sluicev1.WavePhase{}
	for _, wv := range w.status.Waves {
		phases = append(phases, wv.Phase)
	}
	if fmt.Sprint(phases) != "[Succeeded RolledBack Pending Pending]" {
		t.Errorf("wave phases %v", phases)
	}
	w.assertRestartedAtMostOnce(t)
	if len(w.notifications) != 1 || w.notifications[0].Event != "RolledBack" ||
		!strings.Contains(w.notifications[0].Message, "ns-3: request-success-rate: Fail, value 80.00") {
		t.Errorf("notifications %+v, want one RolledBack naming the failing metric", w.notifications)
	}
	if wv := w.status.Waves[1]; wv.Reason != sluicev1.ReasonAnalysisFailed || !strings.Contains(wv.Message, "ns-3: request-success-rate") {
		t.Errorf("wave 1 reason %s message %q", wv.Reason, wv.Message)
	}
	for i := 0; i < 3; i++ {
		if d := w.tick(t); len(d.Actions)+len(d.Events)+len(d.Notifications) != 0 {
			t.Fatalf("rolled-back run acted: %+v", d)
		}
	}
	golden.Assert(t, "second-wave-fails", w.log)
}

func TestGoldenWindowHoldsWaves(t *testing.T) {
	spec := fleetSpec()
	spec.Analysis.Metrics = nil
	spec.BakeTime = "30m" // the canary wave bakes past the end of the window
	w := newWorld(spec)
	w.fleet(3, oldVersion)
	w.defaultVersion = newVersion
	// Open 13:00–13:30 every day.
	opens := func(now time.Time) windows.State {
		st, err := windows.Evaluate([]sluicev1.ProgressionWindow{{Schedule: "0 13 * * *", Duration: "30m"}}, now)
		if err != nil {
			t.Fatal(err)
		}
		return st
	}
	w.window = opens
	d := w.tick(t)
	if w.status.Phase != sluicev1.DataPlaneWaiting || d.Hold == nil ||
		d.Hold.Message != "Wave 0 waits outside the upgrade windows; the next window opens at 2026-11-30T13:00:00Z" {
		t.Fatalf("phase %s, hold %+v", w.status.Phase, d.Hold)
	}
	if len(d.Actions) > 0 {
		t.Fatalf("outside the window: %s (nothing is pinned before its wave starts)", actions(d))
	}
	w.runUntil(t, 300, sluicev1.DataPlaneUpToDate)
	for i, wv := range w.status.Waves {
		st := opens(wv.StartedAt.Time)
		if !st.Open {
			t.Errorf("wave %d started at %s, outside the window", i, wv.StartedAt.Time)
		}
	}
	golden.Assert(t, "window-holds-waves", w.log)
}

func TestGoldenApprovalHoldsFleet(t *testing.T) {
	spec := fleetSpec()
	spec.Analysis.Metrics = nil
	spec.BakeTime = "1m"
	spec.RequireApproval = true
	w := newWorld(spec)
	w.fleet(3, oldVersion)
	w.defaultVersion = newVersion
	w.runUntil(t, 100, sluicev1.DataPlaneWaiting)
	for i := 0; i < 3; i++ {
		w.tick(t)
	}
	if w.status.Phase != sluicev1.DataPlaneWaiting || w.status.Waves[0].Phase != sluicev1.WaveSucceeded ||
		w.status.Waves[1].Phase != sluicev1.WavePending {
		t.Fatalf("phase %s, waves %v %v", w.status.Phase, w.status.Waves[0].Phase, w.status.Waves[1].Phase)
	}
	w.log = append(w.log, "        (sluice.dev/approve-fleet=2026-11-30T12:10:00Z)")
	w.requests[sluicev1.AnnotationApproveFleet] = "2026-11-30T12:10:00Z"
	w.runUntil(t, 100, sluicev1.DataPlaneUpToDate)
	golden.Assert(t, "approval-holds-fleet", w.log)
}

func TestGoldenIstioRelabelAndRollBack(t *testing.T) {
	spec := sluicev1.DataPlaneSpec{
		Mesh:             sluicev1.MeshIstio,
		Revision:         "1-27-1",
		CanaryNamespaces: []string{"ns-1"},
		BakeTime:         "2m",
		MaxUnavailable:   ptr.To[int32](3),
		Analysis: sluicev1.DataPlaneAnalysis{Interval: "1m", Threshold: 1, Metrics: []sluicev1.CanaryMetric{
			{Name: sluicev1.MetricRequestSuccessRate, ThresholdRange: &sluicev1.ThresholdRange{Min: ptr.To(99.0)}}}},
	}
	w := newWorld(spec)
	w.fleet(3, "1-26-0")
	for _, ns := range w.namespaces {
		ns.pin = "1-26-0"
	}
	w.analysis = func(w *world, wave int, ns string) (bool, string) {
		return ns == "ns-3", "request-success-rate: Fail, value 90.00 outside [99, +Inf]"
	}
	w.runUntil(t, 300, sluicev1.DataPlaneRolledBack)
	want := map[string]string{"ns-1": "1-27-1", "ns-2": "1-27-1", "ns-3": "1-26-0"}
	for ns, rev := range want {
		if got := w.namespace(ns).pin; got != rev {
			t.Errorf("%s labelled istio.io/rev=%s, want %s", ns, got, rev)
		}
		if v := w.versions(ns); v != rev+" x6" {
			t.Errorf("%s runs %s", ns, v)
		}
	}
	w.assertRestartedAtMostOnce(t)
	golden.Assert(t, "istio-relabel-and-rollback", w.log)
}

func TestGoldenLostStatusWriteRestartsNothingTwice(t *testing.T) {
	spec := fleetSpec()
	spec.Analysis.Metrics = nil
	spec.MaxUnavailable = ptr.To[int32](3)
	w := newWorld(spec)
	w.fleet(2, oldVersion)
	w.defaultVersion = newVersion
	w.loseStatusOnce = true
	w.runUntil(t, 200, sluicev1.DataPlaneUpToDate)
	w.assertRestartedAtMostOnce(t)
	for _, ns := range w.namespaces {
		if v := w.versions(ns.name); v != newVersion+" x6" {
			t.Errorf("%s runs %s", ns.name, v)
		}
	}
	golden.Assert(t, "lost-status-write", w.log)
}

func TestGoldenPodDisruptionBudgetBlocksEviction(t *testing.T) {
	spec := fleetSpec()
	spec.Analysis.Metrics = nil
	spec.CanaryNamespaces = nil
	w := newWorld(spec)
	w.fleet(1, oldVersion)
	w.defaultVersion = newVersion
	blocked := 0
	w.evictionBlocked = func(w *world, a Action) bool {
		blocked++
		return blocked <= 2
	}
	w.runUntil(t, 200, sluicev1.DataPlaneUpToDate)
	w.assertRestartedAtMostOnce(t)
	golden.Assert(t, "pdb-blocks-eviction", w.log)
}

func TestGoldenProgressDeadlineRollsBack(t *testing.T) {
	spec := fleetSpec()
	spec.Analysis.Metrics = nil
	spec.CanaryNamespaces = nil
	spec.ProgressDeadlineSeconds = ptr.To[int32](60)
	spec.Waves.MaxNamespaces = ptr.To[int32](1)
	w := newWorld(spec)
	w.fleet(2, oldVersion)
	w.defaultVersion = newVersion
	// ns-1's Deployment pins the old proxy in its pod template: restarting it does not help.
	w.workload(w.namespace("ns-1"), "Deployment", "web").templatePin = oldVersion
	w.runUntil(t, 200, sluicev1.DataPlaneRolledBack)
	w.assertRestartedAtMostOnce(t)
	if v := w.versions("ns-1"); v != oldVersion+" x6" {
		t.Errorf("ns-1 runs %s", v)
	}
	if _, ok := w.firstTouched["ns-2"]; ok {
		t.Error("ns-2 was touched")
	}
	golden.Assert(t, "progress-deadline", w.log)
}

func TestRecordAndFinish(t *testing.T) {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	d := Decision{Status: sluicev1.DataPlaneStatus{Waves: []sluicev1.DataPlaneWave{{Phase: sluicev1.WaveRestarting}}}}
	restart := Action{Type: ActionRestart, Wave: 0, Namespace: "ns-1", Kind: "Deployment", Name: "web", Value: "t1"}
	evict := Action{Type: ActionEvict, Wave: 0, Namespace: "ns-1", Kind: "StatefulSet", Name: "db", Pod: "db-1", UID: "u1", Value: "t1"}
	d.Record(restart, nil)
	d.Record(restart, nil) // recorded once
	d.Record(evict, nil)
	d.Record(Action{Type: ActionEvict, Wave: 0, Namespace: "ns-1", Kind: "StatefulSet", Name: "db", Pod: "db-0", UID: "u0", Value: "t1"},
		fmt.Errorf("%w: pod ns-1/db-0: disruption budget", ErrBlocked))
	d.Finish(now)
	w := d.Status.Waves[0]
	if len(w.Restarts) != 2 || w.Restarted != 2 || w.Evicted != 1 || w.Restarts[1].LastEvictedUID != "u1" {
		t.Fatalf("restarts %+v", w)
	}
	if s := d.Status; s.LastUpdateAttemptResult != sluicev1.UpdateAttemptBlocked || !strings.HasSuffix(s.LastUpdateAttemptMessage, "; pod ns-1/db-0: disruption budget") {
		t.Fatalf("attempt %s %q", s.LastUpdateAttemptResult, s.LastUpdateAttemptMessage)
	}
	if len(d.Blockers) != 1 || d.Blockers[0].Reason != sluicev1.ReasonEvictionBlocked || d.Blockers[0].Namespace != "ns-1" {
		t.Fatalf("blockers %+v", d.Blockers)
	}
	d2 := Decision{Status: *d.Status.DeepCopy()}
	d2.Record(restart, errors.New("boom"))
	d2.Finish(now.Add(time.Second))
	if s := d2.Status; s.LastUpdateAttemptResult != sluicev1.UpdateAttemptFailed || !strings.Contains(s.LastUpdateAttemptMessage, "boom") {
		t.Fatalf("attempt %s %q", s.LastUpdateAttemptResult, s.LastUpdateAttemptMessage)
	}
}

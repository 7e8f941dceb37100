package dataplane

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
	"sluice.dev/sluice/mesh"
	"sluice.dev/sluice/test/controlplane"
	"sluice.dev/sluice/test/testenv"
)

func successRate() []sluicev1.CanaryMetric {
	return []sluicev1.CanaryMetric{{Name: sluicev1.MetricRequestSuccessRate, ThresholdRange: &sluicev1.ThresholdRange{Min: ptr.To(99.0)}}}
}

// TestIstioRevisionWaveByWaveAndRollback moves three namespaces from istio.io/rev 1-26-0 to
// 1-27-1, one per wave: each namespace is relabelled only when its wave starts, after the wave
// before baked; the third wave fails its analysis and is relabelled back, with its pods on
// 1-26-0 again. A fourth namespace that still uses istio-injection=enabled is reported, not
// moved.
func TestIstioRevisionWaveByWaveAndRollback(t *testing.T) {
	h := newHarness(t, sluicev1.MeshIstio)
	h.fleet(3, map[string]string{mesh.IstioRevLabel: "1-26-0"}, nil)
	legacy := h.ns(4)
	h.fleet4Legacy(legacy)
	h.analyzer.fail = func(ns string) bool { return ns == h.ns(3) }
	for _, rev := range []string{"1-26-0", "1-27-1"} {
		if err := controlplane.InstallIstiod(h.ctx, h.c, rev, "docker.io/istio/pilot:"+strings.ReplaceAll(rev, "-", ".")); err != nil {
			t.Fatal(err)
		}
	}
	if err := testenv.MarkRolledOut(h.ctx, h.c, controlplane.IstioNamespace); err != nil {
		t.Fatal(err)
	}
	h.create(sluicev1.DataPlaneSpec{
		Mesh:             sluicev1.MeshIstio,
		Revision:         "1-27-1",
		CanaryNamespaces: []string{h.ns(1)},
		BakeTime:         "2m",
		MaxUnavailable:   ptr.To[int32](3),
		Analysis:         sluicev1.DataPlaneAnalysis{Interval: "1m", Threshold: 2, Metrics: successRate(), Alerts: oncall},
	})

	// Every tick: a namespace carries the new revision only once its wave started, and only
	// after every earlier wave succeeded.
	for i := 0; i < 200; i++ {
		h.tick()
		dp := h.get()
		for w, wave := range dp.Status.Waves {
			for _, ns := range wave.Namespaces {
				label := h.namespaceObjByName(ns).Labels[mesh.IstioRevLabel]
				if label == "1-27-1" && wave.Phase == sluicev1.WavePending {
					t.Fatalf("%s relabelled while its wave %d is pending", ns, w)
				}
				if label == "1-27-1" && w > 0 && dp.Status.Waves[w-1].Phase != sluicev1.WaveSucceeded {
					t.Fatalf("%s relabelled before wave %d succeeded", ns, w-1)
				}
			}
		}
		if dp.Status.Phase == sluicev1.DataPlaneRolledBack {
			break
		}
	}
	dp := h.get()
	if dp.Status.Phase != sluicev1.DataPlaneRolledBack {
		t.Fatalf("phase %s\n%s", dp.Status.Phase, strings.Join(h.log, "\n"))
	}
	for i, want := range []string{"1-27-1", "1-27-1", "1-26-0"} {
		ns := h.ns(i + 1)
		if got := h.namespaceObj(i + 1).Labels[mesh.IstioRevLabel]; got != want {
			t.Errorf("%s istio.io/rev=%s, want %s", ns, got, want)
		}
		if got := h.sim.versions(t, ns); got != fmt.Sprintf("[%s x6]", want) {
			t.Errorf("%s runs %s, want %s", ns, got, want)
		}
	}
	if got := h.namespaceObj(4).Labels[mesh.IstioRevLabel]; got != "" {
		t.Errorf("legacy namespace labelled istio.io/rev=%s", got)
	}
	if len(dp.Status.Skipped) != 1 || dp.Status.Skipped[0].Namespace != legacy || dp.Status.Skipped[0].Reason != sluicev1.ReasonIstioInjectionLabel {
		t.Errorf("skipped %+v", dp.Status.Skipped)
	}
	c := apimeta.FindStatusCondition(dp.Status.Conditions, sluicev1.ConditionNamespacesSkipped)
	if c == nil || c.Status != metav1.ConditionTrue || !strings.Contains(c.Message, legacy+" has istio-injection=enabled") {
		t.Errorf("NamespacesSkipped condition %+v", c)
	}
	ready := apimeta.FindStatusCondition(dp.Status.Conditions, sluicev1.ConditionReady)
	if ready == nil || ready.Status != metav1.ConditionFalse || ready.Reason != sluicev1.ReasonAnalysisFailed ||
		!strings.Contains(ready.Message, "Wave 2 ("+h.ns(3)+") was rolled back") || !strings.Contains(ready.Message, "request-success-rate") {
		t.Errorf("Ready condition %+v", ready)
	}
	if got := h.notifier.events(); fmt.Sprint(got) != "[RolledBack]" {
		t.Errorf("notifications %v, want one RolledBack", got)
	}
	// ns-3 restarted onto the new revision and back: two rollouts; the others one.
	h.sim.assertRestarts(t, 2)
	for k, n := range h.sim.rollouts {
		if !strings.HasPrefix(k, h.ns(3)+"/") && n != 1 {
			t.Errorf("%s rolled out %d times, want 1", k, n)
		}
	}
	t.Log("\n" + strings.Join(h.log, "\n"))
}

func (h *harness) namespaceObjByName(name string) *corev1.Namespace {
	ns := &corev1.Namespace{}
	if err := h.c.Get(h.ctx, client.ObjectKey{Name: name}, ns); err != nil {
		h.t.Fatal(err)
	}
	return ns
}

// fleet4Legacy adds a namespace of this test's fleet that still uses istio-injection=enabled.
func (h *harness) fleet4Legacy(name string) {
	h.t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"fleet": h.id, mesh.IstioInjectionLabel: "enabled"}}}
	if err := h.c.Create(h.ctx, ns); err != nil {
		h.t.Fatal(err)
	}
}

// TestWindowExcludingNowStartsNoWave: with the only window at 03:00–04:00 UTC and the clock at
// 12:00, no wave starts (nothing is pinned either), and the conditions name the next opening.
func TestWindowExcludingNowStartsNoWave(t *testing.T) {
	h := newHarness(t, sluicev1.MeshLinkerd)
	h.fleet(2, map[string]string{mesh.LinkerdInject: "enabled"}, nil)
	h.upgradeControlPlane("edge-26.8.3") // the control plane moved first
	h.create(sluicev1.DataPlaneSpec{
		Mesh:             sluicev1.MeshLinkerd,
		Version:          "edge-26.8.3",
		CanaryNamespaces: []string{h.ns(1)},
		Windows:          []sluicev1.ProgressionWindow{{Schedule: "0 3 * * *", Duration: "1h", TimeZone: "UTC"}},
	})
	var res []time.Duration
	for i := 0; i < 3; i++ {
		res = append(res, h.tick().RequeueAfter)
	}
	dp := h.get()
	if dp.Status.Phase != sluicev1.DataPlaneWaiting || dp.Status.Waves[0].Phase != sluicev1.WavePending {
		t.Fatalf("phase %s, wave 0 %s", dp.Status.Phase, dp.Status.Waves[0].Phase)
	}
	for _, typ := range []string{sluicev1.ConditionReady, sluicev1.ConditionReconciling} {
		c := apimeta.FindStatusCondition(dp.Status.Conditions, typ)
		if c == nil || c.Reason != sluicev1.ReasonOutsideWindow || !strings.Contains(c.Message, "next window opens at 2026-12-01T03:00:00Z") {
			t.Errorf("%s condition %+v", typ, c)
		}
	}
	// Nothing restarted, every pod still on the old version, no namespace pinned.
	for i := 1; i <= 2; i++ {
		var deps appsv1.DeploymentList
		if err := h.c.List(h.ctx, &deps, client.InNamespace(h.ns(i))); err != nil {
			t.Fatal(err)
		}
		for _, d := range deps.Items {
			if v := d.Spec.Template.Annotations[mesh.RestartedAtAnnotation]; v != "" {
				t.Errorf("%s/%s restarted (%s)", h.ns(i), d.Name, v)
			}
		}
		if got := h.sim.versions(t, h.ns(i)); got != "[edge-26.6.3 x6]" {
			t.Errorf("%s runs %s", h.ns(i), got)
		}
		if pin, ok := h.namespaceObj(i).Annotations[mesh.LinkerdPinAnnotation]; ok {
			t.Errorf("%s pinned to %q before its wave", h.ns(i), pin)
		}
	}
	if res[0] != 15*time.Hour {
		t.Errorf("requeue after %s, want 15h (the next opening)", res[0])
	}
	h.sim.assertRestarts(t, 0)
}

// failingStatus makes the first status patch after a workload restart fail, as if the controller
// died between its restarts and its status write.
type failingStatus struct {
	client.Client
	mu      sync.Mutex
	armed   bool
	dropped int
}

func (f *failingStatus) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
	switch obj.(type) {
	case *appsv1.Deployment, *appsv1.DaemonSet, *appsv1.StatefulSet:
		f.mu.Lock()
		if f.dropped == 0 {
			f.armed = true
		}
		f.mu.Unlock()
	}
	return f.Client.Patch(ctx, obj, patch, opts...)
}

func (f *failingStatus) Status() client.SubResourceWriter {
	return &failingWriter{f.Client.Status(), f}
}

type failingWriter struct {
	client.SubResourceWriter
	f *failingStatus
}

func (w *failingWriter) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
	w.f.mu.Lock()
	defer w.f.mu.Unlock()
	if w.f.armed {
		w.f.armed = false
		w.f.dropped++
		return errors.New("connection reset by peer (the controller died)")
	}
	return w.SubResourceWriter.Patch(ctx, obj, patch, opts...)
}

// TestLostStatusWriteRestartsNothingTwice kills the controller between its first restarts and
// the status write that records them; a new controller resumes from the last status and finishes
// the upgrade, and every workload rolled out, every OnDelete pod was replaced, exactly once.
func TestLostStatusWriteRestartsNothingTwice(t *testing.T) {
	h := newHarness(t, sluicev1.MeshLinkerd)
	h.fleet(2, map[string]string{mesh.LinkerdInject: "enabled"}, nil)
	h.upgradeControlPlane("edge-26.8.3")
	h.create(sluicev1.DataPlaneSpec{
		Mesh:           sluicev1.MeshLinkerd,
		Version:        "edge-26.8.3",
		BakeTime:       "1m",
		MaxUnavailable: ptr.To[int32](3),
	})
	fs := &failingStatus{Client: env.Client}
	h.r.Client = fs
	for i := 0; i < 20 && fs.dropped == 0; i++ {
		if err := h.sim.sync(h.ctx); err != nil {
			t.Fatal(err)
		}
		_, err := h.r.Reconcile(h.ctx, ctrlRequest(h.name))
		if fs.dropped > 0 {
			if err == nil {
				t.Fatal("the failed status write was not reported")
			}
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		h.clock.Step(2 * time.Second)
	}
	if fs.dropped != 1 {
		t.Fatal("no restart happened")
	}
	restarted := 0
	var deps appsv1.DeploymentList
	if err := h.c.List(h.ctx, &deps, client.InNamespace(h.ns(1))); err != nil {
		t.Fatal(err)
	}
	for _, d := range deps.Items {
		if d.Spec.Template.Annotations[mesh.RestartedAtAnnotation] != "" {
			restarted++
		}
	}
	if dp := h.get(); restarted == 0 || len(dp.Status.Waves[0].Restarts) != 0 {
		t.Fatalf("before the new controller: %d deployments restarted, %d restarts recorded", restarted, len(dp.Status.Waves[0].Restarts))
	}
	h.r = h.newReconciler() // a new controller, nothing in memory
	dp := h.runUntil(200, sluicev1.DataPlaneUpToDate)
	h.sim.assertRestarts(t, 1)
	if len(h.sim.rollouts) == 0 {
		t.Fatal("nothing rolled out")
	}
	for k, n := range h.sim.rollouts {
		if n != 1 {
			t.Errorf("%s rolled out %d times", k, n)
		}
	}
	for i := 1; i <= 2; i++ {
		if got := h.sim.versions(t, h.ns(i)); got != "[edge-26.8.3 x6]" {
			t.Errorf("%s runs %s", h.ns(i), got)
		}
	}
	if dp.Status.Desired != 12 || dp.Status.Current != 12 {
		t.Errorf("desired %d current %d", dp.Status.Desired, dp.Status.Current)
	}
}

// TestCanaryNamespaceNotSelectedStalls: CEL cannot see namespaces' labels, so a canary namespace
// outside the selector stalls the upgrade before any wave is planned.
func TestCanaryNamespaceNotSelectedStalls(t *testing.T) {
	h := newHarness(t, sluicev1.MeshLinkerd)
	h.fleet(1, nil, nil)
	h.create(sluicev1.DataPlaneSpec{
		Mesh:             sluicev1.MeshLinkerd,
		Version:          "edge-26.8.3",
		CanaryNamespaces: []string{"elsewhere-" + h.id},
	})
	res := h.tick()
	dp := h.get()
	c := apimeta.FindStatusCondition(dp.Status.Conditions, sluicev1.ConditionStalled)
	if c == nil || c.Reason != sluicev1.ReasonCanaryNamespaceNotSelected || !strings.Contains(c.Message, "elsewhere-"+h.id) {
		t.Fatalf("Stalled %+v", c)
	}
	if len(dp.Status.Waves) != 0 || res.RequeueAfter != stalledRetry {
		t.Fatalf("waves %d, requeue %s", len(dp.Status.Waves), res.RequeueAfter)
	}
	if ev := h.events.all(); len(ev) != 1 || !strings.Contains(ev[0], sluicev1.ReasonCanaryNamespaceNotSelected) {
		t.Fatalf("events %v", ev)
	}
	h.tick() // stays stalled without a second event
	if ev := h.events.all(); len(ev) != 1 {
		t.Fatalf("events %v", ev)
	}
}

// TestSuspendedDoesNothing: a suspended DataPlane plans nothing and says why.
func TestSuspendedDoesNothing(t *testing.T) {
	h := newHarness(t, sluicev1.MeshLinkerd)
	h.fleet(1, nil, nil)
	h.create(sluicev1.DataPlaneSpec{
		Mesh:    sluicev1.MeshLinkerd,
		Version: "edge-26.8.3",
		Suspend: true,
	})
	h.tick()
	dp := h.get()
	c := apimeta.FindStatusCondition(dp.Status.Conditions, sluicev1.ConditionReconciling)
	if len(dp.Status.Waves) != 0 || c == nil || c.Reason != sluicev1.ReasonSuspended {
		t.Fatalf("waves %d, Reconciling %+v", len(dp.Status.Waves), c)
	}
	if pin := h.namespaceObj(1).Annotations[mesh.LinkerdPinAnnotation]; pin != "" {
		t.Fatalf("suspended upgrade pinned %q", pin)
	}
}

func ctrlRequest(name string) ctrl.Request {
	return ctrl.Request{NamespacedName: client.ObjectKey{Name: name}}
}

package dataplane

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clocktesting "k8s.io/utils/clock/testing"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"sluice.dev/sluice/analysis"
	sluicev1 "sluice.dev/sluice/api/v1alpha1"
	"sluice.dev/sluice/notify"
	"sluice.dev/sluice/test/controlplane"
	"sluice.dev/sluice/test/testenv"
)

var env *testenv.Env

func TestMain(m *testing.M) { os.Exit(testenv.Run(m, &env)) }

// scriptedAnalyzer answers namespace analyses from a function; it stands in for Prometheus, which
// package analysis tests for real.
type scriptedAnalyzer struct {
	mu    sync.Mutex
	calls int
	fail  func(ns string) bool
}

func (a *scriptedAnalyzer) AnalyzeNamespace(_ context.Context, na analysis.NamespaceAnalysis, now time.Time) (analysis.Check, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.calls++
	t := metav1.NewTime(now)
	if a.fail != nil && a.fail(na.Namespace) {
		return analysis.Check{Results: []sluicev1.MetricResult{{Name: "request-success-rate", Verdict: sluicev1.VerdictFail,
			Value: "80.00", ThresholdRange: "[99, +Inf]", CheckedAt: &t}}}, nil
	}
	return analysis.Check{Results: []sluicev1.MetricResult{{Name: "request-success-rate", Verdict: sluicev1.VerdictPass,
		Value: "99.90", ThresholdRange: "[99, +Inf]", CheckedAt: &t}}}, nil
}

// countingNotifier records the notifications sent (the tick sends them to the alerts of the
// spec, after its status patch), as their events without the "DataPlane" prefix.
type countingNotifier struct {
	mu   sync.Mutex
	sent []string
}

func (n *countingNotifier) Check(context.Context, string, []sluicev1.CanaryAlert) error { return nil }

func (n *countingNotifier) Send(_ context.Context, _ []sluicev1.CanaryAlert, m notify.Message) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.sent = append(n.sent, strings.TrimPrefix(string(m.Event), "DataPlane"))
	return nil
}

func (n *countingNotifier) events() []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return append([]string(nil), n.sent...)
}

// oncall is an alert to an AlertProvider (the countingNotifier stands in for it).
var oncall = []sluicev1.CanaryAlert{{Name: "oncall", ProviderRef: sluicev1.CrossNamespaceObjectReference{Name: "oncall", Namespace: "ops"}}}

// eventLog records events in memory.
type eventLog struct {
	mu     sync.Mutex
	events []string
}

func (e *eventLog) Eventf(_ runtime.Object, _ runtime.Object, _, reason, _ string, note string, args ...interface{}) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.events = append(e.events, fmt.Sprintf("[%s] %s", reason, fmt.Sprintf(note, args...)))
}

func (e *eventLog) all() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]string(nil), e.events...)
}

// harness drives one DataPlane by calling Reconcile directly with a fake clock against the
// real apiserver, playing the workload controllers and the injector (fleetSim) between ticks, with
// the simulated Linkerd control plane (test/controlplane) as real Deployments.
type harness struct {
	t        *testing.T
	ctx      context.Context
	c        client.Client
	clock    *clocktesting.FakeClock
	start    time.Time
	r        *Reconciler
	analyzer *scriptedAnalyzer
	notifier *countingNotifier
	events   *eventLog
	sim      *fleetSim
	name     string
	// id makes the namespace names and the fleet label of this test unique in the shared apiserver.
	id  string
	log []string
}

func newHarness(t *testing.T, m sluicev1.Mesh) *harness {
	testenv.Require(t, env)
	if err := controlplane.InstallLinkerd(context.Background(), env.Client, "edge-26.6.3"); err != nil {
		t.Fatal(err)
	}
	start := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	h := &harness{t: t, ctx: context.Background(), c: env.Client, clock: clocktesting.NewFakeClock(start), start: start,
		analyzer: &scriptedAnalyzer{}, notifier: &countingNotifier{}, events: &eventLog{},
		id: fmt.Sprintf("t%d", time.Now().UnixNano()%1000000)}
	h.name = "upgrade-" + h.id
	h.r = h.newReconciler()
	h.sim = newFleetSim(env.Client, m, "edge-26.6.3")
	h.upgradeControlPlane("edge-26.6.3")
	return h
}

// upgradeControlPlane moves the simulated Linkerd control plane to version (rolled out and
// available), and with it the version the injector gives unpinned pods.
func (h *harness) upgradeControlPlane(version string) {
	h.t.Helper()
	if err := controlplane.UpgradeLinkerd(h.ctx, h.c, version); err != nil {
		h.t.Fatal(err)
	}
	if err := testenv.MarkRolledOut(h.ctx, h.c, controlplane.Namespace); err != nil {
		h.t.Fatal(err)
	}
	h.sim.defaultVersion = version
}

func (h *harness) newReconciler() *Reconciler {
	return &Reconciler{Client: env.Client, APIReader: env.Client, Recorder: h.events, Clock: h.clock, Analyzer: h.analyzer,
		Notifier: h.notifier, Options: Options{PollInterval: 2 * time.Second, ScrapeInterval: time.Second}}
}

// ns returns the name of namespace i of this test's fleet.
func (h *harness) ns(i int) string { return fmt.Sprintf("%s-ns-%d", h.id, i) }

// fleet creates n namespaces (labelled fleet=<id>, with labels and annotations) holding the
// sim's workloads.
func (h *harness) fleet(n int, labels, annotations map[string]string) {
	h.t.Helper()
	for i := 1; i <= n; i++ {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: h.ns(i), Labels: map[string]string{"fleet": h.id},
			Annotations: map[string]string{}}}
		for k, v := range labels {
			ns.Labels[k] = v
		}
		for k, v := range annotations {
			ns.Annotations[k] = v
		}
		if err := h.c.Create(h.ctx, ns); err != nil {
			h.t.Fatal(err)
		}
		h.sim.namespaces = append(h.sim.namespaces, ns.Name)
		h.sim.addWorkloads(h.t, ns.Name)
	}
	if err := h.sim.sync(h.ctx); err != nil {
		h.t.Fatal(err)
	}
}

// create creates the DataPlane, selecting this test's fleet (unless spec selects otherwise), and
// reconciles once: the controller adds its finalizer first. Cleanup deletes it and lets the
// controller finalize it.
func (h *harness) create(spec sluicev1.DataPlaneSpec) {
	h.t.Helper()
	if spec.NamespaceSelector == nil {
		spec.NamespaceSelector = &sluicev1.NamespaceSelector{MatchLabels: map[string]string{"fleet": h.id}}
	}
	dp := &sluicev1.DataPlane{ObjectMeta: metav1.ObjectMeta{Name: h.name}, Spec: spec}
	if err := h.c.Create(h.ctx, dp); err != nil {
		h.t.Fatal(err)
	}
	h.t.Cleanup(func() {
		ctx := context.Background()
		_ = env.Client.Delete(ctx, dp)
		_, _ = h.newReconciler().Reconcile(ctx, ctrl.Request{NamespacedName: client.ObjectKey{Name: h.name}})
	})
	if _, err := h.r.Reconcile(h.ctx, ctrl.Request{NamespacedName: client.ObjectKey{Name: h.name}}); err != nil {
		h.t.Fatal(err)
	}
}

func (h *harness) get() *sluicev1.DataPlane {
	h.t.Helper()
	dp := &sluicev1.DataPlane{}
	if err := h.c.Get(h.ctx, client.ObjectKey{Name: h.name}, dp); err != nil {
		h.t.Fatal(err)
	}
	return dp
}

// tick plays the cluster, reconciles once and moves the clock to the requeue time (at most 30s:
// watch events wake the controller up sooner in a real cluster).
func (h *harness) tick() ctrl.Result {
	h.t.Helper()
	if err := h.sim.sync(h.ctx); err != nil {
		h.t.Fatal(err)
	}
	before := h.get().Status
	res, err := h.r.Reconcile(h.ctx, ctrl.Request{NamespacedName: client.ObjectKey{Name: h.name}})
	if err != nil {
		h.t.Fatalf("Reconcile: %v", err)
	}
	h.note(before, h.get().Status)
	step := res.RequeueAfter
	if step <= 0 || step > 30*time.Second {
		step = 30 * time.Second
	}
	h.clock.Step(step)
	return res
}

func (h *harness) note(before, after sluicev1.DataPlaneStatus) {
	var phases []string
	changed := before.Phase != after.Phase || len(before.Waves) != len(after.Waves)
	for i, w := range after.Waves {
		phases = append(phases, string(w.Phase))
		if i < len(before.Waves) && before.Waves[i].Phase != w.Phase {
			changed = true
		}
	}
	if changed {
		h.log = append(h.log, fmt.Sprintf("%8s %s %v", h.clock.Now().Sub(h.start), after.Phase, phases))
	}
}

// runUntil ticks until the phase is one of want, or fails after max ticks.
func (h *harness) runUntil(max int, want ...sluicev1.DataPlanePhase) *sluicev1.DataPlane {
	h.t.Helper()
	for i := 0; i < max; i++ {
		h.tick()
		dp := h.get()
		for _, p := range want {
			if dp.Status.Phase == p {
				return dp
			}
		}
	}
	dp := h.get()
	h.t.Fatalf("phase %s after %d ticks, want %v\n%s\nevents:\n%s\nconditions: %+v", dp.Status.Phase, max, want,
		strings.Join(h.log, "\n"), strings.Join(h.events.all(), "\n"), dp.Status.Conditions)
	return nil
}

// namespaceObj reads namespace i.
func (h *harness) namespaceObj(i int) *corev1.Namespace {
	h.t.Helper()
	ns := &corev1.Namespace{}
	if err := h.c.Get(h.ctx, client.ObjectKey{Name: h.ns(i)}, ns); err != nil {
		h.t.Fatal(err)
	}
	return ns
}

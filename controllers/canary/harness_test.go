package canary

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"sluice.dev/sluice/analysis"
	sluicev1 "sluice.dev/sluice/api/v1alpha1"
	"sluice.dev/sluice/egress"
	"sluice.dev/sluice/providers"
	"sluice.dev/sluice/providers/gatewayapi"
	"sluice.dev/sluice/providers/istio"
	"sluice.dev/sluice/providers/kubernetes"
	"sluice.dev/sluice/test/testenv"
)

var env *testenv.Env

func TestMain(m *testing.M) { os.Exit(testenv.Run(m, &env)) }

// loopbackAllowed is the egress policy of the tests, whose Prometheus and receivers listen on
// 127.0.0.1: the default policy refuses loopback.
var loopbackAllowed = func() *egress.Policy {
	p, err := egress.NewPolicy(egress.Options{AllowTo: []string{egress.Loopback}})
	if err != nil {
		panic(err)
	}
	return p
}()

// scriptedAnalyzer answers analyses from a function of the canary's current weight; it stands in
// for Prometheus, which package analysis tests for real.
type scriptedAnalyzer struct {
	mu    sync.Mutex
	calls int
	fail  func(weight int32) bool
	// failIn fails every check the Canary takes in this phase (e.g. Promoting).
	failIn sluicev1.CanaryPhase
}

func (a *scriptedAnalyzer) Analyze(_ context.Context, c *sluicev1.Canary, now time.Time) (analysis.Check, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.calls++
	t := metav1.NewTime(now)
	if (a.fail != nil && a.fail(c.Status.CanaryWeight)) || (a.failIn != "" && c.Status.Phase == a.failIn) {
		return analysis.Check{Results: []sluicev1.MetricResult{{Name: "request-success-rate", Verdict: sluicev1.VerdictFail,
			Value: "80.00", ThresholdRange: "[99, +Inf]", CheckedAt: &t}}}, nil
	}
	return analysis.Check{Results: []sluicev1.MetricResult{{Name: "request-success-rate", Verdict: sluicev1.VerdictPass,
		Value: "99.90", ThresholdRange: "[99, +Inf]", CheckedAt: &t}}}, nil
}

func (a *scriptedAnalyzer) Ready(context.Context, *sluicev1.Canary) error { return nil }

func (a *scriptedAnalyzer) Calls() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.calls
}

// eventLog records events in memory.
type eventLog struct {
	mu     sync.Mutex
	events []string
}

func (e *eventLog) Eventf(_ runtime.Object, _ runtime.Object, eventtype, reason, _ string, note string, args ...interface{}) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.events = append(e.events, fmt.Sprintf("[%s] %s", reason, fmt.Sprintf(note, args...)))
}

func (e *eventLog) drain() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := e.events
	e.events = nil
	return out
}

// harness drives one Canary by calling Reconcile directly with a fake clock against the real
// apiserver, playing the Deployment controller between ticks.
type harness struct {
	t        *testing.T
	ctx      context.Context
	c        client.Client
	ns       string
	clock    *clocktesting.FakeClock
	start    time.Time
	r        *Reconciler
	analyzer *scriptedAnalyzer
	events   *eventLog
	log      []string
	last     sluicev1.CanaryStatus
	name     string
	provider sluicev1.Provider
	// nodes, when set, is the number of nodes tick plays the DaemonSet controller for.
	nodes int32
}

func newHarness(t *testing.T) *harness {
	return newHarnessFor(t, sluicev1.ProviderGatewayAPI)
}

// newHarnessFor drives Canaries on the given provider (seedCanary and friends use it).
func newHarnessFor(t *testing.T, provider sluicev1.Provider) *harness {
	testenv.Require(t, env)
	start := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	h := &harness{t: t, ctx: context.Background(), c: env.Client, ns: env.Namespace(t),
		clock: clocktesting.NewFakeClock(start), start: start, analyzer: &scriptedAnalyzer{}, events: &eventLog{},
		provider: provider}
	// The timelines show every transition the planner announces, steps included.
	h.r = h.reconciler(env.Client, Options{StepEvents: true})
	return h
}

// reconciler is a controller as a (re)started manager builds it, without a cache: c for every
// read and write (a faults client, a lagging cache), a router per provider over c, the
// harness's clock, events and analyzer, and loopbackAllowed unless opts has a policy.
func (h *harness) reconciler(c client.Client, opts Options) *Reconciler {
	if opts.Egress == nil {
		opts.Egress = loopbackAllowed
	}
	return &Reconciler{Client: c, Scheme: env.Scheme, Recorder: h.events, Clock: h.clock, Analyzer: h.analyzer,
		Routers: map[sluicev1.Provider]providers.Router{
			sluicev1.ProviderGatewayAPI: gatewayapi.New(c),
			sluicev1.ProviderIstio:      istio.New(c),
			sluicev1.ProviderKubernetes: kubernetes.New(c),
		},
		Options: opts}
}

// app creates a Deployment "podinfo" with a ConfigMap it mounts, at image tag.
func (h *harness) app(replicas int32, tag string) {
	h.t.Helper()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "podinfo-config", Namespace: h.ns},
		Data: map[string]string{"mode": "v1"}}
	dep := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "podinfo", Namespace: h.ns},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "podinfo"}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "podinfo"}},
				Spec: corev1.PodSpec{
					Containers: []corev1.Container{{Name: "app", Image: "ghcr.io/stefanprodan/podinfo:" + tag,
						EnvFrom: []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{
							LocalObjectReference: corev1.LocalObjectReference{Name: "podinfo-config"}}}}}},
				},
			},
		},
	}
	for _, o := range []client.Object{cm, dep} {
		if err := h.c.Create(h.ctx, o); err != nil {
			h.t.Fatalf("creating %s: %v", o.GetName(), err)
		}
	}
}

// canaryFor is seedCanary on the harness's provider.
func (h *harness) canaryFor() *sluicev1.Canary {
	c := seedCanary(h.ns)
	c.Spec.Provider = h.provider
	return c
}

// seedCanary is the Canary of seed 003 (stepWeight 10, maxWeight 50, threshold 5, success rate
// min 99, duration max 500 ms) with a 1m interval, on the Gateway API provider in mesh mode.
func seedCanary(ns string) *sluicev1.Canary {
	return &sluicev1.Canary{
		ObjectMeta: metav1.ObjectMeta{Name: "podinfo", Namespace: ns},
		Spec: sluicev1.CanarySpec{
			TargetRef: sluicev1.TargetReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "podinfo"},
			Provider:  sluicev1.ProviderGatewayAPI,
			Mesh:      sluicev1.MeshIstio,
			Service:   sluicev1.CanaryService{Port: 9898},
			Analysis: sluicev1.CanaryAnalysis{Interval: "1m", Threshold: 5, MaxWeight: 50, StepWeight: 10,
				Metrics: []sluicev1.CanaryMetric{
					{Name: sluicev1.MetricRequestSuccessRate, Interval: "1m", ThresholdRange: &sluicev1.ThresholdRange{Min: ptr.To(99.0)}},
					{Name: sluicev1.MetricRequestDuration, Interval: "1m", ThresholdRange: &sluicev1.ThresholdRange{Max: ptr.To(500.0)}},
				}},
		},
	}
}

func (h *harness) create(c *sluicev1.Canary) {
	h.t.Helper()
	h.name = c.Name
	if err := h.c.Create(h.ctx, c); err != nil {
		h.t.Fatalf("creating canary: %v", err)
	}
}

func (h *harness) canary() *sluicev1.Canary {
	h.t.Helper()
	c := &sluicev1.Canary{}
	if err := h.c.Get(h.ctx, client.ObjectKey{Namespace: h.ns, Name: h.name}, c); err != nil {
		h.t.Fatalf("reading canary: %v", err)
	}
	return c
}

func (h *harness) deployment(name string) *appsv1.Deployment {
	h.t.Helper()
	d := &appsv1.Deployment{}
	if err := h.c.Get(h.ctx, client.ObjectKey{Namespace: h.ns, Name: name}, d); err != nil {
		h.t.Fatalf("reading deployment %s: %v", name, err)
	}
	return d
}

// tick reconciles once, lets the simulated Deployment controller catch up, logs what changed and
// advances the clock to the requested requeue.
func (h *harness) tick() ctrl.Result {
	h.t.Helper()
	before := h.workloadVersions()
	res, err := h.r.Reconcile(h.ctx, ctrl.Request{NamespacedName: client.ObjectKey{Namespace: h.ns, Name: h.name}})
	if err != nil {
		h.t.Fatalf("reconcile at %s: %v", h.clock.Now().Sub(h.start), err)
	}
	markDeploymentsRolledOut(h.t, h.c, h.ns)
	if h.nodes > 0 {
		if err := testenv.MarkDaemonSetsRolledOut(h.ctx, h.c, h.ns, h.nodes, nil); err != nil {
			h.t.Fatal(err)
		}
	}
	h.record()
	h.clock.Step(h.nextTickIn(before, res.RequeueAfter))
	return res
}

func (h *harness) record() {
	s := h.canary().Status
	events := h.events.drain()
	if s.Phase == h.last.Phase && s.CanaryWeight == h.last.CanaryWeight && s.FailedChecks == h.last.FailedChecks && len(events) == 0 {
		return
	}
	w := h.routeWeights()
	line := fmt.Sprintf("%5s  %-12s canary=%-3d route=%d/%d failed=%d", h.clock.Now().Sub(h.start).Truncate(time.Second),
		s.Phase, s.CanaryWeight, w.Primary, w.Canary, s.FailedChecks)
	for _, e := range events {
		line += "  " + e
	}
	h.log = append(h.log, line)
	h.last = s
}

func (h *harness) routeWeights() providers.Weights {
	w, err := h.r.Routers[h.provider].GetRoutes(h.ctx, h.canary())
	if err != nil {
		return providers.Weights{Primary: -1, Canary: -1}
	}
	return w
}

// runUntil ticks until the Canary reaches phase, failing after max ticks.
func (h *harness) runUntil(phase sluicev1.CanaryPhase, max int) {
	h.t.Helper()
	for i := 0; i < max; i++ {
		h.tick()
		if h.last.Phase == phase {
			return
		}
	}
	h.t.Fatalf("phase %s after %d ticks, want %s\n%s", h.last.Phase, max, phase, strings.Join(h.log, "\n"))
}

// setConfig changes the data of the ConfigMap the target mounts, part of the target's revision.
func (h *harness) setConfig(mode string) {
	h.t.Helper()
	cm := &corev1.ConfigMap{}
	if err := h.c.Get(h.ctx, client.ObjectKey{Namespace: h.ns, Name: "podinfo-config"}, cm); err != nil {
		h.t.Fatalf("reading podinfo-config: %v", err)
	}
	patch := client.MergeFrom(cm.DeepCopy())
	cm.Data["mode"] = mode
	if err := h.c.Patch(h.ctx, cm, patch); err != nil {
		h.t.Fatalf("updating podinfo-config: %v", err)
	}
}

// primaryConfigMode is the "mode" the primary's copy of podinfo-config holds ("absent" when the
// copy does not exist).
func (h *harness) primaryConfigMode() string {
	h.t.Helper()
	cm := &corev1.ConfigMap{}
	err := h.c.Get(h.ctx, client.ObjectKey{Namespace: h.ns, Name: "podinfo-config-primary"}, cm)
	if apierrors.IsNotFound(err) {
		return "absent"
	}
	if err != nil {
		h.t.Fatalf("reading podinfo-config-primary: %v", err)
	}
	return cm.Data["mode"]
}

// setImage changes the target's image, starting a new revision.
func (h *harness) setImage(tag string) {
	h.t.Helper()
	d := h.deployment("podinfo")
	patch := client.MergeFrom(d.DeepCopy())
	d.Spec.Template.Spec.Containers[0].Image = "ghcr.io/stefanprodan/podinfo:" + tag
	if err := h.c.Patch(h.ctx, d, patch); err != nil {
		h.t.Fatalf("updating image: %v", err)
	}
}

// markDeploymentsRolledOut plays the Deployment controller once for ns (see testenv.MarkRolledOut).
func markDeploymentsRolledOut(t testing.TB, c client.Client, ns string) {
	t.Helper()
	if err := testenv.MarkRolledOut(context.Background(), c, ns); err != nil {
		t.Fatal(err)
	}
}

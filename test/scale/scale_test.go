package scale

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
	"sluice.dev/sluice/controllers/manager"
	"sluice.dev/sluice/test/testenv"
)

const (
	scaleCanaries   = 500
	scaleNamespaces = 10
	// scaleRuns Canaries get a new image for the active measurement, spread over the namespaces.
	scaleRuns = 50
	// scaleInterval is every Canary's analysis interval: a run's checks come this often (an idle
	// Canary is not reconciled on a timer).
	scaleInterval = 2 * time.Second
	// idleTicks is how many intervals the idle measurement lasts.
	idleTicks = 5
	// maxIdleRequestsPerCanaryTick is the design target (DESIGN §3: an idle Canary costs zero API
	// requests per tick) with room for a handful of stray requests in the whole window (at 500
	// Canaries and 5 ticks, 0.01 is 25 requests), never for a request per Canary.
	maxIdleRequestsPerCanaryTick = 0.01
	// scaleWorkers is the manager's MaxConcurrentReconciles.
	scaleWorkers = 4
)

// scaleManager is manager.New started in-process on a copy of the envtest config whose transport
// counts every request the manager sends.
type scaleManager struct {
	requests *requestCounter
}

func startScaleManager(t *testing.T) *scaleManager {
	t.Helper()
	counter := newRequestCounter()
	cfg := rest.CopyConfig(env.Config)
	cfg.Wrap(counter.wrap)
	ctx, cancel := context.WithCancel(context.Background())
	mgr, err := manager.New(ctx, cfg, manager.Options{MetricsAddr: "0", ProbeAddr: "0", SkipNameValidation: true,
		MaxConcurrentReconciles: scaleWorkers, MetricsServer: unreachableMetricsServer})
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("manager: %v", err)
		}
	})
	if !mgr.GetCache().WaitForCacheSync(ctx) {
		t.Fatal("manager cache did not sync")
	}
	return &scaleManager{requests: counter}
}

// startStandInT starts the cluster stand-in and stops it at cleanup.
func startStandInT(t *testing.T) *standIn {
	t.Helper()
	s, err := startStandIn(env)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.stop)
	return s
}

// canaryKey names Canary i: app-NNN in namespace scale-(i mod scaleNamespaces).
func canaryKey(i int) client.ObjectKey {
	return client.ObjectKey{Namespace: fmt.Sprintf("scale-%d", i%scaleNamespaces), Name: fmt.Sprintf("app-%03d", i)}
}

// createApps creates the namespaces and scaleCanaries applications, 8 at a time.
func createApps(t *testing.T, ctx context.Context) {
	t.Helper()
	for n := range scaleNamespaces {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("scale-%d", n)}}
		if err := env.Client.Create(ctx, ns); err != nil {
			t.Fatal(err)
		}
	}
	var next atomic.Int32
	errs := make(chan error, 8)
	for range 8 {
		go func() {
			for i := int(next.Add(1) - 1); i < scaleCanaries; i = int(next.Add(1) - 1) {
				k := canaryKey(i)
				if err := createApp(ctx, env.Client, k.Namespace, k.Name, scaleInterval); err != nil {
					errs <- err
					return
				}
			}
			errs <- nil
		}()
	}
	for range 8 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
}

// waitCanaries watches the Canaries through the stand-in's cache until done holds for each of
// keys, and returns when each first did. It fails the test on timeout, or when failed holds for
// one of them.
func waitCanaries(t *testing.T, ctx context.Context, s *standIn, keys []client.ObjectKey, timeout time.Duration, what string,
	done, failed func(*sluicev1.Canary) bool) map[client.ObjectKey]time.Time {
	t.Helper()
	want := map[client.ObjectKey]bool{}
	for _, k := range keys {
		want[k] = true
	}
	at := map[client.ObjectKey]time.Time{}
	deadline := time.Now().Add(timeout)
	lastLog := time.Now()
	for {
		items, err := s.canaries(ctx)
		if err != nil {
			t.Fatal(err)
		}
		now := time.Now()
		for i := range items {
			c := &items[i]
			k := client.ObjectKeyFromObject(c)
			if !want[k] {
				continue
			}
			if _, seen := at[k]; !seen && done(c) {
				at[k] = now
			}
			if failed != nil && failed(c) {
				t.Fatalf("canary %s while waiting for %s: phase %s, conditions %+v", k, what, c.Status.Phase, c.Status.Conditions)
			}
		}
		if len(at) == len(want) {
			return at
		}
		if now.After(deadline) {
			t.Fatalf("%d of %d canaries %s after %s; %s", len(at), len(want), what, timeout, describePending(items, want, at))
		}
		if now.Sub(lastLog) >= 10*time.Second {
			t.Logf("  %d of %d canaries %s", len(at), len(want), what)
			lastLog = now
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// describePending counts the pending Canaries by phase and shows the status of one of them.
func describePending(items []sluicev1.Canary, want map[client.ObjectKey]bool, at map[client.ObjectKey]time.Time) string {
	phases := map[sluicev1.CanaryPhase]int{}
	var example *sluicev1.Canary
	for i := range items {
		c := &items[i]
		k := client.ObjectKeyFromObject(c)
		if _, ok := at[k]; ok || !want[k] {
			continue
		}
		phases[c.Status.Phase]++
		if example == nil {
			example = c
		}
	}
	if example == nil {
		return "none pending"
	}
	return fmt.Sprintf("pending by phase %v; %s: %+v", phases, client.ObjectKeyFromObject(example), example.Status)
}

// repeatedEvents lists the events on the given Canaries that the apiserver holds as a series
// (the same reason and note recorded again within minutes): a transition announced more than
// once. It returns a count by reason and a few examples, or "" when there are none.
func repeatedEvents(t *testing.T, ctx context.Context, keys []client.ObjectKey) string {
	t.Helper()
	want := map[client.ObjectKey]bool{}
	namespaces := map[string]bool{}
	for _, k := range keys {
		want[k], namespaces[k.Namespace] = true, true
	}
	byReason := map[string]int{}
	var examples []string
	total := 0
	for ns := range namespaces {
		list := &eventsv1.EventList{}
		if err := env.Client.List(ctx, list, client.InNamespace(ns)); err != nil {
			t.Errorf("listing events: %v", err)
			return ""
		}
		for _, e := range list.Items {
			k := client.ObjectKey{Namespace: e.Regarding.Namespace, Name: e.Regarding.Name}
			if e.Regarding.Kind != "Canary" || !want[k] || e.Series == nil || e.Series.Count < 2 {
				continue
			}
			total++
			byReason[e.Reason]++
			if len(examples) < 3 {
				examples = append(examples, fmt.Sprintf("    %s %s x%d: %s", k, e.Reason, e.Series.Count, e.Note))
			}
		}
	}
	if total == 0 {
		return ""
	}
	return fmt.Sprintf("    %d events repeated, by reason %v\n%s", total, byReason, strings.Join(examples, "\n"))
}

// writeHeapProfile writes a heap profile to the file $SCALE_HEAPPROFILE names, if set, to see
// what the idle manager holds (go tool pprof -sample_index=inuse_space).
func writeHeapProfile(t *testing.T) {
	path := os.Getenv("SCALE_HEAPPROFILE")
	if path == "" {
		return
	}
	f, err := os.Create(path)
	if err != nil {
		t.Error(err)
		return
	}
	defer f.Close()
	if err := pprof.WriteHeapProfile(f); err != nil {
		t.Error(err)
	}
}

func phaseIs(p sluicev1.CanaryPhase) func(*sluicev1.Canary) bool {
	return func(c *sluicev1.Canary) bool { return c.Status.Phase == p }
}

// cpuWindow measures the CPU this process and the control plane use from start to end.
type cpuWindow struct {
	start              time.Time
	self, controlPlane time.Duration
	ok                 bool
}

func startCPU() cpuWindow {
	self, cp, ok := cpuTimes()
	return cpuWindow{start: time.Now(), self: self, controlPlane: cp, ok: ok}
}

// String gives the CPU used since start in cores (CPU seconds per second).
func (w cpuWindow) String() string {
	self, cp, ok := cpuTimes()
	if !ok || !w.ok {
		return "CPU not measured on this platform"
	}
	wall := time.Since(w.start).Seconds()
	return fmt.Sprintf("CPU: test process (manager) %.3f cores, apiserver+etcd %.3f cores",
		(self-w.self).Seconds()/wall, (cp-w.controlPlane).Seconds()/wall)
}

// TestScale500Canaries runs the production manager against 500 Canaries and measures the API
// requests it sends while they idle (the design target: none) and while 50 of them run, per
// Canary and analysis tick, by verb and resource, with heap, goroutines, CPU and timings.
func TestScale500Canaries(t *testing.T) {
	if testing.Short() {
		t.Skip("scale test: 500 Canaries on envtest (skipped under -short)")
	}
	testenv.Require(t, env)
	ctx := context.Background()
	base := readMem()

	// Setup: 500 applications; the manager initializes each (primary, services, route).
	m := startScaleManager(t)
	empty := readMem()
	s := startStandInT(t)
	setupStart := time.Now()
	createApps(t, ctx)
	created := time.Since(setupStart)
	keys := make([]client.ObjectKey, scaleCanaries)
	for i := range keys {
		keys[i] = canaryKey(i)
	}
	waitCanaries(t, ctx, s, keys, 150*time.Second, "Initialized", phaseIs(sluicev1.CanaryPhaseInitialized), nil)
	initialized := time.Since(setupStart)
	if err := s.waitSettled(30 * time.Second); err != nil {
		t.Fatal(err)
	}
	// The idle phase runs without the stand-in (nothing to play, and its cache would count in
	// the heap). The last initializations' requeues and events drain first: setup ends after an
	// interval without a request (or after 30 s; the idle assertion then reports the requests).
	s.stop()
	setup := m.requests.take()
	for quiet := time.Now().Add(30 * time.Second); time.Now().Before(quiet); {
		time.Sleep(scaleInterval)
		tail := m.requests.take()
		setup.add(tail)
		if tail.total() == 0 {
			break
		}
	}
	settled := time.Since(setupStart)

	// Idle: nothing the Canaries act on changes for idleTicks intervals. Idle is free: no Canary is
	// reconciled on a timer, only when something it watches changes; so that the zero requests
	// below come from Canaries that were looked at, every Canary is woken once at the start by an
	// annotation it does not act on (written by the test's uncounted client).
	before, err := readReconcileStats()
	if err != nil {
		t.Fatal(err)
	}
	idleCPU := startCPU()
	idleStart := time.Now()
	for i := range scaleCanaries {
		c := &sluicev1.Canary{}
		c.Namespace, c.Name = canaryKey(i).Namespace, canaryKey(i).Name
		touch := client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"annotations":{"scale.sluice.dev/idle-touch":"1"}}}`))
		if err := env.Client.Patch(ctx, c, touch); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(idleTicks*scaleInterval - time.Since(idleStart))
	idle := m.requests.take()
	idleCPUText := idleCPU.String()
	after, err := readReconcileStats()
	if err != nil {
		t.Fatal(err)
	}
	idleStats := after.since(before)
	mem := readMem()
	writeHeapProfile(t)

	// Active: a new image for scaleRuns Canaries; each runs 10..50 in steps of 10 and promotes.
	s = startStandInT(t)
	_ = m.requests.take()
	before, err = readReconcileStats()
	if err != nil {
		t.Fatal(err)
	}
	activeCPU := startCPU()
	runKeys := make([]client.ObjectKey, scaleRuns)
	runStart := time.Now()
	for i := range runKeys {
		runKeys[i] = canaryKey(i * (scaleCanaries / scaleRuns))
		if err := setImage(ctx, env.Client, runKeys[i].Namespace, runKeys[i].Name, "ghcr.io/stefanprodan/podinfo:6.0.1"); err != nil {
			t.Fatal(err)
		}
	}
	peakGoroutines := runtime.NumGoroutine()
	done := waitCanaries(t, ctx, s, runKeys, 150*time.Second, "Succeeded", func(c *sluicev1.Canary) bool {
		peakGoroutines = max(peakGoroutines, runtime.NumGoroutine())
		return c.Status.Phase == sluicev1.CanaryPhaseSucceeded
	}, phaseIs(sluicev1.CanaryPhaseFailed))
	runsWall := time.Since(runStart)
	activeCPUText := activeCPU.String()
	// Count the last transitions' requests and events too: until an interval without a request.
	active := m.requests.take()
	for quiet := time.Now().Add(30 * time.Second); time.Now().Before(quiet); {
		time.Sleep(scaleInterval)
		tail := m.requests.take()
		active.add(tail)
		if tail.total() == 0 {
			break
		}
	}
	after, err = readReconcileStats()
	if err != nil {
		t.Fatal(err)
	}
	activeStats := after.since(before)

	var runTime time.Duration
	checks := int32(0)
	for _, k := range runKeys {
		runTime += done[k].Sub(runStart)
		c := &sluicev1.Canary{}
		if err := env.Client.Get(ctx, k, c); err != nil {
			t.Fatal(err)
		}
		checks += c.Status.Iterations
	}
	runTicks := runTime.Seconds() / scaleInterval.Seconds()

	idleCanaryTicks := float64(scaleCanaries * idleTicks)
	t.Logf("Scale: %d Canaries in %d namespaces, interval %s, %d workers, provider gatewayapi (generated HTTPRoute), GOMAXPROCS %d",
		scaleCanaries, scaleNamespaces, scaleInterval, scaleWorkers, runtime.GOMAXPROCS(0))
	t.Logf("Setup: objects created in %s, all Initialized after %s, no request for an interval after %s; the manager sent %d requests (%.1f per Canary, %d refused):\n%s",
		created.Round(time.Millisecond), initialized.Round(time.Millisecond), settled.Round(time.Millisecond), setup.total(),
		float64(setup.total())/scaleCanaries, setup.refused(), setup.table(scaleCanaries, "per canary"))
	t.Logf("Idle: %d intervals (%s): %s (%.2f per Canary per interval); %s\n  %d requests, %.4f per Canary per tick (%.4f per reconcile):\n%s",
		idleTicks, idleTicks*scaleInterval, idleStats, idleStats.reconciles/idleCanaryTicks, idleCPUText, idle.total(),
		float64(idle.total())/idleCanaryTicks, float64(idle.total())/max(1, idleStats.reconciles), idle.table(idleCanaryTicks, "per canary-tick"))
	t.Logf("Memory after GC: live heap (HeapAlloc) %.1f MiB before the manager, %.1f MiB with the manager and no Canary, %.1f MiB with %d Canaries idle (%.1f KiB per Canary, %d objects); HeapInuse %.1f / %.1f / %.1f MiB; goroutines %d before, %d with no Canary, %d with %d Canaries",
		mib(base.heapAlloc), mib(empty.heapAlloc), mib(mem.heapAlloc), scaleCanaries,
		float64(mem.heapAlloc-empty.heapAlloc)/1024/scaleCanaries, mem.heapObjects,
		mib(base.heapInuse), mib(empty.heapInuse), mib(mem.heapInuse),
		base.goroutines, empty.goroutines, mem.goroutines, scaleCanaries)
	t.Logf("Active: %d runs (10..50 by 10, then promotion) beside %d idle Canaries: all Succeeded after %s (mean run %s), %d checks; %s; peak goroutines %d (with the stand-in); %s",
		scaleRuns, scaleCanaries-scaleRuns, runsWall.Round(time.Millisecond), (runTime / scaleRuns).Round(time.Millisecond),
		checks, activeStats, peakGoroutines, activeCPUText)
	t.Logf("Active: %d requests (%d refused), %.1f per run, %.2f per progressing Canary per tick (%.1f run-ticks), %.2f per check:\n%s",
		active.total(), active.refused(), float64(active.total())/scaleRuns, float64(active.total())/runTicks, runTicks,
		float64(active.total())/float64(max(1, checks)), active.table(runTicks, "per canary-tick"))

	// One Kubernetes event per transition, and no status patch refused: the controller never
	// decides from a cache that has not seen its own last status write. (A route write refused
	// with a conflict under load is retried and harmless; it is reported in the table above.)
	if dups := repeatedEvents(t, ctx, runKeys); dups != "" {
		t.Errorf("Events recorded more than once for one transition (a Kubernetes event whose series count is above 1):\n%s", dups)
	}
	if n := active.refusedOf("patch", "canaries/status"); n > 0 {
		t.Errorf("%d Canary status patches refused during the runs (decided from a stale cache):\n%s", n, active.table(runTicks, "per canary-tick"))
	}

	if got := float64(idle.total()) / idleCanaryTicks; got >= maxIdleRequestsPerCanaryTick {
		t.Errorf("idle Canaries cost %.4f API requests per Canary per tick, design target 0 (bound %.2f); requests:\n%s",
			got, maxIdleRequestsPerCanaryTick, idle.table(idleCanaryTicks, "per canary-tick"))
	}
	// The zero above must come from Canaries that were looked at: each was woken once. And idle is
	// free: nothing reconciles them on a timer (one periodic tick each would add
	// scaleCanaries*idleTicks reconciles; a tenth of one tick is the room left for strays).
	if idleStats.reconciles < scaleCanaries {
		t.Errorf("only %.0f idle reconciles of %d woken Canaries; the idle measurement did not look at them", idleStats.reconciles, scaleCanaries)
	}
	if idleStats.reconciles > scaleCanaries*1.1 {
		t.Errorf("%.0f idle reconciles in %d intervals of %d Canaries woken once: idle Canaries are reconciled on a timer", idleStats.reconciles, idleTicks, scaleCanaries)
	}
	if idleStats.errors > 0 || activeStats.errors > 0 {
		t.Errorf("reconcile errors: %.0f idle, %.0f active", idleStats.errors, activeStats.errors)
	}
}

package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"sluice.dev/sluice/controllers/scheme"
	"sluice.dev/sluice/test/cluster"
	"sluice.dev/sluice/test/testenv"

	"sluice.dev/sluice/test/managerproc"
)

// podsPerNode is what the benchmark plans per fake node (kwok nodes allow 110).
const podsPerNode = 100

// run brings everything up, measures, prints the report and tears everything down.
func run(ctx context.Context, c config) (err error) {
	dir, err := os.MkdirTemp("", "sluice-bench-")
	if err != nil {
		return err
	}
	defer func() {
		if c.keepLog != "" {
			if data, err := os.ReadFile(filepath.Join(dir, "manager.log")); err == nil {
				_ = os.WriteFile(c.keepLog, data, 0o644)
			}
		}
		os.RemoveAll(dir)
	}()
	say("building the manager")
	bin, err := managerproc.Build(ctx, testenv.RepoRoot(), dir)
	if err != nil {
		return err
	}
	pods := c.n*max(c.replicas, 1) + c.n // primaries and targets (during the release)
	nodes := pods/podsPerNode + 1
	say("starting the local cluster (%d fake nodes)", nodes)
	cl, err := cluster.Start(ctx, cluster.Options{Dir: filepath.Join(dir, "cluster"), Nodes: nodes,
		ControllerManagerArgs: c.controllerManagerArgs, KwokPodParallelism: c.kwokParallelism,
		ComponentGOGC: c.componentGOGC})
	if err != nil {
		return err
	}
	defer func() {
		say("stopping the local cluster")
		err = errors.Join(err, cl.Stop())
	}()
	cfg := cl.RESTConfig()
	cfg.QPS, cfg.Burst = 500, 1000
	paths, err := testenv.CRDPaths()
	if err != nil {
		return err
	}
	if _, err := envtest.InstallCRDs(cfg, envtest.CRDInstallOptions{Paths: paths, ErrorIfPathMissing: true}); err != nil {
		return fmt.Errorf("installing CRDs: %w", err)
	}
	k, err := client.New(cfg, client.Options{Scheme: scheme.New()})
	if err != nil {
		return err
	}
	as := apps(c.n, c.perNamespace)
	for _, ns := range namespaces(as) {
		if err := create(ctx, k, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
			return err
		}
	}
	tr, err := startTracker(ctx, cfg)
	if err != nil {
		return err
	}

	say("starting the manager (%s)", c.managerArgs.String())
	m, err := managerproc.Start(ctx, managerproc.Options{Bin: bin, Kubeconfig: cl.Kubeconfig(), LogPath: filepath.Join(dir, "manager.log"),
		PodName: "sluice-bench-0", Args: c.managerArgs})
	if err != nil {
		return err
	}
	defer m.Stop()
	sampler := startSampler(ctx, m)
	r := &report{cfg: c, start: time.Now(), cores: runtime.NumCPU(), pids: cl.PIDs()}
	r.pids[managerName] = m.PID()
	if r.apiserver, err = newAPIServerScraper(cfg); err != nil {
		return err
	}
	time.Sleep(5 * time.Second)
	r.rssEmpty = sampler.now().RSSBytes

	if err := createWorkloads(ctx, c, k, tr, m, as); err != nil {
		return err
	}
	r.rssWorkloads = sampler.now().RSSBytes
	if err := initialize(ctx, c, k, tr, m, sampler, as, r); err != nil {
		return err
	}
	if err := measureIdle(ctx, c, m, tr, sampler, r); err != nil {
		return err
	}
	if c.rollout {
		if err := release(ctx, c, k, tr, m, sampler, as, r); err != nil {
			return err
		}
	}
	last, err := m.Scrape()
	if err != nil {
		return err
	}
	r.throttled = last.Sum("sluice_kube_api_throttled_requests_total")
	r.throttleSeconds = last.Sum("sluice_kube_api_throttle_seconds_total")
	r.tooManyBy = requests{}
	for k, v := range last.ByLabels("sluice_kube_api_requests_total", "code", "verb", "resource") {
		if req, ok := strings.CutPrefix(k, "429 "); ok {
			r.tooManyBy[req] += v
		}
	}
	r.goroutines = last.Sum("go_goroutines")
	r.heapInuse = last.Sum("go_memstats_heap_inuse_bytes")
	for _, p := range r.profiles {
		if path, ok := <-p; ok {
			r.profilePaths = append(r.profilePaths, path)
		}
	}
	r.print(os.Stdout)
	return nil
}

// createWorkloads creates every application's ConfigMap and Deployment and waits until their pods
// are available.
func createWorkloads(ctx context.Context, c config, k client.Client, tr *tracker, m *managerproc.Proc, as []app) error {
	say("creating %d applications (ConfigMap, Deployment with %d pod(s))", len(as), c.replicas)
	err := forEach(ctx, as, c.workers, func(ctx context.Context, a app) error {
		cm, dep := workload(a, int32(c.replicas))
		if err := create(ctx, k, cm); err != nil {
			return err
		}
		return create(ctx, k, dep)
	})
	if err != nil {
		return err
	}
	return waitFor(ctx, c.timeout, "targets available", m, func() (bool, string) {
		n := tr.targetsReady(ctx)
		return n == len(as), fmt.Sprintf("%d/%d available", n, len(as))
	})
}

// initialize creates every Canary at once and waits until all are Initialized and the manager is
// quiet.
func initialize(ctx context.Context, c config, k client.Client, tr *tracker, m *managerproc.Proc, s *sampler, as []app, r *report) error {
	before, err := m.Scrape()
	if err != nil {
		return err
	}
	apiBefore, err := r.apiserver.requests(ctx)
	if err != nil {
		return err
	}
	say("creating %d Canaries", len(as))
	s.resetPeak()
	cpu0 := cpuNow(r.pids)
	start := time.Now()
	if err := forEach(ctx, as, c.workers, func(ctx context.Context, a app) error {
		return create(ctx, k, canaryOf(a, c.interval, ""))
	}); err != nil {
		return err
	}
	r.canariesCreated = time.Since(start)
	profiling := false
	if err := waitFor(ctx, c.timeout, "initialization", m, func() (bool, string) {
		n := len(tr.initializedTimes())
		if !profiling && n >= len(as)/4 {
			profiling = true
			r.profiles = append(r.profiles, apiserverProfile(ctx, r.apiserver, c.profiles, "apiserver-initialization", 0, 30*time.Second))
		}
		return n == len(as), fmt.Sprintf("%d/%d Initialized, phases %v", n, len(as), tr.phases(ctx))
	}); err != nil {
		return err
	}
	r.initTimes = tr.initializedTimes()
	r.initStart = start
	r.initCPU = cpuShare(cpu0, cpuNow(r.pids), time.Since(start), r.cores)
	r.rssInitPeak = s.peak().RSSBytes
	settled, err := waitQuiet(ctx, m, 10*time.Second, 3*time.Minute)
	if err != nil {
		return err
	}
	after, err := m.Scrape()
	if err != nil {
		return err
	}
	r.initRequests = delta(before, after)
	apiAfter, err := r.apiserver.requests(ctx)
	if err != nil {
		return err
	}
	r.initAPIServer = apiserverShare(apiBefore, apiAfter, r.initRequests.canaryTotal(), float64(len(as)), "Canary")
	r.initFailures = failures(before, after)
	r.initThrottled = throttledBetween(before, after)
	r.initQueue = canaryQueue(before, after)
	r.settled = settled
	return nil
}

// measureIdle measures the manager while nothing changes.
func measureIdle(ctx context.Context, c config, m *managerproc.Proc, tr *tracker, s *sampler, r *report) error {
	say("idle for %s", c.idle)
	tr.countWatchEvents(true)
	defer func() { r.idleWatchEvents = tr.countWatchEvents(false) }()
	before, err := m.Scrape()
	if err != nil {
		return err
	}
	p0, err := m.Stats()
	if err != nil {
		return err
	}
	t0 := time.Now()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(c.idle):
	}
	p1, err := m.Stats()
	if err != nil {
		return err
	}
	after, err := m.Scrape()
	if err != nil {
		return err
	}
	r.idleWall = time.Since(t0)
	r.idleCPU = p1.CPU - p0.CPU
	r.idleRequests = delta(before, after)
	r.idleReconciles = after.Sum("controller_runtime_reconcile_total", "controller", "canary") -
		before.Sum("controller_runtime_reconcile_total", "controller", "canary")
	// By result: "requeue_after" ticks asked for a later look (a timer), "success" ones did not (a
	// watch event woke them).
	r.idleReconcilesByResult = map[string]float64{}
	was := before.ByLabels("controller_runtime_reconcile_total", "controller", "result")
	for k, v := range after.ByLabels("controller_runtime_reconcile_total", "controller", "result") {
		if result, ok := strings.CutPrefix(k, "canary "); ok && v > was[k] {
			r.idleReconcilesByResult[result] = v - was[k]
		}
	}
	r.rssIdle = p1.RSSBytes
	r.heapIdle = after.Sum("go_memstats_heap_inuse_bytes")
	return m.Alive()
}

// waitQuiet waits until the manager sent no request (leases aside) for quiet, at most limit,
// and returns how long it waited.
func waitQuiet(ctx context.Context, m *managerproc.Proc, quiet, limit time.Duration) (time.Duration, error) {
	start := time.Now()
	last, err := m.Scrape()
	if err != nil {
		return 0, err
	}
	lastChange := time.Now()
	for time.Since(start) < limit {
		select {
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-time.After(time.Second):
		}
		now, err := m.Scrape()
		if err != nil {
			return 0, err
		}
		if delta(last, now).canaryTotal() > 0 {
			lastChange = time.Now()
		}
		last = now
		if time.Since(lastChange) >= quiet {
			break
		}
	}
	return time.Since(start), nil
}

// sampler samples the manager's RSS and CPU every second, keeping the peak RSS.
type sampler struct {
	m       *managerproc.Proc
	mu      sync.Mutex
	last    managerproc.Stats
	maxSeen managerproc.Stats
}

func startSampler(ctx context.Context, m *managerproc.Proc) *sampler {
	s := &sampler{m: m}
	go func() {
		for ctx.Err() == nil {
			if st, err := m.Stats(); err == nil {
				s.mu.Lock()
				s.last = st
				if st.RSSBytes > s.maxSeen.RSSBytes {
					s.maxSeen = st
				}
				s.mu.Unlock()
			}
			time.Sleep(time.Second)
		}
	}()
	return s
}

func (s *sampler) now() managerproc.Stats {
	st, err := s.m.Stats()
	if err != nil {
		s.mu.Lock()
		defer s.mu.Unlock()
		return s.last
	}
	return st
}

func (s *sampler) peak() managerproc.Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.maxSeen
}

func (s *sampler) resetPeak() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.maxSeen = managerproc.Stats{}
}

// throttledBetween is the growth of the client-side throttling counter from a to b.
func throttledBetween(a, b managerproc.Metrics) float64 {
	return b.Sum("sluice_kube_api_throttled_requests_total") - a.Sum("sluice_kube_api_throttled_requests_total")
}

package e2e

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"sluice.dev/sluice/analysis"
	sluicev1 "sluice.dev/sluice/api/v1alpha1"
	"sluice.dev/sluice/controllers/dataplane"
	"sluice.dev/sluice/controllers/scheme"
	"sluice.dev/sluice/egress"
	"sluice.dev/sluice/mesh"
	"sluice.dev/sluice/notify"
	"sluice.dev/sluice/test/cluster"
	"sluice.dev/sluice/test/controlplane"
	"sluice.dev/sluice/test/promtest"
	"sluice.dev/sluice/test/stack"
	"sluice.dev/sluice/test/testenv"
)

// The seed's upgrade: the control plane moves from edge-26.6.3 to edge-26.8.3, the data plane
// follows, wave by wave; edge-26.9.0 is the next edit.
const (
	proxyOld  = "edge-26.6.3"
	proxyNew  = "edge-26.8.3"
	proxyNext = "edge-26.9.0"
)

// dpEnv is the local cluster (kube-controller-manager, kube-scheduler, kwok) with the simulated
// Linkerd control plane as real Deployments, the simulated injector following them, optionally a
// real Prometheus scraping a per-namespace health exporter, and the DataPlane controller run in
// this process (stopped and started again at will).
type dpEnv struct {
	cluster  *cluster.Cluster
	cfg      *rest.Config
	c        client.Client
	prom     *promtest.Server
	health   *healthExporter
	notifier *countingNotifier
	events   *eventCounter
	pods     *podLog
	stopMgr  func()
}

type dpEnvOptions struct {
	// failurePolicy of the injector's webhook (default Fail).
	failurePolicy admissionregistrationv1.FailurePolicyType
	// prometheus starts Prometheus, the health exporter and the fleet-health MetricTemplate.
	prometheus bool
	// podReadyDelay makes rollouts gradual (kwok's pod-ready delay).
	podReadyDelay time.Duration
}

// controllerLog keeps the controller's log lines (JSON); a failed test prints the last ones.
var controllerLog = &lineBuffer{}

type lineBuffer struct {
	mu    sync.Mutex
	lines []string
}

func (b *lineBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.lines = append(b.lines, strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

func (b *lineBuffer) tail(n int) string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return strings.Join(b.lines[max(0, len(b.lines)-n):], "\n")
}

var setLogger sync.Once

func startDPEnv(t *testing.T, o dpEnvOptions) *dpEnv {
	t.Helper()
	if testing.Short() {
		t.Skip("end-to-end: needs the local cluster")
	}
	ctx := context.Background()
	setLogger.Do(func() { ctrl.SetLogger(zap.New(zap.WriteTo(controllerLog))) })
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("last controller log lines:\n%s", controllerLog.tail(60))
		}
	})
	c, err := cluster.Start(ctx, cluster.Options{Injector: &cluster.InjectorOptions{Version: proxyOld, FailurePolicy: o.failurePolicy},
		PodReadyDelay: o.podReadyDelay, Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	pids := c.PIDs()
	e := &dpEnv{cluster: c, cfg: c.RESTConfig(), notifier: &countingNotifier{}, events: &eventCounter{},
		pods: &podLog{seen: map[string][]podIncarnation{}}}
	t.Cleanup(func() {
		if e.stopMgr != nil {
			e.stopMgr()
		}
		if err := c.Stop(); err != nil {
			t.Errorf("stopping the cluster: %v", err)
		}
		for name, pid := range pids {
			if cluster.ProcessRunning(pid) {
				t.Errorf("%s (pid %d) still running after Stop", name, pid)
			}
		}
	})
	paths, err := testenv.CRDPaths()
	must(t, err)
	_, err = envtest.InstallCRDs(e.cfg, envtest.CRDInstallOptions{Paths: paths, ErrorIfPathMissing: true})
	must(t, err)
	e.c, err = client.New(e.cfg, client.Options{Scheme: scheme.New()})
	must(t, err)
	e.watchPods(t)
	must(t, controlplane.InstallLinkerd(ctx, e.c, proxyOld))
	e.waitControlPlane(t, proxyOld)
	if o.prometheus {
		e.health = startHealthExporter(t)
		e.prom = promtest.StartT(t, promtest.Config{ScrapeTargets: []string{e.health.addr}, ScrapeInterval: time.Second})
		wctx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		if err := e.prom.WaitForQuery(wctx, `fleet_health`); err != nil {
			t.Fatalf("waiting for the first scrape: %v", err)
		}
		must(t, e.c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "sluice-system"}}))
		must(t, e.c.Create(ctx, &sluicev1.MetricTemplate{ObjectMeta: metav1.ObjectMeta{Name: "fleet-health", Namespace: "sluice-system"},
			Spec: sluicev1.MetricTemplateSpec{Provider: sluicev1.MetricTemplateProvider{Address: e.prom.Address()},
				Query: `min(fleet_health{namespace="{{ .namespace }}"})`}}))
	}
	return e
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// waitControlPlane waits until every control-plane Deployment runs version and is available.
func (e *dpEnv) waitControlPlane(t *testing.T, version string) {
	t.Helper()
	e.waitFor(t, time.Minute, "control plane on "+version, func() (bool, string) {
		var deps appsv1.DeploymentList
		must(t, e.c.List(context.Background(), &deps, client.InNamespace(controlplane.Namespace)))
		st := mesh.LinkerdControlPlane(deps.Items, controlplane.Namespace, version)
		return st.Ready, st.Message
	})
}

// upgradeControlPlane moves the control plane to version as `linkerd upgrade | kubectl apply`
// does and waits until it runs it.
func (e *dpEnv) upgradeControlPlane(t *testing.T, version string) {
	t.Helper()
	must(t, controlplane.UpgradeLinkerd(context.Background(), e.c, version))
	e.waitControlPlane(t, version)
}

// waitFor polls ok every 200ms until it holds or timeout passes.
func (e *dpEnv) waitFor(t *testing.T, timeout time.Duration, what string, ok func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		done, why := ok()
		if done {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("not %s within %s: %s", what, timeout, why)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// startManager runs a manager with the DataPlane controller, its analysis reading Prometheus,
// counting notifications and events.
func (e *dpEnv) startManager(t *testing.T) {
	t.Helper()
	mgr, err := ctrl.NewManager(e.cfg, ctrl.Options{Scheme: scheme.New(), Metrics: metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0", Controller: config.Controller{SkipNameValidation: ptr.To(true)}})
	must(t, err)
	addr := "http://127.0.0.1:1"
	if e.prom != nil {
		addr = e.prom.Address()
	}
	loopback, err := egress.NewPolicy(egress.Options{AllowTo: []string{egress.Loopback}}) // Prometheus is on 127.0.0.1
	must(t, err)
	r := &dataplane.Reconciler{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Recorder: e.events,
		Clock: clock.RealClock{}, Notifier: e.notifier,
		Analyzer: analysis.NewEngine(mgr.GetClient(), analysis.Options{DefaultAddress: addr, ScrapeInterval: time.Second, Egress: loopback}),
		Options:  dataplane.Options{PollInterval: time.Second, ScrapeInterval: time.Second}}
	ctx, cancel := context.WithCancel(context.Background())
	must(t, r.SetupWithManager(ctx, mgr, 2))
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	e.stopMgr = func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("manager: %v", err)
		}
		e.stopMgr = nil
	}
}

func (e *dpEnv) restartManager(t *testing.T) {
	t.Helper()
	if e.stopMgr != nil {
		e.stopMgr()
	}
	e.startManager(t)
}

// namespace creates a meshed namespace of fleet with every workload kind: a Deployment "web" (2
// replicas), an OnDelete StatefulSet "db" (2) behind a PodDisruptionBudget, a rolling
// StatefulSet "cache" (1), a rolling DaemonSet "agent" (one pod per node) and a Job "migrate";
// its health gauge (when Prometheus runs) is 1.
func (e *dpEnv) namespace(t *testing.T, name, fleet string) {
	t.Helper()
	ctx := context.Background()
	must(t, e.c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name,
		Labels: map[string]string{mesh.LinkerdInject: "enabled", "fleet": fleet}}}))
	for _, o := range stack.FleetWorkloads(name) {
		must(t, e.c.Create(ctx, o))
	}
	if e.health != nil {
		e.health.set(name, 1)
	}
}

// podsPerNamespace is how many meshed pods a fleet namespace runs: web 2, db 2, cache 1, agent 2.
const podsPerNamespace = stack.PodsPerNamespace

// waitFleetReady waits until every workload of the fleet's n namespaces is ready and every Job
// done, all pods meshed.
func (e *dpEnv) waitFleetReady(t *testing.T, namespaces []string, version string) {
	t.Helper()
	e.waitFor(t, 2*time.Minute, "fleet ready on "+version, func() (bool, string) {
		for _, ns := range namespaces {
			if v := e.versions(t, ns); v != fmt.Sprintf("[%s x%d]", version, podsPerNamespace) {
				return false, ns + " runs " + v
			}
		}
		return true, ""
	})
}

// createDataPlane creates the DataPlane "linkerd" over the namespaces labelled fleet=fleet.
func (e *dpEnv) createDataPlane(t *testing.T, fleet string, mutate func(*sluicev1.DataPlaneSpec)) {
	t.Helper()
	spec := sluicev1.DataPlaneSpec{Mesh: sluicev1.MeshLinkerd, Version: proxyNew, BakeTime: "4s", MaxUnavailable: ptr.To[int32](3),
		NamespaceSelector: &sluicev1.NamespaceSelector{MatchLabels: map[string]string{"fleet": fleet}},
		Analysis: sluicev1.DataPlaneAnalysis{Alerts: []sluicev1.CanaryAlert{{Name: "oncall",
			ProviderRef: sluicev1.CrossNamespaceObjectReference{Name: "oncall", Namespace: "ops"}}}}}
	if mutate != nil {
		mutate(&spec)
	}
	must(t, e.c.Create(context.Background(), &sluicev1.DataPlane{ObjectMeta: metav1.ObjectMeta{Name: "linkerd"}, Spec: spec}))
}

func (e *dpEnv) get(t *testing.T) *sluicev1.DataPlane {
	t.Helper()
	dp := &sluicev1.DataPlane{}
	must(t, e.c.Get(context.Background(), client.ObjectKey{Name: "linkerd"}, dp))
	return dp
}

// setVersion edits spec.version, as a GitOps commit would.
func (e *dpEnv) setVersion(t *testing.T, version string) {
	t.Helper()
	dp := e.get(t)
	patch := client.MergeFrom(dp.DeepCopy())
	dp.Spec.Version = version
	must(t, e.c.Patch(context.Background(), dp, patch))
}

// waitPhase waits until the DataPlane reaches one of phases for the declared version.
func (e *dpEnv) waitPhase(t *testing.T, timeout time.Duration, phases ...sluicev1.DataPlanePhase) *sluicev1.DataPlane {
	t.Helper()
	var dp *sluicev1.DataPlane
	e.waitFor(t, timeout, fmt.Sprint(phases), func() (bool, string) {
		dp = e.get(t)
		return dp.Status.Version == dp.Spec.Version && slices.Contains(phases, dp.Status.Phase), describe(dp)
	})
	return dp
}

func describe(dp *sluicev1.DataPlane) string {
	s := dp.Status
	var b strings.Builder
	fmt.Fprintf(&b, "\n  %s version %s wave %d pods %d/%d cp %+v\n", s.Phase, s.Version, s.CurrentWave, s.Current, s.Desired, s.ControlPlane)
	for i, w := range s.Waves {
		fmt.Fprintf(&b, "  wave %d %v %s pods %d/%d restarted %d evicted %d %s %s\n", i, w.Namespaces, w.Phase, w.Current, w.Desired,
			w.Restarted, w.Evicted, w.Reason, w.Message)
	}
	fmt.Fprintf(&b, "  last update %s %s\n  unmanaged %v unmeshed %v drifted %v\n", s.LastUpdateAttemptResult, s.LastUpdateAttemptMessage,
		s.UnmanagedPods, s.UnmeshedPods, s.DriftedPods)
	for _, c := range s.Conditions {
		fmt.Fprintf(&b, "  %s=%s %s: %s\n", c.Type, c.Status, c.Reason, c.Message)
	}
	return b.String()
}

// versions returns the proxy versions of the running meshed non-Job pods of ns, e.g.
// "[edge-26.8.3 x7]"; pods that should be meshed and are not count as "no-proxy".
func (e *dpEnv) versions(t *testing.T, ns string) string {
	t.Helper()
	var list corev1.PodList
	must(t, e.c.List(context.Background(), &list, client.InNamespace(ns)))
	counts := map[string]int{}
	for i := range list.Items {
		p := &list.Items[i]
		if mesh.JobOwned(p) || !mesh.Live(p) || p.Status.Phase != corev1.PodRunning {
			continue
		}
		if proxy, ok := mesh.Detect(p, sluicev1.MeshLinkerd); ok {
			counts[proxy.Version]++
		} else {
			counts["no-proxy"]++
		}
	}
	var out []string
	for v, n := range counts {
		out = append(out, fmt.Sprintf("%s x%d", v, n))
	}
	sort.Strings(out)
	return fmt.Sprint(out)
}

func (e *dpEnv) nsPin(t *testing.T, name string) (string, bool) {
	t.Helper()
	ns := &corev1.Namespace{}
	must(t, e.c.Get(context.Background(), client.ObjectKey{Name: name}, ns))
	v, ok := ns.Annotations[mesh.LinkerdPinAnnotation]
	return v, ok
}

// podIncarnation is one pod that carried a name, the proxy version it was created with, and
// the order in which the test saw it appear.
type podIncarnation struct {
	uid, version string
	seq          int
}

// podLog records every incarnation of each pod name, from a pod informer that runs for the whole
// test.
type podLog struct {
	mu   sync.Mutex
	seen map[string][]podIncarnation
	seq  int
}

func (l *podLog) add(p *corev1.Pod) {
	l.mu.Lock()
	defer l.mu.Unlock()
	key := p.Namespace + "/" + p.Name
	for _, x := range l.seen[key] {
		if x.uid == string(p.UID) {
			return
		}
	}
	v := "no-proxy"
	if proxy, ok := mesh.Detect(p, sluicev1.MeshLinkerd); ok {
		v = proxy.Version
	}
	l.seq++
	l.seen[key] = append(l.seen[key], podIncarnation{uid: string(p.UID), version: v, seq: l.seq})
}

// all returns every pod's incarnations, keyed by namespace/name.
func (l *podLog) all() map[string][]podIncarnation {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := map[string][]podIncarnation{}
	for k, v := range l.seen {
		out[k] = append([]podIncarnation(nil), v...)
	}
	return out
}

func (e *dpEnv) watchPods(t *testing.T) {
	t.Helper()
	cs, err := kubernetes.NewForConfig(e.cfg)
	must(t, err)
	factory := informers.NewSharedInformerFactory(cs, 0)
	inf := factory.Core().V1().Pods().Informer()
	_, err = inf.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: func(obj any) {
		if p, ok := obj.(*corev1.Pod); ok {
			e.pods.add(p)
		}
	}})
	must(t, err)
	stop := make(chan struct{})
	factory.Start(stop)
	factory.WaitForCacheSync(stop)
	t.Cleanup(func() { close(stop); factory.Shutdown() })
}

// countingNotifier records the notifications the controller sends (their events without the
// "DataPlane" prefix); it stands in for the AlertProvider of the DataPlane's one alert.
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

// eventCounter records the DataPlane's events as "Reason: message".
type eventCounter struct {
	mu  sync.Mutex
	all []string
}

func (e *eventCounter) Eventf(_ runtime.Object, _ runtime.Object, _, reason, _ string, note string, args ...interface{}) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.all = append(e.all, reason+": "+fmt.Sprintf(note, args...))
}

func (e *eventCounter) with(reason string) []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []string
	for _, x := range e.all {
		if strings.HasPrefix(x, reason+": ") {
			out = append(out, x)
		}
	}
	return out
}

package e2e

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
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
	"sluice.dev/sluice/controllers/dataplane/waves"
	"sluice.dev/sluice/controllers/scheme"
	"sluice.dev/sluice/mesh"
	"sluice.dev/sluice/test/cluster"
	"sluice.dev/sluice/test/injector"
	"sluice.dev/sluice/test/promtest"
	"sluice.dev/sluice/test/testenv"
)

// The seed's upgrade: the control plane moved from edge-26.6.3 to edge-26.8.3, the data plane
// follows, wave by wave.
const (
	proxyOld = "edge-26.6.3"
	proxyNew = "edge-26.8.3"
	bake     = 6 * time.Second
)

// TestDataPlaneLinkerdFleet runs two fleets of six meshed namespaces on the local cluster
// (kube-controller-manager, kwok, the simulated Linkerd injector), each namespace with a
// Deployment, an OnDelete StatefulSet behind a PodDisruptionBudget, a rolling DaemonSet and a Job,
// gated by a MetricTemplate over a per-namespace health gauge that a real Prometheus scrapes from
// a test exporter:
//
//   - fleet "ns-N" succeeds: canary ns-1 upgraded and baked before any other namespace restarts,
//     then waves of 2; the controller is restarted in the middle of wave 1;
//   - fleet "fail-ns-N" fails in its second wave (fail-ns-3's health is 0): that wave's pods all
//     run edge-26.6.3 again, later waves never start, one alert.
//
// Both fleets must restart no workload twice per direction: Deployment revisions, DaemonSet
// controller revisions and the UIDs each StatefulSet pod name had are counted at the end.
func TestDataPlaneLinkerdFleet(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end: needs the local cluster")
	}
	e := startFleetEnv(t)
	for _, prefix := range []string{"ns", "fail-ns"} {
		for i := 1; i <= 6; i++ {
			e.namespace(t, fmt.Sprintf("%s-%d", prefix, i), prefix)
		}
	}
	e.waitFleetReady(t, 12)
	initial := e.podUIDs(t)
	for ns, uids := range initial {
		if versions := e.versions(t, ns); versions != "[edge-26.6.3 x6]" {
			t.Fatalf("%s starts on %s (%d pods)", ns, versions, len(uids))
		}
	}
	jobs := e.jobPods(t)

	// The control plane moves first; a DataPlane then moves each fleet's data plane.
	e.cluster.Injector().SetVersion(proxyNew)
	e.health.set("fail-ns-3", 0)
	start := time.Now()
	e.startManager(t)
	e.create(t, "fleet", "ns")
	e.create(t, "fleet-failing", "fail-ns")

	// Restart the controller once wave 1 of the succeeding fleet has restarted something.
	restarted := false
	var sawCanaryBaking bool
	deadline := time.Now().Add(4 * time.Minute)
	for {
		ok, failing := e.get(t, "fleet"), e.get(t, "fleet-failing")
		if w := wave(ok, 0); w != nil && w.Phase == sluicev1.WaveBaking && !sawCanaryBaking {
			sawCanaryBaking = true
			// While the canary namespace bakes, no other namespace of its fleet has restarted.
			now := e.podUIDs(t)
			for i := 2; i <= 6; i++ {
				ns := fmt.Sprintf("ns-%d", i)
				if !slices.Equal(now[ns], initial[ns]) {
					t.Errorf("%s restarted while the canary wave baked", ns)
				}
			}
		}
		if w := wave(ok, 1); !restarted && w != nil && w.Phase == sluicev1.WaveRestarting && w.Restarted > 0 {
			t.Logf("restarting the controller in wave 1 (%d workloads restarted so far)", w.Restarted)
			e.stopManager(t)
			e.startManager(t)
			restarted = true
		}
		done := ok.Status.Phase == sluicev1.DataPlaneUpToDate && failing.Status.Phase == sluicev1.DataPlaneRolledBack
		if done || time.Now().After(deadline) {
			if !done {
				t.Fatalf("after %s: fleet %s, fleet-failing %s\n%s\n%s", time.Since(start).Round(time.Second),
					ok.Status.Phase, failing.Status.Phase, describe(ok), describe(failing))
			}
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Logf("both upgrades finished after %s", time.Since(start).Round(time.Second))
	if !restarted || !sawCanaryBaking {
		t.Fatalf("controller restarted %v, canary bake seen %v", restarted, sawCanaryBaking)
	}
	ok, failing := e.get(t, "fleet"), e.get(t, "fleet-failing")
	t.Log("fleet:\n" + describe(ok))
	t.Log("fleet-failing:\n" + describe(failing))

	t.Run("Succeeds", func(t *testing.T) {
		s := ok.Status
		running := 0
		for i := 1; i <= 6; i++ {
			ns := fmt.Sprintf("ns-%d", i)
			if v := e.versions(t, ns); v != "[edge-26.8.3 x6]" {
				t.Errorf("%s runs %s", ns, v)
			}
			running += e.runningMeshed(t, ns)
		}
		if s.Desired != int32(running) || s.Current != int32(running) || running != 36 {
			t.Errorf("DESIRED %d CURRENT %d, running meshed pods %d (want 36)", s.Desired, s.Current, running)
		}
		// The canary wave baked before wave 1 started, and no pod of another namespace was created
		// before the canary wave completed.
		w0, w1 := s.Waves[0], s.Waves[1]
		if fmt.Sprint(w0.Namespaces) != "[ns-1]" || w0.CompletedAt.Sub(w0.BakeStartedAt.Time) < bake || w1.StartedAt.Before(w0.CompletedAt) {
			t.Errorf("wave 0 %v baked %s → %s, wave 1 started %s", w0.Namespaces, w0.BakeStartedAt, w0.CompletedAt, w1.StartedAt)
		}
		for i := 2; i <= 6; i++ {
			ns := fmt.Sprintf("ns-%d", i)
			for _, p := range e.pods(t, ns) {
				if !slices.Contains(initial[ns], string(p.UID)) && p.CreationTimestamp.Before(w0.CompletedAt) {
					t.Errorf("pod %s/%s created at %s, before the canary wave completed at %s", ns, p.Name, p.CreationTimestamp, w0.CompletedAt)
				}
			}
		}
		e.assertRestartsPer(t, "ns", map[int]int{1: 1, 2: 1, 3: 1, 4: 1, 5: 1, 6: 1})
		if got := e.notifier.events("fleet"); fmt.Sprint(got) != "[Succeeded]" {
			t.Errorf("notifications %v, want one Succeeded", got)
		}
	})

	t.Run("FailingSecondWaveRollsBack", func(t *testing.T) {
		s := failing.Status
		var phases []sluicev1.WavePhase
		for _, w := range s.Waves {
			phases = append(phases, w.Phase)
		}
		if fmt.Sprint(phases) != "[Succeeded RolledBack Pending Pending]" || s.CurrentWave != 1 {
			t.Fatalf("wave phases %v, current wave %d", phases, s.CurrentWave)
		}
		if v := e.versions(t, "fail-ns-1"); v != "[edge-26.8.3 x6]" {
			t.Errorf("canary fail-ns-1 runs %s", v)
		}
		for i := 2; i <= 6; i++ {
			ns := fmt.Sprintf("fail-ns-%d", i)
			if v := e.versions(t, ns); v != "[edge-26.6.3 x6]" {
				t.Errorf("%s runs %s", ns, v)
			}
			if pin := e.nsObj(t, ns).Annotations[mesh.LinkerdPinAnnotation]; pin != proxyOld {
				t.Errorf("%s pinned to %q", ns, pin)
			}
		}
		for i := 4; i <= 6; i++ { // later waves never started
			ns := fmt.Sprintf("fail-ns-%d", i)
			now := e.podUIDs(t)[ns]
			if !slices.Equal(now, initial[ns]) {
				t.Errorf("%s was restarted", ns)
			}
		}
		e.assertRestartsPer(t, "fail-ns", map[int]int{1: 1, 2: 2, 3: 2, 4: 0, 5: 0, 6: 0})
		if got := e.notifier.events("fleet-failing"); fmt.Sprint(got) != "[Failed]" {
			t.Errorf("notifications %v, want one Failed", got)
		}
		if w := s.Waves[1]; w.FailedChecks != 2 {
			t.Errorf("wave 1 failed checks %d", w.FailedChecks)
		}
		failed := false
		for _, r := range s.Analysis {
			failed = failed || (r.Namespace == "fail-ns-3" && r.Verdict == sluicev1.VerdictFail && r.Value == "0.00")
		}
		if !failed {
			t.Errorf("analysis %+v does not show fail-ns-3 failing", s.Analysis)
		}
	})

	t.Run("JobPodsUntouched", func(t *testing.T) {
		for ns, p := range jobs {
			now := e.jobPods(t)[ns]
			if now.UID != p.UID || now.Annotations[mesh.LinkerdProxyVersionAnnotation] != proxyOld {
				t.Errorf("job pod in %s: %s %s, was %s", ns, now.UID, now.Annotations[mesh.LinkerdProxyVersionAnnotation], p.UID)
			}
		}
	})
}

func wave(dp *sluicev1.DataPlane, i int) *sluicev1.DataPlaneWave {
	if i < len(dp.Status.Waves) {
		return &dp.Status.Waves[i]
	}
	return nil
}

func describe(dp *sluicev1.DataPlane) string {
	s := dp.Status
	var b strings.Builder
	fmt.Fprintf(&b, "  %s target %s wave %d pods %d/%d\n", s.Phase, s.Target, s.CurrentWave, s.Current, s.Desired)
	for i, w := range s.Waves {
		fmt.Fprintf(&b, "  wave %d %v %s pods %d/%d started %v baked %v done %v restarted %d evicted %d failed checks %d; %s %s\n",
			i, w.Namespaces, w.Phase, w.Current, w.Desired, ts(w.StartedAt), ts(w.BakeStartedAt), ts(w.CompletedAt),
			w.Restarted, w.Evicted, w.FailedChecks, w.LastUpdateAttemptResult, w.LastUpdateAttemptMessage)
	}
	for _, c := range s.Conditions {
		fmt.Fprintf(&b, "  %s=%s %s: %s\n", c.Type, c.Status, c.Reason, c.Message)
	}
	return b.String()
}

func ts(t *metav1.Time) string {
	if t == nil {
		return "-"
	}
	return t.UTC().Format("15:04:05")
}

// fleetEnv is the local cluster with the simulated injector, Prometheus scraping the health
// exporter, and the DataPlane controller run in this process.
type fleetEnv struct {
	cluster  *cluster.Cluster
	cfg      *rest.Config
	c        client.Client
	prom     *promtest.Server
	health   *healthExporter
	notifier *countingNotifier
	podLog   *podLog

	stopMgr func()
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

func startFleetEnv(t *testing.T) *fleetEnv {
	t.Helper()
	ctx := context.Background()
	setLogger.Do(func() { ctrl.SetLogger(zap.New(zap.WriteTo(controllerLog))) })
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("last controller log lines:\n%s", controllerLog.tail(80))
		}
	})
	c, err := cluster.Start(ctx, cluster.Options{Injector: &cluster.InjectorOptions{Version: proxyOld}, Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	pids := c.PIDs()
	e := &fleetEnv{cluster: c, cfg: c.RESTConfig(), notifier: &countingNotifier{}, podLog: &podLog{seen: map[string][]string{}}}
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
	if err != nil {
		t.Fatal(err)
	}
	if _, err := envtest.InstallCRDs(e.cfg, envtest.CRDInstallOptions{Paths: paths, ErrorIfPathMissing: true}); err != nil {
		t.Fatal(err)
	}
	if e.c, err = client.New(e.cfg, client.Options{Scheme: scheme.New()}); err != nil {
		t.Fatal(err)
	}
	e.watchPods(t)
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
	return e
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// startManager runs a manager with the DataPlane controller, reading Prometheus through the
// analysis engine and counting notifications.
func (e *fleetEnv) startManager(t *testing.T) {
	t.Helper()
	mgr, err := ctrl.NewManager(e.cfg, ctrl.Options{Scheme: scheme.New(), Metrics: metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0", Controller: config.Controller{SkipNameValidation: ptr.To(true)}})
	must(t, err)
	r := &dataplane.Reconciler{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Recorder: mgr.GetEventRecorder("sluice"),
		Clock: clock.RealClock{}, Notifier: e.notifier,
		Analyzer: analysis.NewEngine(mgr.GetClient(), analysis.Options{DefaultAddress: e.prom.Address(), ScrapeInterval: time.Second}),
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

func (e *fleetEnv) stopManager(t *testing.T) {
	t.Helper()
	if e.stopMgr != nil {
		e.stopMgr()
	}
}

// create creates DataPlane name over namespaces prefix-1..6: canary prefix-1, waves of 2,
// three workloads restarting at once, a 6s bake checked every 2s, 2 failed checks roll back.
func (e *fleetEnv) create(t *testing.T, name, prefix string) {
	t.Helper()
	dp := &sluicev1.DataPlane{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: sluicev1.DataPlaneSpec{
		Mesh:              sluicev1.MeshLinkerd,
		Linkerd:           &sluicev1.LinkerdDataPlane{ProxyVersion: proxyNew},
		NamespaceSelector: &sluicev1.NamespaceSelector{MatchLabels: map[string]string{"fleet": prefix}},
		CanaryNamespaces:  []string{prefix + "-1"},
		Waves:             sluicev1.DataPlaneWaves{MaxNamespaces: ptr.To[int32](2)},
		BakeTime:          bake.String(),
		MaxUnavailable:    ptr.To[int32](3),
		Analysis: sluicev1.DataPlaneAnalysis{Interval: "2s", Threshold: 2, Metrics: []sluicev1.CanaryMetric{{
			Name: "fleet-health", ThresholdRange: &sluicev1.ThresholdRange{Min: ptr.To(1.0)},
			TemplateRef: &sluicev1.CrossNamespaceObjectReference{Name: "fleet-health", Namespace: "sluice-system"}}}},
	}}
	must(t, e.c.Create(context.Background(), dp))
}

func (e *fleetEnv) get(t *testing.T, name string) *sluicev1.DataPlane {
	t.Helper()
	dp := &sluicev1.DataPlane{}
	must(t, e.c.Get(context.Background(), client.ObjectKey{Name: name}, dp))
	return dp
}

// namespace creates a meshed namespace of fleet with a Deployment "web" (2 replicas), an
// OnDelete StatefulSet "db" (2) with a PodDisruptionBudget, a rolling DaemonSet "agent" (one pod
// per node) and a Job "migrate"; its health gauge is 1.
func (e *fleetEnv) namespace(t *testing.T, name, fleet string) {
	t.Helper()
	ctx := context.Background()
	must(t, e.c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name,
		Labels: map[string]string{injector.LabelInject: injector.InjectEnabled, "fleet": fleet}}}))
	labels := func(app string) map[string]string { return map[string]string{"app": app} }
	tpl := func(app string) corev1.PodTemplateSpec {
		return corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels(app)},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "ghcr.io/stefanprodan/podinfo:6.7.1"}}}}
	}
	job := tpl("migrate")
	job.Spec.RestartPolicy = corev1.RestartPolicyNever
	for _, o := range []client.Object{
		&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: name}, Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](2), Selector: &metav1.LabelSelector{MatchLabels: labels("web")}, Template: tpl("web")}},
		&corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: name}, Spec: corev1.ServiceSpec{
			ClusterIP: corev1.ClusterIPNone, Selector: labels("db"), Ports: []corev1.ServicePort{{Port: 5432}}}},
		&appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: name}, Spec: appsv1.StatefulSetSpec{
			Replicas: ptr.To[int32](2), ServiceName: "db", Selector: &metav1.LabelSelector{MatchLabels: labels("db")}, Template: tpl("db"),
			UpdateStrategy: appsv1.StatefulSetUpdateStrategy{Type: appsv1.OnDeleteStatefulSetStrategyType}}},
		&policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: name}, Spec: policyv1.PodDisruptionBudgetSpec{
			MaxUnavailable: ptr.To(intstr.FromInt32(1)), Selector: &metav1.LabelSelector{MatchLabels: labels("db")}}},
		&appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Name: "agent", Namespace: name}, Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels("agent")}, Template: tpl("agent")}},
		&batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "migrate", Namespace: name}, Spec: batchv1.JobSpec{Template: job}},
	} {
		must(t, e.c.Create(ctx, o))
	}
	e.health.set(name, 1)
}

// waitFleetReady waits until every workload of the n namespaces is ready and every Job done.
func (e *fleetEnv) waitFleetReady(t *testing.T, n int) {
	t.Helper()
	ctx := context.Background()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		var deps appsv1.DeploymentList
		var stss appsv1.StatefulSetList
		var dss appsv1.DaemonSetList
		var jobs batchv1.JobList
		for _, l := range []client.ObjectList{&deps, &stss, &dss, &jobs} {
			must(t, e.c.List(ctx, l))
		}
		ready := 0
		for _, d := range deps.Items {
			if mesh.RolledOut(&d) {
				ready++
			}
		}
		for _, s := range stss.Items {
			if mesh.RolledOut(&s) {
				ready++
			}
		}
		for _, d := range dss.Items {
			if mesh.RolledOut(&d) && d.Status.DesiredNumberScheduled == 2 {
				ready++
			}
		}
		for _, j := range jobs.Items {
			if j.Status.Succeeded == 1 {
				ready++
			}
		}
		if ready == 4*n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("fleet not ready: %d of %d workloads", ready, 4*n)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// pods returns the pods of ns that are not Job pods, running or not.
func (e *fleetEnv) pods(t *testing.T, ns string) []corev1.Pod {
	t.Helper()
	var list corev1.PodList
	must(t, e.c.List(context.Background(), &list, client.InNamespace(ns)))
	var out []corev1.Pod
	for _, p := range list.Items {
		if !mesh.JobOwned(&p) {
			out = append(out, p)
		}
	}
	return out
}

// podUIDs returns the sorted UIDs of the running non-Job pods of every fleet namespace.
func (e *fleetEnv) podUIDs(t *testing.T) map[string][]string {
	t.Helper()
	var list corev1.PodList
	must(t, e.c.List(context.Background(), &list))
	out := map[string][]string{}
	for _, p := range list.Items {
		if strings.Contains(p.Namespace, "ns-") && !mesh.JobOwned(&p) && mesh.Live(&p) {
			out[p.Namespace] = append(out[p.Namespace], string(p.UID))
		}
	}
	for _, uids := range out {
		sort.Strings(uids)
	}
	return out
}

func (e *fleetEnv) jobPods(t *testing.T) map[string]corev1.Pod {
	t.Helper()
	var list corev1.PodList
	must(t, e.c.List(context.Background(), &list))
	out := map[string]corev1.Pod{}
	for _, p := range list.Items {
		if mesh.JobOwned(&p) {
			out[p.Namespace] = p
		}
	}
	return out
}

// versions returns the proxy versions of the running meshed non-Job pods of ns.
func (e *fleetEnv) versions(t *testing.T, ns string) string {
	t.Helper()
	counts := map[string]int{}
	for _, p := range e.pods(t, ns) {
		if proxy, ok := mesh.Detect(&p, sluicev1.MeshLinkerd); ok && mesh.Live(&p) {
			counts[proxy.Version]++
		}
	}
	var out []string
	for v, n := range counts {
		out = append(out, fmt.Sprintf("%s x%d", v, n))
	}
	sort.Strings(out)
	return fmt.Sprint(out)
}

func (e *fleetEnv) runningMeshed(t *testing.T, ns string) int {
	n := 0
	for _, p := range e.pods(t, ns) {
		if _, ok := mesh.Detect(&p, sluicev1.MeshLinkerd); ok && mesh.Live(&p) && p.Status.Phase == corev1.PodRunning {
			n++
		}
	}
	return n
}

func (e *fleetEnv) nsObj(t *testing.T, name string) *corev1.Namespace {
	t.Helper()
	ns := &corev1.Namespace{}
	must(t, e.c.Get(context.Background(), client.ObjectKey{Name: name}, ns))
	return ns
}

// assertRestartsPer checks that every workload of prefix-i was restarted exactly want[i] times,
// from the workload controllers' own bookkeeping (the Deployment's revision, the DaemonSet's
// controller revisions) and, for the OnDelete StatefulSet whose template never changes, from the
// number of UIDs each of its pod names had.
func (e *fleetEnv) assertRestartsPer(t *testing.T, prefix string, want map[int]int) {
	t.Helper()
	ctx := context.Background()
	for i := 1; i <= len(want); i++ {
		n, ns := want[i], fmt.Sprintf("%s-%d", prefix, i)
		dep := &appsv1.Deployment{}
		must(t, e.c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "web"}, dep))
		if got := dep.Annotations["deployment.kubernetes.io/revision"]; got != fmt.Sprint(1+n) {
			t.Errorf("deployment %s/web at revision %s, want %d (restarted %d times)", ns, got, 1+n, n)
		}
		var revs appsv1.ControllerRevisionList
		must(t, e.c.List(ctx, &revs, client.InNamespace(ns)))
		dsRevs := 0
		for _, r := range revs.Items {
			if owner := metav1.GetControllerOf(&r); owner != nil && owner.Kind == "DaemonSet" {
				dsRevs++
			}
		}
		// A rollback restores no old template (it sets a new restart token): one revision per restart.
		if dsRevs != 1+n {
			t.Errorf("daemonset %s/agent has %d controller revisions, want %d", ns, dsRevs, 1+n)
		}
		sts := &appsv1.StatefulSet{}
		must(t, e.c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "db"}, sts))
		if v := sts.Spec.Template.Annotations[mesh.RestartedAtAnnotation]; v != "" {
			t.Errorf("OnDelete statefulset %s/db had its template changed (%s): it must be restarted by eviction only", ns, v)
		}
		e.assertPodGenerations(t, ns, n)
	}
}

// assertPodGenerations checks that every StatefulSet pod of ns was replaced exactly n times:
// the pod watch saw 1+n UIDs under its name.
func (e *fleetEnv) assertPodGenerations(t *testing.T, ns string, n int) {
	t.Helper()
	for _, name := range []string{"db-0", "db-1"} {
		if uids := e.podLog.get(ns + "/" + name); len(uids) != 1+n {
			t.Errorf("pod %s/%s had %d incarnations %v, want %d", ns, name, len(uids), uids, 1+n)
		}
	}
}

// podLog records every UID each pod name had, from a pod informer that runs for the whole test.
type podLog struct {
	mu   sync.Mutex
	seen map[string][]string
}

func (l *podLog) add(key, uid string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !slices.Contains(l.seen[key], uid) {
		l.seen[key] = append(l.seen[key], uid)
	}
}

func (l *podLog) get(key string) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.seen[key]...)
}

// watchPods starts the pod informer feeding e.podLog.
func (e *fleetEnv) watchPods(t *testing.T) {
	t.Helper()
	cs, err := kubernetes.NewForConfig(e.cfg)
	must(t, err)
	factory := informers.NewSharedInformerFactory(cs, 0)
	inf := factory.Core().V1().Pods().Informer()
	_, err = inf.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: func(obj any) {
		if p, ok := obj.(*corev1.Pod); ok {
			e.podLog.add(p.Namespace+"/"+p.Name, string(p.UID))
		}
	}})
	must(t, err)
	stop := make(chan struct{})
	factory.Start(stop)
	factory.WaitForCacheSync(stop)
	t.Cleanup(func() { close(stop); factory.Shutdown() })
}

// countingNotifier records notifications per DataPlane.
type countingNotifier struct {
	mu   sync.Mutex
	sent map[string][]string
}

func (n *countingNotifier) Notify(_ context.Context, dp *sluicev1.DataPlane, x waves.Notification) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.sent == nil {
		n.sent = map[string][]string{}
	}
	n.sent[dp.Name] = append(n.sent[dp.Name], x.Event)
	return nil
}

func (n *countingNotifier) events(name string) []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return append([]string(nil), n.sent[name]...)
}

// healthExporter serves fleet_health{namespace=...} gauges for Prometheus to scrape.
type healthExporter struct {
	addr string
	mu   sync.Mutex
	vals map[string]float64
}

func startHealthExporter(t *testing.T) *healthExporter {
	t.Helper()
	h := &healthExporter{vals: map[string]float64{"sluice-system": 1}}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	must(t, err)
	h.addr = ln.Addr().String()
	srv := &http.Server{ReadHeaderTimeout: 5 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		h.mu.Lock()
		defer h.mu.Unlock()
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		fmt.Fprintln(w, "# TYPE fleet_health gauge")
		for ns, v := range h.vals {
			fmt.Fprintf(w, "fleet_health{namespace=%q} %g\n", ns, v)
		}
	})}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return h
}

func (h *healthExporter) set(ns string, v float64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.vals[ns] = v
}

package cluster_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"sluice.dev/sluice/test/cluster"
	"sluice.dev/sluice/test/injector"
)

const (
	oldProxy = "stable-2.14.10"
	newProxy = "edge-25.1.1"
)

func TestClusterRollsWorkloadsAndInjectsProxies(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a local cluster")
	}
	ctx := t.Context()
	t0 := time.Now()
	c, err := cluster.Start(ctx, cluster.Options{
		Injector:      &cluster.InjectorOptions{Version: oldProxy, Logf: t.Logf},
		ComponentGOGC: 300,
		Logf:          t.Logf,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("cluster up in %s", time.Since(t0).Round(time.Millisecond))
	pids := c.PIDs()
	stopped := false
	defer func() {
		if !stopped {
			_ = c.Stop()
		}
	}()
	if _, err := os.Stat(c.Kubeconfig()); err != nil {
		t.Fatalf("kubeconfig: %v", err)
	}
	cs := kubernetes.NewForConfigOrDie(c.RESTConfig())
	assertComponentsGOGC(t, pids, "300")
	assertAdminToken(t, c, cs)

	createNamespace(t, cs, "app", map[string]string{injector.LabelInject: injector.InjectEnabled}, nil)
	createNamespace(t, cs, "pinned", map[string]string{injector.LabelInject: injector.InjectEnabled},
		map[string]string{injector.AnnotationPinVersion: "stable-2.13.0"})
	createNamespace(t, cs, "plain", nil, nil)

	tApply := time.Now()
	labels := map[string]string{"app": "web"}
	web := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "app"},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](3),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: podTemplate(labels),
		},
	}
	must(t, create(ctx, cs.AppsV1().Deployments("app"), web))
	dbLabels := map[string]string{"app": "db"}
	must(t, create(ctx, cs.CoreV1().Services("app"), &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "app"},
		Spec: corev1.ServiceSpec{ClusterIP: corev1.ClusterIPNone, Selector: dbLabels,
			Ports: []corev1.ServicePort{{Port: 5432}}},
	}))
	must(t, create(ctx, cs.AppsV1().StatefulSets("app"), &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "app"},
		Spec: appsv1.StatefulSetSpec{
			Replicas:       ptr.To[int32](2),
			ServiceName:    "db",
			UpdateStrategy: appsv1.StatefulSetUpdateStrategy{Type: appsv1.OnDeleteStatefulSetStrategyType},
			Selector:       &metav1.LabelSelector{MatchLabels: dbLabels},
			Template:       podTemplate(dbLabels),
		},
	}))
	agentLabels := map[string]string{"app": "agent"}
	must(t, create(ctx, cs.AppsV1().DaemonSets("plain"), &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Name: "agent", Namespace: "plain"},
		Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: agentLabels},
			Template: podTemplate(agentLabels),
		},
	}))

	waitUntil(t, "deployment, statefulset and daemonset ready", func() error {
		d, err := cs.AppsV1().Deployments("app").Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if err := deploymentRolledOut(d); err != nil {
			return err
		}
		s, err := cs.AppsV1().StatefulSets("app").Get(ctx, "db", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if s.Status.ReadyReplicas != 2 {
			return fmt.Errorf("statefulset db: %d/2 ready", s.Status.ReadyReplicas)
		}
		ds, err := cs.AppsV1().DaemonSets("plain").Get(ctx, "agent", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if ds.Status.NumberReady != 2 || ds.Status.DesiredNumberScheduled != 2 {
			return fmt.Errorf("daemonset agent: %d/%d ready", ds.Status.NumberReady, ds.Status.DesiredNumberScheduled)
		}
		return nil
	})
	t.Logf("workloads ready %s after creation", time.Since(tApply).Round(time.Millisecond))

	before := readyPods(t, cs, "app", "app=web", 3)
	for _, p := range before {
		assertProxy(t, &p, oldProxy)
	}
	for _, p := range readyPods(t, cs, "app", "app=db", 2) {
		assertProxy(t, &p, oldProxy)
	}
	for _, p := range readyPods(t, cs, "plain", "app=agent", 2) {
		assertProxy(t, &p, "")
	}

	// Pinning and opting out, on bare pods (admission only; no need to wait for them).
	pod := func(ns, name string, annotations map[string]string) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Annotations: annotations},
			Spec: podTemplate(nil).Spec}
		got, err := cs.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{})
		must(t, err)
		return got
	}
	assertProxy(t, pod("app", "opted-out", map[string]string{injector.LabelInject: injector.InjectDisabled}), "")
	assertProxy(t, pod("app", "pod-pinned", map[string]string{injector.AnnotationPinVersion: "stable-2.12.0"}), "stable-2.12.0")
	assertProxy(t, pod("pinned", "ns-pinned", nil), "stable-2.13.0")

	// A control-plane upgrade, then a rollout restart: the new pods get the new proxy.
	c.Injector().SetVersion(newProxy)
	tRestart := time.Now()
	restart := fmt.Sprintf(`{"spec":{"template":{"metadata":{"annotations":{"kubectl.kubernetes.io/restartedAt":%q}}}}}`,
		time.Now().Format(time.RFC3339))
	_, err = cs.AppsV1().Deployments("app").Patch(ctx, "web", types.StrategicMergePatchType, []byte(restart), metav1.PatchOptions{})
	must(t, err)
	waitUntil(t, "deployment web restarted", func() error {
		d, err := cs.AppsV1().Deployments("app").Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			return err
		}
		return deploymentRolledOut(d)
	})
	t.Logf("rollout restart done in %s", time.Since(tRestart).Round(time.Millisecond))
	after := readyPods(t, cs, "app", "app=web", 3)
	for _, p := range after {
		assertProxy(t, &p, newProxy)
		for _, b := range before {
			if p.UID == b.UID {
				t.Errorf("pod %s survived the restart", p.Name)
			}
		}
	}

	t.Logf("memory: %s", rssReport(pids))
	tStop := time.Now()
	stopped = true
	if err := c.Stop(); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	t.Logf("stopped in %s", time.Since(tStop).Round(time.Millisecond))
	for name, pid := range pids {
		if cluster.ProcessRunning(pid) {
			t.Errorf("%s (pid %d) still running after Stop", name, pid)
		}
	}
	if _, err := os.Stat(c.Dir()); !os.IsNotExist(err) {
		t.Errorf("temporary state folder %s not removed: %v", c.Dir(), err)
	}
}

func TestStartFailsCleanlyOnBrokenComponent(t *testing.T) {
	if testing.Short() {
		t.Skip("starts cluster components")
	}
	// A bin folder whose kube-apiserver exits at once: Start must report its log and stop etcd.
	bin := t.TempDir()
	real := cluster.DefaultBinDir()
	for _, name := range []string{cluster.Etcd, cluster.KubeControllerManager, cluster.KubeScheduler, cluster.Kwok, cluster.StagesFile} {
		must(t, os.Symlink(real+"/"+name, bin+"/"+name))
	}
	must(t, os.WriteFile(bin+"/"+cluster.KubeAPIServer, []byte("#!/bin/sh\necho 'boom: no apiserver here' >&2\nexit 3\n"), 0o755))
	dir := t.TempDir()
	_, err := cluster.Start(t.Context(), cluster.Options{BinDir: bin, Dir: dir, Logf: t.Logf})
	if err == nil {
		t.Fatal("Start succeeded with a broken kube-apiserver")
	}
	if !strings.Contains(err.Error(), "boom: no apiserver here") {
		t.Errorf("error lacks the component's log: %v", err)
	}
	t.Logf("Start error (expected): %v", err)
	// etcd was started before the apiserver; it must be gone (its pid file is removed on Stop, so
	// read the log folder to be sure it ran, and scan /proc for any etcd with our data dir).
	if _, err := os.Stat(dir + "/logs/etcd.log"); err != nil {
		t.Fatalf("etcd never started: %v", err)
	}
	if pids := processesMentioning(dir); len(pids) > 0 {
		t.Errorf("processes left behind after a failed Start: %v", pids)
	}
}

// processesMentioning lists live processes whose command line contains s.
func processesMentioning(s string) []int {
	entries, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		cmdline, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err == nil && strings.Contains(string(cmdline), s) && cluster.ProcessRunning(pid) {
			pids = append(pids, pid)
		}
	}
	return pids
}

func podTemplate(labels map[string]string) corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: labels},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "example.com/app:1"}}},
	}
}

func deploymentRolledOut(d *appsv1.Deployment) error {
	want := *d.Spec.Replicas
	s := d.Status
	if s.ObservedGeneration < d.Generation || s.UpdatedReplicas != want || s.ReadyReplicas != want ||
		s.AvailableReplicas != want || s.Replicas != want {
		return fmt.Errorf("deployment %s: generation %d observed %d, replicas %d updated %d ready %d available %d (want %d)",
			d.Name, d.Generation, s.ObservedGeneration, s.Replicas, s.UpdatedReplicas, s.ReadyReplicas, s.AvailableReplicas, want)
	}
	return nil
}

// readyPods returns the pods matching selector that are not being deleted, requiring n of them,
// all Ready.
func readyPods(t *testing.T, cs kubernetes.Interface, ns, selector string, n int) []corev1.Pod {
	t.Helper()
	var out []corev1.Pod
	waitUntil(t, fmt.Sprintf("%d ready pods %s in %s", n, selector, ns), func() error {
		list, err := cs.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{LabelSelector: selector})
		if err != nil {
			return err
		}
		out = out[:0]
		for _, p := range list.Items {
			if p.DeletionTimestamp != nil {
				return fmt.Errorf("pod %s still terminating", p.Name)
			}
			if !podReady(&p) {
				return fmt.Errorf("pod %s not Ready", p.Name)
			}
			out = append(out, p)
		}
		if len(out) != n {
			return fmt.Errorf("%d pods, want %d", len(out), n)
		}
		return nil
	})
	return out
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// assertProxy checks the injected proxy: version "" means not injected.
func assertProxy(t *testing.T, p *corev1.Pod, version string) {
	t.Helper()
	var image string
	for _, c := range p.Spec.Containers {
		if c.Name == injector.ContainerName {
			image = c.Image
		}
	}
	gotVersion := p.Annotations[injector.AnnotationProxyVersion]
	if version == "" {
		if image != "" || gotVersion != "" {
			t.Errorf("pod %s/%s: injected %q (annotation %q), want no proxy", p.Namespace, p.Name, image, gotVersion)
		}
		return
	}
	if want := injector.ProxyImage + ":" + version; image != want || gotVersion != version {
		t.Errorf("pod %s/%s: proxy image %q annotation %q, want %q and %q", p.Namespace, p.Name, image, gotVersion, want, version)
	}
}

func createNamespace(t *testing.T, cs kubernetes.Interface, name string, labels, annotations map[string]string) {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels, Annotations: annotations}}
	_, err := cs.CoreV1().Namespaces().Create(context.Background(), ns, metav1.CreateOptions{})
	must(t, err)
}

type creator[T any] interface {
	Create(context.Context, T, metav1.CreateOptions) (T, error)
}

func create[T any](ctx context.Context, api creator[T], obj T) error {
	_, err := api.Create(ctx, obj, metav1.CreateOptions{})
	return err
}

func waitUntil(t *testing.T, what string, cond func() error) {
	t.Helper()
	var last error
	err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, 90*time.Second, true,
		func(context.Context) (bool, error) {
			last = cond()
			return last == nil, nil
		})
	if err != nil {
		t.Fatalf("waiting for %s: %v (last: %v)", what, err, last)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// rssReport sums VmRSS of the components.
func rssReport(pids map[string]int) string {
	var parts []string
	total := 0
	for name, pid := range pids {
		data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
		if err != nil {
			continue
		}
		for line := range strings.SplitSeq(string(data), "\n") {
			if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
				kb, _ := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(rest), " kB"))
				total += kb
				parts = append(parts, fmt.Sprintf("%s %d MiB", name, kb/1024))
			}
		}
	}
	return fmt.Sprintf("%d MiB total (%s)", total/1024, strings.Join(parts, ", "))
}

// assertComponentsGOGC: every component runs with GOGC=want in its environment (Options.ComponentGOGC),
// and this process's own environment is left alone.
func assertComponentsGOGC(t *testing.T, pids map[string]int, want string) {
	t.Helper()
	if got, ok := os.LookupEnv("GOGC"); ok && got == want {
		t.Fatalf("the test process itself has GOGC=%s", got)
	}
	for name, pid := range pids {
		environ, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !slices.Contains(strings.Split(string(environ), "\x00"), "GOGC="+want) {
			t.Fatalf("%s (pid %d) runs without GOGC=%s", name, pid, want)
		}
	}
}

// assertAdminToken: clients authenticate with the admin's bearer token (no client certificate),
// and the apiserver takes it for sluice-admin in system:masters.
func assertAdminToken(t *testing.T, c *cluster.Cluster, cs kubernetes.Interface) {
	t.Helper()
	cfg := c.RESTConfig()
	if cfg.BearerToken == "" || len(cfg.CertData) > 0 || len(cfg.KeyData) > 0 {
		t.Fatalf("admin config: token set %t, client certificate set %t; want a token only", cfg.BearerToken != "", len(cfg.CertData) > 0)
	}
	review, err := cs.AuthenticationV1().SelfSubjectReviews().Create(t.Context(), &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	user := review.Status.UserInfo
	if user.Username != "sluice-admin" || !slices.Contains(user.Groups, "system:masters") {
		t.Fatalf("the admin token authenticates as %q in %v, want sluice-admin in system:masters", user.Username, user.Groups)
	}
}

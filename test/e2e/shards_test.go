package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
	"sluice.dev/sluice/controllers/manager"
	"sluice.dev/sluice/controllers/scheme"
	"sluice.dev/sluice/test/cluster"
	"sluice.dev/sluice/test/helmchart"
	"sluice.dev/sluice/test/managerproc"
	"sluice.dev/sluice/test/testenv"
)

// shardsNamespace holds the Canaries of the shard test.
const shardsNamespace = "shards"

// shardReplica is one manager process of a shard.
type shardReplica struct {
	shard string
	proc  *managerproc.Proc
}

// TestShardsSplitCanariesAndFailOverWithinTheShard runs the chart's shards on the local cluster:
// the chart is rendered with two shards ("main", the default, and "b") of two replicas each, and
// each of the four replicas runs as a manager process with its Deployment's flags (--shard,
// --shard-name) and leader election on. Of 20 Canaries, 10 are labelled sluice.dev/shard=b, 5
// sluice.dev/shard=main and 5 carry no label (the default shard's). Every Canary is reconciled by
// exactly one shard, its own: the events on it name one shard and one replica (reporting
// controller and annotations), its status has one field manager, its shard's. Then shard b's
// leader is killed (SIGKILL: no Lease released) and every Canary is released: shard b's runs are
// carried by b's standby, shard main's by main's same leader, none by the other shard.
func TestShardsSplitCanariesAndFailOverWithinTheShard(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end test on the local cluster")
	}
	ctx := context.Background()
	dir := t.TempDir()
	cl, err := cluster.Start(ctx, cluster.Options{Dir: filepath.Join(dir, "cluster"), Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := cl.Stop(); err != nil {
			t.Error(err)
		}
	})
	cfg := cl.RESTConfig()
	paths, err := testenv.CRDPaths()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := envtest.InstallCRDs(cfg, envtest.CRDInstallOptions{Paths: paths, ErrorIfPathMissing: true}); err != nil {
		t.Fatal(err)
	}
	k, err := client.New(cfg, client.Options{Scheme: scheme.New()})
	if err != nil {
		t.Fatal(err)
	}
	bin, err := managerproc.Build(ctx, testenv.RepoRoot(), dir)
	if err != nil {
		t.Fatal(err)
	}

	// The chart's shards, as it deploys them.
	rendered, err := helmchart.Render(helmchart.Release{Values: map[string]any{"shards": []any{
		map[string]any{"name": "main"}, map[string]any{"name": "b"}}}})
	if err != nil {
		t.Fatal(err)
	}
	var replicas []shardReplica
	for _, d := range rendered.OfKind("Deployment") {
		shard, args := shardArgs(t, d)
		n, _, _ := unstructured.NestedInt64(d.Object, "spec", "replicas")
		if n != 2 {
			t.Fatalf("Deployment %s: %d replicas, want the chart's default 2", d.GetName(), n)
		}
		for i := range n {
			pod := fmt.Sprintf("%s-%d", d.GetName(), i)
			p, err := managerproc.Start(ctx, managerproc.Options{Bin: bin, Kubeconfig: cl.Kubeconfig(), PodName: pod,
				LogPath: filepath.Join(dir, pod+".log"), Args: append(args, "--enable-dataplane=false")})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(p.Stop)
			replicas = append(replicas, shardReplica{shard: shard, proc: p})
		}
	}
	if len(replicas) != 4 {
		t.Fatalf("%d manager replicas from the chart, want 2 shards × 2", len(replicas))
	}

	// 20 Canaries: shard b's, shard main's by label, and unlabelled ones (the default shard's).
	if err := k.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: shardsNamespace}}); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{} // Canary → the shard that must handle it
	for i := range 20 {
		name, label := fmt.Sprintf("app-%02d", i), ""
		switch i % 4 {
		case 0, 1:
			label = "b"
		case 2:
			label = "main"
		}
		want[name] = label
		if label == "" {
			want[name] = "main"
		}
		for _, o := range shardApp(name, label) {
			if err := k.Create(ctx, o); err != nil {
				t.Fatal(err)
			}
		}
	}
	waitAllPhase(t, k, sluicev1.CanaryPhaseInitialized, 3*time.Minute)

	leaders := map[string]string{} // shard → the replica that acted
	for _, lease := range []string{"sluice.sluice.dev-main", "sluice.sluice.dev-b"} {
		l := &coordinationv1.Lease{}
		if err := k.Get(ctx, client.ObjectKey{Namespace: "kube-system", Name: lease}, l); err != nil || ptr.Deref(l.Spec.HolderIdentity, "") == "" {
			t.Fatalf("Lease %s: %v (holder %q): each shard elects its leader on its own Lease", lease, err, ptr.Deref(l.Spec.HolderIdentity, ""))
		}
	}
	for name, shard := range want {
		acted := actors(t, k, name, nil)
		if len(acted) != 1 || acted[0].shard != shard {
			t.Fatalf("Canary %s (shard %s) was acted on by %v, want only shard %s", name, shard, acted, shard)
		}
		if prev, ok := leaders[shard]; ok && prev != acted[0].instance {
			t.Fatalf("shard %s acted through two replicas at once: %s and %s", shard, prev, acted[0].instance)
		}
		leaders[shard] = acted[0].instance
		if got := statusManagers(t, k, name); !slices.Equal(got, []string{"sluice-shard-" + shard}) {
			t.Fatalf("Canary %s (shard %s): status written by %v", name, shard, got)
		}
	}
	t.Logf("leaders before the kill: %v", leaders)

	// Kill shard b's leader; release every Canary.
	var killed string
	for _, r := range replicas {
		if r.shard == "b" && r.proc.PodName == leaders["b"] {
			r.proc.Kill()
			killed = r.proc.PodName
		}
	}
	if killed == "" {
		t.Fatalf("shard b's leader %q is not one of the replicas", leaders["b"])
	}
	releasedAt := metav1.NewMicroTime(time.Now())
	for name := range want {
		d := &appsv1.Deployment{}
		if err := k.Get(ctx, client.ObjectKey{Namespace: shardsNamespace, Name: name}, d); err != nil {
			t.Fatal(err)
		}
		patch := client.MergeFrom(d.DeepCopy())
		d.Spec.Template.Spec.Containers[0].Image = "ghcr.io/stefanprodan/podinfo:6.0.1"
		if err := k.Patch(ctx, d, patch); err != nil {
			t.Fatal(err)
		}
	}
	waitAllPhase(t, k, sluicev1.CanaryPhaseSucceeded, 4*time.Minute)
	for name, shard := range want {
		acted := actors(t, k, name, &releasedAt)
		if len(acted) != 1 || acted[0].shard != shard {
			t.Fatalf("after the kill, Canary %s (shard %s) was acted on by %v, want only shard %s", name, shard, acted, shard)
		}
		switch {
		case shard == "b" && (acted[0].instance == killed || !strings.HasPrefix(acted[0].instance, "sluice-b-")):
			t.Fatalf("Canary %s: shard b's run carried by %s, want b's standby (the leader %s was killed)", name, acted[0].instance, killed)
		case shard == "main" && acted[0].instance != leaders["main"]:
			t.Fatalf("Canary %s: shard main's run carried by %s, want its leader %s", name, acted[0].instance, leaders["main"])
		}
		if got := statusManagers(t, k, name); !slices.Equal(got, []string{"sluice-shard-" + shard}) {
			t.Fatalf("Canary %s (shard %s): status written by %v after the kill", name, shard, got)
		}
	}
	for _, r := range replicas {
		if r.proc.PodName != killed {
			if err := r.proc.Alive(); err != nil {
				t.Fatalf("replica %s: %v", r.proc.PodName, err)
			}
		}
	}
}

// shardArgs returns a chart Deployment's shard name and the manager flags that make it that
// shard (--shard-name, and --shard for a selector).
func shardArgs(t *testing.T, d *unstructured.Unstructured) (string, []string) {
	t.Helper()
	containers, _, _ := unstructured.NestedSlice(d.Object, "spec", "template", "spec", "containers")
	args, _, _ := unstructured.NestedStringSlice(containers[0].(map[string]any), "args")
	var shard string
	var out []string
	for _, a := range args {
		switch {
		case strings.HasPrefix(a, "--shard-name="):
			shard = strings.TrimPrefix(a, "--shard-name=")
			out = append(out, a)
		case strings.HasPrefix(a, "--shard="):
			out = append(out, a)
		}
	}
	if shard == "" {
		t.Fatalf("Deployment %s has no --shard-name: %q", d.GetName(), args)
	}
	return shard, out
}

// shardApp is one application: a one-pod Deployment and its Canary (Gateway API, one step of 50,
// no metrics), the Canary labelled with shard unless empty.
func shardApp(name, shard string) []client.Object {
	labels := map[string]string{"app": name}
	dep := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: shardsNamespace},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(int32(1)),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "ghcr.io/stefanprodan/podinfo:6.0.0",
					Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 9898}}}}},
			},
		},
	}
	cn := &sluicev1.Canary{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: shardsNamespace},
		Spec: sluicev1.CanarySpec{
			TargetRef: sluicev1.TargetReference{APIVersion: "apps/v1", Kind: "Deployment", Name: name},
			Provider:  sluicev1.ProviderGatewayAPI,
			Service:   sluicev1.CanaryService{Port: 9898},
			Analysis: sluicev1.CanaryAnalysis{Interval: "5s", Threshold: 2, StepWeight: 50, MaxWeight: 50,
				AdvanceWithoutData: true},
		},
	}
	if shard != "" {
		cn.Labels = map[string]string{manager.LabelShard: shard}
	}
	return []client.Object{dep, cn}
}

// waitAllPhase waits until every Canary of the test is in phase.
func waitAllPhase(t *testing.T, k client.Client, phase sluicev1.CanaryPhase, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		list := &sluicev1.CanaryList{}
		if err := k.List(context.Background(), list, client.InNamespace(shardsNamespace)); err != nil {
			t.Fatal(err)
		}
		var pending []string
		for _, c := range list.Items {
			if c.Status.Phase != phase {
				pending = append(pending, c.Name+"="+string(c.Status.Phase))
			}
		}
		if len(list.Items) == 20 && len(pending) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("not %s after %s: %v", phase, timeout, pending)
		}
		time.Sleep(time.Second)
	}
}

// actor is who recorded an event: the shard and the replica.
type actor struct{ shard, instance string }

func (a actor) String() string { return a.shard + "/" + a.instance }

// actors lists who recorded the events on Canary name (since, when set), each once: the shard
// from the reporting controller, checked against the event's shard annotation, and the replica.
func actors(t *testing.T, k client.Client, name string, since *metav1.MicroTime) []actor {
	t.Helper()
	list := &eventsv1.EventList{}
	if err := k.List(context.Background(), list, client.InNamespace(shardsNamespace)); err != nil {
		t.Fatal(err)
	}
	seen := map[actor]bool{}
	for _, e := range list.Items {
		if e.Regarding.Kind != "Canary" || e.Regarding.Name != name || since != nil && e.EventTime.Before(since) {
			continue
		}
		shard := strings.TrimPrefix(e.ReportingController, "sluice-shard-")
		if e.Annotations[manager.AnnotationEventShard] != shard {
			t.Fatalf("event %s on %s: reporting controller %q, shard annotation %q", e.Reason, name, e.ReportingController, e.Annotations[manager.AnnotationEventShard])
		}
		seen[actor{shard: shard, instance: e.Annotations[manager.AnnotationEventInstance]}] = true
	}
	var out []actor
	for a := range seen {
		out = append(out, a)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].String() < out[j].String() })
	if len(out) == 0 {
		t.Fatalf("no event on Canary %s", name)
	}
	return out
}

// statusManagers lists the field managers of Canary name's status.
func statusManagers(t *testing.T, k client.Client, name string) []string {
	t.Helper()
	c := &sluicev1.Canary{}
	if err := k.Get(context.Background(), client.ObjectKey{Namespace: shardsNamespace, Name: name}, c); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, f := range c.ManagedFields {
		if f.Subresource == "status" && !slices.Contains(out, f.Manager) {
			out = append(out, f.Manager)
		}
	}
	sort.Strings(out)
	return out
}

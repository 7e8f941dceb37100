package dataplane

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"sort"
	"sync"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
	"sluice.dev/sluice/mesh"
)

// fleetSim plays, against the envtest apiserver (which runs no controllers), the parts of a
// cluster a DataPlane relies on: the Deployment, StatefulSet and DaemonSet controllers (a
// rolling workload replaces all its pods as soon as its template changes; an OnDelete one
// recreates deleted pods), the kubelet (pods are Running and Ready at once), and the mesh's
// injector (a new pod gets the proxy version its namespace pins: Linkerd's
// config.linkerd.io/proxy-version, else defaultVersion; Istio's istio.io/rev label). It counts
// every rollout and every replaced pod, so tests can assert nothing was restarted twice.
type fleetSim struct {
	c              client.Client
	mesh           sluicev1.Mesh
	defaultVersion string
	namespaces     []string

	mu sync.Mutex
	// rollouts counts the template revisions each workload rolled out ("ns/Kind/name" → revisions
	// after the first); replaced counts the pods each OnDelete pod name was replaced with.
	rollouts map[string]int
	replaced map[string]int
	seen     map[string]string // workload → last template revision rolled out
}

func newFleetSim(c client.Client, m sluicev1.Mesh, defaultVersion string, namespaces ...string) *fleetSim {
	return &fleetSim{c: c, mesh: m, defaultVersion: defaultVersion, namespaces: namespaces,
		rollouts: map[string]int{}, replaced: map[string]int{}, seen: map[string]string{}}
}

// addWorkloads creates, in ns, a Deployment "web" (2 replicas), an OnDelete StatefulSet "db" (2),
// a rolling DaemonSet "agent" (2 nodes), and a meshed Job pod that must never be touched.
func (s *fleetSim) addWorkloads(t testing.TB, ns string) {
	t.Helper()
	ctx := context.Background()
	labels := func(app string) map[string]string { return map[string]string{"app": app} }
	tpl := func(app string) corev1.PodTemplateSpec {
		return corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels(app)},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "ghcr.io/stefanprodan/podinfo:6.7.1"}}}}
	}
	objs := []client.Object{
		&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns}, Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](2), Selector: &metav1.LabelSelector{MatchLabels: labels("web")}, Template: tpl("web")}},
		&appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: ns}, Spec: appsv1.StatefulSetSpec{
			Replicas: ptr.To[int32](2), Selector: &metav1.LabelSelector{MatchLabels: labels("db")}, Template: tpl("db"),
			UpdateStrategy: appsv1.StatefulSetUpdateStrategy{Type: appsv1.OnDeleteStatefulSetStrategyType}}},
		&appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Name: "agent", Namespace: ns}, Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels("agent")}, Template: tpl("agent")}},
	}
	for _, o := range objs {
		if err := s.c.Create(ctx, o); err != nil {
			t.Fatalf("creating %T %s/%s: %v", o, ns, o.GetName(), err)
		}
	}
	job := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "migrate-x1", Namespace: ns,
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "Job", Name: "migrate", UID: "job-uid", Controller: ptr.To(true)}}},
		Spec: tpl("migrate").Spec}
	if err := s.createPod(ctx, job); err != nil {
		t.Fatalf("creating job pod: %v", err)
	}
}

// workloadPods returns how many pods a workload wants and how its pods are named.
type simWorkload struct {
	obj      client.Object
	kind     string
	replicas int
	rolling  bool
	template *corev1.PodTemplateSpec
}

func (s *fleetSim) workloads(ctx context.Context, ns string) ([]simWorkload, error) {
	var out []simWorkload
	var deps appsv1.DeploymentList
	var stss appsv1.StatefulSetList
	var dss appsv1.DaemonSetList
	for _, l := range []client.ObjectList{&deps, &stss, &dss} {
		if err := s.c.List(ctx, l, client.InNamespace(ns)); err != nil {
			return nil, err
		}
	}
	for i := range deps.Items {
		d := &deps.Items[i]
		out = append(out, simWorkload{obj: d, kind: mesh.KindDeployment, replicas: int(ptr.Deref(d.Spec.Replicas, 1)), rolling: true, template: &d.Spec.Template})
	}
	for i := range stss.Items {
		st := &stss.Items[i]
		out = append(out, simWorkload{obj: st, kind: mesh.KindStatefulSet, replicas: int(ptr.Deref(st.Spec.Replicas, 1)),
			rolling: st.Spec.UpdateStrategy.Type != appsv1.OnDeleteStatefulSetStrategyType, template: &st.Spec.Template})
	}
	for i := range dss.Items {
		ds := &dss.Items[i]
		out = append(out, simWorkload{obj: ds, kind: mesh.KindDaemonSet, replicas: 2,
			rolling: ds.Spec.UpdateStrategy.Type != appsv1.OnDeleteDaemonSetStrategyType, template: &ds.Spec.Template})
	}
	return out, nil
}

// revision hashes the parts of a template that matter here (its annotations).
func revision(t *corev1.PodTemplateSpec) string {
	b, _ := json.Marshal(t.Annotations)
	h := fnv.New32a()
	_, _ = h.Write(b)
	return fmt.Sprintf("%08x", h.Sum32())[:8]
}

// sync converges the pods and statuses of every workload of the simulated namespaces.
func (s *fleetSim) sync(ctx context.Context) error {
	for _, ns := range s.namespaces {
		if err := s.syncNamespace(ctx, ns); err != nil {
			return err
		}
	}
	return nil
}

func (s *fleetSim) syncNamespace(ctx context.Context, nsName string) error {
	ns := &corev1.Namespace{}
	if err := s.c.Get(ctx, client.ObjectKey{Name: nsName}, ns); err != nil {
		return err
	}
	wls, err := s.workloads(ctx, nsName)
	if err != nil {
		return err
	}
	var pods corev1.PodList
	if err := s.c.List(ctx, &pods, client.InNamespace(nsName)); err != nil {
		return err
	}
	for _, wl := range wls {
		rev := revision(wl.template)
		key := nsName + "/" + wl.kind + "/" + wl.obj.GetName()
		s.mu.Lock()
		last, known := s.seen[key]
		if known && last != rev && wl.rolling {
			s.rollouts[key]++
		}
		s.seen[key] = rev
		s.mu.Unlock()
		have := map[string]*corev1.Pod{}
		for i := range pods.Items {
			p := &pods.Items[i]
			if p.Labels["sim/workload"] == wl.kind+"-"+wl.obj.GetName() {
				have[p.Name] = p
			}
		}
		for i := 0; i < wl.replicas; i++ {
			name := fmt.Sprintf("%s-%d", wl.obj.GetName(), i)
			if wl.kind == mesh.KindDeployment {
				name = fmt.Sprintf("%s-%s-%d", wl.obj.GetName(), rev, i)
			}
			p := have[name]
			delete(have, name)
			if p != nil && (!wl.rolling || p.Labels["sim/rev"] == rev) {
				continue
			}
			if p != nil {
				if err := s.c.Delete(ctx, p); client.IgnoreNotFound(err) != nil {
					return err
				}
			} else if !wl.rolling && known {
				s.mu.Lock()
				s.replaced[nsName+"/"+name]++
				s.mu.Unlock()
			}
			if err := s.createPod(ctx, s.podFor(ns, wl, name, rev)); err != nil {
				return err
			}
		}
		for _, p := range have { // old ReplicaSet's pods
			if err := s.c.Delete(ctx, p); client.IgnoreNotFound(err) != nil {
				return err
			}
		}
		if err := s.rolledOut(ctx, wl, rev); err != nil {
			return err
		}
	}
	return nil
}

// podFor is what the workload's controller and the injector make of a new pod.
func (s *fleetSim) podFor(ns *corev1.Namespace, wl simWorkload, name, rev string) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns.Name,
		Labels:      map[string]string{"sim/workload": wl.kind + "-" + wl.obj.GetName(), "sim/rev": rev},
		Annotations: map[string]string{}},
		Spec: *wl.template.Spec.DeepCopy()}
	for k, v := range wl.template.Labels {
		p.Labels[k] = v
	}
	owner := metav1.OwnerReference{APIVersion: "apps/v1", Kind: wl.kind, Name: wl.obj.GetName(), UID: wl.obj.GetUID(), Controller: ptr.To(true)}
	if wl.kind == mesh.KindDeployment {
		owner.Kind, owner.Name = mesh.KindReplicaSet, wl.obj.GetName()+"-"+rev
		p.Labels[appsv1.DefaultDeploymentUniqueLabelKey] = rev
	}
	p.OwnerReferences = []metav1.OwnerReference{owner}
	return p
}

// createPod injects the proxy and creates the pod Running and Ready.
func (s *fleetSim) createPod(ctx context.Context, p *corev1.Pod) error {
	ns := &corev1.Namespace{}
	if err := s.c.Get(ctx, client.ObjectKey{Name: p.Namespace}, ns); err != nil {
		return err
	}
	if p.Annotations == nil {
		p.Annotations = map[string]string{}
	}
	if p.Labels == nil {
		p.Labels = map[string]string{}
	}
	switch s.mesh {
	case sluicev1.MeshLinkerd:
		v := ns.Annotations[mesh.LinkerdPinAnnotation]
		if v == "" {
			v = s.defaultVersion
		}
		p.Annotations[mesh.LinkerdProxyVersionAnnotation] = v
		p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: mesh.LinkerdProxyContainer, Image: "cr.l5d.io/linkerd/proxy:" + v})
	case sluicev1.MeshIstio:
		rev := ns.Labels[mesh.IstioRevLabel]
		p.Labels[mesh.IstioRevLabel] = rev
		p.Annotations[mesh.IstioSidecarStatus] = fmt.Sprintf(`{"containers":["istio-proxy"],"revision":%q}`, rev)
		p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: mesh.IstioProxyContainer, Image: "docker.io/istio/proxyv2:" + rev})
	}
	if err := s.c.Create(ctx, p); err != nil {
		return fmt.Errorf("creating pod %s/%s: %w", p.Namespace, p.Name, err)
	}
	p.Status = corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}}
	return s.c.Status().Update(ctx, p)
}

// rolledOut writes the status a workload controller reports once every replica runs rev.
func (s *fleetSim) rolledOut(ctx context.Context, wl simWorkload, rev string) error {
	n := int32(wl.replicas)
	var err error
	switch o := wl.obj.(type) {
	case *appsv1.Deployment:
		want := appsv1.DeploymentStatus{ObservedGeneration: o.Generation, Replicas: n, UpdatedReplicas: n, ReadyReplicas: n, AvailableReplicas: n}
		if !equality.Semantic.DeepEqual(o.Status, want) {
			o.Status = want
			err = s.c.Status().Update(ctx, o)
		}
	case *appsv1.StatefulSet:
		want := appsv1.StatefulSetStatus{ObservedGeneration: o.Generation, Replicas: n, ReadyReplicas: n, CurrentReplicas: n,
			UpdatedReplicas: n, AvailableReplicas: n, CurrentRevision: rev, UpdateRevision: rev}
		if o.Status.ObservedGeneration != want.ObservedGeneration || o.Status.ReadyReplicas != n || o.Status.UpdateRevision != rev {
			o.Status = want
			err = s.c.Status().Update(ctx, o)
		}
	case *appsv1.DaemonSet:
		want := appsv1.DaemonSetStatus{ObservedGeneration: o.Generation, DesiredNumberScheduled: n, CurrentNumberScheduled: n,
			NumberReady: n, UpdatedNumberScheduled: n, NumberAvailable: n}
		if !equality.Semantic.DeepEqual(o.Status, want) {
			o.Status = want
			err = s.c.Status().Update(ctx, o)
		}
	}
	if apierrors.IsConflict(err) {
		return nil // the next sync catches up
	}
	return err
}

// versions returns the proxy versions of the running meshed non-Job pods of ns, e.g.
// "edge-26.8.3 x6".
func (s *fleetSim) versions(t testing.TB, ns string) string {
	t.Helper()
	var pods corev1.PodList
	if err := s.c.List(context.Background(), &pods, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	counts := map[string]int{}
	for i := range pods.Items {
		p := &pods.Items[i]
		if proxy, ok := mesh.Detect(p, s.mesh); ok && mesh.Live(p) && !mesh.JobOwned(p) {
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

// assertRestarts fails when a workload rolled out more than want template
// revisions, or an OnDelete pod was replaced more than want times.
func (s *fleetSim) assertRestarts(t testing.TB, want int) {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	for k, n := range s.rollouts {
		if n > want {
			t.Errorf("%s rolled out %d times, want at most %d", k, n, want)
		}
	}
	for k, n := range s.replaced {
		if n > want {
			t.Errorf("pod %s replaced %d times, want at most %d", k, n, want)
		}
	}
}

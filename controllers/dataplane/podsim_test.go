package dataplane

import (
	"context"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
	"sluice.dev/sluice/mesh"
)

// requestCounter counts API requests by verb and resource.
type requestCounter struct {
	mu     sync.Mutex
	counts map[string]int
}

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func (c *requestCounter) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripperFunc(func(r *http.Request) (*http.Response, error) {
		verb := r.Method
		if r.URL.Query().Get("watch") == "true" {
			verb = "WATCH"
		}
		parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
		res := parts[len(parts)-1]
		if len(parts) >= 2 && (res == "status" || res == "eviction") {
			res = parts[len(parts)-3] + "/" + res
		} else if len(parts) >= 2 && r.Method != http.MethodPost && r.Method != http.MethodGet {
			res = parts[len(parts)-2]
		}
		c.mu.Lock()
		c.counts[verb+" "+res]++
		c.mu.Unlock()
		return rt.RoundTrip(r)
	})
}

func (c *requestCounter) reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.counts = map[string]int{}
}

func (c *requestCounter) summary() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var keys []string
	total := 0
	for k, n := range c.counts {
		keys = append(keys, fmt.Sprintf("%s=%d", k, n))
		total += n
	}
	sort.Strings(keys)
	return fmt.Sprintf("%d (%s)", total, strings.Join(keys, ", "))
}

// podSim keeps the fleet's pods in memory: the controller lists them (PodLister) and evicts them
// (Evictor) through it. It plays the workload controllers from the manager's cache: a rolling
// workload whose template changed gets new pods, ready scaleRollout later, when its status is
// written as rolled out; an evicted pod is replaced, ready, scaleRollout later. New pods get the
// version their namespace pins (config.linkerd.io/proxy-version), else the default.
type podSim struct {
	cache  client.Client // the manager's, for reads
	writer client.Client // uncounted, for workload status
	// prefix limits the simulation to the namespaces of this run (other tests share the apiserver).
	prefix string

	mu       sync.Mutex
	def      string
	uid      int
	work     map[string]*simState // "ns/Kind/name"
	byNS     map[string][]string  // namespace → work keys
	restarts map[string]int
}

type simState struct {
	ns, kind, name string
	rolling        bool
	rev            string
	pods           []simPod
}

type simPod struct {
	name, uid, version string
	readyAt            time.Time
}

func newPodSim(cache, writer client.Client, prefix, def string) *podSim {
	return &podSim{cache: cache, writer: writer, prefix: prefix, def: def, work: map[string]*simState{}, byNS: map[string][]string{}, restarts: map[string]int{}}
}

func (s *podSim) setDefault(v string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.def = v
}

// setup registers one converging controller per workload kind.
func (s *podSim) setup(mgr ctrl.Manager) error {
	for kind, obj := range map[string]client.Object{mesh.KindDeployment: &appsv1.Deployment{},
		mesh.KindStatefulSet: &appsv1.StatefulSet{}, mesh.KindDaemonSet: &appsv1.DaemonSet{}} {
		err := ctrl.NewControllerManagedBy(mgr).Named("podsim-" + strings.ToLower(kind)).For(obj).
			WithOptions(controller.Options{MaxConcurrentReconciles: 4}).
			Complete(reconcile.Func(func(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
				return s.reconcile(ctx, kind, req.NamespacedName)
			}))
		if err != nil {
			return err
		}
	}
	return nil
}

func (s *podSim) version(ctx context.Context, ns string) string {
	n := &corev1.Namespace{}
	if err := s.cache.Get(ctx, client.ObjectKey{Name: ns}, n); err == nil && n.Annotations[mesh.LinkerdPinAnnotation] != "" {
		return n.Annotations[mesh.LinkerdPinAnnotation]
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.def
}

func (s *podSim) reconcile(ctx context.Context, kind string, key types.NamespacedName) (reconcile.Result, error) {
	if !strings.HasPrefix(key.Namespace, s.prefix) {
		return reconcile.Result{}, nil
	}
	obj := newWorkload(kind)
	if err := s.cache.Get(ctx, key, obj); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	method, _ := mesh.Method(obj)
	rev := mesh.RestartToken(obj)
	k := key.Namespace + "/" + kind + "/" + key.Name
	now := time.Now()
	version := s.version(ctx, key.Namespace)
	s.mu.Lock()
	st := s.work[k]
	switch {
	case st == nil:
		st = &simState{ns: key.Namespace, kind: kind, name: key.Name, rolling: method == sluicev1.RestartRollout, rev: rev}
		s.uid++
		st.pods = []simPod{{name: key.Name + "-0", uid: fmt.Sprintf("uid-%d", s.uid), version: version, readyAt: now}}
		s.work[k] = st
		s.byNS[key.Namespace] = append(s.byNS[key.Namespace], k)
	case st.rolling && st.rev != rev:
		st.rev = rev
		s.restarts[k]++
		s.uid++
		st.pods = []simPod{{name: fmt.Sprintf("%s-%d", key.Name, s.uid), uid: fmt.Sprintf("uid-%d", s.uid), version: version, readyAt: now.Add(scaleRollout)}}
	}
	wait := time.Duration(0)
	for _, p := range st.pods {
		if d := p.readyAt.Sub(now); d > wait {
			wait = d
		}
	}
	s.mu.Unlock()
	if wait > 0 {
		return reconcile.Result{RequeueAfter: wait}, nil
	}
	return reconcile.Result{}, s.writeRolledOut(ctx, obj)
}

// writeRolledOut writes the status a workload controller reports once its one pod is ready.
func (s *podSim) writeRolledOut(ctx context.Context, obj client.Object) error {
	obj = obj.DeepCopyObject().(client.Object)
	switch o := obj.(type) {
	case *appsv1.Deployment:
		if o.Status.ObservedGeneration == o.Generation && o.Status.AvailableReplicas == 1 {
			return nil
		}
		o.Status = appsv1.DeploymentStatus{ObservedGeneration: o.Generation, Replicas: 1, UpdatedReplicas: 1, ReadyReplicas: 1, AvailableReplicas: 1}
	case *appsv1.StatefulSet:
		if o.Status.ObservedGeneration == o.Generation && o.Status.ReadyReplicas == 1 {
			return nil
		}
		o.Status = appsv1.StatefulSetStatus{ObservedGeneration: o.Generation, Replicas: 1, ReadyReplicas: 1, CurrentReplicas: 1, UpdatedReplicas: 1}
	case *appsv1.DaemonSet:
		if o.Status.ObservedGeneration == o.Generation && o.Status.NumberReady == 1 {
			return nil
		}
		o.Status = appsv1.DaemonSetStatus{ObservedGeneration: o.Generation, DesiredNumberScheduled: 1, CurrentNumberScheduled: 1,
			NumberReady: 1, UpdatedNumberScheduled: 1, NumberAvailable: 1}
	}
	return s.writer.Status().Update(ctx, obj)
}

// ListPods returns the simulated pods of ns as the injector would have made them.
func (s *podSim) ListPods(_ context.Context, ns string) ([]corev1.Pod, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now()
	var out []corev1.Pod
	for _, k := range s.byNS[ns] {
		st := s.work[k]
		for _, p := range st.pods {
			out = append(out, st.pod(p, now))
		}
	}
	return out, nil
}

func (st *simState) pod(p simPod, now time.Time) corev1.Pod {
	ready := corev1.ConditionFalse
	if !now.Before(p.readyAt) {
		ready = corev1.ConditionTrue
	}
	owner := metav1.OwnerReference{APIVersion: "apps/v1", Kind: st.kind, Name: st.name, Controller: ptr.To(true)}
	labels := map[string]string{}
	if st.kind == mesh.KindDeployment {
		owner.Kind, owner.Name = mesh.KindReplicaSet, st.name+"-h"
		labels[appsv1.DefaultDeploymentUniqueLabelKey] = "h"
	}
	return corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: p.name, Namespace: st.ns, UID: types.UID(p.uid), Labels: labels,
			Annotations:     map[string]string{mesh.LinkerdProxyVersionAnnotation: p.version},
			OwnerReferences: []metav1.OwnerReference{owner}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "ghcr.io/stefanprodan/podinfo:6.7.1"},
			{Name: mesh.LinkerdProxyContainer, Image: "cr.l5d.io/linkerd/proxy:" + p.version}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: ready}}},
	}
}

// Evict removes the pod; its workload's controller replaces it, ready scaleRollout later.
func (s *podSim) Evict(ctx context.Context, pod *corev1.Pod) error {
	version := s.version(ctx, pod.Namespace)
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, k := range s.byNS[pod.Namespace] {
		st := s.work[k]
		for i, p := range st.pods {
			if p.uid == string(pod.UID) {
				s.restarts[k]++
				s.uid++
				st.pods[i] = simPod{name: p.name, uid: fmt.Sprintf("uid-%d", s.uid), version: version, readyAt: time.Now().Add(scaleRollout)}
				return nil
			}
		}
	}
	return nil
}

func (s *podSim) readyPods(nsPrefix string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	now := time.Now()
	for _, st := range s.work {
		if !strings.HasPrefix(st.ns, nsPrefix) {
			continue // workloads of other tests sharing the apiserver
		}
		for _, p := range st.pods {
			if !now.Before(p.readyAt) {
				n++
			}
		}
	}
	return n
}

func (s *podSim) atVersion(nsPrefix, v string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, st := range s.work {
		if !strings.HasPrefix(st.ns, nsPrefix) {
			continue
		}
		for _, p := range st.pods {
			if p.version == v {
				n++
			}
		}
	}
	return n
}

func (s *podSim) maxRestarts() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	m := 0
	for _, n := range s.restarts {
		m = max(m, n)
	}
	return m
}

package stack

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
	"sluice.dev/sluice/mesh"
	"sluice.dev/sluice/test/controlplane"
	"sluice.dev/sluice/test/injector"
)

// PodsPerNamespace is how many meshed pods FleetWorkloads run on the two-node cluster: web 2,
// db 2, cache 1, agent 2 (the Job's pod finishes).
const PodsPerNamespace = 7

// FleetWorkloads are every kind of workload a manual `kubectl rollout restart deploy` upgrade
// forgets one of, in namespace ns: a Deployment "web" (2 replicas), an OnDelete StatefulSet "db"
// (2) behind a PodDisruptionBudget (maxUnavailable 1), a rolling StatefulSet "cache" (1), a
// rolling DaemonSet "agent" (one pod per node) and a Job "migrate" that completes.
func FleetWorkloads(ns string) []client.Object {
	labels := func(app string) map[string]string { return map[string]string{"app": app} }
	tpl := func(app string) corev1.PodTemplateSpec {
		return corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels(app)},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "ghcr.io/stefanprodan/podinfo:6.7.1"}}}}
	}
	job := tpl("migrate")
	job.Spec.RestartPolicy = corev1.RestartPolicyNever
	headless := func(name string) *corev1.Service {
		return &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Spec: corev1.ServiceSpec{
			ClusterIP: corev1.ClusterIPNone, Selector: labels(name), Ports: []corev1.ServicePort{{Port: 5432}}}}
	}
	return []client.Object{
		&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns}, Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](2), Selector: &metav1.LabelSelector{MatchLabels: labels("web")}, Template: tpl("web")}},
		headless("db"),
		&appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: ns}, Spec: appsv1.StatefulSetSpec{
			Replicas: ptr.To[int32](2), ServiceName: "db", Selector: &metav1.LabelSelector{MatchLabels: labels("db")}, Template: tpl("db"),
			UpdateStrategy: appsv1.StatefulSetUpdateStrategy{Type: appsv1.OnDeleteStatefulSetStrategyType}}},
		&policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: ns}, Spec: policyv1.PodDisruptionBudgetSpec{
			MaxUnavailable: ptr.To(intstr.FromInt32(1)), Selector: &metav1.LabelSelector{MatchLabels: labels("db")}}},
		headless("cache"),
		&appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: "cache", Namespace: ns}, Spec: appsv1.StatefulSetSpec{
			Replicas: ptr.To[int32](1), ServiceName: "cache", Selector: &metav1.LabelSelector{MatchLabels: labels("cache")}, Template: tpl("cache")}},
		&appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Name: "agent", Namespace: ns}, Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels("agent")}, Template: tpl("agent")}},
		&batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "migrate", Namespace: ns}, Spec: batchv1.JobSpec{Template: job}},
	}
}

// MeshedNamespace creates namespace name, labelled for the (simulated) Linkerd injector and with
// fleet=<fleet>, running FleetWorkloads. errors: objects the apiserver rejects.
func (s *Stack) MeshedNamespace(ctx context.Context, name, fleet string) error {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name,
		Labels: map[string]string{injector.LabelInject: injector.InjectEnabled, "fleet": fleet}}}
	for _, o := range append([]client.Object{ns}, FleetWorkloads(name)...) {
		if err := s.Client.Create(ctx, o); client.IgnoreAlreadyExists(err) != nil {
			return fmt.Errorf("creating %s in %s: %w", o.GetName(), name, err)
		}
	}
	return nil
}

// ProxyVersions returns how many running pods (Job pods aside) of each namespace run each proxy
// version, "no-proxy" for pods without one, e.g. {"mesh-1": {"edge-26.6.3": 7}}.
func (s *Stack) ProxyVersions(ctx context.Context, namespaces []string) (map[string]map[string]int, error) {
	out := map[string]map[string]int{}
	for _, ns := range namespaces {
		pods := &corev1.PodList{}
		if err := s.Client.List(ctx, pods, client.InNamespace(ns)); err != nil {
			return nil, err
		}
		out[ns] = map[string]int{}
		for _, p := range pods.Items {
			if p.Status.Phase != corev1.PodRunning || p.DeletionTimestamp != nil {
				continue
			}
			v := p.Annotations[injector.AnnotationProxyVersion]
			if v == "" {
				v = "no-proxy"
			}
			out[ns][v]++
		}
	}
	return out, nil
}

// WaitMeshed waits until every namespace runs want running pods, all injected with version.
func (s *Stack) WaitMeshed(ctx context.Context, namespaces []string, want int, version string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		v, err := s.ProxyVersions(ctx, namespaces)
		if err == nil {
			ok := true
			for _, ns := range namespaces {
				ok = ok && v[ns][version] == want && len(v[ns]) == 1
			}
			if ok {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("namespaces not ready on %s within %s: %v (%v)", version, timeout, v, err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// FollowDataPlane prints a line to out for every change of the DataPlane's phase, counts and
// waves until it reaches one of until for its declared version, and returns it.
// errors: reading it, timeout.
func (s *Stack) FollowDataPlane(ctx context.Context, name string, timeout time.Duration, out io.Writer, until ...sluicev1.DataPlanePhase) (*sluicev1.DataPlane, error) {
	start := time.Now()
	last := ""
	for {
		dp := &sluicev1.DataPlane{}
		if err := s.Client.Get(ctx, client.ObjectKey{Name: name}, dp); err != nil {
			return nil, err
		}
		line := dataPlaneLine(dp)
		if line != last && out != nil {
			fmt.Fprintf(out, "%s  +%-5s %s\n", time.Now().Format("15:04:05"), time.Since(start).Round(time.Second), line)
		}
		last = line
		for _, p := range until {
			if dp.Status.Phase == p && dp.Status.Version == dp.Spec.Version {
				return dp, nil
			}
		}
		if time.Since(start) > timeout {
			return dp, fmt.Errorf("dataplane %s not %v within %s: %s", name, until, timeout, line)
		}
		select {
		case <-ctx.Done():
			return dp, ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// dataPlaneLine is one timeline line: phase, version, fleet DESIRED/CURRENT and every started
// wave, and the control plane when it holds the waves.
func dataPlaneLine(dp *sluicev1.DataPlane) string {
	s := dp.Status
	parts := []string{fmt.Sprintf("%-11s %s desired %2d current %2d", s.Phase, s.Version, s.Desired, s.Current)}
	if !s.ControlPlane.Ready && s.ControlPlane.Message != "" {
		parts = append(parts, "control plane not ready: "+s.ControlPlane.Message)
	}
	for i, w := range s.Waves {
		if w.Phase == sluicev1.WavePending {
			continue
		}
		ns := append([]string(nil), w.Namespaces...)
		sort.Strings(ns)
		parts = append(parts, fmt.Sprintf("wave %d %v %s %d/%d", i, ns, w.Phase, w.Current, w.Desired))
	}
	return strings.Join(parts, "  ")
}

// UpgradeControlPlane moves the simulated Linkerd control plane to version, as `linkerd upgrade
// | kubectl apply -f -` does, and waits until every component runs it and is available.
// errors: API errors, timeout.
func (s *Stack) UpgradeControlPlane(ctx context.Context, version string, timeout time.Duration) error {
	if err := controlplane.UpgradeLinkerd(ctx, s.Client, version); err != nil {
		return err
	}
	deadline := time.Now().Add(timeout)
	for {
		var deps appsv1.DeploymentList
		if err := s.Client.List(ctx, &deps, client.InNamespace(controlplane.Namespace)); err != nil {
			return err
		}
		st := mesh.LinkerdControlPlane(deps.Items, controlplane.Namespace, version)
		if st.Ready {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("control plane not on %s within %s: %s", version, timeout, st.Message)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
}

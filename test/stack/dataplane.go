package stack

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
	"sluice.dev/sluice/test/injector"
)

// MeshedNamespace creates namespace name, labelled for the (simulated) Linkerd injector and with
// fleet=<fleet>, running a Deployment (2 replicas), an OnDelete StatefulSet (2 replicas) and a
// DaemonSet: every kind a manual `kubectl rollout restart deploy` upgrade forgets one of.
// errors: objects the apiserver rejects.
func (s *Stack) MeshedNamespace(ctx context.Context, name, fleet string) error {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name,
		Labels: map[string]string{injector.LabelInject: injector.InjectEnabled, "fleet": fleet}}}
	labels := func(app string) map[string]string { return map[string]string{"app": app} }
	tpl := func(app string) corev1.PodTemplateSpec {
		return corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels(app)},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "ghcr.io/stefanprodan/podinfo:6.7.1"}}}}
	}
	for _, o := range []client.Object{
		ns,
		&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: name}, Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](2), Selector: &metav1.LabelSelector{MatchLabels: labels("web")}, Template: tpl("web")}},
		&corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: name}, Spec: corev1.ServiceSpec{
			ClusterIP: corev1.ClusterIPNone, Selector: labels("db"), Ports: []corev1.ServicePort{{Port: 5432}}}},
		&appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: name}, Spec: appsv1.StatefulSetSpec{
			Replicas: ptr.To[int32](2), ServiceName: "db", Selector: &metav1.LabelSelector{MatchLabels: labels("db")}, Template: tpl("db"),
			UpdateStrategy: appsv1.StatefulSetUpdateStrategy{Type: appsv1.OnDeleteStatefulSetStrategyType}}},
		&appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Name: "agent", Namespace: name}, Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels("agent")}, Template: tpl("agent")}},
	} {
		if err := s.Client.Create(ctx, o); client.IgnoreAlreadyExists(err) != nil {
			return fmt.Errorf("creating %s in %s: %w", o.GetName(), name, err)
		}
	}
	return nil
}

// ProxyVersions returns how many running pods of each namespace run each proxy version, e.g.
// {"mesh-1": {"edge-26.6.3": 6}}.
func (s *Stack) ProxyVersions(ctx context.Context, namespaces []string) (map[string]map[string]int, error) {
	out := map[string]map[string]int{}
	for _, ns := range namespaces {
		pods := &corev1.PodList{}
		if err := s.Client.List(ctx, pods, client.InNamespace(ns)); err != nil {
			return nil, err
		}
		out[ns] = map[string]int{}
		for _, p := range pods.Items {
			if p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil {
				out[ns][p.Annotations[injector.AnnotationProxyVersion]]++
			}
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

// FollowDataPlane prints a line to out for every change of the DataPlane's waves until it
// succeeds or fails, and returns it. errors: reading it, timeout.
func (s *Stack) FollowDataPlane(ctx context.Context, name string, timeout time.Duration, out io.Writer) (*sluicev1.DataPlane, error) {
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
		switch dp.Status.Phase {
		case sluicev1.DataPlaneUpToDate, sluicev1.DataPlaneRolledBack:
			return dp, nil
		}
		if time.Since(start) > timeout {
			return dp, fmt.Errorf("proxy upgrade %s not done within %s: %s", name, timeout, line)
		}
		select {
		case <-ctx.Done():
			return dp, ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// dataPlaneLine is one timeline line: phase, fleet DESIRED/CURRENT and every started wave.
func dataPlaneLine(dp *sluicev1.DataPlane) string {
	s := dp.Status
	parts := []string{fmt.Sprintf("%-11s desired %2d current %2d", s.Phase, s.Desired, s.Current)}
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

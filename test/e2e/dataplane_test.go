package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
	"sluice.dev/sluice/mesh"
)

// TestDataPlaneEveryKindAndBarePod: three meshed namespaces, each with a Deployment, an OnDelete
// StatefulSet behind a PodDisruptionBudget, a rolling StatefulSet, a DaemonSet and a completed
// Job; ns-2 also runs a bare pod with the proxy. The control plane is upgraded first, then the
// DataPlane declares its version; the controller is restarted in the middle of wave 1. Every
// workload is restarted exactly once, the Job's pod never; the DataPlane is Incomplete (not up
// to date) while the bare pod runs the old proxy, and names it; excluding the pod explicitly lets
// it converge.
func TestDataPlaneEveryKindAndBarePod(t *testing.T) {
	e := startDPEnv(t, dpEnvOptions{})
	ctx := context.Background()
	nss := []string{"ns-1", "ns-2", "ns-3"}
	for _, ns := range nss {
		e.namespace(t, ns, "f")
	}
	e.waitFleetReady(t, nss, proxyOld)
	bare := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "debug", Namespace: "ns-2", Labels: map[string]string{"app": "debug"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "busybox:1.36"}}}}
	must(t, e.c.Create(ctx, bare))
	e.waitFor(t, time.Minute, "bare pod running", func() (bool, string) {
		v := e.versions(t, "ns-2")
		return v == fmt.Sprintf("[%s x%d]", proxyOld, podsPerNamespace+1), v
	})
	jobs := e.jobPods(t)

	e.upgradeControlPlane(t, proxyNew)
	e.startManager(t)
	e.createDataPlane(t, "f", func(s *sluicev1.DataPlaneSpec) {
		s.CanaryNamespaces = []string{"ns-1"}
		s.Waves.MaxNamespaces = ptr.To[int32](1)
	})
	e.waitFor(t, 3*time.Minute, "wave 1 restarting", func() (bool, string) {
		dp := e.get(t)
		return len(dp.Status.Waves) > 1 && dp.Status.Waves[1].Phase == sluicev1.WaveRestarting && dp.Status.Waves[1].Restarted > 0, describe(dp)
	})
	t.Log("restarting the controller in wave 1")
	e.restartManager(t)
	dp := e.waitPhase(t, 4*time.Minute, sluicev1.DataPlaneIncomplete, sluicev1.DataPlaneUpToDate, sluicev1.DataPlaneRolledBack, sluicev1.DataPlaneFailed)
	t.Log(describe(dp))
	if dp.Status.Phase != sluicev1.DataPlaneIncomplete || fmt.Sprint(dp.Status.UnmanagedPods) != "[ns-2/debug]" {
		t.Fatalf("with the bare pod on %s: phase %s, unmanaged %v", proxyOld, dp.Status.Phase, dp.Status.UnmanagedPods)
	}
	want := int32(3*podsPerNamespace + 1)
	if dp.Status.Desired != want || dp.Status.Current != want-1 {
		t.Errorf("DESIRED %d CURRENT %d, want %d/%d", dp.Status.Desired, dp.Status.Current, want, want-1)
	}
	ready := apimeta.FindStatusCondition(dp.Status.Conditions, sluicev1.ConditionReady)
	unmanaged := apimeta.FindStatusCondition(dp.Status.Conditions, sluicev1.ConditionUnmanagedPods)
	if ready == nil || ready.Status != metav1.ConditionFalse || unmanaged == nil || !strings.Contains(unmanaged.Message, "ns-2/debug") {
		t.Errorf("Ready %+v, UnmanagedPods %+v", ready, unmanaged)
	}
	for _, ns := range nss {
		if v := e.versions(t, ns); v != fmt.Sprintf("[%s x%d]", proxyNew, podsPerNamespace) &&
			!(ns == "ns-2" && v == fmt.Sprintf("[%s x1 %s x%d]", proxyOld, proxyNew, podsPerNamespace)) {
			t.Errorf("%s runs %s", ns, v)
		}
	}
	for ns, p := range jobs {
		now := e.jobPods(t)[ns]
		if now.UID != p.UID || now.Annotations[mesh.LinkerdProxyVersionAnnotation] != proxyOld {
			t.Errorf("job pod in %s: %s %s, was %s", ns, now.UID, now.Annotations[mesh.LinkerdProxyVersionAnnotation], p.UID)
		}
	}
	e.assertRestartedOnce(t, nss)

	// The bare pod is excluded explicitly: the DataPlane converges.
	must(t, e.c.Get(ctx, client.ObjectKeyFromObject(bare), bare))
	patch := client.MergeFrom(bare.DeepCopy())
	bare.Annotations = map[string]string{sluicev1.AnnotationDataPlaneExclude: "true"}
	must(t, e.c.Patch(ctx, bare, patch))
	dp = e.waitPhase(t, time.Minute, sluicev1.DataPlaneUpToDate)
	if dp.Status.Desired != want-1 || dp.Status.Current != want-1 || len(dp.Status.UnmanagedPods) != 0 {
		t.Errorf("after the exclusion: DESIRED %d CURRENT %d unmanaged %v", dp.Status.Desired, dp.Status.Current, dp.Status.UnmanagedPods)
	}
	if got := e.notifier.events(); fmt.Sprint(got) != "[UpToDate]" {
		t.Errorf("notifications %v, want one UpToDate", got)
	}
}

// TestDataPlaneWaveFailsRollsBackFleetUntouched: the canary namespace's health (a real Prometheus
// scraping a per-namespace gauge) fails on the new proxy: its wave is rolled back, the run ends
// RolledBack with the failing metric in the Ready condition, one notification, and no other
// namespace is pinned or restarted.
func TestDataPlaneWaveFailsRollsBackFleetUntouched(t *testing.T) {
	e := startDPEnv(t, dpEnvOptions{prometheus: true})
	nss := []string{"ns-1", "ns-2", "ns-3"}
	for _, ns := range nss {
		e.namespace(t, ns, "f")
	}
	e.waitFleetReady(t, nss, proxyOld)
	before := e.pods.all()
	e.health.set("ns-1", 0)
	e.upgradeControlPlane(t, proxyNew)
	e.startManager(t)
	e.createDataPlane(t, "f", func(s *sluicev1.DataPlaneSpec) {
		s.CanaryNamespaces = []string{"ns-1"}
		s.BakeTime = "10s"
		s.Analysis.Interval, s.Analysis.Threshold = "2s", 2
		s.Analysis.Metrics = []sluicev1.CanaryMetric{{Name: "fleet-health", ThresholdRange: &sluicev1.ThresholdRange{Min: ptr.To(1.0)},
			TemplateRef: &sluicev1.CrossNamespaceObjectReference{Name: "fleet-health", Namespace: "sluice-system"}}}
	})
	dp := e.waitPhase(t, 3*time.Minute, sluicev1.DataPlaneRolledBack, sluicev1.DataPlaneFailed, sluicev1.DataPlaneUpToDate)
	t.Log(describe(dp))
	if dp.Status.Phase != sluicev1.DataPlaneRolledBack || dp.Status.Waves[0].Reason != sluicev1.ReasonAnalysisFailed {
		t.Fatalf("phase %s", dp.Status.Phase)
	}
	ready := apimeta.FindStatusCondition(dp.Status.Conditions, sluicev1.ConditionReady)
	if ready == nil || ready.Reason != sluicev1.ReasonAnalysisFailed || !strings.Contains(ready.Message, "ns-1: fleet-health") {
		t.Errorf("Ready %+v", ready)
	}
	if v := e.versions(t, "ns-1"); v != fmt.Sprintf("[%s x%d]", proxyOld, podsPerNamespace) {
		t.Errorf("ns-1 runs %s after the rollback", v)
	}
	after := e.pods.all()
	for _, ns := range nss[1:] {
		if pin, ok := e.nsPin(t, ns); ok {
			t.Errorf("%s pinned to %s", ns, pin)
		}
		for k, inc := range after {
			if strings.HasPrefix(k, ns+"/") && len(inc) != len(before[k]) {
				t.Errorf("pod %s was replaced: %v", k, inc)
			}
		}
	}
	if got := e.notifier.events(); fmt.Sprint(got) != "[RolledBack]" {
		t.Errorf("notifications %v, want one RolledBack", got)
	}
}

// jobPods returns the Job pod of every namespace.
func (e *dpEnv) jobPods(t *testing.T) map[string]corev1.Pod {
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

// assertRestartedOnce checks that every workload of the namespaces was restarted exactly once:
// the Deployment's revision, the DaemonSet's and rolling StatefulSet's controller revisions, and,
// for the OnDelete StatefulSet whose template never changes, the incarnations of each pod name
// (one per version).
func (e *dpEnv) assertRestartedOnce(t *testing.T, namespaces []string) {
	t.Helper()
	ctx := context.Background()
	all := e.pods.all()
	for _, ns := range namespaces {
		dep := &appsv1.Deployment{}
		must(t, e.c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "web"}, dep))
		if got := dep.Annotations["deployment.kubernetes.io/revision"]; got != "2" {
			t.Errorf("deployment %s/web at revision %s, want 2", ns, got)
		}
		var revs appsv1.ControllerRevisionList
		must(t, e.c.List(ctx, &revs, client.InNamespace(ns)))
		byOwner := map[string]int{}
		for _, r := range revs.Items {
			if owner := metav1.GetControllerOf(&r); owner != nil {
				byOwner[owner.Kind+"/"+owner.Name]++
			}
		}
		if byOwner["DaemonSet/agent"] != 2 || byOwner["StatefulSet/cache"] != 2 {
			t.Errorf("%s controller revisions %v, want 2 for DaemonSet/agent and StatefulSet/cache", ns, byOwner)
		}
		sts := &appsv1.StatefulSet{}
		must(t, e.c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "db"}, sts))
		if v := sts.Spec.Template.Annotations[mesh.RestartedAtAnnotation]; v != "" {
			t.Errorf("OnDelete statefulset %s/db had its template changed (%s): it must be restarted by eviction only", ns, v)
		}
		for _, name := range []string{"db-0", "db-1"} {
			if got := versionsOf(all[ns+"/"+name]); fmt.Sprint(got) != fmt.Sprint([]string{proxyOld, proxyNew}) {
				t.Errorf("pod %s/%s incarnations %v, want one per version", ns, name, got)
			}
		}
	}
}

func versionsOf(inc []podIncarnation) []string {
	var out []string
	for _, x := range inc {
		out = append(out, x.version)
	}
	return out
}

// neverBack checks, from every pod the test saw appear, that no namespace ever got a pod on
// version first again once one of its pods ran another version, and that no pod name had two
// incarnations on the same version (an OnDelete pod is evicted once per version).
func (e *dpEnv) neverBack(t *testing.T, namespaces []string, first string) {
	t.Helper()
	type seen struct {
		name string
		podIncarnation
	}
	byNS := map[string][]seen{}
	for k, inc := range e.pods.all() {
		ns, name, _ := strings.Cut(k, "/")
		if !slices.Contains(namespaces, ns) || strings.HasPrefix(name, "migrate-") {
			continue
		}
		for _, x := range inc {
			byNS[ns] = append(byNS[ns], seen{name, x})
		}
		if strings.HasPrefix(name, "db-") {
			vs := versionsOf(inc)
			if len(slices.Compact(slices.Clone(vs))) != len(vs) {
				t.Errorf("pod %s incarnations %v: evicted twice for one version", k, vs)
			}
		}
	}
	for ns, all := range byNS {
		slices.SortFunc(all, func(a, b seen) int { return a.seq - b.seq })
		left := false
		for _, x := range all {
			if x.version != first {
				left = true
			} else if left {
				t.Errorf("%s went back to %s: pod %s appeared on it after the namespace left it", ns, first, x.name)
			}
		}
	}
}

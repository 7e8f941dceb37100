package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
	"sluice.dev/sluice/mesh"
	"sluice.dev/sluice/test/controlplane"
	"sluice.dev/sluice/test/stack"
)

// TestDataPlaneControlPlaneFirstThenTwoEdits: the version is declared ahead of the control
// plane: no pod restarts, ControlPlaneNotReady names the version seen. The control plane is
// upgraded and the waves start; in the middle of the run the version is edited again (control
// plane first), and the controller is restarted three times along the way. No namespace ever
// goes back to the first version, no OnDelete pod is evicted twice for one version, and the
// data plane converges on the last version.
func TestDataPlaneControlPlaneFirstThenTwoEdits(t *testing.T) {
	e := startDPEnv(t, dpEnvOptions{})
	nss := []string{"ns-1", "ns-2", "ns-3"}
	for _, ns := range nss {
		e.namespace(t, ns, "f")
	}
	e.waitFleetReady(t, nss, proxyOld)
	before := e.pods.all()
	e.startManager(t)
	e.createDataPlane(t, "f", func(s *sluicev1.DataPlaneSpec) { s.Waves.MaxNamespaces = ptr.To[int32](1) })
	e.waitFor(t, time.Minute, "ControlPlaneNotReady", func() (bool, string) {
		dp := e.get(t)
		c := apimeta.FindStatusCondition(dp.Status.Conditions, sluicev1.ConditionControlPlaneNotReady)
		return c != nil && strings.Contains(c.Message, "runs edge-26.6.3, not edge-26.8.3") &&
			strings.Contains(c.Message, "control plane seen at edge-26.6.3") && dp.Status.Phase == sluicev1.DataPlaneWaiting, describe(dp)
	})
	time.Sleep(3 * time.Second)
	if after := e.pods.all(); len(after) != len(before) {
		t.Fatalf("pods changed ahead of the control plane: %d names, was %d", len(after), len(before))
	}
	for _, ns := range nss {
		if pin, ok := e.nsPin(t, ns); ok {
			t.Fatalf("%s pinned to %s ahead of the control plane", ns, pin)
		}
	}

	e.upgradeControlPlane(t, proxyNew)
	e.waitFor(t, 2*time.Minute, "wave 1 restarting", func() (bool, string) {
		dp := e.get(t)
		return len(dp.Status.Waves) > 1 && dp.Status.Waves[1].Phase == sluicev1.WaveRestarting, describe(dp)
	})
	t.Log("restart 1, then the second edit (control plane first)")
	e.restartManager(t)
	e.upgradeControlPlane(t, proxyNext)
	e.setVersion(t, proxyNext)
	e.waitFor(t, time.Minute, "the second run started", func() (bool, string) {
		dp := e.get(t)
		return dp.Status.Version == proxyNext && len(dp.Status.Waves) > 0 && dp.Status.Waves[0].Phase != sluicev1.WavePending, describe(dp)
	})
	t.Log("restart 2")
	e.restartManager(t)
	e.waitFor(t, 2*time.Minute, "wave 1 of the second run restarting", func() (bool, string) {
		dp := e.get(t)
		return len(dp.Status.Waves) > 1 && dp.Status.Waves[1].Phase == sluicev1.WaveRestarting, describe(dp)
	})
	t.Log("restart 3")
	e.restartManager(t)
	dp := e.waitPhase(t, 4*time.Minute, sluicev1.DataPlaneUpToDate, sluicev1.DataPlaneRolledBack, sluicev1.DataPlaneFailed,
		sluicev1.DataPlaneIncomplete)
	t.Log(describe(dp))
	if dp.Status.Phase != sluicev1.DataPlaneUpToDate {
		t.Fatalf("phase %s", dp.Status.Phase)
	}
	for _, ns := range nss {
		if v := e.versions(t, ns); v != fmt.Sprintf("[%s x%d]", proxyNext, podsPerNamespace) {
			t.Errorf("%s runs %s", ns, v)
		}
		if pin, _ := e.nsPin(t, ns); pin != proxyNext {
			t.Errorf("%s pinned to %q", ns, pin)
		}
	}
	e.neverBack(t, nss, proxyOld)
}

// TestDataPlaneInjectorStoppedThenDrift: the proxy injector stops in the middle of the first wave
// (failurePolicy Ignore: pods start without the proxy). The wave does not succeed; the run ends
// Failed within the progress deadline and names the pods that came back without the proxy. The
// injector comes back, `retry` converges the data plane; then a pod template pins the old proxy
// and its pods come back old: Drifted, once (one event, one notification).
func TestDataPlaneInjectorStoppedThenDrift(t *testing.T) {
	e := startDPEnv(t, dpEnvOptions{failurePolicy: admissionregistrationv1.Ignore, podReadyDelay: 2 * time.Second})
	ctx := context.Background()
	nss := []string{"ns-1", "ns-2"}
	for _, ns := range nss {
		e.namespace(t, ns, "f")
	}
	e.waitFleetReady(t, nss, proxyOld)
	e.upgradeControlPlane(t, proxyNew)
	e.startManager(t)
	const deadline = 20 * time.Second
	e.createDataPlane(t, "f", func(s *sluicev1.DataPlaneSpec) {
		s.Waves.MaxNamespaces = ptr.To[int32](1)
		s.ProgressDeadlineSeconds = ptr.To(int32(deadline / time.Second))
	})
	e.waitFor(t, time.Minute, "the first restarts", func() (bool, string) {
		dp := e.get(t)
		return len(dp.Status.Waves) > 0 && dp.Status.Waves[0].Restarted > 0, describe(dp)
	})
	must(t, controlplane.ScaleInjector(ctx, e.c, 0))
	stopped := time.Now()
	t.Log("proxy injector stopped")
	dp := e.waitPhase(t, 2*time.Minute, sluicev1.DataPlaneFailed, sluicev1.DataPlaneRolledBack, sluicev1.DataPlaneUpToDate)
	took := time.Since(stopped)
	t.Logf("ended %s %s after the injector stopped:%s", dp.Status.Phase, took.Round(time.Second), describe(dp))
	if dp.Status.Phase == sluicev1.DataPlaneUpToDate || took > deadline+20*time.Second {
		t.Fatalf("phase %s after %s (deadline %s)", dp.Status.Phase, took, deadline)
	}
	if len(dp.Status.UnmeshedPods) == 0 || !strings.HasPrefix(dp.Status.UnmeshedPods[0], "ns-1/") {
		t.Errorf("unmeshed pods %v", dp.Status.UnmeshedPods)
	}
	ready := apimeta.FindStatusCondition(dp.Status.Conditions, sluicev1.ConditionReady)
	if ready == nil || !strings.Contains(ready.Message, "without the proxy") || !strings.Contains(ready.Message, "linkerd-proxy-injector") {
		t.Errorf("Ready %+v does not keep the root cause", ready)
	}
	if v := e.versions(t, "ns-2"); v != fmt.Sprintf("[%s x%d]", proxyOld, podsPerNamespace) {
		t.Errorf("ns-2 runs %s: a later wave started", v)
	}

	t.Log("the injector is back; retry")
	must(t, controlplane.ScaleInjector(ctx, e.c, 1))
	e.waitControlPlane(t, proxyNew)
	stamp := time.Now().UTC().Format(time.RFC3339)
	e.annotate(t, sluicev1.AnnotationRetry, stamp)
	e.waitFor(t, time.Minute, "the retry handled", func() (bool, string) {
		dp = e.get(t)
		return dp.Status.LastHandledRequests[sluicev1.AnnotationRetry] == stamp, describe(dp)
	})
	dp = e.waitPhase(t, 4*time.Minute, sluicev1.DataPlaneUpToDate, sluicev1.DataPlaneRolledBack, sluicev1.DataPlaneFailed)
	if dp.Status.Phase != sluicev1.DataPlaneUpToDate {
		t.Fatalf("after the retry: %s", describe(dp))
	}
	for _, ns := range nss {
		if v := e.versions(t, ns); v != fmt.Sprintf("[%s x%d]", proxyNew, podsPerNamespace) {
			t.Errorf("%s runs %s", ns, v)
		}
	}

	t.Log("ns-1/web's template pins the old proxy")
	dep := &appsv1.Deployment{}
	must(t, e.c.Get(ctx, client.ObjectKey{Namespace: "ns-1", Name: "web"}, dep))
	patch := client.MergeFrom(dep.DeepCopy())
	dep.Spec.Template.Annotations = map[string]string{mesh.LinkerdPinAnnotation: proxyOld}
	must(t, e.c.Patch(ctx, dep, patch))
	dp = e.waitPhase(t, time.Minute, sluicev1.DataPlaneDrifted)
	e.waitFor(t, time.Minute, "both web pods named", func() (bool, string) {
		dp = e.get(t)
		return len(dp.Status.DriftedPods) == 2 && e.versions(t, "ns-1") == fmt.Sprintf("[%s x2 %s x%d]", proxyOld, proxyNew, podsPerNamespace-2),
			fmt.Sprint(dp.Status.DriftedPods)
	})
	time.Sleep(5 * time.Second)
	if got := e.events.with(sluicev1.ReasonDrifted); len(got) != 1 {
		t.Errorf("Drifted events %v, want one", got)
	}
	if got := e.notifier.events(); slices.Index(got, "Drifted") < 0 || len(slices.DeleteFunc(slices.Clone(got), func(s string) bool { return s != "Drifted" })) != 1 {
		t.Errorf("notifications %v, want one Drifted", got)
	}
	if c := apimeta.FindStatusCondition(e.get(t).Status.Conditions, sluicev1.ConditionDrifted); c == nil || !strings.Contains(c.Message, "ns-1/web-") {
		t.Errorf("Drifted condition %+v", c)
	}
}

// TestDataPlaneScopeAndDeletion: a selector that matches kube-system and the control plane's
// namespace (both labelled for injection, kube-system running meshed workloads) touches neither;
// planning pins nothing but the wave that starts; deleting the DataPlane in the middle of its
// first wave removes its pins, so every namespace follows the control plane's one version, and
// says so in an event.
func TestDataPlaneScopeAndDeletion(t *testing.T) {
	e := startDPEnv(t, dpEnvOptions{})
	ctx := context.Background()
	nss := []string{"ns-1", "ns-2", "ns-3"}
	for _, ns := range nss {
		e.namespace(t, ns, "f")
	}
	for _, name := range []string{"kube-system", controlplane.Namespace} {
		ns := &corev1.Namespace{}
		must(t, e.c.Get(ctx, client.ObjectKey{Name: name}, ns))
		patch := client.MergeFrom(ns.DeepCopy())
		ns.Labels["fleet"], ns.Labels[mesh.LinkerdInject] = "f", "enabled"
		must(t, e.c.Patch(ctx, ns, patch))
	}
	for _, o := range stack.FleetWorkloads("kube-system") {
		must(t, e.c.Create(ctx, o))
	}
	e.waitFleetReady(t, append(nss, "kube-system"), proxyOld)
	before := e.pods.all()
	e.upgradeControlPlane(t, proxyNew)
	e.startManager(t)
	e.createDataPlane(t, "f", func(s *sluicev1.DataPlaneSpec) {
		s.CanaryNamespaces = []string{"ns-1"}
		s.BakeTime = "1h"
	})
	e.waitFor(t, time.Minute, "the canary wave started", func() (bool, string) {
		dp := e.get(t)
		return len(dp.Status.Waves) > 0 && dp.Status.Waves[0].Phase != sluicev1.WavePending, describe(dp)
	})
	for _, ns := range []string{"ns-2", "ns-3", "kube-system", controlplane.Namespace} {
		if pin, ok := e.nsPin(t, ns); ok {
			t.Errorf("%s pinned to %s when the canary wave started", ns, pin)
		}
	}
	dp := e.get(t)
	e.waitFor(t, 2*time.Minute, "the canary wave baking", func() (bool, string) {
		dp = e.get(t)
		return dp.Status.Waves[0].Phase == sluicev1.WaveBaking, describe(dp)
	})
	skipped := map[string]string{}
	for _, s := range dp.Status.Skipped {
		skipped[s.Namespace] = s.Reason
	}
	if skipped["kube-system"] != sluicev1.ReasonProtectedNamespace || skipped[controlplane.Namespace] != sluicev1.ReasonProtectedNamespace {
		t.Errorf("skipped %v", dp.Status.Skipped)
	}
	if pin, _ := e.nsPin(t, "ns-1"); pin != proxyNew {
		t.Errorf("ns-1 pinned to %q", pin)
	}

	t.Log("deleting the DataPlane mid-wave")
	must(t, e.c.Delete(ctx, dp))
	e.waitFor(t, time.Minute, "the DataPlane gone", func() (bool, string) {
		err := e.c.Get(ctx, client.ObjectKey{Name: "linkerd"}, &sluicev1.DataPlane{})
		return apierrors.IsNotFound(err), fmt.Sprint(err)
	})
	for _, ns := range append(nss, "kube-system", controlplane.Namespace) {
		if pin, ok := e.nsPin(t, ns); ok {
			t.Errorf("%s still pinned to %s after the deletion", ns, pin)
		}
	}
	if got := e.events.with(sluicev1.ReasonDeleted); len(got) != 1 || !strings.Contains(got[0], "removed its pins from ns-1") ||
		!strings.Contains(got[0], "every namespace follows the control plane's version (edge-26.8.3)") {
		t.Errorf("Deleted events %v", got)
	}
	// kube-system's pods are the ones it started with (the control plane's own pods rolled with
	// its upgrade, which is not the DataPlane's doing).
	for k, inc := range e.pods.all() {
		if strings.HasPrefix(k, "kube-system/") && len(inc) != len(before[k]) {
			t.Errorf("pod %s was replaced: %v", k, inc)
		}
	}
	var deps appsv1.DeploymentList
	must(t, e.c.List(ctx, &deps, client.InNamespace("kube-system")))
	for _, d := range deps.Items {
		if v, ok := d.Spec.Template.Annotations[mesh.RestartedAtAnnotation]; ok {
			t.Errorf("kube-system/%s restarted (%s)", d.Name, v)
		}
	}
}

// annotate sets an annotation on the DataPlane, as `kubectl sluice` does.
func (e *dpEnv) annotate(t *testing.T, key, value string) {
	t.Helper()
	dp := e.get(t)
	patch := client.MergeFrom(dp.DeepCopy())
	if dp.Annotations == nil {
		dp.Annotations = map[string]string{}
	}
	dp.Annotations[key] = value
	must(t, e.c.Patch(context.Background(), dp, patch))
}

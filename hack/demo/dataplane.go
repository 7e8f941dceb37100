package main

import (
	"context"
	"fmt"
	"os"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
	"sluice.dev/sluice/test/stack"
)

// Linkerd versions of the data-plane scenarios: the seed's upgrade, then a next version whose
// proxy breaks the canary namespace.
const (
	proxyFrom  = "edge-26.6.3"
	proxyTo    = "edge-26.8.3"
	proxyNext  = "edge-26.9.0"
	dataPlane  = "linkerd"
	canaryNS   = "mesh-1"
	fleetLabel = "demo"
)

var meshNamespaces = []string{"mesh-1", "mesh-2", "mesh-3", "mesh-4"}

// dataPlaneScenarios runs both data-plane scenarios on four meshed namespaces and reports whether
// each ended as expected.
func dataPlaneScenarios(ctx context.Context, s *stack.Stack) (upgraded, rolledBack bool, err error) {
	say("Data plane: %d meshed namespaces (Deployment, OnDelete StatefulSet with a PodDisruptionBudget, rolling StatefulSet, DaemonSet, Job each) on Linkerd %s",
		len(meshNamespaces), proxyFrom)
	for _, ns := range meshNamespaces {
		if err := s.MeshedNamespace(ctx, ns, fleetLabel); err != nil {
			return false, false, err
		}
	}
	s.ProxyHealth.Watch(meshNamespaces...)
	if err := s.WaitMeshed(ctx, meshNamespaces, stack.PodsPerNamespace, proxyFrom, 2*time.Minute); err != nil {
		return false, false, err
	}
	if upgraded, err = upgradeScenario(ctx, s); err != nil || !upgraded {
		return upgraded, false, err
	}
	rolledBack, err = brokenProxyScenario(ctx, s)
	return upgraded, rolledBack, err
}

// upgradeScenario declares the data plane as it runs, upgrades the control plane, then edits the
// DataPlane's version once: the fleet follows, canary namespace first, waves of two.
func upgradeScenario(ctx context.Context, s *stack.Stack) (bool, error) {
	dp := &sluicev1.DataPlane{ObjectMeta: metav1.ObjectMeta{Name: dataPlane}, Spec: sluicev1.DataPlaneSpec{
		Mesh: sluicev1.MeshLinkerd, Version: proxyFrom,
		NamespaceSelector: &sluicev1.NamespaceSelector{MatchLabels: map[string]string{"fleet": fleetLabel}},
		CanaryNamespaces:  []string{canaryNS},
		Waves:             sluicev1.DataPlaneWaves{MaxNamespaces: ptr.To[int32](2)},
		BakeTime:          "5s",
		MaxUnavailable:    ptr.To[int32](3),
	}}
	if err := s.Client.Create(ctx, dp); err != nil {
		return false, err
	}
	say("Applied DataPlane %s declaring what runs (%s): canary namespace %s, then waves of 2, bake 5s", dataPlane, proxyFrom, canaryNS)
	if _, err := s.FollowDataPlane(ctx, dataPlane, time.Minute, os.Stdout, sluicev1.DataPlaneUpToDate); err != nil {
		return false, err
	}
	say("Control plane first: linkerd upgrade | kubectl apply -f - (simulated) moves it to %s", proxyTo)
	if err := s.UpgradeControlPlane(ctx, proxyTo, 2*time.Minute); err != nil {
		return false, err
	}
	say("One edit: spec.version %s -> %s", proxyFrom, proxyTo)
	if err := setVersion(ctx, s, proxyTo, nil); err != nil {
		return false, err
	}
	done, err := s.FollowDataPlane(ctx, dataPlane, 4*time.Minute, os.Stdout,
		sluicev1.DataPlaneUpToDate, sluicev1.DataPlaneRolledBack, sluicev1.DataPlaneFailed, sluicev1.DataPlaneIncomplete)
	if err != nil {
		return false, err
	}
	versions, err := s.ProxyVersions(ctx, meshNamespaces)
	if err != nil {
		return false, err
	}
	allNew := true
	for _, ns := range meshNamespaces {
		allNew = allNew && versions[ns][proxyTo] == stack.PodsPerNamespace && len(versions[ns]) == 1
	}
	w := done.Status.Waves
	canaryFirst := len(w) > 1 && slices.Equal(w[0].Namespaces, []string{canaryNS}) && w[0].CompletedAt != nil &&
		w[1].StartedAt != nil && !w[1].StartedAt.Before(w[0].CompletedAt)
	want := done.Status.Phase == sluicev1.DataPlaneUpToDate && allNew && canaryFirst && done.Status.Desired == done.Status.Current
	say("Data plane upgrade: %s; DESIRED %d CURRENT %d; pods by version %v; %s baked before the fleet: %v  [%s]",
		done.Status.Phase, done.Status.Desired, done.Status.Current, versions, canaryNS, canaryFirst, verdict(want))
	return want, nil
}

// brokenProxyScenario declares a version whose proxy breaks the canary namespace (its health
// metric drops to 0 once its pods run it): the canary wave's analysis fails, the wave is rolled
// back, and no other namespace is touched.
func brokenProxyScenario(ctx context.Context, s *stack.Stack) (bool, error) {
	if err := s.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "sluice-system"}}); client.IgnoreAlreadyExists(err) != nil {
		return false, err
	}
	tpl := &sluicev1.MetricTemplate{ObjectMeta: metav1.ObjectMeta{Name: "proxy-health", Namespace: "sluice-system"},
		Spec: sluicev1.MetricTemplateSpec{Provider: sluicev1.MetricTemplateProvider{Address: s.Prom.Address()},
			Query: fmt.Sprintf(`min(%s{namespace="{{ .namespace }}"})`, stack.ProxyHealthMetric)}}
	if err := s.Client.Create(ctx, tpl); client.IgnoreAlreadyExists(err) != nil {
		return false, err
	}
	before, err := podUIDs(ctx, s)
	if err != nil {
		return false, err
	}
	s.ProxyHealth.Break(canaryNS, proxyNext)
	say("Control plane first again: it moves to %s, whose proxy breaks %s (its proxy_health drops to 0 on it)", proxyNext, canaryNS)
	if err := s.UpgradeControlPlane(ctx, proxyNext, 2*time.Minute); err != nil {
		return false, err
	}
	say("One edit: spec.version %s -> %s, analysed per namespace (proxy_health >= 1 every 2s, 2 failed checks roll back)", proxyTo, proxyNext)
	err = setVersion(ctx, s, proxyNext, func(spec *sluicev1.DataPlaneSpec) {
		spec.BakeTime = "20s"
		spec.Analysis = sluicev1.DataPlaneAnalysis{Interval: "2s", Threshold: 2, Metrics: []sluicev1.CanaryMetric{{
			Name: "proxy-health", ThresholdRange: &sluicev1.ThresholdRange{Min: ptr.To(1.0)},
			TemplateRef: &sluicev1.CrossNamespaceObjectReference{Name: "proxy-health", Namespace: "sluice-system"}}}}
	})
	if err != nil {
		return false, err
	}
	done, err := s.FollowDataPlane(ctx, dataPlane, 4*time.Minute, os.Stdout,
		sluicev1.DataPlaneUpToDate, sluicev1.DataPlaneRolledBack, sluicev1.DataPlaneFailed)
	if err != nil {
		return false, err
	}
	versions, err := s.ProxyVersions(ctx, meshNamespaces)
	if err != nil {
		return false, err
	}
	after, err := podUIDs(ctx, s)
	if err != nil {
		return false, err
	}
	untouched := true
	for _, ns := range meshNamespaces[1:] {
		untouched = untouched && slices.Equal(before[ns], after[ns]) && versions[ns][proxyTo] == stack.PodsPerNamespace && len(versions[ns]) == 1
	}
	canaryBack := versions[canaryNS][proxyTo] == stack.PodsPerNamespace && len(versions[canaryNS]) == 1
	reason := ""
	if len(done.Status.Waves) > 0 {
		reason = done.Status.Waves[0].Reason + ": " + done.Status.Waves[0].Message
	}
	want := done.Status.Phase == sluicev1.DataPlaneRolledBack && canaryBack && untouched && done.Status.Waves[0].Reason == sluicev1.ReasonAnalysisFailed
	say("Broken proxy: %s (%s); %s back on %s: %v; other namespaces untouched (same pods, %s): %v  [%s]",
		done.Status.Phase, reason, canaryNS, proxyTo, canaryBack, proxyTo, untouched, verdict(want))
	return want, nil
}

// setVersion edits the DataPlane's spec.version (and whatever mutate changes), as a GitOps commit.
func setVersion(ctx context.Context, s *stack.Stack, version string, mutate func(*sluicev1.DataPlaneSpec)) error {
	dp := &sluicev1.DataPlane{}
	if err := s.Client.Get(ctx, client.ObjectKey{Name: dataPlane}, dp); err != nil {
		return err
	}
	patch := client.MergeFrom(dp.DeepCopy())
	dp.Spec.Version = version
	if mutate != nil {
		mutate(&dp.Spec)
	}
	return s.Client.Patch(ctx, dp, patch)
}

// podUIDs returns the sorted UIDs of the running pods of each mesh namespace.
func podUIDs(ctx context.Context, s *stack.Stack) (map[string][]string, error) {
	out := map[string][]string{}
	for _, ns := range meshNamespaces {
		var pods corev1.PodList
		if err := s.Client.List(ctx, &pods, client.InNamespace(ns)); err != nil {
			return nil, err
		}
		for _, p := range pods.Items {
			if p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil {
				out[ns] = append(out[ns], string(p.UID))
			}
		}
		slices.Sort(out[ns])
	}
	return out, nil
}

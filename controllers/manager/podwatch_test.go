package manager_test

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
	"sluice.dev/sluice/controllers/manager"
	"sluice.dev/sluice/test/testenv"
)

// TestPodsWatchedOnlyOnceADataPlaneExists (issue 17: pods only where the DataPlane needs them):
// a manager running Canaries alone never lists or watches a pod; the first DataPlane starts the
// pod watch (the dataplane package's tests show what the DataPlane makes of the pods).
func TestPodsWatchedOnlyOnceADataPlaneExists(t *testing.T) {
	testenv.Require(t, env)
	ns := env.Namespace(t)
	create(t, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "bare", Namespace: ns},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "app:1"}}}})
	app(t, ns, "web", nil)
	create(t, canaryFor(ns, "web"))

	log := &requestLog{}
	cfg := rest.CopyConfig(env.Config)
	cfg.Wrap(log.wrap)
	// Cluster-wide, as the dataplane controller runs only then (no --namespaces).
	startManager(t, cfg, manager.Options{})
	ctx, cancel := context.WithCancel(context.Background())
	played := make(chan struct{})
	go func() { defer close(played); testenv.PlayDeploymentController(ctx, env.Client, ns) }()
	t.Cleanup(func() { cancel(); <-played })
	// The pod informer's list and watch (the cluster's pods; a diagnosis of a Canary's primary
	// lists the pods of one namespace by label, around the cache).
	podReads := func(r request) bool { return r.method == "GET" && r.path == "/api/v1/pods" }

	waitCanary(t, ns, "web", 30*time.Second, "Initialized", func(c *sluicev1.Canary) bool {
		return c.Status.Phase == sluicev1.CanaryPhaseInitialized
	})
	if n := log.count(podReads); n != 0 {
		t.Fatalf("with Canaries alone the manager listed or watched pods %d times, want none", n)
	}

	dp := &sluicev1.DataPlane{ObjectMeta: metav1.ObjectMeta{Name: "mesh-" + ns},
		Spec: sluicev1.DataPlaneSpec{Mesh: sluicev1.MeshLinkerd, Version: "edge-26.8.3",
			NamespaceSelector: &sluicev1.NamespaceSelector{MatchExpressions: []sluicev1.NamespaceSelectorRequirement{
				{Key: "kubernetes.io/metadata.name", Operator: metav1.LabelSelectorOpIn, Values: []string{ns}}}},
			Waves: sluicev1.DataPlaneWaves{Percent: ptr.To[int32](50)}, BakeTime: "1m",
			Analysis: sluicev1.DataPlaneAnalysis{Interval: "1m", Threshold: 1}}}
	create(t, dp)
	t.Cleanup(func() { deleteDataPlane(t, dp) })

	deadline := time.Now().Add(20 * time.Second)
	for log.count(podReads) == 0 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	watches := log.count(func(r request) bool { return podReads(r) && r.watch })
	if watches == 0 {
		t.Fatalf("20 s after the first DataPlane the manager had not watched pods (%d pod reads), want the informer's watch", log.count(podReads))
	}
}

// deleteDataPlane deletes dp and waits until its finalizer let it go (the manager still runs).
func deleteDataPlane(t *testing.T, dp *sluicev1.DataPlane) {
	t.Helper()
	ctx := context.Background()
	if err := env.Client.Delete(ctx, dp); client.IgnoreNotFound(err) != nil {
		t.Errorf("deleting DataPlane %s: %v", dp.Name, err)
		return
	}
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(dp), &sluicev1.DataPlane{}); apierrors.IsNotFound(err) {
			return
		}
	}
	t.Errorf("DataPlane %s still exists 20 s after its deletion", dp.Name)
}

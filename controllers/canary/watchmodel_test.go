package canary

import (
	"sort"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"sluice.dev/sluice/controllers/canary/plan"
)

// The harness's watch model. The controller's watches wake a Canary when its target or primary
// changes (plan/waits.go: such waits do not poll); the harness calls Reconcile by hand, so it plays
// that wake: a tick after which a workload of the namespace changed (by the tick's own writes or
// by the simulated Deployment and DaemonSet controllers) is followed by the next one watchLatency
// later, not at the requeue the tick asked for.

// watchLatency is how long after a watched change the harness's next tick comes: the pods start
// and their controller's status update reaches the watch.
const watchLatency = plan.PollInterval

// workloadVersions is a fingerprint of the namespace's Deployments and DaemonSets (name and
// resourceVersion): what the controller's watches would report a change of.
func (h *harness) workloadVersions() string {
	h.t.Helper()
	var parts []string
	deployments := &appsv1.DeploymentList{}
	if err := h.c.List(h.ctx, deployments, client.InNamespace(h.ns)); err != nil {
		h.t.Fatal(err)
	}
	for _, d := range deployments.Items {
		parts = append(parts, "Deployment/"+d.Name+"="+d.ResourceVersion)
	}
	daemonSets := &appsv1.DaemonSetList{}
	if err := h.c.List(h.ctx, daemonSets, client.InNamespace(h.ns)); err != nil {
		h.t.Fatal(err)
	}
	for _, d := range daemonSets.Items {
		parts = append(parts, "DaemonSet/"+d.Name+"="+d.ResourceVersion)
	}
	sort.Strings(parts)
	return strings.Join(parts, ",")
}

// nextTickIn is how far the clock moves after a tick that asked to look again after requeue,
// given the workloads' fingerprint from before the tick: watchLatency when they changed since.
func (h *harness) nextTickIn(before string, requeue time.Duration) time.Duration {
	if requeue <= 0 {
		requeue = time.Second
	}
	if h.workloadVersions() != before {
		return min(requeue, watchLatency)
	}
	return requeue
}

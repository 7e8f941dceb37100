// Package dataplane is the DataPlane controller: it moves a mesh's data plane (Linkerd
// proxies or Istio sidecars) to a new version namespace by namespace, canary namespaces first,
// in analysis-gated waves, and rolls a failing wave back.
//
// Reconcile has the shape of the Canary controller's: fetch, one deferred status patch guarded by
// the resourceVersion, suspend, then one tick: select the namespaces (select.go), observe their
// workloads and meshed pods from the cache (observe.go), run the per-namespace analysis when due
// (analyze.go), ask the pure planner in package waves what to do, carry out its pins, restarts
// and evictions (execute.go), and derive the conditions (dataplane_status.go). All progress is
// in status (the wave plan, each wave's restart token and the restart records), so a restarted
// controller continues where the last one stopped without restarting a workload twice.
//
// Notifications go through the Notifier interface (notify.go): the manager wires AlertNotifier
// (alerts.go), the AlertProvider delivery Canaries use; without one they are dropped.
package dataplane

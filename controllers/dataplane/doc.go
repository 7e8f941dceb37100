// Package dataplane is the DataPlane controller: a DataPlane declares the proxy version
// (Linkerd) or revision (Istio) of one mesh's data plane, and the controller converges every
// meshed pod on it, namespace by namespace, canary namespaces first, in analysis-gated waves, only
// once the mesh's control plane runs that version; it rolls a failing wave back, and keeps
// watching after convergence (drift).
//
// Reconcile is built on the shared scaffolding (controllers/internal/reconcilekit): fetch,
// deletion (finalize.go leaves every namespace coherent), finalizer, then one tick with one
// deferred, optimistically locked status patch whose outbox (events, notifications, metrics) is
// delivered only once the patch succeeded. A tick (run.go): observe the control plane
// (controlplane.go), the namespaces in scope (observe.go) and their workloads and pods
// (workloads.go) from the cache, run the per-namespace analysis when due (analyze.go), ask the
// pure planner in package waves what to do, carry out its pins, restarts and evictions
// (execute.go), and derive the conditions (conditions.go). All progress is in status (the wave
// plan, each wave's restart token and restart records, the pins written), so a restarted
// controller continues where the last one stopped without restarting a workload twice.
package dataplane

// Package waves is the pure decision-making of a DataPlane: from what the controller observed
// in one tick (the DataPlane's spec and status, the control plane's state, the namespaces in scope
// with their workloads, meshed pods, unmanaged pods and pods without the proxy, the window state,
// the request annotations, an analysis outcome), Decide returns the next status, the actions to
// carry out (pin a namespace, restart a workload, evict a pod), the events and the notifications.
// It does no I/O and reads no clock, so whole runs are table tests and golden-log simulations
// (golden_test.go, scenarios_test.go, testdata/*.golden).
//
// The model:
//
//   - A run starts when the declared version differs from the one in status: schedule.go splits
//     the namespaces into waves once, the canary namespaces first (wave 0), then the rest sorted
//     by name, maxNamespaces or percent at a time; a rollback run (back to the converged version)
//     under rollback Immediate is one wave without bake or analysis.
//   - A wave starts only when the control plane runs the declared version and is available (then
//     windows and approval); only then are its namespaces pinned, to the declared version. Nothing
//     else is ever pinned: pending namespaces are not, finished waves are not re-pinned.
//   - A restarting wave restarts every workload with a pod on another version or without the
//     proxy, at most maxUnavailable at once, each at most once per wave (restart.go): rolling kinds
//     through a pod-template annotation (a Rollout's restartAt), OnDelete kinds by evicting one pod
//     at a time. The token and the restart records live in status.
//   - When every managed pod of the wave runs the declared version the wave bakes under analysis
//     (bake.go); enough failed checks, or no progress within the deadline, roll it back
//     (rollback.go); a rollback that makes no progress, or any failure while new pods get no
//     proxy, ends the run Failed. Every end keeps its root cause on the wave.
//   - After the last wave (converge.go): UpToDate only when every meshed pod runs the declared
//     version; Incomplete while pods Sluice cannot restart run another; Drifted when pods leave it
//     after convergence (driftPolicy Restart adds a wave that moves them back).
//   - rows.go counts DESIRED (desired replicas of each workload running the proxy, so surge pods
//     never make it flicker, plus unmanaged pods) and CURRENT, and derives one row per namespace.
package waves

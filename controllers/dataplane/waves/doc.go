// Package waves is the pure decision-making of a proxy upgrade: from what the controller observed
// in one tick (the DataPlane's spec and status, the selected namespaces with their workloads and
// meshed pods, the window state, an analysis outcome), Decide returns the next status, the
// actions to carry out (pin a namespace, restart a workload, evict a pod), the events and the
// notifications. It does no I/O and reads no clock, so whole upgrades run as table tests and
// golden-log simulations (simulate_test.go, testdata/*.golden).
//
// The model:
//
//   - Plan splits the namespaces into waves once, when a run starts: the canary namespaces first
//     (wave 0), then the rest sorted by name, maxNamespaces or percent at a time.
//   - Before its wave, a Linkerd namespace is pinned to the version it runs
//     (config.linkerd.io/proxy-version), so churn cannot drift it ahead; a wave sets the target
//     (Linkerd pin, Istio istio.io/rev) and restarts every workload that still runs another
//     version, at most maxUnavailable at once, each at most once per wave: rolling kinds through
//     a pod-template annotation whose value is the wave's token, OnDelete kinds by evicting one
//     pod at a time. The token and the restart records live in status, so a restarted controller
//     continues where it stopped.
//   - When every running meshed pod of the wave reports the target and its workloads settled, the
//     wave bakes for bakeTime under analysis; enough failed checks roll it back (previous pin,
//     restarts again, towards the previous version) and fail the upgrade; a clean bake starts the
//     next wave, inside the windows and after the approval.
package waves

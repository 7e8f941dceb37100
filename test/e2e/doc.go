// Package e2e runs Sluice's scenarios end to end on the local stack (test/stack): a kwok cluster
// with real Kubernetes controllers, a simulated mesh data plane, a real Prometheus and the Sluice
// manager. The tests are skipped under `go test -short`.
package e2e

// Package faults injects faults into a controller's writes, for restart-safety tests: a
// controller-runtime client wrapper that fails or drops the Nth write of a kind (status patch,
// route write, primary update, scale, service) or "crashes" right after it (every later write
// fails until the test restarts the controller with a fresh memory), and logs every write that
// reached the apiserver.
package faults

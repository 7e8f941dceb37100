// Package scale measures what Sluice costs at scale on the envtest control plane (a real
// kube-apiserver and etcd): API requests per analysis tick for idle and progressing Canaries, by
// verb and resource, heap and goroutines with 500 Canaries, and the CPU cost of one idle
// Reconcile through a cached client.
//
// The manager under test is manager.New, the production wiring, started in-process on a copy of
// the envtest rest.Config whose transport counts every request; the test's own requests (creating
// objects, playing the Deployment controller, polling) go through an uncounted client.
//
//	go test -count=1 -v ./test/scale/                       # the 500-Canary scale test
//	go test -run '^$' -bench . -benchmem ./test/scale/      # BenchmarkReconcileIdle
package scale

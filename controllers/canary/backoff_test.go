package canary

import (
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// TestErrorBackoffIsBounded: however often a Canary's tick fails (a route write refused for
// minutes), the next try is at most MaxErrorBackoff away, so a rollback's route write is retried
// and the progress deadline judged soon after their cause is gone; the first retries stay fast.
func TestErrorBackoffIsBounded(t *testing.T) {
	limiter := errorBackoff()
	req := reconcile.Request{NamespacedName: client.ObjectKey{Namespace: "ns", Name: "app"}}
	if first := limiter.When(req); first > 10*MaxErrorBackoff/1000 {
		t.Fatalf("first retry after %s: want a fast one", first)
	}
	for i := 0; i < 40; i++ {
		if wait := limiter.When(req); wait > MaxErrorBackoff {
			t.Fatalf("retry %d after %s, above MaxErrorBackoff %s", i+2, wait, MaxErrorBackoff)
		}
	}
	if wait := limiter.When(req); wait != MaxErrorBackoff {
		t.Fatalf("after 42 failures the retry waits %s, want the bound %s", wait, MaxErrorBackoff)
	}
}

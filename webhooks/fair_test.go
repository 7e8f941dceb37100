package webhooks

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
)

func owned(namespace, name string) Payload {
	p := payload
	p.Namespace, p.Name = namespace, name
	return p
}

// TestHangingTenantDoesNotDelayAnother: tenant A's Canaries keep 40 gate calls to a hook that
// never answers; tenant B's gate call, polled after all of them, passes at once. A holds no more
// than its namespace's share of the slots, and each of its Canaries no more than its own.
func TestHangingTenantDoesNotDelayAnother(t *testing.T) {
	t.Parallel()
	hanging := newServer(t, hang)
	answering := newServer(t, ok)
	tests := []struct {
		name          string
		opts          Options
		canaries      int // of tenant A, 40 calls spread over them
		wantAInFlight int32
	}{
		{name: "defaults, 10 Canaries", opts: Options{}, canaries: 10, wantAInFlight: DefaultMaxInFlightPerNamespace},
		{name: "defaults, one Canary", opts: Options{}, canaries: 1, wantAInFlight: DefaultMaxInFlightPerCanary},
		{name: "namespace share of 2", opts: Options{MaxInFlight: 4, MaxInFlightPerNamespace: 2}, canaries: 4, wantAInFlight: 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := hanging.requests.Load()
			r := newRunner(t, tt.opts)
			for i := range 40 {
				p := owned("tenant-a", fmt.Sprintf("app-%d", i%tt.canaries))
				if res := r.Poll(fmt.Sprintf("a/%d", i), hook("gate", hanging.URL, "30s"), p); res.State != Pending {
					t.Fatalf("A's call %d = %+v", i, res)
				}
			}
			waitFor(t, "A's calls to arrive", func() bool { return hanging.requests.Load()-before == tt.wantAInFlight })
			start := time.Now()
			res := pollUntilDoneAs(t, r, "b", hook("gate", answering.URL, "10s"), owned("tenant-b", "app"), 2*time.Second)
			if res.State != Passed {
				t.Fatalf("B's call = %+v", res)
			}
			if took := time.Since(start); took > time.Second {
				t.Errorf("B's call took %s behind A's hanging calls; want well under 1s", took)
			}
			time.Sleep(100 * time.Millisecond) // room for a wrong extra call of A to arrive
			if got := hanging.requests.Load() - before; got != tt.wantAInFlight {
				t.Errorf("A has %d calls in flight, want %d", got, tt.wantAInFlight)
			}
			if res := r.Poll("a/39", hook("gate", hanging.URL, "30s"), owned("tenant-a", fmt.Sprintf("app-%d", 39%tt.canaries))); res.State != Pending || res.Message != "queued" {
				t.Errorf("A's last call = %+v, want queued", res)
			}
		})
	}
}

// TestQueuedLongerThanItsTimeoutFails: a gate call that finds no slot free within one attempt's
// timeout fails with a message saying so, and never starts.
func TestQueuedLongerThanItsTimeoutFails(t *testing.T) {
	t.Parallel()
	hanging := newServer(t, hang)
	r := newRunner(t, Options{MaxInFlight: 1})
	var mu sync.Mutex
	now := time.Now()
	r.now = func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	r.Poll("holder", hook("gate", hanging.URL, "1h"), payload)
	waitFor(t, "the first call to hold the only slot", func() bool { return hanging.inFlight.Load() == 1 })

	queued := hook("gate", hanging.URL, "10s")
	if res := r.Poll("queued", queued, payload); res.State != Pending || res.Message != "queued" {
		t.Fatalf("second call = %+v, want queued", res)
	}
	mu.Lock()
	now = now.Add(10 * time.Second)
	mu.Unlock()
	if res := r.Poll("queued", queued, payload); res.State != Pending {
		t.Fatalf("after 10s queued = %+v, want still Pending (the budget is 10s)", res)
	}
	mu.Lock()
	now = now.Add(time.Millisecond)
	mu.Unlock()
	res := r.Poll("queued", queued, payload)
	if res.State != Failed || res.Message != "queued for 10s, no slot free" || res.Attempts != 0 {
		t.Fatalf("after 10.001s queued = %+v, want Failed: queued for 10s, no slot free", res)
	}
	r.forget("holder")
	time.Sleep(100 * time.Millisecond) // room for the failed call to start wrongly
	if n := hanging.requests.Load(); n != 1 {
		t.Errorf("hook got %d requests, want 1: the call that failed queued must not start", n)
	}
}

// TestQueueTimeCountsAgainstTheBudget: a call that waited for a slot has only the rest of its
// budget for its attempt; it answers within its timeout of its first Poll, not a timeout after
// it started.
func TestQueueTimeCountsAgainstTheBudget(t *testing.T) {
	t.Parallel()
	slow := newServer(t, after(400*time.Millisecond))
	hanging := newServer(t, hang)
	r := newRunner(t, Options{MaxInFlight: 1})
	r.Poll("holder", hook("gate", slow.URL, "10s"), payload)
	waitFor(t, "the first call to hold the only slot", func() bool { return slow.inFlight.Load() == 1 })
	start := time.Now()
	res := pollUntilDoneAs(t, r, "queued", hook("gate", hanging.URL, "1s"), payload, 3*time.Second)
	took := time.Since(start)
	if res.State != Failed || res.Attempts != 1 || !strings.HasPrefix(res.Message, "timed out after ") || res.Message == "timed out after 1s" {
		t.Errorf("queued call = %+v; want one attempt timed out before 1s (the queue took part of it)", res)
	}
	if took > 1300*time.Millisecond {
		t.Errorf("queued call answered %s after its first Poll; want within its 1s budget", took)
	}
}

// TestRetriesStopAtTheBudget: retries never run the call past its budget.
func TestRetriesStopAtTheBudget(t *testing.T) {
	tests := []struct {
		timeout  time.Duration
		attempts int
		pause    time.Duration
		want     time.Duration
	}{
		{timeout: 10 * time.Second, attempts: 1, pause: time.Second, want: 10 * time.Second},
		{timeout: 10 * time.Second, attempts: 3, pause: time.Second, want: 32 * time.Second},
		{timeout: 5 * time.Minute, attempts: 11, pause: time.Second, want: MaxCallTime},
		{timeout: 50 * time.Second, attempts: 10, pause: time.Second, want: 509 * time.Second},
		{timeout: time.Minute, attempts: 11, pause: time.Second, want: MaxCallTime},
	}
	for _, tt := range tests {
		if got := budget(tt.timeout, tt.attempts, tt.pause); got != tt.want {
			t.Errorf("budget(%s, %d attempts, %s pauses) = %s, want %s", tt.timeout, tt.attempts, tt.pause, got, tt.want)
		}
	}
	t.Run("a hanging hook with retries", func(t *testing.T) {
		t.Parallel()
		hanging := newServer(t, hang)
		r := newRunner(t, Options{RetryDelay: 100 * time.Millisecond})
		h := hook("gate", hanging.URL, "300ms")
		h.Retries = 2 // budget 3 × 300ms + 2 × 100ms
		start := time.Now()
		res := pollUntilDoneAs(t, r, "k", h, payload, 3*time.Second)
		if took := time.Since(start); res.State != Failed || res.Attempts != 3 || took > 1500*time.Millisecond {
			t.Errorf("result %+v after %s; want Failed after 3 attempts within the 1.1s budget", res, took)
		}
	})
}

// TestHangingTenantEventsDoNotDelayAnother: fire-and-forget calls are shared the same way, at
// most half of each bound: a tenant's hanging event hooks hold at most half its namespace's share.
func TestHangingTenantEventsDoNotDelayAnother(t *testing.T) {
	t.Parallel()
	hanging := newServer(t, hang)
	answering := newServer(t, ok)
	r := newRunner(t, Options{})
	event := func(url string) sluicev1.CanaryWebhook {
		return sluicev1.CanaryWebhook{Name: "e", Type: sluicev1.WebhookEvent, URL: url, Timeout: "30s"}
	}
	for i := range 30 {
		r.Fire(event(hanging.URL), owned("tenant-a", fmt.Sprintf("app-%d", i)))
	}
	waitFor(t, "A's events to arrive", func() bool { return hanging.inFlight.Load() == DefaultMaxInFlightPerNamespace/2 })
	r.Fire(event(answering.URL), owned("tenant-b", "app"))
	waitFor(t, "B's event to arrive", func() bool { return answering.requests.Load() == 1 })
	if res := pollUntilDoneAs(t, r, "a-gate", hook("gate", answering.URL, ""), owned("tenant-a", "app-0"), 2*time.Second); res.State != Passed {
		t.Errorf("A's own gate next to its hanging events = %+v", res)
	}
	if got := hanging.maxSeen.Load(); got != DefaultMaxInFlightPerNamespace/2 {
		t.Errorf("A had %d events in flight, want %d (half its namespace's share)", got, DefaultMaxInFlightPerNamespace/2)
	}
}

// pollUntilDoneAs is pollUntilDone for a call owned by p's Canary.
func pollUntilDoneAs(t *testing.T, r *Runner, key string, h sluicev1.CanaryWebhook, p Payload, within time.Duration) Result {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		res := r.Poll(key, h, p)
		if res.Done() {
			return res
		}
		if time.Now().After(deadline) {
			t.Fatalf("Poll(%s) still %+v after %s", key, res, within)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestFairOrder pins the order calls start in when slots free: the namespace with the fewest
// calls in flight, then the Canary with the fewest, then the call queued first.
func TestFairOrder(t *testing.T) {
	t0 := time.Date(2026, 12, 2, 6, 0, 0, 0, time.UTC)
	type queued struct {
		ns, name string
		at       int // seconds after t0
	}
	tests := []struct {
		name    string
		running map[string]int // by "ns/name": calls in flight
		lim     limits
		queue   []queued
		want    []string // "ns/name@at" in start order, until the limits stop it
	}{
		{
			name:    "the namespace with fewer in flight first, whatever the queue order",
			running: map[string]int{"a/x": 3},
			lim:     limits{global: 100, perNamespace: 10, perCanary: 5},
			queue:   []queued{{"a", "x", 0}, {"a", "y", 1}, {"b", "z", 2}},
			want:    []string{"b/z@2", "a/y@1", "a/x@0"},
		},
		{
			name:    "within a namespace, the Canary with fewer in flight first",
			running: map[string]int{"a/x": 1},
			lim:     limits{global: 100, perNamespace: 10, perCanary: 5},
			queue:   []queued{{"a", "x", 0}, {"a", "x", 1}, {"a", "y", 2}},
			want:    []string{"a/y@2", "a/x@0", "a/x@1"},
		},
		{
			name:  "round robin across namespaces as calls start",
			lim:   limits{global: 100, perNamespace: 10, perCanary: 5},
			queue: []queued{{"a", "x", 0}, {"a", "x", 1}, {"a", "x", 2}, {"b", "y", 3}, {"b", "y", 4}},
			want:  []string{"a/x@0", "b/y@3", "a/x@1", "b/y@4", "a/x@2"},
		},
		{
			name:    "a namespace at its share waits",
			running: map[string]int{"a/x": 2, "a/y": 2},
			lim:     limits{global: 100, perNamespace: 4, perCanary: 2},
			queue:   []queued{{"a", "x", 0}, {"b", "y", 1}},
			want:    []string{"b/y@1"},
		},
		{
			name:    "nothing starts beyond the global bound",
			running: map[string]int{"a/x": 1},
			lim:     limits{global: 2, perNamespace: 2, perCanary: 2},
			queue:   []queued{{"b", "y", 0}, {"c", "z", 1}},
			want:    []string{"b/y@0"},
		},
		{
			name:    "a Canary at its share waits",
			running: map[string]int{"a/x": 2},
			lim:     limits{global: 100, perNamespace: 4, perCanary: 2},
			queue:   []queued{{"a", "x", 0}, {"a", "y", 1}},
			want:    []string{"a/y@1"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var q fairQueue
			for owner, n := range tt.running {
				ns, name, _ := strings.Cut(owner, "/")
				for range n {
					c := &call{key: "running", payload: owned(ns, name)}
					q.push(c)
					if q.pop(limits{global: 100, perNamespace: 100, perCanary: 100}, func(*call) bool { return false }, func(*call) {}) != c {
						t.Fatal("setup: the running call did not start")
					}
				}
			}
			for _, c := range tt.queue {
				q.push(&call{key: fmt.Sprintf("%s/%s@%d", c.ns, c.name, c.at), payload: owned(c.ns, c.name), queuedAt: t0.Add(time.Duration(c.at) * time.Second)})
			}
			var got []string
			for {
				c := q.pop(tt.lim, func(*call) bool { return false }, func(*call) {})
				if c == nil {
					break
				}
				got = append(got, c.key)
			}
			if strings.Join(got, " ") != strings.Join(tt.want, " ") {
				t.Errorf("start order %v, want %v", got, tt.want)
			}
		})
	}
}

// TestFairQueueForgetsIdleScopes: once its calls ran, a namespace leaves no trace in the queue.
func TestFairQueueForgetsIdleScopes(t *testing.T) {
	var q fairQueue
	c := &call{key: "k", payload: owned("a", "x")}
	q.push(c)
	if q.pop(limits{global: 1, perNamespace: 1, perCanary: 1}, func(*call) bool { return false }, func(*call) {}) != c {
		t.Fatal("the call did not start")
	}
	q.done(c)
	if len(q.namespaces) != 0 || q.running.total() != 0 || q.queued != 0 {
		t.Errorf("queue keeps %d namespaces, %d running, %d queued; want none", len(q.namespaces), q.running.total(), q.queued)
	}
}

package webhooks

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
	"sluice.dev/sluice/egress"
)

// loopbackAllowed is the egress policy of the tests, whose receivers listen on 127.0.0.1: the
// default policy refuses loopback.
var loopbackAllowed = func() *egress.Policy {
	p, err := egress.NewPolicy(egress.Options{AllowTo: []string{egress.Loopback}})
	if err != nil {
		panic(err)
	}
	return p
}()

// server is a local webhook receiver. handle runs for every request with its 1-based number; it
// may block until the request is cancelled or the test ends (stop).
type server struct {
	*httptest.Server
	stop chan struct{}

	requests atomic.Int32
	inFlight atomic.Int32
	maxSeen  atomic.Int32

	mu       sync.Mutex
	payloads []Payload
}

func newServer(t *testing.T, handle func(s *server, n int, w http.ResponseWriter, r *http.Request)) *server {
	t.Helper()
	s := &server{stop: make(chan struct{})}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := int(s.requests.Add(1))
		cur := s.inFlight.Add(1)
		defer s.inFlight.Add(-1)
		for {
			m := s.maxSeen.Load()
			if cur <= m || s.maxSeen.CompareAndSwap(m, cur) {
				break
			}
		}
		var p Payload
		if err := json.NewDecoder(r.Body).Decode(&p); err != nil || r.Header.Get("Content-Type") != "application/json" {
			http.Error(w, "want a JSON payload", http.StatusBadRequest)
			return
		}
		_, _ = io.Copy(io.Discard, r.Body) // lets the server notice a client that goes away
		s.mu.Lock()
		s.payloads = append(s.payloads, p)
		s.mu.Unlock()
		handle(s, n, w, r)
	}))
	t.Cleanup(s.Close)
	t.Cleanup(func() { close(s.stop) }) // runs before s.Close, which waits for handlers
	return s
}

// ok answers 200.
func ok(*server, int, http.ResponseWriter, *http.Request) {}

// after answers 200 after d, unless the request is cancelled first.
func after(d time.Duration) func(*server, int, http.ResponseWriter, *http.Request) {
	return func(s *server, _ int, w http.ResponseWriter, r *http.Request) {
		select {
		case <-time.After(d):
		case <-r.Context().Done():
		case <-s.stop:
		}
	}
}

// hang never answers.
func hang(s *server, _ int, _ http.ResponseWriter, r *http.Request) {
	select {
	case <-r.Context().Done():
	case <-s.stop:
	}
}

// newRunner is NewRunner with loopbackAllowed when opts has no policy, closed at the end of t.
func newRunner(t *testing.T, opts Options) *Runner {
	t.Helper()
	if opts.Egress == nil {
		opts.Egress = loopbackAllowed
	}
	r := NewRunner(opts)
	t.Cleanup(r.Close)
	return r
}

func hook(name, url, timeout string) sluicev1.CanaryWebhook {
	return sluicev1.CanaryWebhook{Name: name, Type: sluicev1.WebhookConfirmPromotion, URL: url, Timeout: timeout}
}

var payload = Payload{Name: "podinfo", Namespace: "test", Phase: "Progressing", Checksum: "5d8f9c7b6"}

// pollUntilDone polls key every 20ms until it is done or within elapses; it returns the final
// Result and the slowest Poll.
func pollUntilDone(t *testing.T, r *Runner, key string, h sluicev1.CanaryWebhook, within time.Duration) (Result, time.Duration) {
	t.Helper()
	var slowest time.Duration
	deadline := time.Now().Add(within)
	for {
		start := time.Now()
		res := r.Poll(key, h, payload)
		slowest = max(slowest, time.Since(start))
		if res.Done() {
			return res, slowest
		}
		if res.State != Pending {
			t.Fatalf("Poll(%s) state %q", key, res.State)
		}
		if time.Now().After(deadline) {
			t.Fatalf("Poll(%s) still %+v after %s", key, res, within)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Poll is a cheap map lookup; 50ms is a behavioural bound (it does not wait for the network),
// generous enough for two shared cores.
const pollBound = 50 * time.Millisecond

func TestSlowHookPassesWithinTimeout(t *testing.T) {
	t.Parallel()
	srv := newServer(t, after(3*time.Second))
	r := newRunner(t, Options{})

	started := time.Now()
	first := r.Poll("slow", hook("slow", srv.URL, "10s"), payload)
	if first.State != Pending || !first.New || time.Since(started) > pollBound {
		t.Fatalf("first Poll = %+v after %s; want Pending and New at once", first, time.Since(started))
	}
	if again := r.Poll("slow", hook("slow", srv.URL, "10s"), payload); again.New {
		t.Fatalf("second Poll = %+v; want New only for the Poll that started the call", again)
	}
	res, slowest := pollUntilDone(t, r, "slow", hook("slow", srv.URL, "10s"), 8*time.Second)
	if res.State != Passed || res.StatusCode != http.StatusOK || res.Message != "HTTP 200 OK" || res.Attempts != 1 {
		t.Errorf("result = %+v; want Passed with HTTP 200 OK in one attempt", res)
	}
	if res.Duration < 3*time.Second || res.Duration > 6*time.Second {
		t.Errorf("duration %s; want about 3s", res.Duration)
	}
	if slowest > pollBound {
		t.Errorf("slowest Poll took %s while the hook was slow; want < %s", slowest, pollBound)
	}
	t.Logf("hook answered after %s; slowest of the Polls meanwhile: %s", res.Duration, slowest)
}

func TestHookThatNeverAnswersTimesOut(t *testing.T) {
	t.Parallel()
	srv := newServer(t, hang)
	r := newRunner(t, Options{})
	res, slowest := pollUntilDone(t, r, "k", hook("gate", srv.URL, "1s"), 5*time.Second)
	if res.State != Failed || res.Message != "timed out after 1s" || res.StatusCode != 0 {
		t.Errorf("result = %+v; want Failed, timed out after 1s", res)
	}
	if res.Duration < time.Second || res.Duration > 3*time.Second {
		t.Errorf("duration %s; want about 1s", res.Duration)
	}
	if slowest > pollBound {
		t.Errorf("slowest Poll %s; want < %s", slowest, pollBound)
	}
}

func TestSlowKeyDoesNotDelayFastKey(t *testing.T) {
	t.Parallel()
	slow := newServer(t, after(3*time.Second))
	fast := newServer(t, ok)
	r := newRunner(t, Options{})

	start := time.Now()
	if res := r.Poll("canary-a/slow", hook("slow", slow.URL, "10s"), payload); res.State != Pending {
		t.Fatalf("slow Poll = %+v", res)
	}
	res, _ := pollUntilDone(t, r, "canary-b/fast", hook("fast", fast.URL, "10s"), 2*time.Second)
	elapsed := time.Since(start)
	if res.State != Passed {
		t.Fatalf("fast hook = %+v", res)
	}
	if elapsed > time.Second {
		t.Errorf("fast hook took %s next to a 3s hook; want well under 1s", elapsed)
	}
	if res := r.Poll("canary-a/slow", hook("slow", slow.URL, "10s"), payload); res.State != Pending {
		t.Errorf("slow hook = %+v, want still Pending", res)
	}
	t.Logf("fast hook passed %s after the slow one started", elapsed)
}

func TestRetries(t *testing.T) {
	t.Parallel()
	// failTwice answers 500 to requests 1 and 2, then 200.
	failTwice := func(_ *server, n int, w http.ResponseWriter, _ *http.Request) {
		if n <= 2 {
			http.Error(w, "not ready\nyet", http.StatusInternalServerError)
		}
	}
	tests := []struct {
		retries  int32
		want     State
		attempts int
		message  string
	}{
		{retries: 2, want: Passed, attempts: 3, message: "HTTP 200 OK"},
		// The body ("not ready yet") goes to the debug log only, never into the message.
		{retries: 1, want: Failed, attempts: 2, message: "HTTP 500 Internal Server Error"},
		{retries: 0, want: Failed, attempts: 1, message: "HTTP 500 Internal Server Error"},
	}
	for _, tt := range tests {
		srv := newServer(t, failTwice)
		r := newRunner(t, Options{RetryDelay: 10 * time.Millisecond})
		h := hook("gate", srv.URL, "")
		h.Retries = tt.retries
		res, _ := pollUntilDone(t, r, "k", h, 5*time.Second)
		if res.State != tt.want || res.Attempts != tt.attempts || res.Message != tt.message {
			t.Errorf("retries %d: result = %+v; want %s after %d attempts, %q",
				tt.retries, res, tt.want, tt.attempts, tt.message)
		}
		if got := int(srv.requests.Load()); got != tt.attempts {
			t.Errorf("retries %d: server got %d requests, want %d", tt.retries, got, tt.attempts)
		}
	}
}

func TestPayload(t *testing.T) {
	t.Parallel()
	srv := newServer(t, ok)
	r := newRunner(t, Options{})
	h := hook("gate", srv.URL, "")
	h.Type = sluicev1.WebhookPreRollout
	h.Metadata = map[string]string{"cmd": "hey", "env": "hook"}
	p := payload
	p.Metadata = map[string]string{"env": "caller"}
	r.Poll("k", h, p)
	pollUntilDone(t, r, "k", h, 5*time.Second)

	srv.mu.Lock()
	defer srv.mu.Unlock()
	if len(srv.payloads) != 1 {
		t.Fatalf("server got %d payloads", len(srv.payloads))
	}
	got := srv.payloads[0]
	if got.Name != "podinfo" || got.Namespace != "test" || got.Phase != "Progressing" ||
		got.Checksum != "5d8f9c7b6" || got.Type != "pre-rollout" ||
		got.Metadata["cmd"] != "hey" || got.Metadata["env"] != "caller" {
		t.Errorf("payload = %+v", got)
	}
}

func TestPayloadFieldNames(t *testing.T) {
	b, err := json.Marshal(payloadFor(sluicev1.CanaryWebhook{}, Payload{
		Name: "a", Namespace: "b", Phase: "c", Checksum: "d", Metadata: map[string]string{"e": "f"},
	}))
	if err != nil {
		t.Fatal(err)
	}
	want := `{"name":"a","namespace":"b","phase":"c","checksum":"d","metadata":{"e":"f"},"type":"rollout"}`
	if string(b) != want {
		t.Errorf("payload JSON = %s\nwant %s", b, want)
	}
}

func TestConnectionError(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close()
	r := newRunner(t, Options{})
	res, _ := pollUntilDone(t, r, "k", hook("gate", url, ""), 5*time.Second)
	if res.State != Failed || res.Message != egress.ReasonUnreachable {
		t.Errorf("result = %+v; want Failed with the fixed reason %q (the error, naming the address and port, is for the debug log)", res, egress.ReasonUnreachable)
	}
}

func TestMaxInFlight(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	srv := newServer(t, func(s *server, _ int, _ http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		case <-s.stop:
		}
	})
	const bound, calls = 3, 10
	r := newRunner(t, Options{MaxInFlight: bound})
	keys := make([]string, calls)
	for i := range keys {
		keys[i] = "k" + string(rune('a'+i))
		if res := r.Poll(keys[i], hook("gate", srv.URL, "10s"), payload); res.State != Pending {
			t.Fatalf("Poll(%s) = %+v", keys[i], res)
		}
	}
	waitFor(t, "3 calls in flight", func() bool { return srv.inFlight.Load() == bound })
	time.Sleep(200 * time.Millisecond) // room for a wrong fourth call to arrive
	if got := srv.maxSeen.Load(); got != bound {
		t.Fatalf("%d calls in flight, want %d", got, bound)
	}
	if res := r.Poll(keys[calls-1], hook("gate", srv.URL, "10s"), payload); res.State != Pending || res.Message != "queued" {
		t.Errorf("last key = %+v; want Pending, queued", res)
	}
	if res := r.Poll(keys[0], hook("gate", srv.URL, "10s"), payload); res.State != Pending || res.Message != "in flight" || res.Attempts != 1 {
		t.Errorf("first key = %+v; want Pending, in flight", res)
	}
	close(release)
	for _, k := range keys {
		if res, _ := pollUntilDone(t, r, k, hook("gate", srv.URL, "10s"), 5*time.Second); res.State != Passed {
			t.Errorf("Poll(%s) = %+v", k, res)
		}
	}
	if got := srv.maxSeen.Load(); got != bound {
		t.Errorf("at most %d calls were in flight, want %d", got, bound)
	}
}

func TestCloseCancels(t *testing.T) {
	t.Parallel()
	cancelled := make(chan struct{}, 1)
	srv := newServer(t, func(s *server, _ int, _ http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
			cancelled <- struct{}{}
		case <-s.stop:
		}
	})
	var done atomic.Int32
	r := NewRunner(Options{Egress: loopbackAllowed, OnDone: func(string, Result) { done.Add(1) }})
	r.Poll("running", hook("gate", srv.URL, "30s"), payload)
	waitFor(t, "the call to arrive", func() bool { return srv.inFlight.Load() == 1 })

	start := time.Now()
	r.Close()
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("Close took %s; want it to cancel the call at once", d)
	}
	select {
	case <-cancelled:
	case <-time.After(2 * time.Second):
		t.Error("the receiver did not see the request cancelled")
	}
	if res := r.Poll("running", hook("gate", srv.URL, "30s"), payload); res.State != Pending || res.Message != "runner closed" {
		t.Errorf("Poll after Close = %+v; want Pending, runner closed", res)
	}
	if done.Load() != 0 {
		t.Error("OnDone reported a call cancelled by Close")
	}
	r.Close() // idempotent
}

func TestResultsPersistUntilForget(t *testing.T) {
	t.Parallel()
	srv := newServer(t, ok)
	var reports atomic.Int32
	r := newRunner(t, Options{OnDone: func(key string, res Result) {
		if key == "k" && res.State == Passed {
			reports.Add(1)
		}
	}})
	h := hook("gate", srv.URL, "")
	pollUntilDone(t, r, "k", h, 5*time.Second)
	for range 3 {
		if res := r.Poll("k", h, payload); res.State != Passed {
			t.Fatalf("repeated Poll = %+v; want the same Passed result", res)
		}
	}
	if n := srv.requests.Load(); n != 1 {
		t.Fatalf("server got %d requests; want 1 (results are not consumed)", n)
	}
	if n := reports.Load(); n != 1 {
		t.Errorf("OnDone called %d times, want 1", n)
	}
	r.forget("k")
	if res := r.Poll("k", h, payload); res.State != Pending {
		t.Fatalf("Poll after Forget = %+v; want a new call", res)
	}
	pollUntilDone(t, r, "k", h, 5*time.Second)
	if n := srv.requests.Load(); n != 2 {
		t.Errorf("server got %d requests after Forget; want 2", n)
	}
}

func TestUnpolledKeysExpire(t *testing.T) {
	t.Parallel()
	fast := newServer(t, ok)
	cancelled := make(chan struct{}, 1)
	slow := newServer(t, func(s *server, _ int, _ http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
			cancelled <- struct{}{}
		case <-s.stop:
		}
	})
	r := newRunner(t, Options{})
	var mu sync.Mutex
	now := time.Now()
	r.now = func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	advance := func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }

	pollUntilDone(t, r, "done", hook("gate", fast.URL, ""), 5*time.Second)
	r.Poll("running", hook("gate", slow.URL, "1h"), payload)
	waitFor(t, "the slow call to arrive", func() bool { return slow.inFlight.Load() == 1 })

	advance(9 * time.Minute)
	r.Poll("running", hook("gate", slow.URL, "1h"), payload) // still wanted
	advance(2 * time.Minute)
	r.expire()
	r.mu.Lock()
	_, doneKept := r.calls["done"]
	_, runningKept := r.calls["running"]
	r.mu.Unlock()
	if doneKept || !runningKept {
		t.Fatalf("after 11m: done kept %v, running kept %v; want only the key polled 2m ago", doneKept, runningKept)
	}
	advance(10 * time.Minute)
	r.expire()
	select {
	case <-cancelled:
	case <-time.After(2 * time.Second):
		t.Fatal("the expired call was not cancelled")
	}
	r.mu.Lock()
	n, timer := len(r.calls), r.sweep
	r.mu.Unlock()
	if n != 0 || timer != nil {
		t.Errorf("%d calls kept, sweep timer %v; want none", n, timer)
	}
}

func TestFire(t *testing.T) {
	t.Parallel()
	srv := newServer(t, func(_ *server, _ int, w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusServiceUnavailable)
	})
	var mu sync.Mutex
	var logged []string
	logger := funcr.New(func(prefix, args string) { mu.Lock(); logged = append(logged, args); mu.Unlock() }, funcr.Options{})
	r := newRunner(t, Options{Logger: logger})
	h := sluicev1.CanaryWebhook{Name: "announce", Type: sluicev1.WebhookEvent, URL: srv.URL}
	r.Fire(h, payload)
	waitFor(t, "the failure to be logged", func() bool { mu.Lock(); defer mu.Unlock(); return len(logged) == 1 })
	mu.Lock()
	line := logged[0]
	mu.Unlock()
	for _, want := range []string{`"Event webhook failed"`, `"webhook"="announce"`, `"canary"="test/podinfo"`, "HTTP 503"} {
		if !strings.Contains(line, want) {
			t.Errorf("log %s lacks %s", line, want)
		}
	}
	srv.mu.Lock()
	defer srv.mu.Unlock()
	if srv.payloads[0].Type != "event" {
		t.Errorf("payload type %q, want event", srv.payloads[0].Type)
	}
}

// TestFireLeavesRoomForGates: hanging event hooks take at most half the slots.
func TestFireLeavesRoomForGates(t *testing.T) {
	t.Parallel()
	events := newServer(t, hang)
	gate := newServer(t, ok)
	r := newRunner(t, Options{MaxInFlight: 4})
	for range 6 {
		r.Fire(sluicev1.CanaryWebhook{Name: "e", Type: sluicev1.WebhookEvent, URL: events.URL, Timeout: "30s"}, payload)
	}
	waitFor(t, "2 events in flight", func() bool { return events.inFlight.Load() == 2 })
	if res, _ := pollUntilDone(t, r, "gate", hook("gate", gate.URL, ""), 2*time.Second); res.State != Passed {
		t.Errorf("gate = %+v", res)
	}
	if got := events.maxSeen.Load(); got != 2 {
		t.Errorf("%d events ran at once; want 2 (half of MaxInFlight 4)", got)
	}
}

func TestInvalidTimeout(t *testing.T) {
	r := newRunner(t, Options{})
	res, _ := pollUntilDone(t, r, "k", hook("gate", "http://127.0.0.1:1", "soon"), 2*time.Second)
	if res.State != Failed || !strings.Contains(res.Message, `invalid webhook timeout "soon"`) {
		t.Errorf("result = %+v", res)
	}
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestHookWithoutURLFails(t *testing.T) {
	r := newRunner(t, Options{})
	res, _ := pollUntilDone(t, r, "k", sluicev1.CanaryWebhook{Name: "approve", Type: sluicev1.WebhookConfirmPromotion}, 2*time.Second)
	if res.State != Failed || res.Message != `webhook "approve" has no URL` || res.Attempts != 0 {
		t.Errorf("result = %+v", res)
	}
}

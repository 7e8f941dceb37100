package webhooks

import (
	"context"
	"net/http"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"sigs.k8s.io/controller-runtime/pkg/log"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
	"sluice.dev/sluice/egress"
)

// Defaults of Options.
const (
	DefaultMaxInFlight             = 32
	DefaultMaxInFlightPerNamespace = 8
	DefaultMaxInFlightPerCanary    = 4
	DefaultRetryDelay              = time.Second
	DefaultResultTTL               = 10 * time.Minute
	// DefaultTimeout bounds one attempt of a hook without a timeout.
	DefaultTimeout = 10 * time.Second
	// maxQueuedEvents bounds the fire-and-forget calls queued or in flight; more are dropped.
	maxQueuedEvents = 1024
	// maxQueuedEventsPerNamespace bounds one namespace's share of them.
	maxQueuedEventsPerNamespace = maxQueuedEvents / 8
)

// Options configure a Runner.
type Options struct {
	// HTTPClient makes the calls. Nil means Egress.Client(nil): no redirects, no address the
	// policy refuses, only allowed destinations. Each attempt is bounded by the hook's
	// timeout whatever the client's own timeout.
	HTTPClient *http.Client
	// Egress is the outbound destination policy. Every URL is checked against it before a call
	// (CheckURL), and the default client enforces it on every connection. Nil: the default
	// policy (egress.Options{}).
	Egress *egress.Policy
	// MaxInFlight bounds the calls running at once (default 32). Further calls queue and stay
	// Pending; the slots are shared fairly across namespaces and Canaries (fair.go).
	// Fire-and-forget calls use at most half of the slots (at least one), so gates always have
	// room.
	MaxInFlight int
	// MaxInFlightPerNamespace bounds the calls of one namespace's Canaries running at once
	// (default 8, at most MaxInFlight): a namespace whose hooks hang holds no more.
	MaxInFlightPerNamespace int
	// MaxInFlightPerCanary bounds the calls of one Canary running at once (default 4, at most
	// MaxInFlightPerNamespace).
	MaxInFlightPerCanary int
	// RetryDelay is the pause before a retry (default 1s).
	RetryDelay time.Duration
	// ResultTTL: a key not polled for this long is dropped, its call cancelled if still running
	// (default 10m). Keep the controller's poll period well below it.
	ResultTTL time.Duration
	// OnDone, if set, is called once when a polled call finishes, from the goroutine that ran
	// it, with the key and the final Result. It must not block: use it to trigger a reconcile
	// (e.g. a non-blocking send to a source.Channel) instead of waiting a whole interval.
	OnDone func(key string, res Result)
	// Logger logs failed fire-and-forget calls. Zero means controller-runtime's logger, named
	// "webhooks".
	Logger logr.Logger
}

// Runner runs webhook calls in the background with bounded concurrency. It is safe for
// concurrent use. Close it (or add it to the manager, see Start) to cancel running calls.
type Runner struct {
	client     *http.Client
	egress     *egress.Policy
	maxRunning int
	limits     limits
	retryDelay time.Duration
	ttl        time.Duration
	onDone     func(string, Result)
	log        logr.Logger
	now        func() time.Time // clock of poll times and expiry; tests replace it

	ctx    context.Context // cancelled by Close
	cancel context.CancelFunc
	wg     sync.WaitGroup // workers

	mu      sync.Mutex
	closed  bool
	calls   map[string]*call // by key
	queue   fairQueue        // calls not started yet, and the slots in use
	running int              // workers
	events  int              // fire-and-forget calls queued or in flight
	sweep   *time.Timer      // armed while calls is not empty
}

// call is one webhook call, queued, in flight or finished.
type call struct {
	key     string // "" for fire-and-forget
	hook    sluicev1.CanaryWebhook
	payload Payload
	ctx     context.Context
	cancel  context.CancelFunc

	// Guarded by Runner.mu.
	queuedAt time.Time // first Poll (Fire), on the runner's clock
	started  time.Time // zero while queued
	deadline time.Time // when its budget runs out, set when it starts
	attempts int
	result   Result // final once State is not Pending
	lastPoll time.Time
	dropped  bool // forgotten, expired or closed: the result is discarded
}

// NewRunner returns a Runner. It starts no goroutine until a call is made.
func NewRunner(opts Options) *Runner {
	r := &Runner{
		client:     opts.HTTPClient,
		egress:     opts.Egress,
		maxRunning: opts.MaxInFlight,
		retryDelay: opts.RetryDelay,
		ttl:        opts.ResultTTL,
		onDone:     opts.OnDone,
		log:        opts.Logger,
		now:        time.Now,
		calls:      map[string]*call{},
	}
	if r.client == nil {
		r.client = opts.Egress.Client(nil)
	}
	if r.maxRunning <= 0 {
		r.maxRunning = DefaultMaxInFlight
	}
	r.limits = limits{global: r.maxRunning, perNamespace: opts.MaxInFlightPerNamespace, perCanary: opts.MaxInFlightPerCanary}
	if r.limits.perNamespace <= 0 {
		r.limits.perNamespace = DefaultMaxInFlightPerNamespace
	}
	r.limits.perNamespace = min(r.limits.perNamespace, r.maxRunning)
	if r.limits.perCanary <= 0 {
		r.limits.perCanary = DefaultMaxInFlightPerCanary
	}
	r.limits.perCanary = min(r.limits.perCanary, r.limits.perNamespace)
	if r.retryDelay <= 0 {
		r.retryDelay = DefaultRetryDelay
	}
	if r.ttl <= 0 {
		r.ttl = DefaultResultTTL
	}
	if r.log.GetSink() == nil {
		r.log = log.Log.WithName("webhooks")
	}
	r.ctx, r.cancel = context.WithCancel(context.Background())
	return r
}

// Poll returns the state of the call named key and never blocks on the network.
//
// The first Poll of a key starts calling hook with p in the background (queued while no slot is
// free for it: see fair.go) and returns Pending with Result.New set; later Polls return Pending
// until the call has finished, within its budget (budget.go): a call still queued after one
// attempt's timeout fails ("queued for 10s, no slot free"). Then every Poll returns the same final
// Result (Passed or Failed) until the key has not been polled for Options.ResultTTL; results are
// not consumed, so a reconcile that fails after reading one reads it again. To call the same hook
// again, poll it under a new key (the canary controller's keys name the check round). hook and p
// are only read by the first Poll of a key; p's namespace and name own the call (fair.go). A hook
// without URL (a manual gate, which the controller approves itself) fails at once.
//
// After Close, Poll returns Pending with Message "runner closed" and starts nothing.
func (r *Runner) Poll(key string, hook sluicev1.CanaryWebhook, p Payload) Result {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return Result{State: Pending, Message: "runner closed"}
	}
	c := r.calls[key]
	if c == nil {
		c = r.newCall(key, hook, p)
		r.calls[key] = c
		r.enqueueLocked(c)
		if r.sweep == nil {
			r.sweep = time.AfterFunc(r.sweepPeriod(), r.expire)
		}
		c.lastPoll = r.now()
		return Result{State: Pending, Message: "queued", New: true}
	}
	c.lastPoll = r.now()
	if c.started.IsZero() && !c.result.Done() {
		if wait := c.queueBudget(); c.queuedFor(c.lastPoll) > wait {
			c.result = queuedTooLong(wait) // the queue drops it on its next look
		}
	}
	switch {
	case c.result.Done():
		return c.result
	case c.started.IsZero():
		return Result{State: Pending, Message: "queued"}
	}
	return Result{State: Pending, Message: "in flight", Duration: time.Since(c.started), Attempts: c.attempts}
}

// Fire calls hook with p in the background and forgets it: failures are logged, not returned.
// It is meant for "event" hooks. Fire-and-forget calls share the bounds of MaxInFlight but use at
// most half of each; beyond 1024 queued or running ones (128 queued of one namespace), or queued
// for longer than their timeout, further calls are dropped and logged.
func (r *Runner) Fire(hook sluicev1.CanaryWebhook, p Payload) {
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case r.closed:
		r.log.Info("Dropping event webhook call: runner closed", "webhook", hook.Name, "canary", p.Namespace+"/"+p.Name)
		return
	case r.events >= maxQueuedEvents:
		r.log.Info("Dropping event webhook call: too many queued", "webhook", hook.Name, "canary", p.Namespace+"/"+p.Name, "queued", r.events)
		return
	case r.queue.queuedEvents(p.Namespace) >= maxQueuedEventsPerNamespace:
		r.log.Info("Dropping event webhook call: too many queued in its namespace", "webhook", hook.Name, "canary", p.Namespace+"/"+p.Name)
		return
	}
	r.events++
	r.enqueueLocked(r.newCall("", hook, p))
}

// Close cancels every queued and running call, discards all results and waits for the running
// calls to return (promptly: their requests are cancelled). Close is idempotent.
func (r *Runner) Close() {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return
	}
	r.closed = true
	for _, c := range r.calls {
		c.dropped = true
	}
	r.queue.drain(func(c *call) { c.dropped = true })
	r.calls = map[string]*call{}
	if r.sweep != nil {
		r.sweep.Stop()
		r.sweep = nil
	}
	r.mu.Unlock()
	r.cancel()
	r.wg.Wait()
}

// Start blocks until ctx is done, then closes the Runner; with it, a Runner is a
// controller-runtime manager.Runnable (mgr.Add(runner)).
func (r *Runner) Start(ctx context.Context) error {
	<-ctx.Done()
	r.Close()
	return nil
}

// NeedLeaderElection is false: every replica's Runner must be closed on shutdown.
func (r *Runner) NeedLeaderElection() bool { return false }

func (r *Runner) newCall(key string, hook sluicev1.CanaryWebhook, p Payload) *call {
	c := &call{key: key, hook: hook, payload: payloadFor(hook, p), queuedAt: r.now()}
	c.ctx, c.cancel = context.WithCancel(r.ctx)
	return c
}

// payloadFor fills the type and merges the hook's metadata under the caller's.
func payloadFor(hook sluicev1.CanaryWebhook, p Payload) Payload {
	if p.Type == "" {
		p.Type = string(hook.Type)
	}
	if p.Type == "" {
		p.Type = string(sluicev1.WebhookRollout)
	}
	if len(hook.Metadata) > 0 {
		md := make(map[string]string, len(hook.Metadata)+len(p.Metadata))
		for k, v := range hook.Metadata {
			md[k] = v
		}
		for k, v := range p.Metadata {
			md[k] = v
		}
		p.Metadata = md
	}
	return p
}

// enqueueLocked queues c and starts a worker if fewer than maxRunning run.
func (r *Runner) enqueueLocked(c *call) {
	r.queue.push(c)
	if r.running < r.maxRunning {
		r.running++
		r.wg.Add(1)
		go r.work()
	}
}

// work runs queued calls until none can start.
func (r *Runner) work() {
	defer r.wg.Done()
	for {
		r.mu.Lock()
		c, expired := r.nextLocked()
		if c == nil {
			r.running--
		} else {
			c.started = time.Now()
			c.deadline = c.started.Add(c.budget(r.retryDelay) - c.queuedFor(r.now()))
		}
		r.mu.Unlock()
		r.reportExpired(expired)
		if c == nil {
			return
		}
		res := r.run(c)
		r.finish(c, res)
	}
}

// nextLocked removes and returns the call to start next (fair.go), or nil when none may start.
// Calls dropped or failed while queued are discarded on the way; it returns the keyed ones that
// failed there (queued longer than their queue budget), to report once r.mu is released.
func (r *Runner) nextLocked() (*call, []*call) {
	var expired []*call
	now := r.now()
	skip := func(c *call) bool {
		if c.dropped || c.result.Done() {
			return true
		}
		if wait := c.queueBudget(); c.queuedFor(now) > wait {
			c.result = queuedTooLong(wait)
			return true
		}
		return false
	}
	discard := func(c *call) {
		c.cancel()
		switch {
		case c.key == "":
			r.events--
			if !c.dropped {
				r.log.Info("Dropping event webhook call: "+c.result.Message, "webhook", c.hook.Name, "canary", c.payload.Namespace+"/"+c.payload.Name)
			}
		case !c.dropped:
			expired = append(expired, c)
		}
	}
	return r.queue.pop(r.limits, skip, discard), expired
}

// reportExpired hands the calls that failed while queued to OnDone.
func (r *Runner) reportExpired(expired []*call) {
	if r.onDone == nil {
		return
	}
	for _, c := range expired {
		r.onDone(c.key, c.result)
	}
}

// finish records res for c, unless c was dropped meanwhile, and reports it.
func (r *Runner) finish(c *call, res Result) {
	c.cancel()
	r.mu.Lock()
	r.queue.done(c)
	if c.key == "" {
		r.events--
	}
	dropped := c.dropped
	if !dropped {
		c.result = res
	}
	r.mu.Unlock()

	switch {
	case dropped:
	case c.key == "" && res.State == Failed:
		r.log.Info("Event webhook failed", "webhook", c.hook.Name, "canary", c.payload.Namespace+"/"+c.payload.Name,
			"reason", res.Message, "attempts", res.Attempts)
	case c.key == "":
		r.log.V(1).Info("Event webhook passed", "webhook", c.hook.Name, "canary", c.payload.Namespace+"/"+c.payload.Name)
	case r.onDone != nil:
		r.onDone(c.key, res)
	}
}

// setAttempt records that attempt n of c started.
func (r *Runner) setAttempt(c *call, n int) {
	r.mu.Lock()
	c.attempts = n
	r.mu.Unlock()
}

// dropLocked removes c from the keyed calls and cancels it.
func (r *Runner) dropLocked(c *call) {
	delete(r.calls, c.key)
	c.dropped = true
	c.cancel()
}

// sweepPeriod is how often expired keys are looked for: a tenth of the TTL, at least 1s.
func (r *Runner) sweepPeriod() time.Duration { return max(time.Second, r.ttl/10) }

// expire drops the keys not polled within the TTL; it re-arms itself while keys remain.
func (r *Runner) expire() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.sweep = nil
	if r.closed {
		return
	}
	now := r.now()
	for _, c := range r.calls {
		if now.Sub(c.lastPoll) >= r.ttl {
			r.dropLocked(c)
		}
	}
	if len(r.calls) > 0 {
		r.sweep = time.AfterFunc(r.sweepPeriod(), r.expire)
	}
}

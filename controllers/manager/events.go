package manager

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	eventsv1client "k8s.io/client-go/kubernetes/typed/events/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// Event metrics: every event the controllers emit is counted once when emitted and once when it
// reaches the apiserver (or is given up on), so `emitted - written - rejected` is what is in
// flight, and a lost event shows as a difference that stays.
var (
	eventsEmitted = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "sluice_events_emitted_total",
		Help: "Kubernetes events the controllers emitted, by type (Normal, Warning).",
	}, []string{"type"})
	eventsWritten = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "sluice_events_written_total",
		Help: "Event writes the apiserver accepted: create (a new event) or patch (one more occurrence of an event series).",
	}, []string{"op"})
	eventsRejected = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "sluice_events_rejected_total",
		Help: "Event writes given up on: reason invalid (the apiserver refused the event itself) or expired (still failing after eventRetryFor).",
	}, []string{"reason"})
	eventsRetried = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "sluice_events_retried_total",
		Help: "Event writes retried after a transient failure (throttled by the apiserver, timeout, unavailable, connection error).",
	})
)

func init() {
	metrics.Registry.MustRegister(eventsEmitted, eventsWritten, eventsRejected, eventsRetried)
}

// eventRetryFor bounds how long one event write is retried through transient failures. client-go
// alone gives up on the first 429 ("server rejected event, will not retry") and after 12 tries
// on connection errors: under load that loses events.
const eventRetryFor = 10 * time.Minute

// eventRecorder builds the manager's events.k8s.io recorder on client-go's broadcaster (which
// aggregates isomorphic events into series) with a sink that retries transient failures with
// backoff and counts every outcome. It is stopped by the returned function.
// errors: a client that cannot be built.
func eventRecorder(cfg *rest.Config, httpClient *http.Client, scheme *runtime.Scheme, name string,
	annotations map[string]string) (events.EventRecorder, func(), error) {
	cs, err := eventsv1client.NewForConfigAndClient(cfg, httpClient)
	if err != nil {
		return nil, nil, fmt.Errorf("creating the events client: %w", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ctx = log.IntoContext(ctx, log.Log.WithName("events"))
	sink := &retryingSink{inner: &events.EventSinkImpl{Interface: cs}}
	b := events.NewBroadcaster(sink)
	if err := b.StartRecordingToSinkWithContext(ctx); err != nil {
		cancel()
		return nil, nil, fmt.Errorf("starting the event broadcaster: %w", err)
	}
	stop := func() {
		cancel()
		b.Shutdown()
	}
	rec := b.NewRecorder(scheme, name)
	annotated, ok := rec.(events.AnnotatedEventRecorder)
	if !ok && len(annotations) > 0 {
		stop()
		return nil, nil, fmt.Errorf("client-go's event recorder %T cannot annotate events", rec)
	}
	return countingRecorder{rec: rec, annotated: annotated, annotations: annotations}, stop, nil
}

// countingRecorder counts the events emitted through it and puts annotations on each.
type countingRecorder struct {
	rec         events.EventRecorder
	annotated   events.AnnotatedEventRecorder
	annotations map[string]string
}

func (r countingRecorder) Eventf(regarding, related runtime.Object, eventtype, reason, action, note string, args ...any) {
	eventsEmitted.WithLabelValues(eventtype).Inc()
	if len(r.annotations) == 0 {
		r.rec.Eventf(regarding, related, eventtype, reason, action, note, args...)
		return
	}
	r.annotated.AnnotatedEventf(regarding, related, r.annotations, eventtype, reason, action, note, args...)
}

// retryingSink writes events through inner, retrying transient failures with backoff for up to
// eventRetryFor, and counts each outcome.
type retryingSink struct{ inner events.EventSink }

func (s *retryingSink) Create(ctx context.Context, e *eventsv1.Event) (*eventsv1.Event, error) {
	return s.write(ctx, "create", func() (*eventsv1.Event, error) { return s.inner.Create(ctx, e) })
}

func (s *retryingSink) Update(ctx context.Context, e *eventsv1.Event) (*eventsv1.Event, error) {
	return s.write(ctx, "update", func() (*eventsv1.Event, error) { return s.inner.Update(ctx, e) })
}

func (s *retryingSink) Patch(ctx context.Context, e *eventsv1.Event, data []byte) (*eventsv1.Event, error) {
	return s.write(ctx, "patch", func() (*eventsv1.Event, error) { return s.inner.Patch(ctx, e, data) })
}

func (s *retryingSink) write(ctx context.Context, op string, f func() (*eventsv1.Event, error)) (*eventsv1.Event, error) {
	var out *eventsv1.Event
	var last error
	backoff := wait.Backoff{Duration: 200 * time.Millisecond, Factor: 2, Jitter: 0.2, Steps: 1 << 30, Cap: 10 * time.Second}
	deadline := time.Now().Add(eventRetryFor)
	err := wait.ExponentialBackoffWithContext(ctx, backoff, func(context.Context) (bool, error) {
		out, last = f()
		switch {
		case last == nil:
			return true, nil
		case !transient(last):
			return false, last
		case time.Now().After(deadline):
			return false, last
		}
		eventsRetried.Inc()
		return false, nil
	})
	switch {
	case err == nil:
		eventsWritten.WithLabelValues(op).Inc()
		return out, nil
	case op == "patch" && apierrors.IsNotFound(last):
		// client-go creates the event of a series whose first occurrence is gone: not a loss.
		return nil, last
	case op == "create" && apierrors.IsAlreadyExists(last):
		// A series' create raced with its patch: client-go retries it as a patch.
		return nil, last
	case transient(last):
		eventsRejected.WithLabelValues("expired").Inc()
	default:
		eventsRejected.WithLabelValues("invalid").Inc()
	}
	if last == nil {
		last = err
	}
	return nil, last
}

// transient reports whether a failed write is worth retrying: the apiserver was busy, timed out or
// unreachable, as opposed to refusing the event itself.
func transient(err error) bool {
	var status apierrors.APIStatus
	if !errors.As(err, &status) {
		return true // a transport error: no answer at all
	}
	return apierrors.IsTooManyRequests(err) || apierrors.IsServerTimeout(err) || apierrors.IsTimeout(err) ||
		apierrors.IsServiceUnavailable(err) || apierrors.IsInternalError(err) || apierrors.IsUnexpectedServerError(err)
}

// stopOnDone is a manager Runnable on every replica (leader or not) that calls stop when the
// manager stops.
type stopOnDone func()

func (s stopOnDone) Start(ctx context.Context) error {
	<-ctx.Done()
	s()
	return nil
}

// NeedLeaderElection is false: the recorder lives as long as the manager.
func (stopOnDone) NeedLeaderElection() bool { return false }

package manager

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/flowcontrol"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// Defaults of --kube-api-qps and --kube-api-burst: one client-side budget shared by every request
// of the manager (reads that miss the cache, writes, events, list/watch). Measured with
// `make bench-scale`: at N = 1000 Canaries all releasing at once the manager stays well under
// these, so the limiter never makes a request wait; they are a fuse against a runaway loop, not
// a throttle.
const (
	DefaultKubeAPIQPS   = 300
	DefaultKubeAPIBurst = 600
)

// DefaultWorkers is the default of --max-concurrent-reconciles: a tick mostly waits on the
// apiserver, so workers are cheap (a goroutine each), but more of them do not make a saturated
// apiserver faster. make bench-scale N=1000 on two cores, 16 against 64: the release's median
// 225 s against 253 s, 20.0 requests per rollout against 21.5 (with 64 the ticks, 0.1 s against
// 0.4 s each, more often read a Canary or route the cache had not caught up with), and the
// initialization no faster (176 s against 166 s; a tick 0.7 s against 2.6 s).
const DefaultWorkers = 16

// API client metrics on the manager's /metrics.
var (
	apiRequests = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "sluice_kube_api_requests_total",
		Help: "Requests the manager sent to the Kubernetes API, by verb (get, list, watch, create, update, patch, apply, delete, discovery), resource (with subresource, e.g. canaries/status) and HTTP code.",
	}, []string{"verb", "resource", "code"})
	apiThrottled = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "sluice_kube_api_throttled_requests_total",
		Help: "Requests that found the client-side rate limiter (--kube-api-qps, --kube-api-burst) empty and waited for a token.",
	})
	apiThrottleSeconds = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "sluice_kube_api_throttle_seconds_total",
		Help: "Total time requests waited for the client-side rate limiter.",
	})
)

func init() {
	metrics.Registry.MustRegister(apiRequests, apiThrottled, apiThrottleSeconds)
}

// apiConfig returns a copy of cfg whose clients share one rate limiter of qps and burst (qps < 0:
// none), measured into sluice_kube_api_throttle*, and count every request into
// sluice_kube_api_requests_total. qps 0 and burst 0 mean the defaults. Without a shared limiter
// client-go gives every client (one per API group) its own budget, so the flags would not bound
// what the manager sends.
func apiConfig(cfg *rest.Config, qps float32, burst int) *rest.Config {
	c := rest.CopyConfig(cfg)
	if qps == 0 {
		qps = DefaultKubeAPIQPS
	}
	if burst <= 0 {
		burst = DefaultKubeAPIBurst
	}
	c.QPS, c.Burst = qps, burst
	if qps > 0 {
		c.RateLimiter = measuredLimiter{flowcontrol.NewTokenBucketRateLimiter(qps, burst)}
	} else {
		c.RateLimiter = flowcontrol.NewFakeAlwaysRateLimiter()
	}
	c.Wrap(countRequests)
	return c
}

// leaderElectionConfig is cfg for the leader-election client: its own default budget, so lease
// renewals never queue behind a burst of reconcile requests (a renewal that waits too long loses
// the lease).
func leaderElectionConfig(cfg *rest.Config) *rest.Config {
	c := rest.CopyConfig(cfg)
	c.RateLimiter = nil
	c.QPS, c.Burst = 5, 10
	c.Wrap(countRequests)
	return c
}

// measuredLimiter counts the requests that found no token left (they wait for one) and how long
// they waited.
type measuredLimiter struct{ flowcontrol.RateLimiter }

func (l measuredLimiter) Wait(ctx context.Context) error {
	if l.TryAccept() {
		return nil
	}
	apiThrottled.Inc()
	start := time.Now()
	err := l.RateLimiter.Wait(ctx)
	apiThrottleSeconds.Add(time.Since(start).Seconds())
	return err
}

func (l measuredLimiter) Accept() {
	if l.TryAccept() {
		return
	}
	apiThrottled.Inc()
	start := time.Now()
	l.RateLimiter.Accept()
	apiThrottleSeconds.Add(time.Since(start).Seconds())
}

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// countRequests is a rest.Config WrapTransport: it counts each request when its response (or
// error, code "error") arrives; a watch when its stream opens.
func countRequests(rt http.RoundTripper) http.RoundTripper {
	return roundTripperFunc(func(r *http.Request) (*http.Response, error) {
		resp, err := rt.RoundTrip(r)
		code := "error"
		if resp != nil {
			code = strconv.Itoa(resp.StatusCode)
		}
		verb, resource := ClassifyRequest(r)
		apiRequests.WithLabelValues(verb, resource, code).Inc()
		return resp, err
	})
}

// ClassifyRequest names a request by the Kubernetes API conventions of its method and URL path
// (/api/v1/[namespaces/NS/]RESOURCE[/NAME[/SUB]], /apis/GROUP/VERSION/...): a verb (get, list,
// watch, create, update, patch, apply, delete, deletecollection, discovery) and a resource with
// its subresource after a slash ("canaries/status"). Discovery requests have resource "".
func ClassifyRequest(r *http.Request) (verb, resource string) {
	parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	var rest []string
	switch {
	case len(parts) >= 2 && parts[0] == "api":
		rest = parts[2:]
	case len(parts) >= 3 && parts[0] == "apis":
		rest = parts[3:]
	}
	if len(rest) == 0 {
		return "discovery", ""
	}
	if rest[0] == "namespaces" && len(rest) >= 3 {
		rest = rest[2:]
	}
	resource, named := rest[0], len(rest) >= 2
	if len(rest) >= 3 {
		resource += "/" + rest[2]
	}
	switch r.Method {
	case http.MethodGet:
		switch q := r.URL.Query().Get("watch"); {
		case q == "true" || q == "1":
			return "watch", resource
		case named:
			return "get", resource
		default:
			return "list", resource
		}
	case http.MethodPost:
		return "create", resource
	case http.MethodPut:
		return "update", resource
	case http.MethodPatch:
		if strings.HasPrefix(r.Header.Get("Content-Type"), "application/apply-patch") {
			return "apply", resource
		}
		return "patch", resource
	case http.MethodDelete:
		if !named {
			return "deletecollection", resource
		}
		return "delete", resource
	}
	return strings.ToLower(r.Method), resource
}

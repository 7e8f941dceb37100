package scale

import (
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// call is one kind of API request: a verb (get, list, watch, create, update, patch, apply,
// delete, discovery) and a resource, with its subresource after a slash ("canaries/status"), and
// the HTTP status when the apiserver refused it (409 for a conflict; 0 otherwise).
type call struct {
	verb, resource string
	failed         int
}

func (c call) String() string {
	if c.failed != 0 {
		return fmt.Sprintf("%s %s -> %d", c.verb, c.resource, c.failed)
	}
	return c.verb + " " + c.resource
}

// requestCounter counts the requests that pass through the transports it wraps.
type requestCounter struct {
	mu      sync.Mutex
	counts  map[call]int
	latency map[call]time.Duration
}

func newRequestCounter() *requestCounter {
	return &requestCounter{counts: map[call]int{}, latency: map[call]time.Duration{}}
}

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// wrap is a rest.Config WrapTransport function. A request counts when its response (or error)
// arrives; a watch when its stream opens.
func (c *requestCounter) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripperFunc(func(r *http.Request) (*http.Response, error) {
		k := classify(r)
		start := time.Now()
		resp, err := rt.RoundTrip(r)
		took := time.Since(start)
		if resp != nil && resp.StatusCode >= http.StatusBadRequest {
			k.failed = resp.StatusCode
		}
		c.mu.Lock()
		c.counts[k]++
		c.latency[k] += took
		c.mu.Unlock()
		return resp, err
	})
}

// take returns the counts since the last take and starts counting from zero.
func (c *requestCounter) take() requestCounts {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := requestCounts{counts: c.counts, latency: c.latency}
	c.counts, c.latency = map[call]int{}, map[call]time.Duration{}
	return out
}

// classify names a request by the Kubernetes API conventions of its method and URL path:
// /api/v1/[namespaces/NS/]RESOURCE[/NAME[/SUB]] and /apis/GROUP/VERSION/... .
func classify(r *http.Request) call {
	parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	var rest []string
	switch {
	case len(parts) >= 2 && parts[0] == "api":
		rest = parts[2:]
	case len(parts) >= 3 && parts[0] == "apis":
		rest = parts[3:]
	}
	if len(rest) == 0 {
		return call{verb: "discovery", resource: r.URL.Path}
	}
	if rest[0] == "namespaces" && len(rest) >= 3 {
		rest = rest[2:]
	}
	resource, named := rest[0], len(rest) >= 2
	if len(rest) >= 3 {
		resource += "/" + rest[2]
	}
	verb := strings.ToLower(r.Method)
	switch r.Method {
	case http.MethodGet:
		switch {
		case r.URL.Query().Get("watch") == "true" || r.URL.Query().Get("watch") == "1":
			verb = "watch"
		case named:
			verb = "get"
		default:
			verb = "list"
		}
	case http.MethodPost:
		verb = "create"
	case http.MethodPut:
		verb = "update"
	case http.MethodPatch:
		if strings.HasPrefix(r.Header.Get("Content-Type"), "application/apply-patch") {
			verb = "apply"
		}
	}
	return call{verb: verb, resource: resource}
}

// requestCounts are request counts by verb and resource, with the time until each response (for
// a watch: until its stream opened).
type requestCounts struct {
	counts  map[call]int
	latency map[call]time.Duration
}

func (rc requestCounts) total() int {
	n := 0
	for _, v := range rc.counts {
		n += v
	}
	return n
}

// refused counts the requests the apiserver refused (conflicts and other errors).
func (rc requestCounts) refused() int {
	n := 0
	for k, v := range rc.counts {
		if k.failed != 0 {
			n += v
		}
	}
	return n
}

// refusedOf counts the refused requests of one verb and resource, e.g. ("patch", "canaries/status").
func (rc requestCounts) refusedOf(verb, resource string) int {
	n := 0
	for k, v := range rc.counts {
		if k.failed != 0 && k.verb == verb && k.resource == resource {
			n += v
		}
	}
	return n
}

// table renders the counts one line per verb and resource, most frequent first, each also divided
// by per (e.g. canary-ticks) and with its mean latency, then the total.
func (rc requestCounts) table(per float64, perName string) string {
	keys := slices.SortedFunc(maps.Keys(rc.counts), func(a, b call) int {
		if rc.counts[a] != rc.counts[b] {
			return rc.counts[b] - rc.counts[a]
		}
		return strings.Compare(a.String(), b.String())
	})
	var b strings.Builder
	fmt.Fprintf(&b, "    %-34s %8s %15s %12s\n", "verb resource", "requests", perName, "mean latency")
	for _, k := range keys {
		n := rc.counts[k]
		fmt.Fprintf(&b, "    %-34s %8d %15.4f %12s\n", k, n, float64(n)/per,
			(rc.latency[k] / time.Duration(n)).Round(10*time.Microsecond))
	}
	fmt.Fprintf(&b, "    %-34s %8d %15.4f", "total", rc.total(), float64(rc.total())/per)
	return b.String()
}

// add adds other's counts to rc.
func (rc requestCounts) add(other requestCounts) {
	for k, v := range other.counts {
		rc.counts[k] += v
		rc.latency[k] += other.latency[k]
	}
}

func TestClassify(t *testing.T) {
	for _, tc := range []struct {
		method, url, contentType string
		want                     call
	}{
		{"GET", "/apis/sluice.dev/v1alpha1/namespaces/a/canaries/web", "", call{verb: "get", resource: "canaries"}},
		{"GET", "/apis/sluice.dev/v1alpha1/canaries?limit=500", "", call{verb: "list", resource: "canaries"}},
		{"GET", "/api/v1/services?watch=true&resourceVersion=1", "", call{verb: "watch", resource: "services"}},
		{"PATCH", "/apis/sluice.dev/v1alpha1/namespaces/a/canaries/web/status", "application/merge-patch+json", call{verb: "patch", resource: "canaries/status"}},
		{"PATCH", "/apis/gateway.networking.k8s.io/v1/namespaces/a/httproutes/web?fieldManager=sluice&force=true", "application/apply-patch+yaml", call{verb: "apply", resource: "httproutes"}},
		{"POST", "/apis/events.k8s.io/v1/namespaces/a/events", "application/json", call{verb: "create", resource: "events"}},
		{"PUT", "/api/v1/namespaces/a", "", call{verb: "update", resource: "namespaces"}},
		{"DELETE", "/apis/apps/v1/namespaces/a/deployments/web-primary", "", call{verb: "delete", resource: "deployments"}},
		{"GET", "/apis", "", call{verb: "discovery", resource: "/apis"}},
	} {
		r := httptest.NewRequest(tc.method, tc.url, nil)
		if tc.contentType != "" {
			r.Header.Set("Content-Type", tc.contentType)
		}
		if got := classify(r); got != tc.want {
			t.Errorf("%s %s: got %q, want %q", tc.method, tc.url, got, tc.want)
		}
	}
}

package plugin

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
)

// requestCounter counts the dashboard's requests to the apiserver by verb and resource, and
// those the apiserver accepted (it answers 429 to a watch while its cache of the kind warms up,
// and client-go asks again).
type requestCounter struct {
	next http.RoundTripper
	mu   sync.Mutex
	n    map[string]int
}

func (c *requestCounter) RoundTrip(r *http.Request) (*http.Response, error) {
	verb := strings.ToLower(r.Method)
	parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	resource := parts[len(parts)-1]
	if r.Method == http.MethodGet {
		verb = "list"
		if r.URL.Query().Get("watch") == "true" {
			verb = "watch"
		}
	}
	resp, err := c.next.RoundTrip(r)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n[verb+" "+resource]++
	if err == nil && resp.StatusCode < 300 {
		c.n[verb+" "+resource+" (accepted)"]++
	}
	return resp, err
}

func (c *requestCounter) counts() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := map[string]int{}
	for k, v := range c.n {
		out[k] = v
	}
	return out
}

// TestDashboardScale is the overview's benchmark, run only with SLUICE_DASHBOARD_SCALE=N (it
// creates N Canaries, 1000 in the docs' command): it prints the overview's first render time and
// how long status changes take to reach the page, both measured in the browser, and the requests
// the dashboard made to the apiserver. It prints figures; the only thing it checks is that the
// dashboard listed (at most) and watched each kind once, whatever N.
func TestDashboardScale(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("SLUICE_DASHBOARD_SCALE"))
	if n <= 0 {
		t.Skip("a benchmark: set SLUICE_DASHBOARD_SCALE=1000 to run it (see docs/dashboard.md)")
	}
	tb := newTab(t)
	ctx := context.Background()
	const perNamespace = 100
	var namespaces []string
	for i := 0; i < (n+perNamespace-1)/perNamespace; i++ {
		ns := fmt.Sprintf("scale-%d-%d", i, time.Now().UnixNano()%100000)
		if err := env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
			t.Fatal(err)
		}
		namespaces = append(namespaces, ns)
	}
	start := time.Now()
	phases := []sluicev1.CanaryPhase{sluicev1.CanaryPhaseSucceeded, sluicev1.CanaryPhaseInitialized, sluicev1.CanaryPhaseProgressing, sluicev1.CanaryPhaseFailed}
	var wg sync.WaitGroup
	errs := make(chan error, n)
	sem := make(chan struct{}, 16)
	var keys []string
	for i := range n {
		ns, name := namespaces[i/perNamespace], fmt.Sprintf("app-%04d", i)
		keys = append(keys, ns+"/"+name)
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			cn := newCanaryQuiet(ns, name)
			if err := env.Client.Create(ctx, cn); err != nil {
				errs <- err
				return
			}
			cn.Status = sluicev1.CanaryStatus{Phase: phases[i%len(phases)], CanaryWeight: int32(10 * (i % 6)), LastTransitionTime: &metav1.Time{Time: time.Now()}}
			if err := env.Client.Status().Update(ctx, cn); err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	t.Logf("%d canaries created in %s", n, time.Since(start).Round(time.Millisecond))

	counter := &requestCounter{n: map[string]int{}}
	cfg := rest.CopyConfig(env.Config)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { counter.next = rt; return counter })
	url := runDashboard(t, cfg, "-A")
	// Steady state: the dashboard has listed everything (GET /api/overview waits for that).
	resp, err := http.Get(url + "api/overview")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	tb.open(url)
	tb.waitJS(fmt.Sprintf(`document.querySelectorAll('#canary-rows tr[data-key]').length >= %d`, n), 30*time.Second)
	tb.waitJS(`performance.getEntriesByName('sluice-overview-painted').length`, 5*time.Second)
	received := eval[float64](tb, `performance.getEntriesByName('sluice-overview-received')[0].startTime`)
	dom := eval[float64](tb, `performance.getEntriesByName('sluice-overview-dom')[0].startTime`)
	painted := eval[float64](tb, `performance.getEntriesByName('sluice-overview-painted')[0].startTime`)

	// Status changes: the browser stamps when the row shows the new weight (a MutationObserver);
	// the test stamps when it wrote the status, on the same clock.
	tb.js(`window.seen = {}; new MutationObserver(() => {
		for (const [key, want] of Object.entries(window.want || {})) {
			const tr = document.querySelector('tr[data-key="' + key + '"]');
			if (tr && tr.dataset.weight === want && !window.seen[key]) window.seen[key] = performance.timeOrigin + performance.now();
		}
	}).observe(document.getElementById('canary-rows'), {childList: true, subtree: true, attributes: true})`)
	var lags []time.Duration
	for i := range 10 {
		key := keys[(i*97)%len(keys)]
		ns, name, _ := strings.Cut(key, "/")
		cn := &sluicev1.Canary{}
		if err := env.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, cn); err != nil {
			t.Fatal(err)
		}
		weight := 77 + i // a weight no fixture has
		tb.js(fmt.Sprintf(`window.want = {%s: '%d'}`, jsString(key), weight))
		cn.Status.CanaryWeight = int32(weight)
		wrote := time.Now()
		if err := env.Client.Status().Update(ctx, cn); err != nil {
			t.Fatal(err)
		}
		tb.waitJS(fmt.Sprintf(`window.seen[%s]`, jsString(key)), 10*time.Second)
		shown := eval[float64](tb, fmt.Sprintf(`window.seen[%s]`, jsString(key)))
		lags = append(lags, time.UnixMicro(int64(shown*1000)).Sub(wrote))
	}
	slices.Sort(lags)
	counts := counter.counts()
	t.Logf("overview of %d canaries, after navigation: data received %.0f ms, table in the DOM %.0f ms, on screen %.0f ms", n, received, dom, painted)
	t.Logf("status change to page (10 changes): median %s, max %s", lags[len(lags)/2].Round(time.Millisecond), lags[len(lags)-1].Round(time.Millisecond))
	t.Logf("dashboard requests to the apiserver: %v", counts)
	// client-go's informers stream the initial list over the watch (WatchListClient); an
	// apiserver without it gets one list, then the watch.
	for _, kind := range []string{"canaries", "dataplanes"} {
		if w, l := counts["watch "+kind+" (accepted)"], counts["list "+kind+" (accepted)"]; w != 1 || l > 1 {
			t.Errorf("%s: %d lists and %d watches accepted, want at most one list and one watch whatever the number of canaries", kind, l, w)
		}
	}
}

func newCanaryQuiet(ns, name string) *sluicev1.Canary {
	return &sluicev1.Canary{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: sluicev1.CanarySpec{
			TargetRef: sluicev1.TargetReference{APIVersion: "apps/v1", Kind: "Deployment", Name: name},
			Service:   sluicev1.CanaryService{Port: 9898},
			Analysis:  sluicev1.CanaryAnalysis{Interval: "1m", Threshold: 5, MaxWeight: 50, StepWeight: 10},
		},
	}
}

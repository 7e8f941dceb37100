package main

import (
	"cmp"
	"fmt"
	"io"
	"maps"
	"slices"
	"sort"
	"strings"
	"time"

	"sluice.dev/sluice/test/managerproc"
)

// failures is the growth of the refused requests (HTTP code 400 and above) from a to b, keyed
// "verb resource code".
func failures(a, b managerproc.Metrics) requests {
	before := a.ByLabels("sluice_kube_api_requests_total", "verb", "resource", "code")
	out := requests{}
	for k, v := range b.ByLabels("sluice_kube_api_requests_total", "verb", "resource", "code") {
		fields := strings.Fields(k)
		if code := fields[len(fields)-1]; code < "400" && code != "error" {
			continue
		}
		if d := v - before[k]; d > 0 {
			out[k] = d
		}
	}
	return out
}

// requests are request counts keyed "verb resource".
type requests map[string]float64

// isLease tells the leader election's requests (a constant ~0.5/s whatever N), reported apart.
func isLease(key string) bool { return strings.HasSuffix(key, " leases") }

// delta is the growth of sluice_kube_api_requests_total from a to b.
func delta(a, b managerproc.Metrics) requests {
	before := a.ByLabels("sluice_kube_api_requests_total", "verb", "resource")
	out := requests{}
	for k, v := range b.ByLabels("sluice_kube_api_requests_total", "verb", "resource") {
		if d := v - before[k]; d > 0 {
			out[k] = d
		}
	}
	return out
}

func (r requests) total() float64 {
	t := 0.0
	for _, v := range r {
		t += v
	}
	return t
}

// canaryTotal is every request but the leader election's.
func (r requests) canaryTotal() float64 {
	t := 0.0
	for k, v := range r {
		if !isLease(k) {
			t += v
		}
	}
	return t
}

// line renders the counts but the leader election's divided by per, most frequent first, e.g.
// "patch canaries/status 8.0, …".
func (r requests) line(per float64, format string) string {
	keys := slices.SortedFunc(maps.Keys(r), func(a, b string) int {
		if r[a] != r[b] {
			if r[a] > r[b] {
				return -1
			}
			return 1
		}
		return strings.Compare(a, b)
	})
	var parts []string
	for _, k := range keys {
		if !isLease(k) {
			parts = append(parts, fmt.Sprintf("%s "+format, k, r[k]/per))
		}
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

// report is everything measured.
type report struct {
	cfg   config
	start time.Time
	cores int

	rssEmpty, rssWorkloads, rssInitPeak, rssIdle, rssReleasePeak int64
	heapIdle, heapInuse, goroutines                              float64

	canariesCreated time.Duration
	initStart       time.Time
	initTimes       []time.Time
	initRequests    requests
	settled         time.Duration

	idleWall       time.Duration
	idleCPU        time.Duration
	idleRequests   requests
	idleReconciles float64
	// idleReconcilesByResult: the idle reconciles by controller-runtime's result label.
	idleReconcilesByResult map[string]float64
	// idleWatchEvents: the changes the manager's watches saw while idle (see tracker.countEvent).
	idleWatchEvents map[string]int

	releasePatched, releaseWall time.Duration
	releaseCPU                  time.Duration
	// pids names the processes whose CPU is reported (the cluster's components, the manager);
	// initCPU and releaseCPUByProcess are their shares while initializing and during the release.
	pids                          map[string]int
	initCPU, releaseCPUByProcess  string
	releaseErr                    error
	runs                          []time.Duration
	toProgressing, steps          []time.Duration // target change → Progressing → Promoting
	stepGaps                      []time.Duration // a weight → the next, the last → Promoting
	promotions                    []time.Duration // Promoting → Succeeded
	split                         runSplit
	initFailures, releaseFailures requests
	runsFailed                    int
	releaseRequests               requests

	eventsEmitted, eventsWritten, eventsRejected, eventsRetried float64
	eventsStored                                                int
	eventsByReason                                              map[string]int

	throttled, throttleSeconds float64
	// tooManyBy: the requests answered 429, by verb and resource.
	tooManyBy                       requests
	initThrottled, releaseThrottled float64
	initQueue, releaseQueue         queueStats
	// apiserver reads the kube-apiserver's request counts; releaseAPIServer is the release's.
	apiserver                       *apiserverScraper
	initAPIServer, releaseAPIServer string
	// profiles deliver the kube-apiserver's CPU profiles (-apiserver-profiles); profilePaths are
	// their files (or errors).
	profiles     []<-chan string
	profilePaths []string
}

func mib(b int64) string { return fmt.Sprintf("%.0f MiB", float64(b)/(1<<20)) }

func secs(d time.Duration) string { return fmt.Sprintf("%.1f s", d.Seconds()) }

// print writes the report as a Markdown table, then the request breakdowns.
func (r *report) print(w io.Writer) {
	n := float64(r.cfg.n)
	limit := r.cfg.interval * steps
	fmt.Fprintf(w, "\nbenchscale %s\n", strings.Join(r.cfg.args, " "))
	fmt.Fprintf(w, "N = %d Canaries (%d per namespace), interval %s, steps %d..%d by %d, target replicas %d, %d cores; manager process %s\n",
		r.cfg.n, r.cfg.perNamespace, r.cfg.interval, stepWeight, maxWeight, stepWeight, r.cfg.replicas, r.cores, r.cfg.managerArgs.String())
	kwok := "kwok's default parallelism"
	if r.cfg.kwokParallelism > 0 {
		kwok = fmt.Sprintf("kwok %d pods at a time", r.cfg.kwokParallelism)
	}
	gogc := "Go's default GOGC"
	if r.cfg.componentGOGC > 0 {
		gogc = fmt.Sprintf("GOGC=%d for every component", r.cfg.componentGOGC)
	}
	fmt.Fprintf(w, "local cluster: kube-controller-manager %s; %s; %s; clients authenticate with a token\n\n", cmp.Or(r.cfg.controllerManagerArgs.String(), "with its defaults"), kwok, gogc)
	fmt.Fprintln(w, "| measure | value |")
	fmt.Fprintln(w, "|---|---|")
	row := func(k, format string, args ...any) { fmt.Fprintf(w, "| %s | %s |\n", k, fmt.Sprintf(format, args...)) }

	row("time to all Initialized", "%s (%s)", secs(r.initSpan()), r.initRates())
	row("the canary controller while initializing", "%s", r.initQueue.String(n))
	row("CPU while initializing, by process (cores)", "%s", r.initCPU)
	row("the kube-apiserver while initializing (until the manager was quiet)", "%s", r.initAPIServer)
	idleS := r.idleWall.Seconds()
	row("idle API requests/s", "%.3f (%s); leader election %.2f/s apart", r.idleRequests.canaryTotal()/idleS,
		r.idleRequests.line(idleS, "%.3f/s"), (r.idleRequests.total()-r.idleRequests.canaryTotal())/idleS)
	row("idle reconciles/s", "%.2f (by result: %s); what the watches saw meanwhile: %s", r.idleReconciles/idleS,
		requests(r.idleReconcilesByResult).line(1, "%.0f"), watchLine(r.idleWatchEvents))
	row("idle CPU of the manager", "%.2f %% of a core", 100*r.idleCPU.Seconds()/idleS)
	perCanary := float64(r.rssIdle-r.rssEmpty) / n
	row("manager RSS", "%s empty cluster, %s with the workloads, %s peak while initializing, %s idle with N Canaries, %s peak during the release",
		mib(r.rssEmpty), mib(r.rssWorkloads), mib(r.rssInitPeak), mib(r.rssIdle), mib(r.rssReleasePeak))
	row("RSS per Canary (idle − empty) / N", "%.1f KiB; projected at N = 10,000: %s", perCanary/1024, mib(r.rssEmpty+int64(perCanary*10000)))
	row("Go heap in use (idle)", "%s", mib(int64(r.heapIdle)))
	if r.cfg.rollout {
		med, p95, mx := quantiles(r.runs)
		row("release of all N at once", "median %s, p95 %s, max %s = %.2f× / %.2f× / %.2f× of interval × steps (%s); %d/%d runs ended, %d failed; all targets changed in %s",
			secs(med), secs(p95), secs(mx), med.Seconds()/limit.Seconds(), p95.Seconds()/limit.Seconds(), mx.Seconds()/limit.Seconds(),
			limit, len(r.runs), r.cfg.n, r.runsFailed, secs(r.releasePatched))
		// A run waits to start while the runs ahead of it go first (the queue's priority): the
		// start's p95 and max show how long the last ones waited.
		med1, p951, max1 := quantiles(r.toProgressing)
		med2, _, _ := quantiles(r.steps)
		med3, _, _ := quantiles(r.promotions)
		row("where a run's time goes (medians)", "target change → Progressing %s (p95 %s, max %s); Progressing → Promoting (%d steps and checks) %s; Promoting → Succeeded %s",
			secs(med1), secs(p951), secs(max1), steps, secs(med2), secs(med3))
		if len(r.stepGaps) > 0 {
			gm, gp, gx := quantiles(r.stepGaps)
			row("the checks' cadence (a canary weight → the next, the last → Promoting; the interval is the aim)", "median %s, p95 %s, max %s (%d gaps)",
				secs(gm), secs(gp), secs(gx), len(r.stepGaps))
		}
		if len(r.split[0]) > 0 {
			row("a run's time, cluster and Sluice apart (medians of the runs seen at every point)", "%s", r.split.String())
		}
		row("the canary controller during the release", "%s", r.releaseQueue.String(n))
		row("the kube-apiserver during the release (until the last run ended)", "%s", r.releaseAPIServer)
		row("API requests per rollout", "%.1f (%s)", r.releaseRequests.canaryTotal()/n, r.releaseRequests.line(n, "%.1f"))
		row("events per rollout", "emitted %.1f, written %.1f, found in the apiserver %.1f (%s); rejected %.0f, retried %.0f",
			r.eventsEmitted/n, r.eventsWritten/n, float64(r.eventsStored)/n, reasons(r.eventsByReason, n), r.eventsRejected, r.eventsRetried)
		row("manager CPU during the release", "%.2f cores (%s)", r.releaseCPU.Seconds()/r.releaseWall.Seconds(), secs(r.releaseWall))
		row("CPU during the release, by process (cores)", "%s", r.releaseCPUByProcess)
	}
	row("client-side throttling", "%.0f requests waited for a token (%.0f while initializing, %.0f during the release; %.1f s in total); %.0f answered 429 by the apiserver (%s)",
		r.throttled, r.initThrottled, r.releaseThrottled, r.throttleSeconds, r.tooManyBy.total(), r.tooManyBy.line(1, "%.0f"))
	fmt.Fprintf(w, "\ninitialization requests per Canary: %.1f (%s)\n", r.initRequests.canaryTotal()/n, r.initRequests.line(n, "%.2f"))
	fmt.Fprintf(w, "refused requests: initialization %s; release %s\n", r.initFailures.line(1, "%.0f"), r.releaseFailures.line(1, "%.0f"))
	if len(r.profilePaths) > 0 {
		fmt.Fprintf(w, "kube-apiserver CPU profiles (30 s each): %s\n", strings.Join(r.profilePaths, ", "))
	}
	if r.releaseErr != nil {
		fmt.Fprintf(w, "release: %v\n", r.releaseErr)
	}
}

// initSpan is the time from the first Canary's creation until the last was Initialized.
func (r *report) initSpan() time.Duration {
	var last time.Time
	for _, t := range r.initTimes {
		if t.After(last) {
			last = t
		}
	}
	return last.Sub(r.initStart)
}

// initRates gives the overall rate and the rates of the first and second half of the Canaries.
func (r *report) initRates() string {
	ts := slices.Clone(r.initTimes)
	slices.SortFunc(ts, func(a, b time.Time) int { return a.Compare(b) })
	if len(ts) < 2 {
		return "n/a"
	}
	half := len(ts) / 2
	first := ts[half-1].Sub(r.initStart).Seconds()
	second := ts[len(ts)-1].Sub(ts[half-1]).Seconds()
	return fmt.Sprintf("%.1f/s overall; first half %.1f/s, second half %.1f/s; Canaries created in %s",
		float64(len(ts))/r.initSpan().Seconds(), float64(half)/first, float64(len(ts)-half)/second, secs(r.canariesCreated))
}

func quantiles(ds []time.Duration) (median, p95, maximum time.Duration) {
	if len(ds) == 0 {
		return 0, 0, 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	at := func(q float64) time.Duration { return s[min(len(s)-1, int(q*float64(len(s))))] }
	return at(0.5), at(0.95), s[len(s)-1]
}

func reasons(m map[string]int, n float64) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var parts []string
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s %.2f", k, float64(m[k])/n))
	}
	return strings.Join(parts, ", ")
}

// runSplit holds, per run, the time of each segment of a run in the order of splitNames: what the
// cluster takes (pods starting, the primary rolling) apart from what Sluice takes (reacting to a
// target change and to ready pods, its interval × steps).
type runSplit [6][]time.Duration

var splitNames = [6]string{
	"target change → Progressing (Sluice)",
	"Progressing → canary ready (cluster: the canary's pods start)",
	"canary ready → first step (Sluice)",
	"first step → Promoting (the checks: interval × steps)",
	"Promoting → primary rolled out (cluster)",
	"primary rolled out → Succeeded (Sluice)",
}

func (s *runSplit) add(segments ...time.Duration) {
	for i, d := range segments {
		s[i] = append(s[i], d)
	}
}

func (s *runSplit) String() string {
	parts := make([]string, 0, len(s))
	for i, ds := range s {
		med, _, _ := quantiles(ds)
		parts = append(parts, fmt.Sprintf("%s %s", splitNames[i], secs(med)))
	}
	return fmt.Sprintf("%s (%d runs)", strings.Join(parts, "; "), len(s[0]))
}

// watchLine renders watch event counts, most frequent first ("none" when empty).
func watchLine(m map[string]int) string {
	keys := slices.SortedFunc(maps.Keys(m), func(a, b string) int {
		if m[a] != m[b] {
			return m[b] - m[a]
		}
		return strings.Compare(a, b)
	})
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s %d", k, m[k]))
	}
	if len(parts) == 0 {
		return "no change"
	}
	return strings.Join(parts, ", ")
}

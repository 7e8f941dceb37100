package analysis

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
)

// hangingServers starts n HTTP servers that accept every request and never answer it (until the
// client gives up). It returns their addresses and counters of the requests they got and of the
// most they held at once.
func hangingServers(t *testing.T, n int) (addrs []string, requests, mostAtOnce *atomic.Int32) {
	t.Helper()
	requests, mostAtOnce = &atomic.Int32{}, &atomic.Int32{}
	var open atomic.Int32
	release := make(chan struct{})
	for range n {
		srv := httptest.NewServer(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
			requests.Add(1)
			now := open.Add(1)
			defer open.Add(-1)
			for most := mostAtOnce.Load(); now > most && !mostAtOnce.CompareAndSwap(most, now); most = mostAtOnce.Load() {
			}
			select {
			case <-r.Context().Done():
			case <-release:
			}
		}))
		t.Cleanup(srv.Close)
		addrs = append(addrs, srv.URL)
	}
	t.Cleanup(func() { close(release) }) // runs before the servers close
	return addrs, requests, mostAtOnce
}

// spreadOver returns a Canary with metrics metrics spread round-robin over MetricTemplates, one
// per address, and a reader holding those templates.
func spreadOver(addrs []string, metrics int) (*sluicev1.Canary, client.Reader) {
	var objs []client.Object
	for i, addr := range addrs {
		tpl := metricTemplate(ns, fmt.Sprintf("s%d", i), `vector(1)`)
		tpl.Spec.Provider.Address = addr
		objs = append(objs, tpl)
	}
	var ms []sluicev1.CanaryMetric
	for i := range metrics {
		ms = append(ms, templateMetric(fmt.Sprintf("m%d", i), fmt.Sprintf("s%d", i%len(addrs))))
	}
	return newCanary("app95", "", ms...), reader(objs...)
}

// TestReadyAsksHangingServersAtOnceWithinItsBudget: a Canary whose 32 metrics use 4 servers that
// never answer costs one ReadyTimeout (3 s by default), not one 10 s query timeout per server
// after another; each server is named unreachable.
func TestReadyAsksHangingServersAtOnceWithinItsBudget(t *testing.T) {
	addrs, requests, _ := hangingServers(t, 4)
	c, r := spreadOver(addrs, 32)
	e := NewEngine(r, Options{Egress: loopbackAllowed})
	start := time.Now()
	err := e.Ready(context.Background(), c)
	took := time.Since(start)
	if !errors.Is(err, ErrUnreachable) {
		t.Fatalf("Ready: %v, want ErrUnreachable", err)
	}
	for _, addr := range addrs {
		if !strings.Contains(err.Error(), addr) {
			t.Errorf("%s not named: %v", addr, err)
		}
	}
	if took < DefaultReadyTimeout || took > DefaultReadyTimeout+time.Second {
		t.Errorf("Ready took %s, want its %s budget", took, DefaultReadyTimeout)
	}
	if n := requests.Load(); n != 4 {
		t.Errorf("%d requests, want one per server", n)
	}
}

// TestCheckOfHangingServersEndsWithinItsBudget: a check of 32 metrics on 4 servers that never
// answer ends after CheckTimeout (the query timeout by default) with an Error verdict for every
// metric, at most MaxConcurrentMetrics queries at a time, instead of eight rounds of timeouts.
func TestCheckOfHangingServersEndsWithinItsBudget(t *testing.T) {
	addrs, _, mostAtOnce := hangingServers(t, 4)
	c, r := spreadOver(addrs, 32)
	const timeout = 2 * time.Second
	e := NewEngine(r, Options{Egress: loopbackAllowed, QueryTimeout: timeout})
	start := time.Now()
	check, err := e.Analyze(context.Background(), c, now)
	took := time.Since(start)
	if err != nil {
		t.Fatal(err)
	}
	if took > timeout+time.Second {
		t.Errorf("the check took %s, want its %s budget", took, timeout)
	}
	if check.Outcome() != sluicev1.CheckError || len(check.Errors()) != 32 {
		t.Fatalf("outcome %s with %d errors, want Error for all 32: %s", check.Outcome(), len(check.Errors()), check.Summary())
	}
	if last := check.Results[31]; !strings.Contains(last.Message, "not queried: the check took longer than its 2s budget") {
		t.Errorf("a metric never started: %q", last.Message)
	}
	if n := mostAtOnce.Load(); n > 4 {
		t.Errorf("%d queries at once, want at most MaxConcurrentMetrics (4)", n)
	}
}

// TestMetricsServerCap: a Canary whose metrics use more distinct servers than MaxMetricsServers
// is refused by ValidateQueries, Ready and Evaluate (ErrTooManyServers, an ErrInvalidSpec) naming
// the metrics beyond the cap, and no server is asked; at the cap every server is asked.
func TestMetricsServerCap(t *testing.T) {
	addrs, requests, _ := hangingServers(t, 5)
	over, r := spreadOver(addrs, 10)
	e := NewEngine(r, Options{Egress: loopbackAllowed, ReadyTimeout: 100 * time.Millisecond, QueryTimeout: 100 * time.Millisecond})
	_, errEvaluate := e.Evaluate(context.Background(), over, now)
	for name, err := range map[string]error{
		"ValidateQueries": e.ValidateQueries(context.Background(), over),
		"Ready":           e.Ready(context.Background(), over),
		"Evaluate":        errEvaluate,
	} {
		if !errors.Is(err, ErrTooManyServers) || !errors.Is(err, ErrInvalidSpec) ||
			!strings.Contains(err.Error(), `metrics "m4", "m9" would query servers beyond the first 4`) {
			t.Errorf("%s: %v; want ErrTooManyServers naming m4 and m9", name, err)
		}
	}
	if n := requests.Load(); n != 0 {
		t.Fatalf("%d requests to the servers of a Canary over the cap", n)
	}
	atCap, r := spreadOver(addrs[:4], 10)
	e = NewEngine(r, Options{Egress: loopbackAllowed, ReadyTimeout: 100 * time.Millisecond})
	if err := e.Ready(context.Background(), atCap); !errors.Is(err, ErrUnreachable) || errors.Is(err, ErrTooManyServers) {
		t.Fatalf("4 servers: %v, want them asked", err)
	}
	if n := requests.Load(); n != 4 {
		t.Fatalf("%d requests at the cap, want 4", n)
	}
}

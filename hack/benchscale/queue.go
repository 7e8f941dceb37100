package main

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"sluice.dev/sluice/test/managerproc"
)

// queueStats is what the canary controller's work queue and workers did between two scrapes:
// how many ticks ran (by result), how long a woken Canary waited for a worker, and how long a
// tick took. A phase whose queue waits are long is bounded by the workers (or by what a tick
// waits on: the apiserver), not by the cluster or the interval.
type queueStats struct {
	reconciles    map[string]float64 // by controller-runtime's result label
	wait, work    histogramDelta
	adds, retries float64
}

// histogramDelta is the growth of one histogram between two scrapes.
type histogramDelta struct {
	count, sum float64
	buckets    map[float64]float64 // upper bound → cumulative count
}

func (h histogramDelta) mean() float64 {
	if h.count == 0 {
		return 0
	}
	return h.sum / h.count
}

// quantile is the upper bound of the first bucket holding the q-th observation (an upper estimate,
// as Prometheus' histogram_quantile would interpolate within it).
func (h histogramDelta) quantile(q float64) float64 {
	bounds := make([]float64, 0, len(h.buckets))
	for b := range h.buckets {
		bounds = append(bounds, b)
	}
	sort.Float64s(bounds)
	for _, b := range bounds {
		if h.buckets[b] >= q*h.count {
			return b
		}
	}
	return math.Inf(1)
}

// histogramBetween is the growth of family name (the series matching match) from a to b.
func histogramBetween(a, b managerproc.Metrics, name string, match ...string) histogramDelta {
	d := histogramDelta{buckets: map[float64]float64{}}
	add := func(m managerproc.Metrics, sign float64) {
		f := m[name]
		if f == nil {
			return
		}
		for _, s := range f.GetMetric() {
			if !managerproc.HasLabels(s, match) || s.GetHistogram() == nil {
				continue
			}
			h := s.GetHistogram()
			d.count += sign * float64(h.GetSampleCount())
			d.sum += sign * h.GetSampleSum()
			for _, bk := range h.GetBucket() {
				d.buckets[bk.GetUpperBound()] += sign * float64(bk.GetCumulativeCount())
			}
		}
	}
	add(b, 1)
	add(a, -1)
	return d
}

// canaryQueue reads the canary controller's queue and reconcile metrics between two scrapes.
func canaryQueue(a, b managerproc.Metrics) queueStats {
	q := queueStats{reconciles: map[string]float64{}}
	was := a.ByLabels("controller_runtime_reconcile_total", "controller", "result")
	for k, v := range b.ByLabels("controller_runtime_reconcile_total", "controller", "result") {
		if result, ok := strings.CutPrefix(k, "canary "); ok && v > was[k] {
			q.reconciles[result] = v - was[k]
		}
	}
	q.wait = histogramBetween(a, b, "workqueue_queue_duration_seconds", "name", "canary")
	q.work = histogramBetween(a, b, "controller_runtime_reconcile_time_seconds", "controller", "canary")
	q.adds = b.Sum("workqueue_adds_total", "name", "canary") - a.Sum("workqueue_adds_total", "name", "canary")
	q.retries = b.Sum("workqueue_retries_total", "name", "canary") - a.Sum("workqueue_retries_total", "name", "canary")
	return q
}

// String renders the stats per Canary (n) with the waits' mean and upper p50/p95 bounds.
func (q queueStats) String(n float64) string {
	total := 0.0
	for _, v := range q.reconciles {
		total += v
	}
	ms := func(s float64) string { return fmt.Sprintf("%.0f ms", 1000*s) }
	return fmt.Sprintf("%.1f ticks per Canary (%s), %.1f queue adds, %.1f retries; wait for a worker mean %s, p50 ≤ %s, p95 ≤ %s; a tick mean %s, p95 ≤ %s",
		total/n, requests(q.reconciles).line(n, "%.1f"), q.adds/n, q.retries/n,
		ms(q.wait.mean()), ms(q.wait.quantile(0.5)), ms(q.wait.quantile(0.95)), ms(q.work.mean()), ms(q.work.quantile(0.95)))
}

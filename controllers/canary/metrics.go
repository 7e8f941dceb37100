package canary

import (
	"slices"
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
	"sluice.dev/sluice/controllers/canary/plan"
	"sluice.dev/sluice/controllers/internal/planevent"
)

// Canary metrics on the manager's /metrics (controller-runtime's registry). Labels are only
// namespace and name (plus metric for analysis values): no per-request or per-revision labels.
var (
	phaseGauge = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "sluice_canary_phase",
		Help: "Phase of the canary as its index in lifecycle order: 0 Initializing, 1 Initialized, 2 Waiting, " +
			"3 Progressing, 4 WaitingPromotion, 5 Promoting, 6 Finalising, 7 Succeeded, 8 Failed, 9 Terminating, 10 Terminated.",
	}, []string{"namespace", "name"})
	weightGauge = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "sluice_canary_weight", Help: "Percentage of traffic (0-100) routed to the canary.",
	}, []string{"namespace", "name"})
	failedChecksGauge = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "sluice_canary_failed_checks", Help: "Failed checks of the current run.",
	}, []string{"namespace", "name"})
	metricValueGauge = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "sluice_canary_metric_value", Help: "Last value of each analysis metric, in the metric's unit.",
	}, []string{"namespace", "name", "metric"})
	rolloutDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "sluice_canary_rollout_duration_seconds", Help: "Duration of finished runs, from start to promotion or rollback.",
		Buckets: []float64{30, 60, 120, 300, 600, 1200, 1800, 3600, 7200},
	}, []string{"namespace", "name"})
	promotions = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "sluice_canary_promotions_total", Help: "Runs that ended in promotion.",
	}, []string{"namespace", "name"})
	rollbacks = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "sluice_canary_rollbacks_total", Help: "Runs that ended in rollback.",
	}, []string{"namespace", "name"})
)

func init() {
	metrics.Registry.MustRegister(phaseGauge, weightGauge, failedChecksGauge, metricValueGauge,
		rolloutDuration, promotions, rollbacks)
}

// observeMetrics updates the gauges from the Canary's status and, for a run that just ended
// (an event of this tick says so), the counters and the duration histogram.
func observeMetrics(c *sluicev1.Canary, events []planevent.Event) {
	ns, name := c.Namespace, c.Name
	s := c.Status
	phaseGauge.WithLabelValues(ns, name).Set(float64(slices.Index(sluicev1.CanaryPhases, s.Phase)))
	weightGauge.WithLabelValues(ns, name).Set(float64(s.CanaryWeight))
	failedChecksGauge.WithLabelValues(ns, name).Set(float64(s.FailedChecks))
	for _, m := range s.Analysis {
		if v, err := strconv.ParseFloat(m.Value, 64); err == nil {
			metricValueGauge.WithLabelValues(ns, name, m.Name).Set(v)
		}
	}
	for _, e := range events {
		var counter *prometheus.CounterVec
		switch e.Reason {
		case plan.EventSucceeded:
			counter = promotions
		case plan.EventRollback:
			counter = rollbacks
		default:
			continue
		}
		counter.WithLabelValues(ns, name).Inc()
		if s.RunStartTime != nil && s.LastTransitionTime != nil {
			rolloutDuration.WithLabelValues(ns, name).Observe(s.LastTransitionTime.Sub(s.RunStartTime.Time).Seconds())
		}
	}
}

// forgetMetrics drops the series of a deleted Canary.
func forgetMetrics(c *sluicev1.Canary) {
	labels := prometheus.Labels{"namespace": c.Namespace, "name": c.Name}
	for _, v := range []*prometheus.GaugeVec{phaseGauge, weightGauge, failedChecksGauge, metricValueGauge} {
		v.DeletePartialMatch(labels)
	}
	rolloutDuration.DeletePartialMatch(labels)
	promotions.DeletePartialMatch(labels)
	rollbacks.DeletePartialMatch(labels)
}

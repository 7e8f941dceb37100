package dataplane

import (
	"slices"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
)

// dataPlanePhases lists the phases in lifecycle order; the index is sluice_dataplane_phase.
var dataPlanePhases = []sluicev1.DataPlanePhase{
	sluicev1.DataPlanePending, sluicev1.DataPlaneWaiting, sluicev1.DataPlaneProgressing,
	sluicev1.DataPlaneRollingBack, sluicev1.DataPlaneUpToDate, sluicev1.DataPlaneRolledBack,
}

// DataPlane metrics on the manager's /metrics, labelled only by the DataPlane's name.
var (
	puPhase = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "sluice_dataplane_phase",
		Help: "Phase as its index: 0 Pending, 1 Waiting, 2 Progressing, 3 RollingBack, 4 Succeeded, 5 Failed."}, []string{"name"})
	puWave = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "sluice_dataplane_wave",
		Help: "Index of the current wave (0 is the canary wave)."}, []string{"name"})
	puDesired = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "sluice_dataplane_desired_proxies",
		Help: "Running meshed pods of the selected namespaces (DESIRED)."}, []string{"name"})
	puCurrent = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "sluice_dataplane_current_proxies",
		Help: "Running meshed pods that report the target version (CURRENT)."}, []string{"name"})
)

func init() {
	metrics.Registry.MustRegister(puPhase, puWave, puDesired, puCurrent)
}

// observeMetrics sets the gauges from the DataPlane's status.
func observeMetrics(dp *sluicev1.DataPlane) {
	s := dp.Status
	puPhase.WithLabelValues(dp.Name).Set(float64(slices.Index(dataPlanePhases, s.Phase)))
	puWave.WithLabelValues(dp.Name).Set(float64(s.CurrentWave))
	puDesired.WithLabelValues(dp.Name).Set(float64(s.Desired))
	puCurrent.WithLabelValues(dp.Name).Set(float64(s.Current))
}

// forgetMetrics drops the series of a deleted DataPlane.
func forgetMetrics(name string) {
	for _, g := range []*prometheus.GaugeVec{puPhase, puWave, puDesired, puCurrent} {
		g.DeleteLabelValues(name)
	}
}

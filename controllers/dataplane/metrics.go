package dataplane

import (
	"slices"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
)

// DataPlane metrics on the manager's /metrics, labelled only by the DataPlane's name.
var (
	dpPhase = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "sluice_dataplane_phase",
		Help: "Phase as its index: 0 Pending, 1 Waiting, 2 Progressing, 3 RollingBack, 4 UpToDate, 5 RolledBack, 6 Failed, 7 Incomplete, 8 Drifted."},
		[]string{"name"})
	dpWave = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "sluice_dataplane_wave",
		Help: "Index of the current wave (0 is the canary wave)."}, []string{"name"})
	dpDesired = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "sluice_dataplane_desired_proxies",
		Help: "Meshed pods the selected namespaces should run (DESIRED)."}, []string{"name"})
	dpCurrent = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "sluice_dataplane_current_proxies",
		Help: "Meshed pods that run the declared version (CURRENT)."}, []string{"name"})
	dpUnmanaged = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "sluice_dataplane_unmanaged_pods",
		Help: "Meshed pods Sluice cannot restart that run another version."}, []string{"name"})
	dpDrifted = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "sluice_dataplane_drifted_pods",
		Help: "Pods that left the declared version (or the mesh) after convergence."}, []string{"name"})
	dpControlPlaneReady = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "sluice_dataplane_control_plane_ready",
		Help: "1 when the mesh's control plane runs the declared version and is available."}, []string{"name"})
)

var dpGauges = []*prometheus.GaugeVec{dpPhase, dpWave, dpDesired, dpCurrent, dpUnmanaged, dpDrifted, dpControlPlaneReady}

func init() {
	for _, g := range dpGauges {
		metrics.Registry.MustRegister(g)
	}
}

// observeMetrics sets the gauges from the DataPlane's status.
func observeMetrics(dp *sluicev1.DataPlane) {
	s := dp.Status
	dpPhase.WithLabelValues(dp.Name).Set(float64(slices.Index(sluicev1.DataPlanePhases, s.Phase)))
	dpWave.WithLabelValues(dp.Name).Set(float64(s.CurrentWave))
	dpDesired.WithLabelValues(dp.Name).Set(float64(s.Desired))
	dpCurrent.WithLabelValues(dp.Name).Set(float64(s.Current))
	dpUnmanaged.WithLabelValues(dp.Name).Set(float64(len(s.UnmanagedPods)))
	dpDrifted.WithLabelValues(dp.Name).Set(float64(len(s.DriftedPods)))
	ready := 0.0
	if s.ControlPlane.Ready {
		ready = 1
	}
	dpControlPlaneReady.WithLabelValues(dp.Name).Set(ready)
}

// forgetMetrics drops the series of a deleted DataPlane.
func forgetMetrics(name string) {
	for _, g := range dpGauges {
		g.DeleteLabelValues(name)
	}
}

package proxyupgrade

import (
	"slices"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
)

// proxyUpgradePhases lists the phases in lifecycle order; the index is sluice_proxyupgrade_phase.
var proxyUpgradePhases = []sluicev1.ProxyUpgradePhase{
	sluicev1.ProxyUpgradePending, sluicev1.ProxyUpgradeWaiting, sluicev1.ProxyUpgradeProgressing,
	sluicev1.ProxyUpgradeRollingBack, sluicev1.ProxyUpgradeSucceeded, sluicev1.ProxyUpgradeFailed,
}

// ProxyUpgrade metrics on the manager's /metrics, labelled only by the ProxyUpgrade's name.
var (
	puPhase = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "sluice_proxyupgrade_phase",
		Help: "Phase as its index: 0 Pending, 1 Waiting, 2 Progressing, 3 RollingBack, 4 Succeeded, 5 Failed."}, []string{"name"})
	puWave = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "sluice_proxyupgrade_wave",
		Help: "Index of the current wave (0 is the canary wave)."}, []string{"name"})
	puDesired = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "sluice_proxyupgrade_desired_proxies",
		Help: "Running meshed pods of the selected namespaces (DESIRED)."}, []string{"name"})
	puCurrent = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "sluice_proxyupgrade_current_proxies",
		Help: "Running meshed pods that report the target version (CURRENT)."}, []string{"name"})
)

func init() {
	metrics.Registry.MustRegister(puPhase, puWave, puDesired, puCurrent)
}

// observeMetrics sets the gauges from the ProxyUpgrade's status.
func observeMetrics(pu *sluicev1.ProxyUpgrade) {
	s := pu.Status
	puPhase.WithLabelValues(pu.Name).Set(float64(slices.Index(proxyUpgradePhases, s.Phase)))
	puWave.WithLabelValues(pu.Name).Set(float64(s.CurrentWave))
	puDesired.WithLabelValues(pu.Name).Set(float64(s.Desired))
	puCurrent.WithLabelValues(pu.Name).Set(float64(s.Current))
}

// forgetMetrics drops the series of a deleted ProxyUpgrade.
func forgetMetrics(name string) {
	for _, g := range []*prometheus.GaugeVec{puPhase, puWave, puDesired, puCurrent} {
		g.DeleteLabelValues(name)
	}
}

// Package manager wires every Sluice controller into a controller-runtime manager. cmd/sluice runs
// it from flags; the demo and end-to-end tests run it in-process.
package manager

import (
	"context"
	"fmt"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"sluice.dev/sluice/analysis"
	sluicev1 "sluice.dev/sluice/api/v1alpha1"
	"sluice.dev/sluice/controllers/canary"
	"sluice.dev/sluice/controllers/metrictemplate"
	"sluice.dev/sluice/controllers/proxyupgrade"
	"sluice.dev/sluice/controllers/scheme"
	"sluice.dev/sluice/notify"
	"sluice.dev/sluice/providers"
	"sluice.dev/sluice/providers/gatewayapi"
	"sluice.dev/sluice/providers/istio"
	"sluice.dev/sluice/webhooks"
)

// Options configure the manager. The zero value of a field means its documented default.
type Options struct {
	// MetricsAddr serves /metrics; "0" turns it off. Default ":8080".
	MetricsAddr string
	// ProbeAddr serves /healthz and /readyz; "0" turns it off. Default ":8081".
	ProbeAddr string
	// LeaderElection makes only the elected replica act.
	LeaderElection bool
	// LeaderElectionID and LeaderElectionNamespace name the Lease.
	LeaderElectionID, LeaderElectionNamespace string
	// Namespaces limits the watch; empty watches all.
	Namespaces []string
	// MaxConcurrentReconciles bounds the canary workers. Default 4.
	MaxConcurrentReconciles int
	// MaxProgressing caps simultaneous canary runs; 0 means no cap.
	MaxProgressing int
	// MetricsServer is the default Prometheus address for analysis.
	MetricsServer string
	// ScrapeInterval is Prometheus' scrape interval. Default 15s.
	ScrapeInterval time.Duration
	// QueryTimeout bounds one Prometheus query. Default 10s.
	QueryTimeout time.Duration
	// SkipNameValidation allows several managers in one process (tests).
	SkipNameValidation bool
}

// New builds a manager with every Sluice controller registered.
// errors: an invalid configuration, controller setup failures.
func New(ctx context.Context, cfg *rest.Config, o Options) (ctrl.Manager, error) {
	opts := ctrl.Options{
		Scheme:                  scheme.New(),
		Metrics:                 metricsserver.Options{BindAddress: orDefault(o.MetricsAddr, ":8080")},
		HealthProbeBindAddress:  orDefault(o.ProbeAddr, ":8081"),
		LeaderElection:          o.LeaderElection,
		LeaderElectionID:        orDefault(o.LeaderElectionID, "sluice.sluice.dev"),
		LeaderElectionNamespace: o.LeaderElectionNamespace,
	}
	if o.SkipNameValidation {
		skip := true
		opts.Controller = config.Controller{SkipNameValidation: &skip}
	}
	// Nothing reads managedFields: dropping them from the informers' copies saves ~30 % of the heap.
	opts.Cache.DefaultTransform = cache.TransformStripManagedFields()
	if len(o.Namespaces) > 0 {
		opts.Cache.DefaultNamespaces = map[string]cache.Config{}
		for _, ns := range o.Namespaces {
			opts.Cache.DefaultNamespaces[ns] = cache.Config{}
		}
	}
	mgr, err := ctrl.NewManager(cfg, opts)
	if err != nil {
		return nil, fmt.Errorf("creating manager: %w", err)
	}
	c := mgr.GetClient()
	notifier := notify.New(c, notify.Options{Timeout: 5 * time.Second})
	gates := webhooks.NewRunner(webhooks.Options{})
	if err := mgr.Add(gates); err != nil {
		return nil, err
	}
	r := &canary.Reconciler{
		Gates:     gates,
		Notifier:  notifier,
		Client:    c,
		APIReader: mgr.GetAPIReader(),
		Scheme:    mgr.GetScheme(),
		Recorder:  mgr.GetEventRecorder("sluice"),
		Clock:     clock.RealClock{},
		Analyzer: analysis.NewEngine(c, analysis.Options{DefaultAddress: o.MetricsServer,
			ScrapeInterval: o.ScrapeInterval, QueryTimeout: o.QueryTimeout}),
		Routers: map[sluicev1.Provider]providers.Router{
			sluicev1.ProviderGatewayAPI: gatewayapi.New(c),
			sluicev1.ProviderIstio:      istio.New(c),
		},
		Options: canary.Options{MaxProgressing: o.MaxProgressing, ScrapeInterval: o.ScrapeInterval},
	}
	workers := o.MaxConcurrentReconciles
	if workers <= 0 {
		workers = 4
	}
	if err := r.SetupWithManager(ctx, mgr, workers); err != nil {
		return nil, fmt.Errorf("setting up the canary controller: %w", err)
	}
	pu := &proxyupgrade.Reconciler{
		Client:    c,
		APIReader: mgr.GetAPIReader(),
		Recorder:  mgr.GetEventRecorder("sluice"),
		Clock:     clock.RealClock{},
		Analyzer: analysis.NewEngine(c, analysis.Options{DefaultAddress: o.MetricsServer,
			ScrapeInterval: o.ScrapeInterval, QueryTimeout: o.QueryTimeout}),
		Notifier: proxyupgrade.AlertNotifier{Sender: notifier},
		Options:  proxyupgrade.Options{ScrapeInterval: o.ScrapeInterval},
	}
	if err := pu.SetupWithManager(ctx, mgr, 2); err != nil {
		return nil, fmt.Errorf("setting up the proxyupgrade controller: %w", err)
	}
	if err := (&metrictemplate.Reconciler{Client: c}).SetupWithManager(mgr); err != nil {
		return nil, fmt.Errorf("setting up the metrictemplate controller: %w", err)
	}
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		return nil, err
	}
	if err := mgr.AddReadyzCheck("readyz", healthz.Ping); err != nil {
		return nil, err
	}
	return mgr, nil
}

func orDefault(v, def string) string {
	if v == "" {
		return def
	}
	return v
}

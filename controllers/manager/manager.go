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
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"sluice.dev/sluice/analysis"
	sluicev1 "sluice.dev/sluice/api/v1alpha1"
	"sluice.dev/sluice/configread"
	"sluice.dev/sluice/controllers/canary"
	"sluice.dev/sluice/controllers/dataplane"
	"sluice.dev/sluice/controllers/metrictemplate"
	"sluice.dev/sluice/controllers/scheme"
	"sluice.dev/sluice/egress"
	"sluice.dev/sluice/notify"
	"sluice.dev/sluice/providers"
	"sluice.dev/sluice/providers/gatewayapi"
	"sluice.dev/sluice/providers/istio"
	"sluice.dev/sluice/providers/kubernetes"
	"sluice.dev/sluice/tenancy"
	"sluice.dev/sluice/webhooks"
)

// Options configure the manager. The zero value of a field means its documented default.
type Options struct {
	// MetricsAddr serves /metrics; "0" turns it off. Default ":8443" (":8080" with
	// MetricsInsecure).
	MetricsAddr string
	// MetricsInsecure serves /metrics over plain HTTP without authentication (local use only);
	// by default it is HTTPS with authentication and authorization (see metricsOptions).
	MetricsInsecure bool
	// MetricsCertDir holds tls.crt and tls.key of /metrics; empty: a self-signed certificate.
	MetricsCertDir string
	// ProbeAddr serves /healthz and /readyz; "0" turns it off. Default ":8081".
	ProbeAddr string
	// LeaderElection makes only the elected replica act.
	LeaderElection bool
	// LeaderElectionID and LeaderElectionNamespace name the Lease.
	LeaderElectionID, LeaderElectionNamespace string
	// Namespaces limits the watch; empty watches all.
	Namespaces []string
	// MaxConcurrentReconciles bounds the canary workers. Default DefaultWorkers.
	MaxConcurrentReconciles int
	// MaxProgressing caps simultaneous canary runs; 0 means no cap.
	MaxProgressing int
	// MetricsServer is the default Prometheus address for analysis.
	MetricsServer string
	// ScrapeInterval is Prometheus' scrape interval. Default 15s.
	ScrapeInterval time.Duration
	// QueryTimeout bounds one Prometheus query, and one check as a whole. Default 10s.
	QueryTimeout time.Duration
	// Tenancy of metric queries (analysis.Options): see TenantQueries.
	TenantQueries TenantQueries
	// SkipNameValidation allows several managers in one process (tests).
	SkipNameValidation bool
	// KubeAPIQPS and KubeAPIBurst are the client-side budget shared by every request to the
	// apiserver (0: DefaultKubeAPIQPS, DefaultKubeAPIBurst; a negative QPS: no client-side limit).
	KubeAPIQPS   float32
	KubeAPIBurst int
	// Shard is a label selector on Canaries: this manager handles only the Canaries it matches
	// (empty: every Canary). ShardName names the shard (required with Shard): its Lease is
	// <LeaderElectionID>-<ShardName>, and its events and writes carry the name. See shard.go.
	Shard, ShardName string
	// ControllerNamespace is the manager's own namespace, where a platform team keeps shared
	// MetricTemplates and AlertProviders that every Canary may reference.
	ControllerNamespace string
	// AllowCrossNamespaceRefs lets templateRefs and providerRefs name any namespace; by default
	// only the Canary's own and ControllerNamespace.
	AllowCrossNamespaceRefs bool
	// AllowedDestinations, when not empty, are the only destinations of webhooks, notifications
	// and Prometheus queries: host names, *.domain suffixes, IPs and CIDR ranges (see
	// egress.Options). They never admit an address the egress classes refuse.
	AllowedDestinations []string
	// AllowEgressTo names the address classes refused by default that outbound calls may reach:
	// egress.Loopback, egress.Cluster. Unspecified, link-local and cloud-metadata addresses are
	// refused in any case.
	AllowEgressTo []string
	// ClusterCIDRs are the cluster-internal ranges (pods, nodes) refused unless AllowEgressTo has
	// egress.Cluster.
	ClusterCIDRs []string
	// AllowedRouteHostnames and AllowedRouteParents are what a generated route may name outside
	// its Canary's namespace: hostnames ("*.example.com", "shop.example.com", "*", each optionally
	// "namespace/..." for one namespace's Canaries) and Istio gateways or Gateway API parents
	// ("namespace/name", "namespace/*"). ClusterDomain is the cluster's DNS domain (default
	// cluster.local). See tenancy.NewRoutePolicy.
	AllowedRouteHostnames, AllowedRouteParents []string
	ClusterDomain                              string
	// DisableDataPlane leaves the cluster-scoped data-plane controller out (namespace-scoped
	// installs, whose RBAC grants nothing cluster-wide).
	DisableDataPlane bool
}

// New builds a manager with every Sluice controller registered.
// errors: an invalid configuration, controller setup failures.
func New(ctx context.Context, cfg *rest.Config, o Options) (ctrl.Manager, error) {
	if err := validateShard(o); err != nil {
		return nil, err
	}
	shard, err := shardSelector(o.Shard)
	if err != nil {
		return nil, err
	}
	leCfg := leaderElectionConfig(cfg)
	cfg = apiConfig(cfg, o.KubeAPIQPS, o.KubeAPIBurst)
	shardUserAgent(cfg, o)
	policy, err := egress.NewPolicy(egress.Options{AllowedDestinations: o.AllowedDestinations,
		AllowTo: o.AllowEgressTo, ClusterCIDRs: o.ClusterCIDRs})
	if err != nil {
		return nil, err
	}
	refs := tenancy.RefPolicy{ControllerNamespace: o.ControllerNamespace, AllowCrossNamespace: o.AllowCrossNamespaceRefs}
	routePolicy, err := tenancy.NewRoutePolicy(o.AllowedRouteHostnames, o.AllowedRouteParents, o.ClusterDomain)
	if err != nil {
		return nil, err
	}
	opts := ctrl.Options{
		Scheme:                  scheme.New(),
		Metrics:                 metricsOptions(o),
		HealthProbeBindAddress:  orDefault(o.ProbeAddr, ":8081"),
		LeaderElection:          o.LeaderElection,
		LeaderElectionID:        leaseName(o),
		LeaderElectionNamespace: o.LeaderElectionNamespace,
		LeaderElectionConfig:    leCfg,
		Cache:                   managerCache(o, shard),
		Client:                  clientOptions(),
	}
	if o.SkipNameValidation {
		skip := true
		opts.Controller = config.Controller{SkipNameValidation: &skip}
	}
	mgr, err := ctrl.NewManager(cfg, opts)
	if err != nil {
		return nil, fmt.Errorf("creating manager: %w", err)
	}
	recorder, stopEvents, err := eventRecorder(cfg, mgr.GetHTTPClient(), mgr.GetScheme(), reportingController(o), eventAnnotations(o))
	if err != nil {
		return nil, err
	}
	if err := mgr.Add(stopOnDone(stopEvents)); err != nil {
		stopEvents()
		return nil, err
	}
	// Secrets and ConfigMaps: metadata from the cache, contents read only when they changed.
	c := configread.New(mgr.GetClient(), mgr.GetCache(), configread.Options{})
	notifier := notify.New(c, notify.Options{Timeout: 5 * time.Second, Egress: policy, Refs: refs})
	gates := webhooks.NewRunner(webhooks.Options{Egress: policy})
	if err := mgr.Add(gates); err != nil {
		return nil, err
	}
	analysisOpts := analysis.Options{DefaultAddress: o.MetricsServer, ScrapeInterval: o.ScrapeInterval,
		QueryTimeout: o.QueryTimeout, Egress: policy, Refs: refs}
	o.TenantQueries.apply(&analysisOpts)
	// One analysis engine for both controllers: the one place the scrape interval is configured.
	engine := analysis.NewEngine(c, analysisOpts)
	// The routers share one memory of their own writes, which the route watches also read.
	routes := providers.ReadOwnWrites(c)
	r := &canary.Reconciler{
		Gates:     gates,
		Notifier:  notifier,
		Client:    c,
		APIReader: mgr.GetAPIReader(),
		Scheme:    mgr.GetScheme(),
		Recorder:  recorder,
		Clock:     clock.RealClock{},
		Analyzer:  engine,
		Routers: map[sluicev1.Provider]providers.Router{
			sluicev1.ProviderGatewayAPI: gatewayapi.New(routes),
			sluicev1.ProviderIstio:      istio.New(routes),
			sluicev1.ProviderKubernetes: kubernetes.New(routes),
		},
		RouterClient: routes,
		FreshRouters: freshRouters(c, mgr.GetAPIReader()),
		Options: canary.Options{MaxProgressing: o.MaxProgressing, ScrapeInterval: o.ScrapeInterval,
			Refs: refs, Egress: policy, Routes: routePolicy},
	}
	workers := o.MaxConcurrentReconciles
	if workers <= 0 {
		workers = DefaultWorkers
	}
	if err := r.SetupWithManager(ctx, mgr, workers); err != nil {
		return nil, fmt.Errorf("setting up the canary controller: %w", err)
	}
	switch {
	case o.DisableDataPlane:
	case len(o.Namespaces) > 0:
		// A data plane spans the cluster: with a cache limited to some namespaces the controller
		// could not see the others, and would report a data plane up to date that is not.
		log.FromContext(ctx).Info("The dataplane controller is off: the manager watches only some namespaces (--namespaces)",
			"namespaces", o.Namespaces)
	default:
		dp := &dataplane.Reconciler{
			Client:    c,
			APIReader: mgr.GetAPIReader(),
			Recorder:  recorder,
			Clock:     clock.RealClock{},
			Analyzer:  engine,
			Notifier:  notifier,
			Options:   dataplane.Options{ScrapeInterval: o.ScrapeInterval},
		}
		if err := dp.SetupWithManager(ctx, mgr, 2); err != nil {
			return nil, fmt.Errorf("setting up the dataplane controller: %w", err)
		}
	}
	if err := (&metrictemplate.Reconciler{Client: c}).SetupWithManager(mgr); err != nil {
		return nil, fmt.Errorf("setting up the metrictemplate controller: %w", err)
	}
	return addHealthChecks(mgr)
}

func addHealthChecks(mgr ctrl.Manager) (ctrl.Manager, error) {
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

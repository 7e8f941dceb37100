// Command sluice is the Sluice manager: it runs the Canary controller (and, as they land, the
// other Sluice controllers) with leader election, metrics and health probes.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"sluice.dev/sluice/controllers/manager"
)

// config holds the manager's flags.
type config struct {
	metricsAddr, probeAddr string
	leaderElect            bool
	leaderElectionID       string
	leaderElectionNS       string
	namespaces             string
	maxConcurrent          int
	maxProgressing         int
	metricsServer          string
	scrapeInterval         time.Duration
	queryTimeout           time.Duration
	metricsSecure          bool
	metricsCertDir         string
	controllerNamespace    string
	allowCrossNamespace    bool
	allowedDestinations    string
	allowEgressTo          string
	clusterCIDRs           string
	routeHostnames         string
	routeParents           string
	clusterDomain          string
	enableDataPlane        bool
	scale                  scaleFlags
	queries                queryFlags
}

func parseFlags(args []string) (config, zap.Options, error) {
	var c config
	fs := flag.NewFlagSet("sluice", flag.ContinueOnError)
	fs.StringVar(&c.metricsAddr, "metrics-bind-address", "", "Address of the /metrics endpoint (default :8443, or :8080 with --metrics-secure=false); 0 turns it off.")
	fs.BoolVar(&c.metricsSecure, "metrics-secure", true, "Serve /metrics over HTTPS, authenticating and authorizing each request with the apiserver (TokenReview, SubjectAccessReview on GET /metrics); false: plain HTTP, no authentication.")
	fs.StringVar(&c.metricsCertDir, "metrics-cert-dir", "", "Folder with tls.crt and tls.key for /metrics; empty: a self-signed certificate.")
	fs.StringVar(&c.controllerNamespace, "controller-namespace", os.Getenv("POD_NAMESPACE"), "The manager's own namespace: every Canary may reference the MetricTemplates and AlertProviders in it (default $POD_NAMESPACE).")
	fs.BoolVar(&c.allowCrossNamespace, "allow-cross-namespace-refs", false, "Let templateRefs and providerRefs name any namespace; by default only the Canary's own and --controller-namespace.")
	fs.StringVar(&c.allowedDestinations, "allowed-destinations", "", "Comma-separated host names, *.domain suffixes, IPs and CIDR ranges: the only destinations of webhooks, notifications and Prometheus queries. Empty: any destination the refused address classes leave (see --allow-egress-to); a listed name never admits a refused address.")
	fs.StringVar(&c.allowEgressTo, "allow-egress-to", "", "Comma-separated address classes, refused by default, that webhooks, notifications and Prometheus queries may reach: loopback (127.0.0.0/8, ::1: this pod), cluster (--cluster-cidrs). Unspecified, link-local, cloud-metadata, multicast and broadcast addresses are refused in any case, also embedded in IPv6.")
	fs.StringVar(&c.clusterCIDRs, "cluster-cidrs", "", "Comma-separated cluster-internal CIDR ranges, e.g. the pod and node ranges: outbound calls to them are refused unless --allow-egress-to has cluster. Leave the Service range out to let in-cluster Services (Prometheus, webhook receivers) be called.")
	fs.StringVar(&c.routeHostnames, "allowed-route-hostnames", "", "Comma-separated hostnames a generated route may name besides its Canary's namespace's own: *, *.domain or a host name, each optionally namespace/ for one namespace's Canaries.")
	fs.StringVar(&c.routeParents, "allowed-route-parents", "", "Comma-separated Istio gateways and Gateway API parents outside its Canary's namespace that a generated route may name: namespace/name or namespace/*.")
	fs.StringVar(&c.clusterDomain, "cluster-domain", "cluster.local", "The cluster's DNS domain: <service>.<namespace>.svc.<domain> names a Service of that namespace.")
	fs.BoolVar(&c.enableDataPlane, "enable-dataplane", true, "Run the cluster-scoped data-plane controller; turn it off in namespace-scoped installs, whose RBAC grants nothing cluster-wide.")
	fs.StringVar(&c.probeAddr, "health-probe-bind-address", ":8081", "Address of the /healthz and /readyz endpoints.")
	fs.BoolVar(&c.leaderElect, "leader-elect", true, "Elect a leader so only one replica acts.")
	fs.StringVar(&c.leaderElectionID, "leader-election-id", "sluice.sluice.dev", "Name of the leader-election Lease.")
	fs.StringVar(&c.leaderElectionNS, "leader-election-namespace", "", "Namespace of the Lease (default: the pod's namespace).")
	fs.StringVar(&c.namespaces, "namespace", "", "Comma-separated namespaces to watch; empty watches all.")
	fs.IntVar(&c.maxConcurrent, "max-concurrent-reconciles", manager.DefaultWorkers, "Canaries reconciled in parallel.")
	fs.IntVar(&c.maxProgressing, "max-progressing", 0, "Canaries allowed to run at once; others wait in Waiting. 0: no cap.")
	fs.StringVar(&c.metricsServer, "metrics-server", "http://prometheus:9090", "Default Prometheus address for analysis.")
	fs.DurationVar(&c.scrapeInterval, "prometheus-scrape-interval", 15*time.Second, "Prometheus scrape interval; metric windows must be at least twice it.")
	fs.DurationVar(&c.queryTimeout, "query-timeout", 10*time.Second, "Timeout of one Prometheus query, and of one check as a whole.")
	c.scale.bind(fs)
	c.queries.bind(fs)
	opts := zap.Options{}
	opts.BindFlags(fs)
	err := fs.Parse(args)
	return c, opts, err
}

func main() {
	cfg, zopts, err := parseFlags(os.Args[1:])
	if err != nil {
		os.Exit(2)
	}
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&zopts)))
	if err := run(ctrl.SetupSignalHandler(), cfg); err != nil {
		ctrl.Log.Error(err, "Manager stopped")
		os.Exit(1)
	}
}

func run(ctx context.Context, cfg config) error {
	restCfg, err := ctrl.GetConfig()
	if err != nil {
		return fmt.Errorf("loading kubeconfig: %w", err)
	}
	o := manager.Options{
		MetricsAddr: cfg.metricsAddr, ProbeAddr: cfg.probeAddr,
		LeaderElection: cfg.leaderElect, LeaderElectionID: cfg.leaderElectionID,
		LeaderElectionNamespace: cfg.leaderElectionNS,
		MaxConcurrentReconciles: cfg.maxConcurrent, MaxProgressing: cfg.maxProgressing,
		MetricsServer: cfg.metricsServer, ScrapeInterval: cfg.scrapeInterval, QueryTimeout: cfg.queryTimeout,
		MetricsInsecure: !cfg.metricsSecure, MetricsCertDir: cfg.metricsCertDir,
		ControllerNamespace: cfg.controllerNamespace, AllowCrossNamespaceRefs: cfg.allowCrossNamespace,
		AllowedDestinations: splitList(cfg.allowedDestinations), DisableDataPlane: !cfg.enableDataPlane,
		AllowEgressTo: splitList(cfg.allowEgressTo), ClusterCIDRs: splitList(cfg.clusterCIDRs),
		Namespaces: splitList(cfg.namespaces),
	}
	o.AllowedRouteHostnames, o.AllowedRouteParents = splitList(cfg.routeHostnames), splitList(cfg.routeParents)
	o.ClusterDomain = cfg.clusterDomain
	cfg.scale.apply(&o)
	cfg.queries.apply(&o)
	mgr, err := manager.New(ctx, restCfg, o)
	if err != nil {
		return err
	}
	ctrl.Log.Info("Starting manager", "leaderElection", cfg.leaderElect, "namespaces", o.Namespaces,
		"controllerNamespace", o.ControllerNamespace, "allowCrossNamespaceRefs", o.AllowCrossNamespaceRefs,
		"allowedDestinations", o.AllowedDestinations, "allowEgressTo", o.AllowEgressTo, "clusterCIDRs", o.ClusterCIDRs, "dataPlane", cfg.enableDataPlane, "metricsSecure", cfg.metricsSecure,
		"allowedRouteHostnames", o.AllowedRouteHostnames, "allowedRouteParents", o.AllowedRouteParents,
		"shard", o.Shard, "shardName", o.ShardName, "kubeAPIQPS", o.KubeAPIQPS, "kubeAPIBurst", o.KubeAPIBurst)
	return mgr.Start(ctx)
}

// splitList splits a comma-separated flag value, dropping empty items.
func splitList(s string) []string {
	var out []string
	for _, item := range strings.Split(s, ",") {
		if item = strings.TrimSpace(item); item != "" {
			out = append(out, item)
		}
	}
	return out
}

// Package cluster starts a fully local Kubernetes cluster for end-to-end tests and the demo: etcd,
// kube-apiserver, kube-controller-manager, kube-scheduler and kwok run as child processes on
// 127.0.0.1 with free ports and per-run certificates. kwok manages fake Node objects and plays the
// kubelet, so real Deployments, ReplicaSets, StatefulSets and DaemonSets roll and their pods become
// Running and Ready without containers. Optionally it also runs the simulated Linkerd proxy
// injector (package test/injector) in-process.
//
// The binaries come from bin/ (`hack/build-tools.sh cluster`). State lives in Options.Dir:
//
//	kubeconfig          cluster-admin kubeconfig (credentials embedded)
//	pki/                ca.crt, apiserver.{crt,key}, front-proxy-client.{crt,key}, sa.{key,pub}, tokens.csv (the admin's)
//	logs/NAME.log       output of each component
//	pids/NAME.pid       "PID BINARY" of each component (see StopRecorded)
//	etcd/, kwok.yaml    etcd's data, kwok's Stage objects
package cluster

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	goruntime "runtime"
	"strconv"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"sluice.dev/sluice/test/injector"
)

// Component names: the names of the binaries in BinDir and of their logs and pid files.
const (
	Etcd                  = "etcd"
	KubeAPIServer         = "kube-apiserver"
	KubeControllerManager = "kube-controller-manager"
	KubeScheduler         = "kube-scheduler"
	Kwok                  = "kwok"
)

// StagesFile is the file in BinDir holding kwok's default Stage objects.
const StagesFile = "kwok-stages.yaml"

const frontProxyClientName = "front-proxy-client"

// serviceCIDR is the Service IP range; its first address is the "kubernetes" Service.
const serviceCIDR = "10.96.0.0/16"

// stopOrder is the order components are stopped in: clients of the apiserver first, etcd last.
var stopOrder = []string{Kwok, KubeScheduler, KubeControllerManager, KubeAPIServer, Etcd}

// InjectorOptions configure the simulated Linkerd proxy injector (Addr is ignored: it listens on a
// free port of 127.0.0.1).
type InjectorOptions = injector.Options

// Options configure Start.
type Options struct {
	// BinDir holds the component binaries and kwok-stages.yaml. Default: bin/ of the repository.
	BinDir string
	// Dir holds the cluster's state (see the package documentation). Start replaces what an
	// earlier run left there. Default: a new temporary folder, removed by Stop.
	Dir string
	// Nodes is the number of fake nodes. Default 2.
	Nodes int
	// PodReadyDelay is how long kwok waits before it marks a new pod Running and Ready. Default 0
	// (about a second in practice).
	PodReadyDelay time.Duration
	// ControllerManagerArgs are extra kube-controller-manager flags, e.g.
	// --concurrent-deployment-syncs=20 for thousands of Deployments rolling at once.
	ControllerManagerArgs []string
	// KwokPodParallelism is how many pods kwok moves through their stages (Pending → Running →
	// Ready, deletion) at a time. Default kwok's (4).
	KwokPodParallelism int
	// ComponentGOGC is the GOGC of etcd, kube-apiserver, kube-controller-manager, kube-scheduler
	// and kwok (not of this process or anything else it starts). Default 0: Go's (100). A higher
	// value trades the components' memory for CPU when thousands of objects change at once.
	ComponentGOGC int
	// Injector, when set, runs the simulated Linkerd proxy injector in this process.
	Injector *InjectorOptions
	// Detach leaves the components running when this process exits (no Pdeathsig): stop them with
	// StopRecorded. Incompatible with Injector, which runs in this process.
	Detach bool
	// Logf receives progress lines. Optional.
	Logf func(format string, args ...any)
}

// Cluster is a running local cluster.
type Cluster struct {
	opts       Options
	dir        string
	removeDir  bool
	kubeconfig string
	restConfig *rest.Config
	ca         *authority
	procs      []*process
	injector   *injector.Injector
	started    time.Time
}

// DefaultBinDir is bin/ of the repository holding this package.
func DefaultBinDir() string {
	_, file, _, _ := goruntime.Caller(0)
	return filepath.Clean(filepath.Join(filepath.Dir(file), "..", "..", "bin"))
}

// Start brings the cluster up and returns once every component is healthy, the fake nodes are
// Ready and the default ServiceAccount exists (so pods can be created). ctx bounds start-up only;
// the cluster runs until Stop. When Start fails it stops whatever it started; the error then
// includes the last lines of the failing component's log.
// errors: missing binaries, components that exit or do not become healthy, API errors.
func Start(ctx context.Context, opts Options) (*Cluster, error) {
	if opts.Injector != nil && opts.Detach {
		return nil, errors.New("cluster: Options.Injector runs in this process and cannot be detached")
	}
	if opts.BinDir == "" {
		opts.BinDir = DefaultBinDir()
	}
	if opts.Nodes <= 0 {
		opts.Nodes = 2
	}
	if opts.Logf == nil {
		opts.Logf = func(string, ...any) {}
	}
	for _, name := range append([]string{StagesFile}, stopOrder...) {
		if _, err := os.Stat(filepath.Join(opts.BinDir, name)); err != nil {
			return nil, fmt.Errorf("cluster: %s missing (run `hack/build-tools.sh cluster`): %w", name, err)
		}
	}
	c := &Cluster{opts: opts, dir: opts.Dir, started: time.Now()}
	if c.dir == "" {
		dir, err := os.MkdirTemp("", "sluice-cluster-")
		if err != nil {
			return nil, err
		}
		c.dir, c.removeDir = dir, true
	}
	if err := c.resetDir(); err != nil {
		_ = c.Stop()
		return nil, err
	}
	// A port found free can be taken by another process before our component binds it; that is
	// rare enough that one retry with fresh ports covers it.
	err := c.start(ctx)
	if err != nil && errors.Is(err, errPortInUse) && ctx.Err() == nil {
		c.logf("a port was taken meanwhile; retrying with new ports")
		_ = c.stopAll()
		if c.injector != nil {
			_ = c.injector.Close()
			c.injector = nil
		}
		if err = c.resetDir(); err == nil {
			err = c.start(ctx)
		}
	}
	if err != nil {
		_ = c.Stop()
		return nil, err
	}
	c.logf("cluster up in %s; export KUBECONFIG=%s", time.Since(c.started).Round(10*time.Millisecond), c.kubeconfig)
	return c, nil
}

var errPortInUse = errors.New("address already in use")

// resetDir removes what an earlier run left in Dir (only the entries Start writes).
func (c *Cluster) resetDir() error {
	for _, name := range []string{"etcd", "pki", "logs", "pids", "kubeconfig", "kwok.yaml"} {
		if err := os.RemoveAll(filepath.Join(c.dir, name)); err != nil {
			return err
		}
	}
	for _, name := range []string{"logs", "pids", "etcd"} {
		if err := os.MkdirAll(filepath.Join(c.dir, name), 0o700); err != nil {
			return err
		}
	}
	return nil
}

type ports struct {
	etcd, etcdPeer, apiserver, controllerManager, scheduler, kwok int
}

// freePorts asks the kernel for distinct free ports on 127.0.0.1, holding all listeners open until
// every port is chosen so none is picked twice.
func freePorts() (ports, error) {
	var lns []net.Listener
	defer func() {
		for _, ln := range lns {
			_ = ln.Close()
		}
	}()
	var got [6]int
	for i := range got {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return ports{}, err
		}
		lns = append(lns, ln)
		got[i] = ln.Addr().(*net.TCPAddr).Port
	}
	return ports{got[0], got[1], got[2], got[3], got[4], got[5]}, nil
}

func (c *Cluster) start(ctx context.Context) error {
	p, err := freePorts()
	if err != nil {
		return err
	}
	pki := newPKIFiles(filepath.Join(c.dir, "pki"))
	ca, adminToken, err := writePKI(pki)
	if err != nil {
		return fmt.Errorf("cluster: writing certificates and the admin token: %w", err)
	}
	c.ca = ca
	apiURL := "https://127.0.0.1:" + strconv.Itoa(p.apiserver)
	c.restConfig = &rest.Config{
		Host: apiURL,
		TLSClientConfig: rest.TLSClientConfig{
			CAData: ca.certPEM,
		},
		BearerToken: adminToken,
		QPS:         500,
		Burst:       1000,
	}
	c.kubeconfig = filepath.Join(c.dir, "kubeconfig")
	if err := writeKubeconfig(c.kubeconfig, c.restConfig); err != nil {
		return err
	}
	kwokConfig := filepath.Join(c.dir, "kwok.yaml")
	if err := writeKwokConfig(filepath.Join(c.opts.BinDir, StagesFile), kwokConfig, c.opts.PodReadyDelay, c.opts.KwokPodParallelism); err != nil {
		return err
	}
	clients, err := kubernetes.NewForConfig(c.restConfig)
	if err != nil {
		return err
	}

	etcdURL := "http://127.0.0.1:" + strconv.Itoa(p.etcd)
	peerURL := "http://127.0.0.1:" + strconv.Itoa(p.etcdPeer)
	etcd, err := c.run(Etcd,
		"--name=node0", "--data-dir="+filepath.Join(c.dir, "etcd"),
		"--listen-client-urls="+etcdURL, "--advertise-client-urls="+etcdURL,
		"--listen-peer-urls="+peerURL, "--initial-advertise-peer-urls="+peerURL,
		"--initial-cluster=node0="+peerURL,
		"--unsafe-no-fsync=true", "--auto-compaction-retention=1", "--quota-backend-bytes=2147483648",
		"--log-level=warn",
	)
	if err != nil {
		return err
	}
	if err := c.waitFor(ctx, etcd, "etcd", 30*time.Second, httpOK(insecureClient(), etcdURL+"/health")); err != nil {
		return err
	}

	apiserver, err := c.run(KubeAPIServer,
		"--etcd-servers="+etcdURL,
		"--bind-address=127.0.0.1", "--advertise-address=127.0.0.1", "--secure-port="+strconv.Itoa(p.apiserver),
		// With 127.0.0.1 as advertise address the default lease reconciler fails endlessly.
		"--endpoint-reconciler-type=none",
		"--tls-cert-file="+pki.apiserverCert, "--tls-private-key-file="+pki.apiserverKey,
		"--client-ca-file="+pki.caCert, "--token-auth-file="+pki.adminTokens,
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--service-account-key-file="+pki.serviceAccountPublicKey,
		"--service-account-signing-key-file="+pki.serviceAccountKey,
		"--service-cluster-ip-range="+serviceCIDR,
		"--authorization-mode=RBAC", "--allow-privileged=true",
		// Without the requestheader and proxy-client flags the apiserver logs CA-bundle errors forever.
		"--requestheader-client-ca-file="+pki.caCert, "--requestheader-allowed-names="+frontProxyClientName,
		"--requestheader-username-headers=X-Remote-User", "--requestheader-group-headers=X-Remote-Group",
		"--requestheader-extra-headers-prefix=X-Remote-Extra-",
		"--proxy-client-cert-file="+pki.frontProxyCert, "--proxy-client-key-file="+pki.frontProxyKey,
	)
	if err != nil {
		return err
	}
	readyz := func(ctx context.Context) error {
		return clients.Discovery().RESTClient().Get().AbsPath("/readyz").Do(ctx).Error()
	}
	if err := c.waitFor(ctx, apiserver, "kube-apiserver", 60*time.Second, readyz); err != nil {
		return err
	}

	// The webhook server comes up while the other components start.
	if c.opts.Injector != nil {
		if err := c.startInjector(ctx); err != nil {
			return err
		}
	}
	// kube-controller-manager and kube-scheduler authenticate with the admin token.
	kcm, err := c.run(KubeControllerManager, append([]string{
		"--kubeconfig=" + c.kubeconfig, "--authentication-kubeconfig=" + c.kubeconfig,
		"--authorization-kubeconfig=" + c.kubeconfig,
		"--bind-address=127.0.0.1", "--secure-port=" + strconv.Itoa(p.controllerManager), "--leader-elect=false",
		"--use-service-account-credentials=false",
		"--root-ca-file=" + pki.caCert, "--service-account-private-key-file=" + pki.serviceAccountKey,
		// kwok renews node leases lazily: keep the node lifecycle controller patient.
		"--node-monitor-period=25s", "--node-monitor-grace-period=3m20s",
		"--kube-api-qps=1000", "--kube-api-burst=2000",
	}, c.opts.ControllerManagerArgs...)...)
	if err != nil {
		return err
	}
	scheduler, err := c.run(KubeScheduler,
		"--kubeconfig="+c.kubeconfig, "--authentication-kubeconfig="+c.kubeconfig,
		"--authorization-kubeconfig="+c.kubeconfig,
		"--bind-address=127.0.0.1", "--secure-port="+strconv.Itoa(p.scheduler), "--leader-elect=false",
		"--kube-api-qps=1000", "--kube-api-burst=2000",
	)
	if err != nil {
		return err
	}
	kwok, err := c.run(Kwok,
		"--kubeconfig="+c.kubeconfig, "--config="+kwokConfig, "--manage-all-nodes=true",
		"--tls-cert-file="+pki.apiserverCert, "--tls-private-key-file="+pki.apiserverKey,
		"--node-ip=127.0.0.1", "--node-name=localhost", "--node-port="+strconv.Itoa(p.kwok),
		"--server-address=127.0.0.1:"+strconv.Itoa(p.kwok),
		"--node-lease-duration-seconds=200",
	)
	if err != nil {
		return err
	}
	if err := createNodes(ctx, clients, c.opts.Nodes); err != nil {
		return err
	}
	c.logf("created %d fake nodes", c.opts.Nodes)
	insecure := insecureClient()
	if err := c.waitFor(ctx, kcm, "kube-controller-manager", 60*time.Second,
		httpOK(insecure, "https://127.0.0.1:"+strconv.Itoa(p.controllerManager)+"/healthz")); err != nil {
		return err
	}
	if err := c.waitFor(ctx, scheduler, "kube-scheduler", 60*time.Second,
		httpOK(insecure, "https://127.0.0.1:"+strconv.Itoa(p.scheduler)+"/healthz")); err != nil {
		return err
	}
	if err := c.waitFor(ctx, kwok, "nodes Ready (kwok)", 60*time.Second, func(ctx context.Context) error {
		return nodesReady(ctx, clients, c.opts.Nodes)
	}); err != nil {
		return err
	}
	// The service-account controller (kube-controller-manager) creates it; pods need it.
	return c.waitFor(ctx, kcm, "serviceaccount default/default", 60*time.Second, func(ctx context.Context) error {
		_, err := clients.CoreV1().ServiceAccounts("default").Get(ctx, "default", metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return errors.New("serviceaccount default/default not created yet")
		}
		return err
	})
}

func (c *Cluster) startInjector(ctx context.Context) error {
	cert, err := c.ServingCert("127.0.0.1", "localhost")
	if err != nil {
		return err
	}
	opts := *c.opts.Injector
	opts.Addr = "127.0.0.1:0"
	in, err := injector.Start(ctx, c.RESTConfig(), injector.TLS{Cert: cert, CABundle: c.CA()}, opts)
	if err != nil {
		return err
	}
	c.injector = in
	c.logf("simulated Linkerd proxy injector at %s (proxy version %s)", in.URL(), in.Version())
	return nil
}

// run starts a component from BinDir.
func (c *Cluster) run(name string, args ...string) (*process, error) {
	var env []string
	if c.opts.ComponentGOGC > 0 {
		env = []string{"GOGC=" + strconv.Itoa(c.opts.ComponentGOGC)}
	}
	p, err := startProcess(name, filepath.Join(c.opts.BinDir, name),
		filepath.Join(c.dir, "logs", name+".log"), c.opts.Detach, env, args...)
	if err != nil {
		return nil, err
	}
	c.procs = append(c.procs, p)
	if err := writePIDFile(filepath.Join(c.dir, "pids"), p); err != nil {
		return nil, err
	}
	c.logf("started %s (pid %d)", name, p.pid())
	return p, nil
}

// waitFor polls check until it succeeds. It fails early when any started component exits, and
// after timeout; either error carries the last lines of the relevant component's log.
func (c *Cluster) waitFor(ctx context.Context, owner *process, what string, timeout time.Duration, check func(context.Context) error) error {
	deadline := time.Now().Add(timeout)
	for {
		cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		err := check(cctx)
		cancel()
		if err == nil {
			c.logf("ready: %s", what)
			return nil
		}
		for _, p := range c.procs {
			if p.exited() {
				perr := p.exitError()
				if strings.Contains(perr.Error(), "address already in use") {
					return errors.Join(errPortInUse, perr)
				}
				return fmt.Errorf("cluster: %w", perr)
			}
		}
		if ctx.Err() != nil || time.Now().After(deadline) {
			cause := ctx.Err()
			if cause == nil {
				cause = fmt.Errorf("timed out after %s", timeout)
			}
			return fmt.Errorf("cluster: waiting for %s: %w (last check: %v); last lines of %s:\n%s",
				what, cause, err, owner.logPath, logTail(owner.logPath, 15))
		}
		select {
		case <-ctx.Done():
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func httpOK(client *http.Client, url string) func(context.Context) error {
	return func(ctx context.Context) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return err
		}
		resp, err := client.Do(req)
		if err != nil {
			return err
		}
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("GET %s: %s", url, resp.Status)
		}
		return nil
	}
}

// insecureClient reaches the health endpoints of kube-controller-manager and kube-scheduler,
// which serve with self-signed certificates.
func insecureClient() *http.Client {
	return &http.Client{Transport: &http.Transport{
		TLSClientConfig:   &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // local health checks only
		DisableKeepAlives: true,
	}}
}

func writeKubeconfig(path string, cfg *rest.Config) error {
	kc := clientcmdapi.NewConfig()
	kc.Clusters["local"] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData}
	kc.AuthInfos["admin"] = &clientcmdapi.AuthInfo{Token: cfg.BearerToken}
	kc.Contexts["local"] = &clientcmdapi.Context{Cluster: "local", AuthInfo: "admin"}
	kc.CurrentContext = "local"
	return clientcmd.WriteToFile(*kc, path)
}

func (c *Cluster) logf(format string, args ...any) {
	c.opts.Logf("[cluster %6.2fs] "+format, append([]any{time.Since(c.started).Seconds()}, args...)...)
}

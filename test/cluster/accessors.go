package cluster

import (
	"crypto/tls"
	"errors"
	"os"
	"path/filepath"

	"k8s.io/client-go/rest"

	"sluice.dev/sluice/test/injector"
)

// Kubeconfig is the path of the cluster-admin kubeconfig file.
func (c *Cluster) Kubeconfig() string { return c.kubeconfig }

// RESTConfig returns a new cluster-admin client configuration (QPS 500, burst 1000).
func (c *Cluster) RESTConfig() *rest.Config { return rest.CopyConfig(c.restConfig) }

// Dir is the state folder (see the package documentation).
func (c *Cluster) Dir() string { return c.dir }

// CA returns the cluster CA certificate (PEM): the apiserver trusts client certificates it signed,
// and webhooks serving certificates from ServingCert can use it as caBundle.
func (c *Cluster) CA() []byte { return c.ca.certPEM }

// ServingCert issues a TLS serving certificate signed by the cluster CA for hosts (IP addresses
// or DNS names), e.g. for a webhook server in the test process.
func (c *Cluster) ServingCert(hosts ...string) (tls.Certificate, error) {
	if len(hosts) == 0 {
		return tls.Certificate{}, errors.New("cluster: ServingCert needs at least one host")
	}
	return c.ca.servingCert(hosts...)
}

// Injector is the simulated Linkerd proxy injector, or nil without Options.Injector.
func (c *Cluster) Injector() *injector.Injector { return c.injector }

// PIDs maps each started component to its process ID.
func (c *Cluster) PIDs() map[string]int {
	m := make(map[string]int, len(c.procs))
	for _, p := range c.procs {
		m[p.name] = p.pid()
	}
	return m
}

// Stop stops every component (SIGTERM to its process group, SIGKILL after a grace period), the
// injector, and removes Dir if Start created it. It is safe to call more than once.
// errors: processes that survive SIGKILL, removing Dir.
func (c *Cluster) Stop() error {
	err := c.stopAll()
	if c.injector != nil {
		err = errors.Join(err, c.injector.Close())
		c.injector = nil
	}
	if c.removeDir {
		err = errors.Join(err, os.RemoveAll(c.dir))
		c.removeDir = false
	} else {
		_ = os.RemoveAll(filepath.Join(c.dir, "pids"))
	}
	return err
}

// stopAll stops the processes: the apiserver's clients together first, then the apiserver, then
// etcd.
func (c *Cluster) stopAll() error {
	byName := map[string]*process{}
	for _, p := range c.procs {
		byName[p.name] = p
	}
	stopGroup := func(names ...string) error {
		errs := make(chan error, len(names))
		for _, n := range names {
			go func() {
				if p := byName[n]; p != nil {
					errs <- p.stop(stopGrace)
				} else {
					errs <- nil
				}
			}()
		}
		var err error
		for range names {
			err = errors.Join(err, <-errs)
		}
		return err
	}
	err := errors.Join(
		stopGroup(Kwok, KubeScheduler, KubeControllerManager),
		stopGroup(KubeAPIServer),
		stopGroup(Etcd),
	)
	c.procs = nil
	return err
}

package cluster

import (
	"context"
	"fmt"
	"slices"
	"time"

	"k8s.io/client-go/kubernetes"
)

// RestartAPIServer stops the kube-apiserver (SIGTERM, as a rolling restart would) and starts it
// again with the same flags, then waits until it is ready. Its clients (controllers, kwok, a
// Sluice manager) see their watches break and reconnect. It returns how long the apiserver was
// down. errors: the apiserver does not stop or does not come back.
func (c *Cluster) RestartAPIServer(ctx context.Context) (time.Duration, error) {
	i := slices.IndexFunc(c.procs, func(p *process) bool { return p.name == KubeAPIServer })
	if i < 0 {
		return 0, fmt.Errorf("cluster: no %s running", KubeAPIServer)
	}
	old := c.procs[i]
	down := time.Now()
	if err := old.stop(stopGrace); err != nil {
		return 0, err
	}
	c.procs = slices.Delete(c.procs, i, i+1)
	p, err := c.run(KubeAPIServer, old.cmd.Args[1:]...)
	if err != nil {
		return 0, err
	}
	clients, err := kubernetes.NewForConfig(c.restConfig)
	if err != nil {
		return 0, err
	}
	readyz := func(ctx context.Context) error {
		_, err := clients.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
		return err
	}
	if err := c.waitFor(ctx, p, "kube-apiserver (restarted)", 60*time.Second, readyz); err != nil {
		return 0, err
	}
	return time.Since(down), nil
}

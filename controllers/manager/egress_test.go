package manager_test

import (
	"net"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
	"sluice.dev/sluice/controllers/manager"
	"sluice.dev/sluice/test/testenv"
)

// TestInternalDestinationsRefused runs the manager with the default egress options and the pod
// range 10.244.0.0/16 configured, and Canaries whose webhook (or metricsServer) is on loopback (a
// live receiver on 127.0.0.1, and "localhost"), 0.0.0.0, [::], a pod address, Alibaba's metadata
// address, or 169.254.169.254 in its NAT64 and 6to4 forms: each is Stalled DestinationRefused
// naming the field, no message (condition or event) carries the address or the port, and the
// receiver gets no request.
func TestInternalDestinationsRefused(t *testing.T) {
	testenv.Require(t, env)
	rec := newRecorder(t, nil)
	_, port, _ := net.SplitHostPort(rec.Listener.Addr().String())
	ns := env.Namespace(t)
	hooks := []struct{ canary, url, address, why string }{
		{"loopback", rec.URL + "/gate", "127.0.0.1", "a loopback address"},
		{"localhost", "http://localhost:" + port + "/gate", "localhost", "a loopback address"},
		{"unspecified", "http://0.0.0.0:" + port + "/gate", "0.0.0.0", "an unspecified address"},
		{"unspecified6", "http://[::]:" + port + "/gate", "[::]", "an unspecified address"},
		{"pod", "http://10.244.1.7:" + port + "/gate", "10.244.1.7", "a cluster-internal address"},
		{"alibaba", "http://100.100.100.200/latest/meta-data/", "100.100.100.200", "cloud-metadata"},
		{"nat64", "http://[64:ff9b::a9fe:a9fe]/latest/meta-data/", "64:ff9b", "embedding a link-local or cloud-metadata"},
		{"sixtofour", "http://[2002:a9fe:a9fe::1]/latest/meta-data/", "2002:", "embedding a link-local or cloud-metadata"},
	}
	for _, h := range hooks {
		app(t, ns, h.canary, nil)
		c := canaryFor(ns, h.canary)
		c.Spec.Analysis.Webhooks = []sluicev1.CanaryWebhook{{Name: "load-test", Type: sluicev1.WebhookPreRollout, URL: h.url, Timeout: "5s"}}
		create(t, c)
	}
	app(t, ns, "metrics", nil)
	c := canaryFor(ns, "metrics")
	c.Spec.MetricsServer = rec.URL
	create(t, c)
	startManager(t, nil, manager.Options{Namespaces: []string{ns}, ClusterCIDRs: []string{"10.244.0.0/16"}})

	hooks = append(hooks, struct{ canary, url, address, why string }{"metrics", rec.URL, "127.0.0.1", "a loopback address"})
	for _, h := range hooks {
		field := `webhook "load-test"`
		if h.canary == "metrics" {
			field = "spec.metricsServer"
		}
		got := waitCanary(t, ns, h.canary, 30*time.Second, "Stalled naming the refused destination",
			stalledWith(sluicev1.ReasonDestinationRefused, field, h.why))
		messages := append(eventNotes(t, ns, h.canary), meta.FindStatusCondition(got.Status.Conditions, sluicev1.ConditionStalled).Message)
		for _, m := range messages {
			if strings.Contains(m, h.address) || strings.Contains(m, port) {
				t.Errorf("canary %s: message %q names the address %s or the port %s", h.canary, m, h.address, port)
			}
		}
	}
	if got := rec.recorded(); len(got) > 0 {
		t.Fatalf("the receiver on 127.0.0.1 got %d requests", len(got))
	}
}

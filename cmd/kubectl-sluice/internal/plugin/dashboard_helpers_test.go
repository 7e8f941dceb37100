package plugin

import (
	"context"
	"fmt"
	"io"
	"regexp"
	"strings"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
)

var servingOn = regexp.MustCompile(`Sluice dashboard on (http://\S+)`)

// runDashboard runs `kubectl sluice dashboard --port 0 ARGS` with cfg as the user's kubeconfig
// (its namespace "default" unless -n) until the test ends, and returns its URL.
func runDashboard(t *testing.T, cfg *rest.Config, args ...string) string {
	t.Helper()
	var errOut syncBuffer
	ctx, cancel := context.WithCancel(context.Background())
	cmd := NewRootCommand(Options{
		Out: io.Discard, ErrOut: &errOut,
		RESTConfig: func(kf KubeFlags) (*rest.Config, string, error) {
			if kf.Namespace != "" {
				return cfg, kf.Namespace, nil
			}
			return cfg, "default", nil
		},
	})
	cmd.SetArgs(append([]string{"dashboard", "--port", "0"}, args...))
	done := make(chan error, 1)
	go func() { done <- cmd.ExecuteContext(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("the dashboard ended with %v", err)
		}
	})
	waitFor(t, &errOut, "the dashboard to serve", func(s string) bool { return servingOn.MatchString(s) })
	return servingOn.FindStringSubmatch(errOut.String())[1]
}

// runFixture is a Canary in the middle of a run, as the controller records it: six checks of two
// metrics, one of each verdict, the weight going 10, 20, 20, 20, 20, 30.
type runFixture struct {
	verdicts  [][2]sluicev1.Verdict
	values    [][2]string
	weights   []int32
	outcomes  []sluicev1.CheckOutcome
	startedAt time.Time
}

func newRunFixture() runFixture {
	return runFixture{
		verdicts: [][2]sluicev1.Verdict{
			{sluicev1.VerdictPass, sluicev1.VerdictPass}, {sluicev1.VerdictPass, sluicev1.VerdictPass},
			{sluicev1.VerdictFail, sluicev1.VerdictPass}, {sluicev1.VerdictNoData, sluicev1.VerdictSkipped},
			{sluicev1.VerdictError, sluicev1.VerdictError}, {sluicev1.VerdictPass, sluicev1.VerdictFail},
		},
		values:    [][2]string{{"99.80", "120.00"}, {"99.95", "180.00"}, {"97.10", "240.00"}, {"", ""}, {"", ""}, {"99.70", "650.00"}},
		weights:   []int32{10, 20, 20, 20, 20, 30},
		outcomes:  []sluicev1.CheckOutcome{"Passed", "Passed", "Failed", "NoEvidence", "Error", "Failed"},
		startedAt: time.Now().Add(-7 * time.Minute).Truncate(time.Second),
	}
}

// canary creates the Canary (two metrics: success rate min 99, duration max 500; one
// confirm-promotion webhook) and writes its status at check n of the run (all six when n < 0).
func (f runFixture) canary(t *testing.T, ns, name string) *sluicev1.Canary {
	t.Helper()
	cn := newCanary(t, ns, name, func(cn *sluicev1.Canary) {
		cn.Spec.Analysis.Metrics = append(cn.Spec.Analysis.Metrics,
			sluicev1.CanaryMetric{Name: sluicev1.MetricRequestDuration, Interval: "30s", ThresholdRange: &sluicev1.ThresholdRange{Max: ptr.To(500.0)}})
		cn.Spec.Analysis.Webhooks = []sluicev1.CanaryWebhook{{Name: "load-test", Type: sluicev1.WebhookConfirmPromotion, URL: "http://loadtester.test/gate"}}
	})
	setStatus(t, cn, f.status())
	return cn
}

func (f runFixture) status() sluicev1.CanaryStatus {
	at := func(d time.Duration) *metav1.Time { t := metav1.NewTime(f.startedAt.Add(d)); return &t }
	run := &sluicev1.RunRecord{
		Revision: "7d9f6c5b4", StartTime: *at(0),
		Images:        []sluicev1.ContainerImage{{Container: "podinfo", Image: "ghcr.io/stefanprodan/podinfo:6.7.1"}},
		PrimaryImages: []sluicev1.ContainerImage{{Container: "podinfo", Image: "ghcr.io/stefanprodan/podinfo:6.7.0"}},
		Metrics: []sluicev1.RunMetric{
			{Name: sluicev1.MetricRequestSuccessRate, ThresholdRange: &sluicev1.ThresholdRange{Min: ptr.To(99.0)}, Interval: "1m",
				Query: `sum(rate(istio_requests_total{response_code!~"5.*"}[1m])) / sum(rate(istio_requests_total[1m])) * 100`},
			{Name: sluicev1.MetricRequestDuration, ThresholdRange: &sluicev1.ThresholdRange{Max: ptr.To(500.0)}, Interval: "30s"},
		},
	}
	for i := range f.weights {
		c := sluicev1.CheckRecord{Time: *at(time.Duration(i+1) * time.Minute), Weight: f.weights[i], Outcome: f.outcomes[i],
			WindowStart: at(time.Duration(i) * time.Minute)}
		for m := range 2 {
			c.Results = append(c.Results, sluicev1.CheckValue{Value: f.values[i][m], Verdict: f.verdicts[i][m]})
		}
		run.Checks = append(run.Checks, c)
	}
	last := at(6 * time.Minute)
	return sluicev1.CanaryStatus{
		Phase: sluicev1.CanaryPhaseProgressing, CanaryWeight: 30, FailedChecks: 2, Iterations: 6,
		LastAppliedSpec: "7d9f6c5b4", LastPromotedSpec: "5c4b3a291", LastTransitionTime: at(0), LastStepTime: last, RunStartTime: at(0),
		TrackedConfigs: map[string]string{"configmap/podinfo-config": "a1b2c3d4"},
		LastCheck:      &sluicev1.CheckStatus{Time: *last, Outcome: sluicev1.CheckFailed, Message: "request-duration 650.00 above 500"},
		Analysis: []sluicev1.MetricResult{
			{Name: sluicev1.MetricRequestSuccessRate, Verdict: sluicev1.VerdictPass, Value: "99.70", ThresholdRange: "[99, +Inf]", CheckedAt: last},
			{Name: sluicev1.MetricRequestDuration, Verdict: sluicev1.VerdictFail, Value: "650.00", ThresholdRange: "[-Inf, 500]", CheckedAt: last,
				Message: "650.00 above the maximum 500"},
		},
		Run: run,
		Runs: []sluicev1.RunSummary{
			{Revision: "5c4b3a291", Outcome: sluicev1.RunPromoted, StartTime: *at(-time.Hour), EndTime: *at(-54 * time.Minute),
				Reason: "Promotion of 5c4b3a291 completed", Checks: 6, MaxWeight: 50,
				Images: []sluicev1.ContainerImage{{Container: "podinfo", Image: "ghcr.io/stefanprodan/podinfo:6.7.0"}}},
			{Revision: "3b2a19f08", Outcome: sluicev1.RunRolledBack, StartTime: *at(-3 * time.Hour), EndTime: *at(-170 * time.Minute),
				Reason: "Rolling back 3b2a19f08: failed checks threshold reached (5)", Checks: 7, FailedChecks: 5, MaxWeight: 20},
		},
	}
}

// viewer is a user who may read Canaries, DataPlanes and events, and change nothing; it returns
// a config that impersonates them.
func viewer(t *testing.T) *rest.Config {
	t.Helper()
	ctx := context.Background()
	name := fmt.Sprintf("dashboard-viewer-%d", time.Now().UnixNano())
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{sluicev1.GroupVersion.Group}, Resources: []string{"canaries", "dataplanes"}, Verbs: []string{"get", "list", "watch"}},
		{APIGroups: []string{""}, Resources: []string{"events"}, Verbs: []string{"get", "list", "watch"}},
	}}
	binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: name}}}
	if err := env.Client.Create(ctx, role); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Create(ctx, binding); err != nil {
		t.Fatal(err)
	}
	cfg := rest.CopyConfig(env.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: name}
	// The apiserver's authorizer learns of the binding through its own watch: wait for it.
	c, err := client.New(cfg, client.Options{Scheme: env.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for c.List(ctx, &sluicev1.CanaryList{}) != nil {
		if time.Now().After(deadline) {
			t.Fatalf("the viewer still may not list canaries")
		}
		time.Sleep(50 * time.Millisecond)
	}
	return cfg
}

// jsString quotes s for JavaScript.
func jsString(s string) string {
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(s) + "'"
}

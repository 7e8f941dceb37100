package plugin

import (
	"context"
	"k8s.io/utils/ptr"
	"regexp"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
	"sluice.dev/sluice/test/testenv"
)

func TestGet(t *testing.T) {
	testenv.Require(t, env)
	ns1, ns2 := env.Namespace(t), env.Namespace(t)
	setStatus(t, newCanary(t, ns1, "podinfo", nil), sluicev1.CanaryStatus{
		Phase: sluicev1.CanaryPhaseProgressing, CanaryWeight: 20, FailedChecks: 1, LastTransitionTime: at(-90 * time.Second),
	})
	setStatus(t, newCanary(t, ns1, "backend", func(cn *sluicev1.Canary) { cn.Spec.Suspend = true }), sluicev1.CanaryStatus{
		Phase: sluicev1.CanaryPhaseFailed, FailedChecks: 5, LastTransitionTime: at(-3 * time.Hour),
	})
	newCanary(t, ns2, "frontend", nil) // no status yet

	out, err := run(t, ns1, "get")
	if err != nil {
		t.Fatal(err)
	}
	want := "" +
		"NAME      STATUS            WEIGHT   FAILEDCHECKS   LASTTRANSITION\n" +
		"backend   Failed (paused)   0        5              3h\n" +
		"podinfo   Progressing       20       1              90s\n"
	if out != want {
		t.Errorf("get:\n%s\nwant:\n%s", out, want)
	}

	out, err = run(t, ns1, "get", "-A")
	if err != nil {
		t.Fatal(err)
	}
	// Other tests' canaries may be listed too: check the rows of this test's namespaces.
	header := strings.SplitN(out, "\n", 2)[0]
	if !strings.HasPrefix(header, "NAMESPACE") || !strings.Contains(header, "LASTTRANSITION") {
		t.Errorf("get -A header: %q", header)
	}
	for _, row := range []string{ns1 + " +backend +Failed \\(paused\\)", ns1 + " +podinfo +Progressing +20 +1 +90s", ns2 + " +frontend +- +0 +0 +-"} {
		if !matchesLine(out, row) {
			t.Errorf("get -A lacks a row matching %q:\n%s", row, out)
		}
	}

	empty := env.Namespace(t)
	if out, _ := run(t, empty, "get"); out != "No canaries found in namespace "+empty+".\n" {
		t.Errorf("get in an empty namespace: %q", out)
	}
}

func TestStatus(t *testing.T) {
	testenv.Require(t, env)
	ns := env.Namespace(t)
	cn := newCanary(t, ns, "podinfo", func(cn *sluicev1.Canary) {
		cn.Annotations = map[string]string{AnnotationPromote: "true"}
		cn.Spec.Analysis.Metrics = append(cn.Spec.Analysis.Metrics, sluicev1.CanaryMetric{Name: sluicev1.MetricRequestDuration,
			ThresholdRange: &sluicev1.ThresholdRange{Max: ptr.To(500.0)}})
	})
	setStatus(t, cn, sluicev1.CanaryStatus{
		Phase: sluicev1.CanaryPhaseProgressing, CanaryWeight: 20, FailedChecks: 2, Iterations: 4,
		LastAppliedSpec: "5d8f7c9b4", LastPromotedSpec: "7c6b5a4f3",
		LastTransitionTime: at(-5 * time.Minute), LastStepTime: at(-20 * time.Second),
		Analysis: []sluicev1.MetricResult{
			{Name: "request-success-rate", Verdict: sluicev1.VerdictPass, Value: "99.62", ThresholdRange: "[99, +Inf]", CheckedAt: at(-20 * time.Second)},
			{Name: "request-duration", Verdict: sluicev1.VerdictFail, Value: "612", PrimaryValue: "240", ThresholdRange: "[-Inf, 500]",
				Message: "612 ms is above the maximum 500 ms", CheckedAt: at(-20 * time.Second)},
		},
		Conditions: []metav1.Condition{
			{Type: sluicev1.ConditionReady, Status: metav1.ConditionTrue, Reason: sluicev1.ReasonProgressing, Message: "Run in progress at 20%", LastTransitionTime: *at(-5 * time.Minute)},
			{Type: sluicev1.ConditionReconciling, Status: metav1.ConditionTrue, Reason: sluicev1.ReasonProgressing, Message: "Advancing to 30%", LastTransitionTime: *at(-5 * time.Minute)},
		},
	})
	out, err := run(t, ns, "status", "podinfo")
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "status.golden", strings.ReplaceAll(out, ns, "NAMESPACE"))
}

// TestStatusShowsPendingGateAndNextStep: a run waiting at a manual confirm-promotion gate shows
// the gate and how to pass it, the time of the next step and the last check's window.
func TestStatusShowsPendingGateAndNextStep(t *testing.T) {
	testenv.Require(t, env)
	ns := env.Namespace(t)
	cn := newCanary(t, ns, "podinfo", func(cn *sluicev1.Canary) {
		cn.Spec.Analysis.Webhooks = []sluicev1.CanaryWebhook{{Name: "release-manager", Type: sluicev1.WebhookConfirmPromotion, Manual: true}}
	})
	setStatus(t, cn, sluicev1.CanaryStatus{
		Phase: sluicev1.CanaryPhaseWaitingPromotion, CanaryWeight: 50, Iterations: 5,
		LastAppliedSpec: "5d8f7c9b4", LastPromotedSpec: "7c6b5a4f3",
		LastTransitionTime: at(-2 * time.Minute), LastStepTime: at(-20 * time.Second),
		LastCheck: &sluicev1.CheckStatus{Time: *at(-20 * time.Second), Outcome: sluicev1.CheckPassed, WindowStart: at(-80 * time.Second)},
	})
	out, err := run(t, ns, "status", "podinfo")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`Next step: +\S+ \(in 40s\)`,
		"Waiting at: +confirm-promotion gate: release-manager \\(manual: approve with `kubectl sluice promote`\\)",
		`Last check: +Passed, window \S+ to \S+`,
	} {
		if !matchesLine(out, want) {
			t.Errorf("status lacks %q:\n%s", want, out)
		}
	}
}

// matchesLine reports whether some line of s starts with the regular expression pattern (" +"
// matches column padding).
func matchesLine(s, pattern string) bool {
	re := regexp.MustCompile("^" + pattern)
	for _, line := range strings.Split(s, "\n") {
		if re.MatchString(line) {
			return true
		}
	}
	return false
}

// TestGetListsProxyUpgrades: `get` follows the Canaries with the cluster's ProxyUpgrades.
func TestGetListsProxyUpgrades(t *testing.T) {
	testenv.Require(t, env)
	ns := env.Namespace(t)
	ctx := context.Background()
	pu := &sluicev1.ProxyUpgrade{ObjectMeta: metav1.ObjectMeta{Name: "linkerd-" + ns},
		Spec: sluicev1.ProxyUpgradeSpec{Mesh: sluicev1.MeshLinkerd, Linkerd: &sluicev1.LinkerdProxyUpgrade{ProxyVersion: "edge-26.8.3"}}}
	if err := env.Client.Create(ctx, pu); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), pu) })
	pu.Status = sluicev1.ProxyUpgradeStatus{Phase: sluicev1.ProxyUpgradeProgressing, Target: "edge-26.8.3", CurrentWave: 1, Desired: 36, Current: 18}
	if err := env.Client.Status().Update(ctx, pu); err != nil {
		t.Fatal(err)
	}
	out, err := run(t, ns, "get")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "PROXYUPGRADE") || !regexp.MustCompile(`linkerd-`+ns+`\s+linkerd\s+edge-26\.8\.3\s+1\s+36\s+18\s+Progressing`).MatchString(out) {
		t.Fatalf("get output lacks the ProxyUpgrade row:\n%s", out)
	}
}

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

// TestStatusShowsAGateWaitingForItsAnswer: a run at a confirm-promotion webhook whose call has not
// answered yet (status.webhooks pending) shows the gate waiting for that answer, not a refusal.
func TestStatusShowsAGateWaitingForItsAnswer(t *testing.T) {
	testenv.Require(t, env)
	ns := env.Namespace(t)
	cn := newCanary(t, ns, "podinfo", func(cn *sluicev1.Canary) {
		cn.Spec.Analysis.Webhooks = []sluicev1.CanaryWebhook{{Name: "approve", Type: sluicev1.WebhookConfirmPromotion, URL: "http://approve/"}}
	})
	setStatus(t, cn, sluicev1.CanaryStatus{
		Phase: sluicev1.CanaryPhaseWaitingPromotion, CanaryWeight: 50, Iterations: 5,
		LastAppliedSpec: "5d8f7c9b4", LastPromotedSpec: "7c6b5a4f3",
		LastTransitionTime: at(-2 * time.Minute), LastStepTime: at(-20 * time.Second),
		Webhooks: []sluicev1.WebhookStatus{{Name: "approve", Type: sluicev1.WebhookConfirmPromotion, Round: "uid/5d8f7c9b4/confirm-promotion/approve/5/0/0/0",
			Pending: true, AskedAt: at(-80 * time.Second), Message: "in flight"}},
	})
	out, err := run(t, ns, "status", "podinfo")
	if err != nil {
		t.Fatal(err)
	}
	if want := `Waiting at: +confirm-promotion gate: approve \(no answer yet\)$`; !matchesLine(out, want) {
		t.Errorf("status lacks %q:\n%s", want, out)
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

// TestGetListsDataPlanes: `get` follows the Canaries with the cluster's DataPlanes, counts 0
// (never blank) before the controller wrote a status; its help names both kinds.
func TestGetListsDataPlanes(t *testing.T) {
	testenv.Require(t, env)
	ns := env.Namespace(t)
	ctx := context.Background()
	dp := &sluicev1.DataPlane{ObjectMeta: metav1.ObjectMeta{Name: "linkerd-" + ns},
		Spec: sluicev1.DataPlaneSpec{Mesh: sluicev1.MeshLinkerd, Version: "edge-26.8.3"}}
	if err := env.Client.Create(ctx, dp); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), dp) })
	out, err := run(t, ns, "get")
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`linkerd-` + ns + `\s+linkerd\s+edge-26\.8\.3\s+0\s+0\s+0\s+-`).MatchString(out) {
		t.Fatalf("get output lacks the fresh DataPlane row with zeros:\n%s", out)
	}
	dp.Status = sluicev1.DataPlaneStatus{Phase: sluicev1.DataPlaneProgressing, Version: "edge-26.8.3", CurrentWave: 1, Desired: 36, Current: 18}
	if err := env.Client.Status().Update(ctx, dp); err != nil {
		t.Fatal(err)
	}
	if out, err = run(t, ns, "get"); err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`DATAPLANE\s+MESH\s+VERSION\s+WAVE\s+DESIRED\s+CURRENT\s+STATUS`).MatchString(out) || !regexp.MustCompile(`linkerd-`+ns+`\s+linkerd\s+edge-26\.8\.3\s+1\s+36\s+18\s+Progressing`).MatchString(out) {
		t.Fatalf("get output lacks the DataPlane row:\n%s", out)
	}
	help, err := run(t, ns, "get", "--help")
	if err != nil || !strings.Contains(help, "data planes (MESH, VERSION, WAVE, DESIRED, CURRENT, STATUS)") {
		t.Fatalf("get --help: %v\n%s", err, help)
	}
}

// TestStatusDataPlane: `status dataplane NAME` mid-upgrade prints the declared version, the
// control plane, the counts, the last update attempt, one row per namespace (skipped ones
// included), the pods that keep it from being up to date, and the conditions.
func TestStatusDataPlane(t *testing.T) {
	testenv.Require(t, env)
	ns := env.Namespace(t)
	ctx := context.Background()
	dp := &sluicev1.DataPlane{ObjectMeta: metav1.ObjectMeta{Name: "status-" + ns,
		Annotations: map[string]string{sluicev1.AnnotationApproveFleet: "2026-03-01T11:59:00Z"}},
		Spec: sluicev1.DataPlaneSpec{Mesh: sluicev1.MeshLinkerd, Version: "edge-26.8.3", CanaryNamespaces: []string{"shop"}}}
	if err := env.Client.Create(ctx, dp); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), dp) })
	blocked := "eviction of pod billing/db-1 (StatefulSet db) refused by PodDisruptionBudget billing/db (0 disruptions allowed, 1 of 2 pods healthy)"
	dp.Status = sluicev1.DataPlaneStatus{
		Phase: sluicev1.DataPlaneProgressing, Version: "edge-26.8.3", ConvergedVersion: "edge-26.6.3", CurrentWave: 1, Desired: 27, Current: 11,
		ControlPlane: sluicev1.ControlPlaneStatus{Version: "edge-26.8.3", Ready: true},
		Waves: []sluicev1.DataPlaneWave{{Namespaces: []string{"shop"}, Phase: sluicev1.WaveSucceeded},
			{Namespaces: []string{"billing", "search"}, Phase: sluicev1.WaveRestarting}, {Namespaces: []string{"web"}, Phase: sluicev1.WavePending}},
		Namespaces: []sluicev1.DataPlaneNamespace{
			{Namespace: "shop", Wave: 0, Desired: 7, Current: 6, Status: sluicev1.NamespaceUpToDate, Reason: sluicev1.ReasonUnmanagedPods},
			{Namespace: "billing", Wave: 1, Desired: 6, Current: 3, Status: sluicev1.NamespaceBlocked, Reason: sluicev1.ReasonEvictionBlocked},
			{Namespace: "search", Wave: 1, Desired: 6, Current: 2, Status: sluicev1.NamespaceRestarting},
			{Namespace: "web", Wave: 2, Desired: 8, Current: 0, Status: sluicev1.NamespacePending},
		},
		Skipped:                  []sluicev1.SkippedNamespace{{Namespace: "kube-system", Reason: sluicev1.ReasonProtectedNamespace}},
		UnmanagedPods:            []string{"shop/debug"},
		LastUpdateAttempt:        at(-10 * time.Second),
		LastUpdateAttemptResult:  sluicev1.UpdateAttemptBlocked,
		LastUpdateAttemptMessage: blocked,
		LastHandledRequests:      map[string]string{sluicev1.AnnotationApproveFleet: "2026-03-01T11:59:00Z"},
		Conditions: []metav1.Condition{
			{Type: sluicev1.ConditionReady, Status: metav1.ConditionUnknown, Reason: sluicev1.ReasonWaveRestarting,
				Message: "Wave 1 of 2 (billing, search) restarting: 5 of 12 meshed pods on edge-26.8.3", LastTransitionTime: *at(-2 * time.Minute)},
			{Type: sluicev1.ConditionBlocked, Status: metav1.ConditionTrue, Reason: sluicev1.ReasonEvictionBlocked, Message: blocked,
				LastTransitionTime: *at(-10 * time.Second)},
		},
	}
	if err := env.Client.Status().Update(ctx, dp); err != nil {
		t.Fatal(err)
	}
	out, err := run(t, ns, "status", "dataplane", dp.Name)
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "status-dataplane.golden", strings.ReplaceAll(out, ns, "NAMESPACE"))
	if _, err := run(t, ns, "status", "deployment", "x"); err == nil || !strings.Contains(err.Error(), `unknown kind "deployment"`) {
		t.Fatalf("status deployment x: %v", err)
	}
}

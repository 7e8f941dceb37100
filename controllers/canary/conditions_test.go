package canary

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
	"sluice.dev/sluice/controllers/canary/plan"
	"sluice.dev/sluice/webhooks"
)

// TestConditionsNameWhatHoldsTheRun: while a run holds, kubectl describe says why, for every kind
// of hold that is not a check verdict: a canary below its ready threshold (weight 0, waiting under
// the deadline) and a confirm gate that refused the next step.
func TestConditionsNameWhatHoldsTheRun(t *testing.T) {
	t.Run("unready canary", func(t *testing.T) {
		h := newHarness(t)
		h.app(2, "6.0.0")
		h.create(h.canaryFor())
		h.runUntil(sluicev1.CanaryPhaseInitialized, 10)
		h.setImage("6.0.1")
		for i := 0; i < 20 && h.canary().Status.CanaryWeight == 0; i++ {
			h.tick()
		}
		// The canary loses its ready pods; nothing plays the Deployment controller any more.
		d := h.deployment("podinfo")
		patch := client.MergeFrom(d.DeepCopy())
		d.Status.ReadyReplicas, d.Status.AvailableReplicas = 0, 0
		if err := h.c.Status().Patch(h.ctx, d, patch); err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 2; i++ {
			if _, err := h.r.Reconcile(h.ctx, ctrl.Request{NamespacedName: client.ObjectKey{Namespace: h.ns, Name: h.name}}); err != nil {
				t.Fatal(err)
			}
			h.clock.Step(time.Second)
		}
		c := h.canary()
		ready := findCondition(c, sluicev1.ConditionReady)
		if c.Status.CanaryWeight != 0 || ready == nil || ready.Reason != sluicev1.ReasonCanaryUnready ||
			!strings.Contains(ready.Message, "0/2 ready pods") {
			t.Fatalf("weight %d, Ready %+v: want weight 0 and a condition naming the unready canary", c.Status.CanaryWeight, ready)
		}
	})
	t.Run("refused gate", func(t *testing.T) {
		h := newHarness(t)
		refusing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			w.WriteHeader(http.StatusForbidden)
		}))
		t.Cleanup(refusing.Close)
		runner := webhooks.NewRunner(webhooks.Options{Egress: loopbackAllowed})
		t.Cleanup(runner.Close)
		h.r.Gates = runner
		h.app(1, "6.0.0")
		c := h.canaryFor()
		c.Spec.Analysis.Webhooks = []sluicev1.CanaryWebhook{{Name: "ti", Type: sluicev1.WebhookConfirmTrafficIncrease, URL: refusing.URL}}
		h.create(c)
		h.runUntil(sluicev1.CanaryPhaseInitialized, 10)
		h.setImage("6.0.1")
		var ready *metav1.Condition
		for i := 0; i < 40; i++ {
			h.tick()
			time.Sleep(20 * time.Millisecond) // the gate's call runs in the background
			if ready = findCondition(h.canary(), sluicev1.ConditionReady); ready != nil && ready.Reason == plan.EventWaitingAtGate {
				break
			}
		}
		if ready == nil || ready.Reason != plan.EventWaitingAtGate || !strings.Contains(ready.Message, "confirm-traffic-increase gate: ti (refused: HTTP 403") {
			t.Fatalf("Ready %+v: want a condition naming the refusing confirm-traffic-increase gate", ready)
		}
		if w := h.canary().Status.CanaryWeight; w != 0 {
			t.Fatalf("weight %d past a refusing gate", w)
		}
	})
}

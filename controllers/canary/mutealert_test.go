package canary

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
)

// TestMuteAlertMutesTheAlertsOfItsWebhook (issue 16, Flagger's webhooks[].muteAlert): a
// confirm-rollout gate kept closed by a webhook with muteAlert sends no "waiting at the gate"
// alert (without muteAlert it sends one), and a failing pre-rollout webhook with muteAlert sends
// no pre-rollout alert while the rollback it leads to is still alerted. The Kubernetes events are
// recorded either way.
func TestMuteAlertMutesTheAlertsOfItsWebhook(t *testing.T) {
	closed := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "gate closed", http.StatusForbidden)
	}))
	defer closed.Close()
	for _, tt := range []struct {
		name     string
		hookType sluicev1.WebhookType
		muted    bool
		until    sluicev1.CanaryPhase
		// alerts mentioning absent must number wantAbsent; those mentioning present must be there.
		absent     string
		wantAbsent int
		present    string
		event      string
	}{
		{"gate muted", sluicev1.WebhookConfirmRollout, true, sluicev1.CanaryPhaseWaiting, "confirm-rollout gate", 0, "", "[WaitingAtGate]"},
		{"gate not muted", sluicev1.WebhookConfirmRollout, false, sluicev1.CanaryPhaseWaiting, "confirm-rollout gate", 1, "", "[WaitingAtGate]"},
		{"pre-rollout muted", sluicev1.WebhookPreRollout, true, sluicev1.CanaryPhaseFailed, "Pre-rollout", 0, "Rolling back", "[PreRolloutFailed]"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t)
			h.app(1, "1")
			rcv := newSlackReceiver(t)
			c := fastCanary(h.ns)
			c.Spec.Analysis.Threshold = 2
			c.Spec.Analysis.Webhooks = []sluicev1.CanaryWebhook{{Name: "gate", Type: tt.hookType, URL: closed.URL, Timeout: "2s", MuteAlert: tt.muted}}
			addSlackAlert(t, h.ns, c, rcv.srv.URL, sluicev1.SeverityWarn)
			playDeploymentController(t, h.ns)
			m := startManager(t, h.ns, "", &scriptedAnalyzer{})
			h.create(c)
			waitFor(t, h.ns, "podinfo", 30*time.Second, "Initialized", func(c *sluicev1.Canary) bool {
				return c.Status.Phase == sluicev1.CanaryPhaseInitialized
			})
			h.setImage("2")
			waitFor(t, h.ns, "podinfo", 60*time.Second, string(tt.until), func(c *sluicev1.Canary) bool { return c.Status.Phase == tt.until })
			time.Sleep(3 * time.Second) // two more intervals: a repeated or late alert would arrive
			got := rcv.all()
			count := func(s string) int {
				n := 0
				for _, m := range got {
					if strings.Contains(m, s) {
						n++
					}
				}
				return n
			}
			if n := count(tt.absent); n != tt.wantAbsent {
				t.Fatalf("%d alerts mentioning %q, want %d:\n%s", n, tt.absent, tt.wantAbsent, strings.Join(got, "\n"))
			}
			if tt.present != "" && count(tt.present) != 1 {
				t.Fatalf("no single alert mentioning %q:\n%s", tt.present, strings.Join(got, "\n"))
			}
			if !strings.Contains(strings.Join(m.events.drain(), "\n"), tt.event) {
				t.Fatalf("no %s Kubernetes event: a muted alert must still be recorded", tt.event)
			}
		})
	}
}

package manager_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
	"sluice.dev/sluice/controllers/manager"
	"sluice.dev/sluice/egress"
	"sluice.dev/sluice/test/testenv"
)

// TestWebhookDestinations runs three Canaries whose pre-rollout webhook
//   - answers with a redirect to a second local server: the gate fails on the 302 and the second
//     server never receives a request;
//   - is the cloud metadata address 169.254.169.254: the Canary is Stalled naming the webhook (not
//     the address) and nothing is dialed (the refusal comes before any connection);
//   - answers 500 with a body: status and events keep "HTTP 500 Internal Server Error", never
//     the body.
func TestWebhookDestinations(t *testing.T) {
	testenv.Require(t, env)
	const secretBody = "internal-token-7f3a"
	target := newRecorder(t, nil)
	redirecting := newRecorder(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, target.URL+"/landed", http.StatusFound)
	}))
	failing := newRecorder(t, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "upstream says: "+secretBody, http.StatusInternalServerError)
	}))

	ns := env.Namespace(t)
	hooks := map[string]string{
		"redirect": redirecting.URL + "/gate",
		"metadata": "http://169.254.169.254/latest/meta-data/iam/security-credentials/",
		"failing":  failing.URL + "/gate",
	}
	for name, url := range hooks {
		app(t, ns, name, nil)
		c := canaryFor(ns, name)
		c.Spec.Analysis.Webhooks = []sluicev1.CanaryWebhook{{Name: "load-test", Type: sluicev1.WebhookPreRollout, URL: url, Timeout: "5s"}}
		create(t, c)
	}
	// The receivers listen on 127.0.0.1.
	startManager(t, nil, manager.Options{Namespaces: []string{ns}, AllowEgressTo: []string{egress.Loopback}})

	refused := waitCanary(t, ns, "metadata", 30*time.Second, "Stalled naming the refused webhook",
		stalledWith(sluicev1.ReasonDestinationRefused, `webhook "load-test"`, "link-local or cloud-metadata"))
	if status, _ := json.Marshal(refused.Status); strings.Contains(string(status), "169.254") {
		t.Errorf("the status names the refused address: %s", status)
	}
	for _, name := range []string{"redirect", "failing"} {
		waitCanary(t, ns, name, 30*time.Second, "Initialized", func(c *sluicev1.Canary) bool {
			return c.Status.Phase == sluicev1.CanaryPhaseInitialized
		})
		setImage(t, ns, name, "app:2")
	}
	waitEvent(t, ns, "redirect", 30*time.Second, "HTTP 302 Found (redirects are not followed)")
	waitEvent(t, ns, "failing", 30*time.Second, "HTTP 500 Internal Server Error")

	if n := len(redirecting.recorded()); n == 0 {
		t.Fatal("the redirecting webhook was never called")
	}
	if got := target.recorded(); len(got) > 0 {
		t.Fatalf("the redirect was followed: the second server got %+v", got)
	}
	for _, name := range []string{"failing", "redirect", "metadata"} {
		c := waitCanary(t, ns, name, time.Second, "readable", func(*sluicev1.Canary) bool { return true })
		status, _ := json.Marshal(c.Status)
		if strings.Contains(string(status), secretBody) {
			t.Fatalf("canary %s: the webhook's response body reached the status: %s", name, status)
		}
		for _, note := range eventNotes(t, ns, name) {
			if strings.Contains(note, secretBody) {
				t.Fatalf("canary %s: the webhook's response body reached an event: %s", name, note)
			}
		}
	}
}

// waitEvent waits for an event about Canary ns/name whose note contains fragment.
func waitEvent(t *testing.T, ns, name string, timeout time.Duration, fragment string) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	var notes []string
	for time.Now().Before(deadline) {
		notes = eventNotes(t, ns, name)
		for _, n := range notes {
			if strings.Contains(n, fragment) {
				return
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("canary %s/%s: no event mentions %q after %s; events:\n%s", ns, name, fragment, timeout, strings.Join(notes, "\n"))
}

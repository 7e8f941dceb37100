package canary

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
	"sluice.dev/sluice/test/faults"
	"sluice.dev/sluice/webhooks"
)

// hookCounter is a pre-rollout webhook that counts its calls per revision.
type hookCounter struct {
	mu    sync.Mutex
	calls map[string]int
}

func (h *hookCounter) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var p webhooks.Payload
	_ = json.NewDecoder(r.Body).Decode(&p)
	h.mu.Lock()
	h.calls[p.Checksum]++
	h.mu.Unlock()
	w.WriteHeader(http.StatusOK)
}

// faultRun is the outcome of one golden run under a fault.
type faultRun struct {
	final      string  // the part of the final state every run must agree on
	analyses   int     // analyses run
	hookCalls  int     // pre-rollout webhook calls (max per revision)
	routeTrail []int32 // canary weights the route took, in order
	// configTrail is the data ("mode") the primary's ConfigMap copy held, in order.
	configTrail []string
	// outage names the first moment the route sent traffic to a canary scaled to zero.
	outage string
	hit    []faults.Fault
	counts map[faults.Kind]int
	log    []string
}

// goldenRun is a golden run of the fault-injection table.
type goldenRun struct {
	name string
	// bad: the run fails and rolls back.
	bad bool
	// promoting: the release also changes the mounted ConfigMap, and the checks fail only once
	// the primary has been promoted (stepWeightPromotion), so the rollback must restore the
	// primary's template and its config copies.
	promoting bool
}

// goldens are the runs TestFaultInjectionOverEveryWrite faults every write of.
var goldens = []goldenRun{{name: "rollout"}, {name: "rollback", bad: true}, {name: "rollback-after-promotion", bad: true, promoting: true}}

// runGolden runs a golden run with fault armed after initialization; a crash restarts the
// controller with an empty memory (a new Reconciler and webhook runner).
func runGolden(t *testing.T, g goldenRun, fault *faults.Fault) faultRun {
	t.Helper()
	h := newHarness(t)
	hooks := &hookCounter{calls: map[string]int{}}
	srv := httptest.NewServer(hooks)
	defer srv.Close()
	switch {
	case g.promoting:
		h.analyzer.failIn = sluicev1.CanaryPhasePromoting
	case g.bad:
		h.analyzer.fail = func(w int32) bool { return w >= 20 }
	}
	h.app(2, "6.0.0")
	c := h.canaryFor()
	c.Spec.Analysis.Webhooks = []sluicev1.CanaryWebhook{{Name: "load-test", Type: sluicev1.WebhookPreRollout, URL: srv.URL}}
	if g.promoting {
		c.Spec.Analysis.StepWeightPromotion = 10
		c.Spec.Analysis.Threshold = 2
	}
	h.create(c)
	runner := webhooks.NewRunner(webhooks.Options{Egress: loopbackAllowed})
	defer runner.Close()
	h.r.Gates = runner
	h.runUntil(sluicev1.CanaryPhaseInitialized, 10)

	var fc *faults.Client
	restart := func() {
		var fs []faults.Fault
		if fault != nil && fc == nil {
			fs = append(fs, *fault)
		}
		if fc == nil {
			fc = faults.Wrap(env.Client, fs...)
		}
		fc.Restart()
		runner.Close()
		runner = webhooks.NewRunner(webhooks.Options{Egress: loopbackAllowed})
		h.r = h.reconciler(fc, Options{})
		h.r.Gates = runner
	}
	restart()
	h.setImage("6.0.1")
	if g.promoting {
		h.setConfig("v2")
	}
	var trail []int32
	var configTrail []string
	outage := ""
	want := sluicev1.CanaryPhaseSucceeded
	if g.bad {
		want = sluicev1.CanaryPhaseFailed
	}
	settle := 0
	for i := 0; i < 150 && settle < 4; i++ {
		res, err := h.r.Reconcile(h.ctx, ctrl.Request{NamespacedName: client.ObjectKey{Namespace: h.ns, Name: h.name}})
		if fc.Crashed() {
			restart()
		}
		markDeploymentsRolledOut(t, env.Client, h.ns)
		h.record()
		if w := h.routeWeights(); w.Canary >= 0 && (len(trail) == 0 || trail[len(trail)-1] != w.Canary) {
			trail = append(trail, w.Canary)
		}
		if w := h.routeWeights(); w.Canary > 0 && ptr.Deref(h.deployment("podinfo").Spec.Replicas, 1) == 0 && outage == "" {
			outage = fmt.Sprintf("the route sends %d%% to a canary scaled to 0 (phase %s)", w.Canary, h.last.Phase)
		}
		if m := h.primaryConfigMode(); len(configTrail) == 0 || configTrail[len(configTrail)-1] != m {
			configTrail = append(configTrail, m)
		}
		if h.last.Phase == want {
			settle++
		}
		wait := res.RequeueAfter
		if err != nil || wait <= 0 {
			wait = time.Second
		}
		// Webhook calls run in the background on the real clock.
		time.Sleep(20 * time.Millisecond)
		h.clock.Step(wait)
	}
	c = h.canary()
	s := c.Status
	w := h.routeWeights()
	primary := h.deployment("podinfo-primary")
	final := fmt.Sprintf("phase=%s weight=%d failed=%d iterations=%d promoted-is-applied=%v route=%d/%d canary-replicas=%d primary-image=%s "+
		"primary-revision-is-promoted=%v primary-config=%s config-restore-points=%d",
		s.Phase, s.CanaryWeight, s.FailedChecks, s.Iterations, s.LastPromotedSpec == s.LastAppliedSpec, w.Primary, w.Canary,
		*h.deployment("podinfo").Spec.Replicas, primary.Spec.Template.Spec.Containers[0].Image,
		primary.Annotations[AnnotationRevision] == s.LastPromotedSpec, h.primaryConfigMode(), h.restorePoints())
	run := faultRun{final: final, analyses: h.analyzer.Calls(), routeTrail: trail, configTrail: configTrail, outage: outage, log: h.log}
	for _, n := range hooks.calls {
		run.hookCalls = max(run.hookCalls, n)
	}
	run.hit, run.counts = fc.Hit(), fc.Counts()
	return run
}

// TestFaultInjectionOverEveryWrite runs a golden rollout and a golden rollback once without faults,
// counting the writes of each kind, then once for every write of every kind, failing it, dropping
// it, and crashing right after it. Every run ends in the fault-free final state, runs no more
// analyses than the fault-free run, calls the pre-rollout webhook once, and never moves traffic
// backwards then forwards.
func TestFaultInjectionOverEveryWrite(t *testing.T) {
	if testing.Short() {
		t.Skip("long: one envtest run per write")
	}
	for _, tc := range goldens {
		t.Run(tc.name, func(t *testing.T) {
			clean := runGolden(t, tc, nil)
			counts := clean.counts
			t.Logf("fault-free: %s; writes %v", clean.final, counts)
			if clean.outage != "" {
				t.Fatalf("fault-free run: %s", clean.outage)
			}
			if tc.promoting {
				// The fault-free run itself: the primary and its config copy were promoted, then
				// both returned to the last promoted revision, and no restore point is left.
				if fmt.Sprint(clean.configTrail) != "[v1 v2 v1]" || !strings.Contains(clean.final, "primary-image=ghcr.io/stefanprodan/podinfo:6.0.0 ") ||
					!strings.Contains(clean.final, "phase=Failed") || !strings.Contains(clean.final, "primary-revision-is-promoted=true primary-config=v1 config-restore-points=0") {
					t.Fatalf("fault-free rollback after promotion: config trail %v, final %s\n%s", clean.configTrail, clean.final, strings.Join(clean.log, "\n"))
				}
			}
			runs := 0
			for _, kind := range faults.Kinds {
				for n := 1; n <= counts[kind]; n++ {
					for _, mode := range []faults.Mode{faults.Fail, faults.Drop, faults.Crash} {
						f := faults.Fault{Kind: kind, N: n, Mode: mode}
						got := runGolden(t, tc, &f)
						runs++
						if len(got.hit) == 0 {
							continue // the run took another path with fewer writes of this kind
						}
						where := fmt.Sprintf("%s: %v\n%s", f, got.routeTrail, strings.Join(got.log, "\n"))
						if got.final != clean.final {
							t.Errorf("%s: final state\n got %s\nwant %s", where, got.final, clean.final)
						}
						if got.analyses > clean.analyses {
							t.Errorf("%s: %d analyses, fault-free %d", where, got.analyses, clean.analyses)
						}
						if got.hookCalls != 1 {
							t.Errorf("%s: pre-rollout webhook called %d times", where, got.hookCalls)
						}
						if tc.promoting && got.configTrail[len(got.configTrail)-1] != "v1" {
							t.Errorf("%s: the primary's config copy ends at %v", where, got.configTrail)
						}
						if got.outage != "" {
							t.Errorf("%s: %s", where, got.outage)
						}
						if backAndForth(got.routeTrail) {
							t.Errorf("%s: traffic moved backwards then forwards", where)
						}
					}
				}
			}
			t.Logf("%d faulted runs", runs)
		})
	}
}

func backAndForth(trail []int32) bool {
	for i := 2; i < len(trail); i++ {
		if trail[i-1] < trail[i-2] && trail[i] > trail[i-1] {
			return true
		}
	}
	return false
}

// restorePoints counts the config restore points (ConfigMaps named *-restore) in the harness's
// namespace.
func (h *harness) restorePoints() int {
	h.t.Helper()
	var list corev1.ConfigMapList
	if err := h.c.List(h.ctx, &list, client.InNamespace(h.ns)); err != nil {
		h.t.Fatalf("listing configmaps: %v", err)
	}
	n := 0
	for _, cm := range list.Items {
		if strings.HasSuffix(cm.Name, restoreSuffix) {
			n++
		}
	}
	return n
}

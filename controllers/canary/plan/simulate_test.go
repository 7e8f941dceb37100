package plan

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/utils/ptr"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
	"sluice.dev/sluice/test/golden"
)

// world is a simulated cluster for whole-rollout runs of Decide: Deployments become ready at once
// (unless held), the route holds whatever weight was last set, and analysis answers by a function.
type world struct {
	now              time.Time
	start            time.Time
	spec             sluicev1.CanarySpec
	status           sluicev1.CanaryStatus
	targetRevision   string
	primaryRevision  string
	primaryReplicas  int32
	canaryReplicas   int32
	canaryNeverReady bool
	primaryRolling   bool // the primary's rollout has not finished (its ready pods still serve)
	primaryDown      bool // the primary has no ready pod
	// primaryNotAvailable counts the primary's ready pods within minReadySeconds.
	primaryNotAvailable int32
	// primaryEndpoints, when set, is what the primary Service's EndpointSlices list, read (as
	// the controller does) for a tick that would send all traffic back to the primary.
	primaryEndpoints *Endpoints
	routeWeight      int32
	abOn             bool   // the route holds A/B rules
	mirror           int32  // the route mirrors this percentage to the canary
	cookie           string // the route's session-affinity cookie
	analysis         func(w *world) Check
	gates            func(t sluicev1.WebhookType, w *world) GateResult
	// calls, when set, answers the gates instead of gates: webhook calls that take time, as the
	// controller and its webhook runner resolve them (pending_test.go).
	calls       *callSim
	requests    map[string]string
	hold, stall *Hold
	// lose, when set, says whether a write of this tick is lost (the status, or an action);
	// lost writes never reach the world, as with a conflict or a crash.
	lose     func(w *world, d Decision, write string) bool
	checks   int     // analyses run
	restores int     // primary restores
	routeLog []int32 // every canary weight the route took, in order
	lostNow  string  // what this tick lost, for the log
	log      []string
	// invariants
	weightsSeen []int32
	// next is the last decision's RequeueAfter; seen is the workloads the last tick observed. The
	// next tick comes at next, or watchLatency after a change of the workloads (by the tick's own
	// actions or by the test between ticks): the controller watches them (plan/waits.go).
	next  time.Duration
	seen  workloads
	ticks int
	// rolled: the last tick wrote a workload (scaled or rolled the canary or the primary): its pods
	// change, and their status events wake the Canary, even where this world's pods are ready at once.
	rolled bool
}

// workloads is the part of the world the controller watches for a Canary's waits: the canary's
// and the primary's pods (a new target revision, which a watch also reports at once, is left out:
// tests set it when they want the next tick to see it).
type workloads struct {
	primaryRevision                                      string
	primaryReplicas, canaryReplicas, primaryNotAvailable int32
	canaryNeverReady, primaryRolling, primaryDown        bool
	// watchedEndpoints are the primary's endpoints when the controller watches their slices
	// (Endpoints.Watched); zero otherwise.
	watchedEndpoints Endpoints
}

// watchLatency is how long after a change of a watched workload its watch event wakes the
// Canary in this world (pods starting, the Deployment controller counting them, the event).
const watchLatency = PollInterval

func (w *world) workloads() workloads {
	var eps Endpoints
	if w.primaryEndpoints != nil && w.primaryEndpoints.Watched {
		eps = *w.primaryEndpoints
	}
	return workloads{w.primaryRevision, w.primaryReplicas, w.canaryReplicas, w.primaryNotAvailable,
		w.canaryNeverReady, w.primaryRolling, w.primaryDown, eps}
}

// advance moves the clock to the next tick: when the last decision asked, or sooner when a watched
// workload changed since the last tick observed it.
func (w *world) advance() {
	if w.ticks == 0 {
		return
	}
	next := w.next
	idle := w.status.Phase == sluicev1.CanaryPhaseInitialized || w.status.Phase == sluicev1.CanaryPhaseSucceeded ||
		w.status.Phase == sluicev1.CanaryPhaseFailed
	if !idle && (w.rolled || w.workloads() != w.seen) { // an idle Canary's tests set the next revision for the next tick
		next = min(next, watchLatency)
	}
	w.now = w.now.Add(next)
}

func newWorld(spec sluicev1.CanarySpec) *world {
	start := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	return &world{
		now: start, start: start, spec: spec,
		targetRevision: "rev-1", primaryReplicas: 2, canaryReplicas: 2,
		analysis: func(*world) Check { return Check{} },
		gates:    func(sluicev1.WebhookType, *world) GateResult { return GateResult{Passed: true} },
	}
}

func (w *world) observe() Observed {
	canaryReady := w.canaryReplicas
	if w.canaryNeverReady {
		canaryReady = 0
	}
	primaryReady := w.primaryReplicas
	if w.primaryDown {
		primaryReady = 0
	}
	o := Observed{
		Now: w.now, Spec: w.spec, Status: w.status, Revision: w.targetRevision,
		Primary: Workload{Exists: w.primaryRevision != "", Revision: w.primaryRevision,
			Desired: w.primaryReplicas, Ready: primaryReady, Updated: w.primaryReplicas, RolledOut: !w.primaryRolling,
			ReadyNotAvailable: w.primaryNotAvailable},
		Canary: Workload{Exists: true, Revision: w.targetRevision, Desired: w.canaryReplicas,
			Ready: canaryReady, Updated: w.canaryReplicas, RolledOut: true},
		RouteWeight: w.routeWeight, RouteKnown: true, RouteABOn: w.abOn, RouteABKnown: true,
		RouteMirror: w.mirror, RouteCookie: w.cookie, RouteExtrasKnown: true,
		Hold: w.hold, Stall: w.stall,
	}
	if o.Stall == nil { // as the controller's observe step does
		o.Stall = PrimaryUnready(o)
	}
	return o
}

// lost reports whether write (the status, or an action's name) of d is lost this tick.
func (w *world) lost(d Decision, write string) bool {
	return w.lose != nil && w.lose(w, d, write)
}

// tick runs one reconcile: analysis when due, Decide, then the actions.
func (w *world) tick(t *testing.T) Decision {
	t.Helper()
	w.advance()
	w.ticks++
	w.seen, w.rolled = w.workloads(), false
	o := w.observe()
	o.Requests = w.requests
	for _, gt := range GatesDue(o) {
		if o.Gates == nil {
			o.Gates = map[sluicev1.WebhookType]GateResult{}
		}
		if w.calls != nil {
			o.Gates[gt] = w.calls.resolve(w, &o, gt)
			continue
		}
		o.Gates[gt] = w.gates(gt, w)
	}
	if AnalysisDue(o) {
		c := w.analysis(w)
		o.Check = &c
		w.checks++
	}
	d := Decide(o)
	if w.primaryEndpoints != nil && ReturnsAllTraffic(o, d) { // as the controller's step does
		e := *w.primaryEndpoints
		o.PrimaryEndpoints = &e
		d = Decide(o)
	}
	before := w.status
	w.lostNow = ""
	statusLost := w.lost(d, "status")
	if d.StatusFirst && !statusLost {
		w.status = d.Status
	}
	for _, a := range d.Actions {
		if d.StatusFirst && statusLost {
			break // the status write failed first: no action runs
		}
		if w.lost(d, string(a)) {
			w.lostNow = string(a)
			break // a write that fails ends the tick's writes
		}
		switch a {
		case ActionRestorePrimary, ActionScaleCanaryUp, ActionScaleCanaryDown, ActionPromotePrimary, ActionScalePrimaryUp:
			w.rolled = true
		}
		switch a {
		case ActionRestorePrimary:
			w.primaryRevision = w.status.LastPromotedSpec
			w.restores++
		case ActionScaleCanaryUp:
			w.canaryReplicas = w.primaryReplicas
		case ActionScaleCanaryDown:
			if w.abOn {
				t.Fatal("canary scaled down while A/B routing sends it requests")
			}
			if w.cookie != "" || w.mirror != 0 {
				t.Fatalf("canary scaled down while the route still has cookie %q / mirror %d", w.cookie, w.mirror)
			}
			if w.routeWeight > 0 {
				t.Fatalf("canary scaled down while the route still sends it %d%% (phase %s)", w.routeWeight, d.Status.Phase)
			}
			w.canaryReplicas = 0
		case ActionPromotePrimary:
			w.primaryRevision = w.targetRevision
		case ActionScalePrimaryUp:
			w.primaryReplicas = max(w.primaryReplicas, d.PrimaryReplicas)
		case ActionSetWeights:
			if d.Status.CanaryWeight < 0 || d.Status.CanaryWeight > 100 {
				t.Fatalf("weight %d outside 0..100", d.Status.CanaryWeight)
			}
			if d.Status.CanaryWeight > 0 && (w.canaryReplicas == 0 || w.canaryNeverReady) {
				t.Fatalf("weight %d routed to a canary with no ready replicas", d.Status.CanaryWeight)
			}
			if IsAB(w.spec) && d.Status.CanaryWeight != 0 {
				t.Fatalf("weight %d in an A/B run", d.Status.CanaryWeight)
			}
			if IsBlueGreen(w.spec) && d.Status.CanaryWeight != 0 &&
				(d.Status.CanaryWeight != 100 || d.Status.Phase != sluicev1.CanaryPhasePromoting) {
				t.Fatalf("weight %d in phase %s of a blue/green run: only 0, or 100 once promotion starts", d.Status.CanaryWeight, d.Status.Phase)
			}
			promotionEnds := before.Phase == sluicev1.CanaryPhasePromoting &&
				(d.Status.Phase == sluicev1.CanaryPhaseFinalising || d.Status.Phase == sluicev1.CanaryPhaseSucceeded)
			if d.Status.CanaryWeight == 0 && w.routeWeight > 0 && promotionEnds && w.primaryReplicas < w.canaryReplicas {
				t.Fatalf("all traffic shifted to a primary with %d ready replicas from a canary with %d", w.primaryReplicas, w.canaryReplicas)
			}
			if w.routeWeight != d.Status.CanaryWeight {
				w.routeLog = append(w.routeLog, d.Status.CanaryWeight)
			}
			w.routeWeight = d.Status.CanaryWeight
			if d.Status.Phase == sluicev1.CanaryPhaseProgressing {
				w.weightsSeen = append(w.weightsSeen, w.routeWeight)
			}
		case ActionABRoutesOn:
			if w.canaryReplicas == 0 || w.canaryNeverReady {
				t.Fatal("A/B routing turned on to a canary with no ready replicas")
			}
			w.abOn = true
		case ActionABRoutesOff:
			w.abOn = false
		case ActionMirrorOn:
			if w.canaryReplicas == 0 || w.canaryNeverReady || w.routeWeight != 0 {
				t.Fatalf("mirroring turned on with canary replicas %d at weight %d", w.canaryReplicas, w.routeWeight)
			}
			w.mirror = MirrorWeight(w.spec)
		case ActionMirrorOff:
			w.mirror = 0
		case ActionAffinityOn:
			if w.canaryReplicas == 0 || w.canaryNeverReady {
				t.Fatal("session affinity turned on to a canary with no ready replicas")
			}
			w.cookie = AffinityCookie(w.spec, d.Status)
		case ActionAffinityOff:
			w.cookie = ""
		}
	}
	if !w.canaryNeverReady {
		if want := MirrorWanted(w.spec, d.Status); w.mirror != want {
			t.Fatalf("route mirrors %d%% after the actions, status says %d%% (phase %s)", w.mirror, want, d.Status.Phase)
		}
		if want := AffinityCookie(w.spec, d.Status); w.cookie != want {
			t.Fatalf("route cookie %q after the actions, status says %q (phase %s)", w.cookie, want, d.Status.Phase)
		}
	}
	if want := ABRouted(w.spec, d.Status); w.abOn != want {
		t.Fatalf("route A/B routing %v after the actions, status says %v (phase %s)", w.abOn, want, d.Status.Phase)
	}
	if d.Status.Phase == sluicev1.CanaryPhaseSucceeded && before.Phase != sluicev1.CanaryPhaseSucceeded &&
		w.primaryRevision != d.Status.LastAppliedSpec {
		t.Fatalf("Succeeded while the primary runs %s, not %s", w.primaryRevision, d.Status.LastAppliedSpec)
	}
	switch {
	case statusLost:
		w.lostNow = "status"
	case w.lostNow != "" && !d.StatusFirst:
		// an action failed: the controller keeps the old status
	default:
		w.status = d.Status
	}
	w.record(before, d)
	w.next = d.RequeueAfter
	return d
}

func (w *world) record(before sluicev1.CanaryStatus, d Decision) {
	s := d.Status
	if before.Phase == s.Phase && before.CanaryWeight == s.CanaryWeight &&
		before.FailedChecks == s.FailedChecks && len(d.Events) == 0 {
		return
	}
	line := fmt.Sprintf("%6s  %-16s weight=%-3d primary=%-3d failed=%d", w.now.Sub(w.start), s.Phase,
		s.CanaryWeight, 100-s.CanaryWeight, s.FailedChecks)
	if IsBlueGreen(w.spec) {
		line += fmt.Sprintf(" iterations=%d/%d", s.Iterations, w.spec.Analysis.Iterations)
	}
	if w.spec.Analysis.Mirror {
		line += fmt.Sprintf(" mirror=%d", w.mirror)
	}
	if w.spec.Analysis.SessionAffinity != nil {
		line += fmt.Sprintf(" cookie=%q", w.cookie)
	}
	if IsAB(w.spec) {
		ab := "off"
		if w.abOn {
			ab = "on"
		}
		line += fmt.Sprintf(" ab=%-3s iterations=%d/%d", ab, s.Iterations, w.spec.Analysis.Iterations)
	}
	for _, e := range d.Events {
		line += fmt.Sprintf("  [%s] %s", e.Reason, e.Message)
	}
	if w.lostNow != "" {
		line += "  (" + w.lostNow + " write lost)"
	}
	w.log = append(w.log, line)
}

// runUntil ticks until the phase is one of want after a run started, or fails after max ticks.
func (w *world) runUntil(t *testing.T, max int, want ...sluicev1.CanaryPhase) {
	t.Helper()
	for i := 0; i < max; i++ {
		w.tick(t)
		if slices.Contains(want, w.status.Phase) {
			return
		}
	}
	t.Fatalf("phase %s after %d ticks, want one of %v\n%s", w.status.Phase, max, want, strings.Join(w.log, "\n"))
}

// initialized brings a fresh world to Initialized (the controller created the primary from rev-1).
func (w *world) initialized(t *testing.T) {
	t.Helper()
	w.primaryRevision = w.targetRevision
	w.runUntil(t, 5, sluicev1.CanaryPhaseInitialized)
}

func seedSpec() sluicev1.CanarySpec {
	return sluicev1.CanarySpec{
		TargetRef: sluicev1.TargetReference{Kind: "Deployment", Name: "user-service"},
		Service:   sluicev1.CanaryService{Port: 8080},
		Analysis: sluicev1.CanaryAnalysis{Interval: "1m", Threshold: 5, MaxWeight: 50, StepWeight: 10,
			Metrics: []sluicev1.CanaryMetric{
				{Name: "request-success-rate", ThresholdRange: &sluicev1.ThresholdRange{Min: ptr.To(99.0)}},
				{Name: "request-duration", ThresholdRange: &sluicev1.ThresholdRange{Max: ptr.To(500.0)}},
			}},
	}
}

func passing(w *world) Check {
	return Check{Results: []sluicev1.MetricResult{{Name: "request-success-rate", Verdict: sluicev1.VerdictPass, Value: "99.80"}}}
}

func failingFrom(weight int32) func(w *world) Check {
	return func(w *world) Check {
		if w.status.CanaryWeight < weight {
			return passing(w)
		}
		return Check{Failed: true, Summary: "request-success-rate: Fail, value 80.00 outside [99, +Inf]",
			Results: []sluicev1.MetricResult{{Name: "request-success-rate", Verdict: sluicev1.VerdictFail, Value: "80.00"}}}
	}
}

func TestGoldenSuccessfulRollout(t *testing.T) {
	w := newWorld(seedSpec())
	w.analysis = passing
	w.initialized(t)
	w.targetRevision = "rev-2"
	w.runUntil(t, 50, sluicev1.CanaryPhaseSucceeded)
	if !slices.Equal(w.weightsSeen, []int32{0, 10, 20, 30, 40, 50}) {
		t.Errorf("weights %v, want 0 10 20 30 40 50", w.weightsSeen)
	}
	if w.routeWeight != 0 || w.canaryReplicas != 0 || w.primaryRevision != "rev-2" {
		t.Errorf("after promotion: route %d, canary replicas %d, primary %s", w.routeWeight, w.canaryReplicas, w.primaryRevision)
	}
	golden.Assert(t, "successful-rollout", w.log)
}

func TestGoldenRollbackAfterFailedChecks(t *testing.T) {
	w := newWorld(seedSpec())
	w.analysis = failingFrom(20)
	w.initialized(t)
	w.targetRevision = "rev-2"
	w.runUntil(t, 50, sluicev1.CanaryPhaseFailed)
	if w.status.FailedChecks != 5 || w.routeWeight != 0 || w.canaryReplicas != 0 || w.primaryRevision != "rev-1" {
		t.Errorf("after rollback: failed %d, route %d, canary replicas %d, primary %s",
			w.status.FailedChecks, w.routeWeight, w.canaryReplicas, w.primaryRevision)
	}
	// Failed is stable: more ticks do nothing until a new revision.
	for i := 0; i < 5; i++ {
		if d := w.tick(t); len(d.Events) != 0 || w.status.Phase != sluicev1.CanaryPhaseFailed {
			t.Fatalf("Failed canary acted again: %+v", d)
		}
	}
	golden.Assert(t, "rollback-failed-checks", w.log)
}

func TestGoldenNewRevisionRestartsRun(t *testing.T) {
	w := newWorld(seedSpec())
	w.analysis = passing
	w.initialized(t)
	w.targetRevision = "rev-2"
	for w.status.CanaryWeight < 30 {
		w.tick(t)
	}
	w.targetRevision = "rev-3"
	w.tick(t)
	if w.status.CanaryWeight != 0 || w.status.LastAppliedSpec != "rev-3" || w.status.Phase != sluicev1.CanaryPhaseProgressing {
		t.Fatalf("after new revision: weight %d, applied %s, phase %s", w.status.CanaryWeight, w.status.LastAppliedSpec, w.status.Phase)
	}
	w.runUntil(t, 50, sluicev1.CanaryPhaseSucceeded)
	if w.primaryRevision != "rev-3" {
		t.Fatalf("primary runs %s, want rev-3", w.primaryRevision)
	}
	golden.Assert(t, "new-revision-restarts", w.log)
}

func TestGoldenProgressDeadlineRollsBackOnce(t *testing.T) {
	spec := seedSpec()
	spec.ProgressDeadlineSeconds = ptr.To[int32](60)
	w := newWorld(spec)
	w.initialized(t)
	w.targetRevision = "rev-2"
	w.canaryNeverReady = true
	w.runUntil(t, 200, sluicev1.CanaryPhaseFailed)
	for i := 0; i < 10; i++ {
		w.tick(t)
	}
	rollbacks := 0
	for _, l := range w.log {
		rollbacks += strings.Count(l, "["+EventRollback+"]")
	}
	if rollbacks != 1 {
		t.Fatalf("%d rollbacks, want exactly 1\n%s", rollbacks, strings.Join(w.log, "\n"))
	}
	golden.Assert(t, "progress-deadline", w.log)
}

func TestGoldenStepWeightPromotion(t *testing.T) {
	spec := seedSpec()
	spec.Analysis.StepWeightPromotion = 20
	w := newWorld(spec)
	w.analysis = passing
	w.initialized(t)
	w.targetRevision = "rev-2"
	w.runUntil(t, 50, sluicev1.CanaryPhaseSucceeded)
	golden.Assert(t, "step-weight-promotion", w.log)
}

func TestWeightPlans(t *testing.T) {
	for _, tt := range []struct {
		name     string
		analysis sluicev1.CanaryAnalysis
		want     []int32
	}{
		{"15/61", sluicev1.CanaryAnalysis{StepWeight: 15, MaxWeight: 61}, []int32{0, 15, 30, 45, 60, 61}},
		{"7/50", sluicev1.CanaryAnalysis{StepWeight: 7, MaxWeight: 50}, []int32{0, 7, 14, 21, 28, 35, 42, 49, 50}},
		{"30/100", sluicev1.CanaryAnalysis{StepWeight: 30, MaxWeight: 100}, []int32{0, 30, 60, 90, 100}},
		{"1,2,10,80", sluicev1.CanaryAnalysis{StepWeights: []int32{1, 2, 10, 80}}, []int32{0, 1, 2, 10, 80}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			spec := seedSpec()
			spec.Analysis.StepWeight, spec.Analysis.MaxWeight = tt.analysis.StepWeight, tt.analysis.MaxWeight
			spec.Analysis.StepWeights = tt.analysis.StepWeights
			w := newWorld(spec)
			w.analysis = passing
			w.initialized(t)
			w.targetRevision = "rev-2"
			w.runUntil(t, 100, sluicev1.CanaryPhaseSucceeded)
			if !slices.Equal(w.weightsSeen, tt.want) {
				t.Fatalf("weights %v, want %v", w.weightsSeen, tt.want)
			}
		})
	}
}

func TestDecideTable(t *testing.T) {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	ready := Workload{Exists: true, RolledOut: true, Desired: 2, Ready: 2, Updated: 2, Revision: "rev-1"}
	base := func() Observed {
		return Observed{Now: now, Spec: seedSpec(), Revision: "rev-1", Primary: ready, Canary: Workload{Exists: true, RolledOut: true},
			RouteKnown: true, Status: sluicev1.CanaryStatus{Phase: sluicev1.CanaryPhaseSucceeded, LastAppliedSpec: "rev-1", LastPromotedSpec: "rev-1"}}
	}
	tests := []struct {
		name      string
		mutate    func(*Observed)
		wantPhase sluicev1.CanaryPhase
		wantW     int32
		actions   []Action
	}{
		{"idle steady state does nothing", func(o *Observed) {}, sluicev1.CanaryPhaseSucceeded, 0, nil},
		{"idle scales a scaled-up target down", func(o *Observed) { o.Canary.Desired = 3 }, sluicev1.CanaryPhaseSucceeded, 0, []Action{ActionScaleCanaryDown}},
		{"idle restores drifted weights", func(o *Observed) { o.RouteWeight = 30 }, sluicev1.CanaryPhaseSucceeded, 0, []Action{ActionSetWeights}},
		{"new revision starts a run at 0", func(o *Observed) { o.Revision = "rev-2" }, sluicev1.CanaryPhaseProgressing, 0, []Action{ActionSetWeights, ActionScaleCanaryUp}},
		{"new revision held waits", func(o *Observed) {
			o.Revision = "rev-2"
			o.Hold = &Hold{Reason: sluicev1.ReasonRolloutCapReached, Message: "2 canaries progressing (cap 2)"}
		}, sluicev1.CanaryPhaseWaiting, 0, nil},
		{"new revision held keeps its canary at zero", func(o *Observed) {
			o.Revision, o.Canary.Desired = "rev-2", 1
			o.Hold = &Hold{Reason: sluicev1.ReasonRolloutCapReached, Message: "the cap of 1 runs at once is reached"}
		}, sluicev1.CanaryPhaseWaiting, 0, []Action{ActionScaleCanaryDown}},
		{"new revision at a closed confirm-rollout gate keeps its canary at zero", func(o *Observed) {
			o.Revision, o.Canary.Desired = "rev-2", 1
			o.Spec.Analysis.Webhooks = []sluicev1.CanaryWebhook{{Name: "confirm", Type: sluicev1.WebhookConfirmRollout, URL: "http://hook/"}}
		}, sluicev1.CanaryPhaseWaiting, 0, []Action{ActionScaleCanaryDown}},
		{"revert to promoted revision after failure runs nothing and is Succeeded", func(o *Observed) {
			o.Status.Phase, o.Status.LastAppliedSpec = sluicev1.CanaryPhaseFailed, "rev-2"
		}, sluicev1.CanaryPhaseSucceeded, 0, nil},
		{"waiting run reverted to the failed revision stays failed", func(o *Observed) {
			o.Revision, o.Status.Phase, o.Status.LastAppliedSpec = "rev-2", sluicev1.CanaryPhaseWaiting, "rev-2"
		}, sluicev1.CanaryPhaseFailed, 0, nil},
		{"waiting run reverted to the promoted revision is done", func(o *Observed) {
			o.Status.Phase, o.Status.LastAppliedSpec = sluicev1.CanaryPhaseWaiting, "rev-2"
		}, sluicev1.CanaryPhaseSucceeded, 0, nil},
		{"failed revision is not retried", func(o *Observed) {
			o.Revision, o.Status.Phase, o.Status.LastAppliedSpec = "rev-2", sluicev1.CanaryPhaseFailed, "rev-2"
		}, sluicev1.CanaryPhaseFailed, 0, nil},
		{"skipAnalysis promotes directly", func(o *Observed) { o.Revision = "rev-2"; o.Spec.SkipAnalysis = true },
			sluicev1.CanaryPhasePromoting, 0, []Action{ActionSetWeights, ActionScaleCanaryUp, ActionPromotePrimary}},
		{"threshold reached in a gate wait rolls back", func(o *Observed) {
			o.Status.Phase, o.Status.LastAppliedSpec, o.Status.CanaryWeight, o.Status.FailedChecks = sluicev1.CanaryPhaseWaitingPromotion, "rev-1", 50, 5
			o.RouteWeight = 50
		}, sluicev1.CanaryPhaseFailed, 0, []Action{ActionSetWeights, ActionScaleCanaryDown}},
		{"no weight for an unready canary", func(o *Observed) {
			o.Status.Phase, o.Status.LastProgressTime = sluicev1.CanaryPhaseProgressing, stamp(now)
			o.Canary = Workload{Exists: true, RolledOut: true, Desired: 2, Ready: 0}
		}, sluicev1.CanaryPhaseProgressing, 0, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := base()
			tt.mutate(&o)
			d := Decide(o)
			if d.Status.Phase != tt.wantPhase || d.Status.CanaryWeight != tt.wantW || !slices.Equal(d.Actions, tt.actions) {
				t.Fatalf("got phase %s weight %d actions %v; want %s %d %v", d.Status.Phase, d.Status.CanaryWeight, d.Actions, tt.wantPhase, tt.wantW, tt.actions)
			}
		})
	}
}

// passingRun is a fresh world of spec, initialized, whose checks pass, with rev-2 on the target.
func passingRun(t *testing.T, spec sluicev1.CanarySpec) *world {
	t.Helper()
	w := newWorld(spec)
	w.analysis = passing
	w.initialized(t)
	w.targetRevision = "rev-2"
	return w
}

// promoteRev2 runs w to Promoting and on until the primary runs rev-2 (a few ticks at most).
func (w *world) promoteRev2(t *testing.T) {
	t.Helper()
	w.runUntil(t, 60, sluicev1.CanaryPhasePromoting)
	for i := 0; i < 5 && w.primaryRevision != "rev-2"; i++ {
		w.tick(t)
	}
}

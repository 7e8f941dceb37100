package plan

import (
	"strings"
	"testing"

	"k8s.io/utils/ptr"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
)

// A new revision pushed once the primary already runs the run's revision (Promoting: the
// primary rolling while the canary still serves) never keeps traffic on the canary, whose pods roll
// to a revision no check judged: in that very tick every request goes to the primary (weight 0,
// A/B rules, mirroring and affinity off), the promotion of the analysed revision completes, and the
// new revision starts its own run from weight 0. For every kind of run that can hold traffic on the
// canary while Promoting.
func TestNewRevisionWhilePromotingLeavesTheCanaryAtOnce(t *testing.T) {
	stepped := seedSpec()
	stepped.Analysis.StepWeightPromotion = 10
	mirrored := blueGreenSpec()
	mirrored.Analysis.Mirror = true
	for _, tc := range []struct {
		name string
		spec sluicev1.CanarySpec
	}{
		{"weighted with stepWeightPromotion", stepped},
		{"weighted", seedSpec()},
		{"blue/green", blueGreenSpec()},
		{"blue/green with mirroring", mirrored},
		{"A/B", abSpec()},
		{"affinity", affinitySpec()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := passingRun(t, tc.spec)
			w.promoteRev2(t)
			if w.primaryRevision != "rev-2" || w.status.Phase != sluicev1.CanaryPhasePromoting {
				t.Fatalf("primary %s in phase %s: want the primary promoted while Promoting", w.primaryRevision, w.status.Phase)
			}
			// The primary's rollout is slow (a big Deployment, a quota): the canary would hold its
			// share all that time.
			w.primaryRolling = true
			w.targetRevision = "rev-3"
			w.tick(t)
			if w.routeWeight != 0 || w.abOn || w.mirror != 0 || w.cookie != "" {
				t.Fatalf("the tick that saw rev-3 left route weight %d, A/B %v, mirror %d, cookie %q on the canary\n%s",
					w.routeWeight, w.abOn, w.mirror, w.cookie, strings.Join(w.log, "\n"))
			}
			w.primaryRolling = false
			w.runUntil(t, 20, sluicev1.CanaryPhaseProgressing)
			if w.status.LastPromotedSpec != "rev-2" || w.status.LastAppliedSpec != "rev-3" || w.primaryRevision != "rev-2" {
				t.Fatalf("promoted %s, applied %s, primary %s: want rev-2 promoted and a run for rev-3\n%s",
					w.status.LastPromotedSpec, w.status.LastAppliedSpec, w.primaryRevision, strings.Join(w.log, "\n"))
			}
		})
	}
}

// TestNewRevisionWhilePromotingScalesThePrimaryAndWaitsForItsRollout (findings16b F10): an
// autoscaler scaled the canary to 6 while the primary ran 2; a new revision arrives while the
// promoted primary is still rolling out. All traffic leaves the canary in that tick (the new
// revision is unanalysed), the same tick scales the primary to the canary's 6 ready replicas
// (before the traffic moves), and the run says Succeeded only once the primary has rolled out;
// then the new revision gets its own run.
func TestNewRevisionWhilePromotingScalesThePrimaryAndWaitsForItsRollout(t *testing.T) {
	for _, tc := range []struct {
		name string
		spec sluicev1.CanarySpec
	}{{"weighted", seedSpec()}, {"blue/green", blueGreenSpec()}} {
		t.Run(tc.name, func(t *testing.T) {
			w := passingRun(t, tc.spec)
			w.runUntil(t, 60, sluicev1.CanaryPhaseProgressing)
			w.canaryReplicas = 6 // the canary's autoscaler under load
			w.promoteRev2(t)
			w.primaryRolling = true
			w.targetRevision = "rev-3"
			d := w.tick(t)
			if w.routeWeight != 0 || !d.Has(ActionScalePrimaryUp) || d.PrimaryReplicas != 6 || !hasReason(d.Events, EventPrimaryScaled) {
				t.Fatalf("the tick that saw rev-3: route %d, actions %v, primary replicas %d, events %v; want weight 0 and the primary scaled to 6",
					w.routeWeight, d.Actions, d.PrimaryReplicas, d.Events)
			}
			for i := 0; i < 10; i++ {
				w.tick(t)
				if w.status.Phase != sluicev1.CanaryPhaseFinalising {
					t.Fatalf("phase %s while the primary still rolls out rev-2, want Finalising\n%s", w.status.Phase, strings.Join(w.log, "\n"))
				}
			}
			w.primaryRolling = false
			w.runUntil(t, 20, sluicev1.CanaryPhaseProgressing)
			if w.status.LastPromotedSpec != "rev-2" || w.status.LastAppliedSpec != "rev-3" {
				t.Fatalf("promoted %s, applied %s: want rev-2 promoted and a run for rev-3\n%s", w.status.LastPromotedSpec, w.status.LastAppliedSpec, strings.Join(w.log, "\n"))
			}
		})
	}
}

// TestFinalisingPastTheDeadlineRollsBack: a primary that never finishes rolling out the promoted
// revision after a new revision ended the promotion early does not leave the run Finalising for
// ever, nor say Succeeded: past the progress deadline the run is rolled back, naming the rollout.
func TestFinalisingPastTheDeadlineRollsBack(t *testing.T) {
	spec := seedSpec()
	spec.ProgressDeadlineSeconds = ptr.To[int32](120)
	w := passingRun(t, spec)
	w.promoteRev2(t)
	w.primaryRolling = true
	w.targetRevision = "rev-3"
	w.runUntil(t, 200, sluicev1.CanaryPhaseFailed)
	if !strings.Contains(strings.Join(w.log, "\n"), "the primary did not roll out rev-2 within") {
		t.Fatalf("the rollback does not name the primary's rollout\n%s", strings.Join(w.log, "\n"))
	}
}

// TestCanaryLosingItsPodsWhilePromotingLeavesIt (findings16b F9): the canary carries all traffic
// of a blue/green switch while the primary rolls out; its pods go away (eviction, a drained
// node). The primary has ready pods, so all traffic goes to it in that tick (CanaryUnready), and
// the promotion still completes once the primary has rolled out.
func TestCanaryLosingItsPodsWhilePromotingLeavesIt(t *testing.T) {
	w := passingRun(t, blueGreenSpec())
	w.runUntil(t, 60, sluicev1.CanaryPhasePromoting)
	w.primaryRolling = true
	w.promoteRev2(t)
	if w.routeWeight != 100 {
		t.Fatalf("route weight %d while promoting a blue/green run, want 100", w.routeWeight)
	}
	w.canaryNeverReady = true
	d := w.tick(t)
	if w.routeWeight != 0 || !hasReason(d.Events, EventCanaryUnready) {
		t.Fatalf("canary without ready pods while Promoting: route weight %d, events %v; want all traffic on the primary", w.routeWeight, d.Events)
	}
	w.primaryRolling = false
	w.runUntil(t, 20, sluicev1.CanaryPhaseSucceeded)
	if w.status.LastPromotedSpec != "rev-2" {
		t.Fatalf("promoted %s, want rev-2", w.status.LastPromotedSpec)
	}
}

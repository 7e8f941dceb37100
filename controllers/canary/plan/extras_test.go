package plan

import (
	"testing"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
	"sluice.dev/sluice/test/golden"
)

func TestGoldenBlueGreenMirroring(t *testing.T) {
	spec := blueGreenSpec()
	spec.Analysis.Mirror, spec.Analysis.MirrorWeight = true, 30
	w := newWorld(spec)
	w.analysis = passing
	w.initialized(t)
	w.targetRevision = "rev-2"
	mirrored := false
	for i := 0; i < 50 && w.status.Phase != sluicev1.CanaryPhaseSucceeded; i++ {
		w.tick(t)
		if w.mirror > 0 {
			mirrored = true
			if w.mirror != 30 || w.routeWeight != 0 {
				t.Fatalf("mirror %d at weight %d", w.mirror, w.routeWeight)
			}
		}
	}
	if !mirrored || w.mirror != 0 || w.status.Phase != sluicev1.CanaryPhaseSucceeded {
		t.Fatalf("mirrored %v, mirror after the run %d, phase %s", mirrored, w.mirror, w.status.Phase)
	}
	golden.Assert(t, "bluegreen-mirroring", w.log)
}

func affinitySpec() sluicev1.CanarySpec {
	spec := seedSpec()
	spec.Analysis.SessionAffinity = &sluicev1.SessionAffinity{CookieName: "sluice-canary", MaxAge: 3600}
	return spec
}

func TestGoldenSessionAffinityPromotion(t *testing.T) {
	w := newWorld(affinitySpec())
	w.analysis = passing
	w.initialized(t)
	w.targetRevision = "rev-2"
	seen := ""
	for i := 0; i < 60 && w.status.Phase != sluicev1.CanaryPhaseSucceeded; i++ {
		w.tick(t)
		if w.cookie != "" {
			seen = w.cookie
		}
	}
	if seen != "sluice-canary=sluice-rev-2" || w.cookie != "" || w.status.Phase != sluicev1.CanaryPhaseSucceeded {
		t.Fatalf("cookie during the run %q, after promotion %q, phase %s", seen, w.cookie, w.status.Phase)
	}
	golden.Assert(t, "affinity-promotion", w.log)
}

func TestSessionAffinityRollbackAndDrift(t *testing.T) {
	w := newWorld(affinitySpec())
	w.analysis = failingFrom(30)
	w.initialized(t)
	w.targetRevision = "rev-2"
	for i := 0; i < 4 && w.cookie == ""; i++ {
		w.tick(t)
	}
	if w.cookie == "" {
		t.Fatal("no cookie rule after the first weight")
	}
	w.cookie = "" // someone removed the cookie rules
	d := w.tick(t)
	if w.cookie == "" || !d.Has(ActionAffinityOn) {
		t.Fatalf("removed cookie rule not restored: actions %v", d.Actions)
	}
	w.runUntil(t, 60, sluicev1.CanaryPhaseFailed)
	if w.cookie != "" || w.canaryReplicas != 0 {
		t.Fatalf("after rollback: cookie %q, canary replicas %d", w.cookie, w.canaryReplicas)
	}
}

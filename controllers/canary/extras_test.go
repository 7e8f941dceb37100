package canary

import (
	"strings"
	"testing"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
)

// extrasNow reads the route's mirror and session-affinity cookie through the provider.
func (h *harness) extrasNow() (int32, string) {
	h.t.Helper()
	r := h.r.Routers[h.provider]
	m, err := r.GetMirror(h.ctx, h.canary())
	if err != nil {
		h.t.Fatal(err)
	}
	c, err := r.GetSessionAffinity(h.ctx, h.canary())
	if err != nil {
		h.t.Fatal(err)
	}
	return m, c
}

// TestSessionAffinityLifecycle on both providers: the cookie rule exists while the canary has
// traffic, and is gone after the promotion and after a rollback.
func TestSessionAffinityLifecycle(t *testing.T) {
	for _, provider := range []sluicev1.Provider{sluicev1.ProviderGatewayAPI, sluicev1.ProviderIstio} {
		t.Run(string(provider), func(t *testing.T) {
			h := newHarnessFor(t, provider)
			h.app(2, "6.7.0")
			c := h.canaryFor()
			c.Spec.Analysis.SessionAffinity = &sluicev1.SessionAffinity{CookieName: "sluice-canary", MaxAge: 600}
			h.create(c)
			h.runUntil(sluicev1.CanaryPhaseInitialized, 20)

			h.setImage("6.7.1")
			sawCookie := ""
			for i := 0; i < 60 && h.last.Phase != sluicev1.CanaryPhaseSucceeded; i++ {
				h.tick()
				_, cookie := h.extrasNow()
				if h.last.CanaryWeight > 0 && cookie == "" {
					t.Fatalf("weight %d without the cookie rule\n%s", h.last.CanaryWeight, strings.Join(h.log, "\n"))
				}
				if cookie != "" {
					sawCookie = cookie
				}
			}
			if h.last.Phase != sluicev1.CanaryPhaseSucceeded || !strings.HasPrefix(sawCookie, "sluice-canary=sluice-") {
				t.Fatalf("phase %s, cookie seen %q\n%s", h.last.Phase, sawCookie, strings.Join(h.log, "\n"))
			}
			if _, cookie := h.extrasNow(); cookie != "" {
				t.Fatalf("cookie rule %q left after the promotion", cookie)
			}

			h.analyzer.fail = func(w int32) bool { return w >= 20 }
			h.setImage("6.7.2")
			h.runUntil(sluicev1.CanaryPhaseFailed, 60)
			if _, cookie := h.extrasNow(); cookie != "" {
				t.Fatalf("cookie rule %q left after the rollback", cookie)
			}
			if w := h.routeWeights(); w.Canary != 0 {
				t.Fatalf("route %+v after the rollback", w)
			}
		})
	}
}

// TestMirrorLifecycle on both providers: a blue/green run mirrors to the canary during its
// iterations and stops before the switch; a rolled-back run leaves no mirror either.
func TestMirrorLifecycle(t *testing.T) {
	for _, provider := range []sluicev1.Provider{sluicev1.ProviderGatewayAPI, sluicev1.ProviderIstio} {
		t.Run(string(provider), func(t *testing.T) {
			h := newHarnessFor(t, provider)
			h.app(2, "6.7.0")
			c := h.blueGreenCanaryFor()
			c.Spec.Analysis.Mirror, c.Spec.Analysis.MirrorWeight = true, 25
			h.create(c)
			h.runUntil(sluicev1.CanaryPhaseInitialized, 20)

			h.setImage("6.7.1")
			mirrored := 0
			for i := 0; i < 60 && h.last.Phase != sluicev1.CanaryPhaseSucceeded; i++ {
				h.tick()
				m, _ := h.extrasNow()
				if m != 0 && (m != 25 || h.last.CanaryWeight != 0) {
					t.Fatalf("mirror %d at weight %d", m, h.last.CanaryWeight)
				}
				if h.last.Phase == sluicev1.CanaryPhaseProgressing && h.canary().Status.Iterations > 0 && m != 25 {
					t.Fatalf("iteration %d without the mirror", h.canary().Status.Iterations)
				}
				if m != 0 {
					mirrored++
				}
			}
			if h.last.Phase != sluicev1.CanaryPhaseSucceeded || mirrored == 0 {
				t.Fatalf("phase %s, mirrored ticks %d", h.last.Phase, mirrored)
			}
			if m, _ := h.extrasNow(); m != 0 {
				t.Fatalf("mirror %d left after the promotion", m)
			}
			h.analyzer.fail = func(int32) bool { return true }
			h.setImage("6.7.2")
			h.runUntil(sluicev1.CanaryPhaseFailed, 60)
			if m, _ := h.extrasNow(); m != 0 {
				t.Fatalf("mirror %d left after the rollback", m)
			}
		})
	}
}

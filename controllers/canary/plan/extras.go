package plan

import (
	"fmt"
	"strings"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
	"sluice.dev/sluice/providers"
)

// Actions and events of mirroring and session affinity.
const (
	// ActionMirrorOn mirrors MirrorWeight percent of the requests to the canary
	// (providers.Router.SetMirror). Decide emits it last, and only with the canary ready.
	ActionMirrorOn Action = "MirrorOn"
	// ActionMirrorOff stops mirroring. Decide emits it first.
	ActionMirrorOff Action = "MirrorOff"
	// ActionAffinityOn turns session affinity on with AffinityCookie(spec, status)
	// (providers.Router.SetSessionAffinity). Decide emits it last, and only with the canary ready.
	ActionAffinityOn Action = "AffinityOn"
	// ActionAffinityOff removes the cookie rules. Decide emits it first, before any action that
	// scales the canary down.
	ActionAffinityOff Action = "AffinityOff"

	EventMirrorRestored   = "MirrorRestored"
	EventAffinityRestored = "SessionAffinityRestored"
	// EventAffinityCookieRenamed: the Canary's own cookieName changed mid-run (a spec edit,
	// not an outside edit of the route).
	EventAffinityCookieRenamed = "SessionAffinityCookieRenamed"
)

// MirrorWanted is the percentage of requests mirrored to the canary by status s: a blue/green run
// with spec.analysis.mirror mirrors during its analysed iterations (Progressing, WaitingPromotion)
// while the canary has no traffic; 0 otherwise.
func MirrorWanted(spec sluicev1.CanarySpec, s sluicev1.CanaryStatus) int32 {
	if !spec.Analysis.Mirror || !blueGreenStarted(spec, s) || s.CanaryWeight != 0 {
		return 0
	}
	switch s.Phase {
	case sluicev1.CanaryPhaseProgressing, sluicev1.CanaryPhaseWaitingPromotion:
		return MirrorWeight(spec)
	}
	return 0
}

// AffinityCookie is the session-affinity cookie a weighted run hands out by status s (see
// providers.AffinityCookie): from its first weight above 0 until traffic is back on the primary
// (the run ends) or the run is rolled back; "" otherwise.
func AffinityCookie(spec sluicev1.CanarySpec, s sluicev1.CanaryStatus) string {
	a := spec.Analysis.SessionAffinity
	if a == nil || countsPassingChecks(spec) || s.CanaryWeight == 0 {
		return ""
	}
	switch s.Phase {
	case sluicev1.CanaryPhaseProgressing, sluicev1.CanaryPhaseWaitingPromotion, sluicev1.CanaryPhasePromoting:
		return providers.AffinityCookie(a.CookieName, s.LastAppliedSpec)
	}
	return ""
}

// syncExtras turns mirroring and session affinity on or off when this decision changes what the
// status asks for, or when the route disagrees with it (someone edited the route, a write was
// lost): off before every other action, on after them and only with the canary ready.
func syncExtras(o Observed, d *Decision) {
	ready := o.Canary.IsReady(CanaryReadyThreshold(o.Spec))
	initializing := d.Status.Phase == "" || d.Status.Phase == sluicev1.CanaryPhaseInitializing

	wasMirror, wantMirror := MirrorWanted(o.Spec, o.Status), MirrorWanted(o.Spec, d.Status)
	mirrorDrift := o.RouteExtrasKnown && !initializing && o.RouteMirror != wantMirror
	if wasMirror != wantMirror || mirrorDrift {
		switch {
		case wantMirror == 0:
			d.Actions = append([]Action{ActionMirrorOff}, d.Actions...)
		case ready:
			d.do(ActionMirrorOn)
		}
		if wasMirror == wantMirror && (wantMirror == 0 || ready) {
			d.warning(EventMirrorRestored, fmt.Sprintf("Route mirrored %d%% to the canary instead of %d%% (edited outside Sluice); restored", o.RouteMirror, wantMirror))
		}
	}

	wasCookie, wantCookie := AffinityCookie(o.Spec, o.Status), AffinityCookie(o.Spec, d.Status)
	cookieDrift := o.RouteExtrasKnown && !initializing && o.RouteCookie != wantCookie
	if wasCookie != wantCookie || cookieDrift {
		switch {
		case wantCookie == "":
			d.Actions = append([]Action{ActionAffinityOff}, d.Actions...)
		case ready:
			d.do(ActionAffinityOn)
		}
		if renamed, ok := cookieRenamed(o, wantCookie); ok && wasCookie == wantCookie && ready {
			d.normal(EventAffinityCookieRenamed, fmt.Sprintf(
				"spec.analysis.sessionAffinity.cookieName changed from %q to %q mid-run: the route now hands out and matches %q; clients holding %q lose their canary affinity",
				renamed, o.Spec.Analysis.SessionAffinity.CookieName, wantCookie, o.RouteCookie))
		} else if wasCookie == wantCookie && (wantCookie == "" || ready) {
			d.warning(EventAffinityRestored, fmt.Sprintf("Route had session-affinity cookie %q instead of %q (edited outside Sluice); restored", o.RouteCookie, wantCookie))
		}
	}
}

// cookieRenamed reports the cookie name the route uses when it differs from the spec's only by
// name: the route's cookie carries this run's value (the revision), so Sluice wrote it and the
// difference is an edit of spec.analysis.sessionAffinity.cookieName.
func cookieRenamed(o Observed, want string) (string, bool) {
	if want == "" || o.RouteCookie == "" || o.Spec.Analysis.SessionAffinity == nil {
		return "", false
	}
	name, value, _ := strings.Cut(o.RouteCookie, "=")
	if name == o.Spec.Analysis.SessionAffinity.CookieName || value != providers.AffinityCookieValuePrefix+o.Status.LastAppliedSpec {
		return "", false
	}
	return name, true
}

package plan

import (
	"strings"
	"testing"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
)

// TestAffinityCookieRenamedIsASpecEdit: a route that still hands out this run's cookie under the
// old cookieName, after the Canary's cookieName changed mid-run, is the user's spec edit: a
// Normal event names both cookie names and the route is switched to the new one. A cookie that is
// not this run's (another value) is still an outside edit, restored with a Warning.
func TestAffinityCookieRenamedIsASpecEdit(t *testing.T) {
	observed := func(routeCookie string) Observed {
		spec := sluicev1.CanarySpec{Analysis: sluicev1.CanaryAnalysis{StepWeight: 20, MaxWeight: 60,
			SessionAffinity: &sluicev1.SessionAffinity{CookieName: "sticky2", MaxAge: 60}}}
		return Observed{
			Spec:        spec,
			Status:      sluicev1.CanaryStatus{Phase: sluicev1.CanaryPhaseProgressing, CanaryWeight: 20, LastAppliedSpec: "rev2"},
			Canary:      Workload{Exists: true, Revision: "rev2", Desired: 2, Ready: 2, Updated: 2, RolledOut: true},
			RouteCookie: routeCookie, RouteExtrasKnown: true, RouteKnown: true, RouteWeight: 20,
		}
	}
	for _, tc := range []struct {
		route, reason, mentions string
	}{
		{"sticky=sluice-rev2", EventAffinityCookieRenamed, `cookieName changed from "sticky" to "sticky2"`},
		{"sticky=sluice-rev1", EventAffinityRestored, "edited outside Sluice"},
		{"", EventAffinityRestored, "edited outside Sluice"},
	} {
		o := observed(tc.route)
		d := Decision{Status: o.Status}
		syncExtras(o, &d)
		if len(d.Events) != 1 || d.Events[0].Reason != tc.reason || !strings.Contains(d.Events[0].Message, tc.mentions) {
			t.Fatalf("route cookie %q: events %+v, want one %s mentioning %q", tc.route, d.Events, tc.reason, tc.mentions)
		}
		if tc.reason == EventAffinityCookieRenamed && d.Events[0].Type != "Normal" {
			t.Fatalf("a spec edit reported as %s", d.Events[0].Type)
		}
		if !d.Has(ActionAffinityOn) {
			t.Fatalf("route cookie %q: the route is not switched to sticky2=sluice-rev2: %v", tc.route, d.Actions)
		}
	}
}

package plugin

import (
	"maps"
	"reflect"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
	"sluice.dev/sluice/test/testenv"
)

// TestLeversSetExactlyTheirField runs every lever through the command line and checks the stored
// Canary: the lever's annotation or spec.suspend changed, and nothing else of metadata.annotations
// or spec.
func TestLeversSetExactlyTheirField(t *testing.T) {
	testenv.Require(t, env)
	ns := env.Namespace(t)
	for _, tc := range []struct {
		lever       string
		phase       sluicev1.CanaryPhase
		annotations map[string]string // expected afterwards
		suspend     any               // expected spec.suspend afterwards; nil: absent
		output      string
	}{
		{"promote", sluicev1.CanaryPhaseWaitingPromotion, map[string]string{AnnotationPromote: "2026-03-01T12:00:00Z"}, nil,
			"promotion requested (sluice.dev/promote=2026-03-01T12:00:00Z)"},
		{"abort", sluicev1.CanaryPhaseProgressing, map[string]string{AnnotationAbort: "2026-03-01T12:00:00Z"}, nil,
			"rollback requested (sluice.dev/abort=2026-03-01T12:00:00Z)"},
		{"retry", sluicev1.CanaryPhaseFailed, map[string]string{AnnotationRetry: "2026-03-01T12:00:00Z"}, nil,
			"retry requested (sluice.dev/retry=2026-03-01T12:00:00Z)"},
		{"pause", sluicev1.CanaryPhaseProgressing, nil, true, "paused (spec.suspend=true)"},
		{"resume", sluicev1.CanaryPhaseProgressing, nil, false, "resumed (spec.suspend=false)"},
	} {
		t.Run(tc.lever, func(t *testing.T) {
			cn := newCanary(t, ns, tc.lever, func(cn *sluicev1.Canary) {
				cn.Annotations = map[string]string{"team": "payments"} // a user's own, kept as is
				cn.Spec.Suspend = tc.lever == "resume"
			})
			setStatus(t, cn, sluicev1.CanaryStatus{Phase: tc.phase, CanaryWeight: 20})
			key := types.NamespacedName{Namespace: ns, Name: tc.lever}
			before := stored(t, key)

			out, err := run(t, ns, tc.lever, tc.lever)
			if err != nil {
				t.Fatalf("%s: %v\n%s", tc.lever, err, out)
			}
			if want := "canary " + ns + "/" + tc.lever + ": " + tc.output + "\n"; out != want {
				t.Errorf("output %q, want %q", out, want)
			}

			after := stored(t, key)
			wantAnn := map[string]string{"team": "payments"}
			maps.Copy(wantAnn, tc.annotations)
			if got := after.GetAnnotations(); !maps.Equal(got, wantAnn) {
				t.Errorf("annotations = %v, want %v", got, wantAnn)
			}
			suspend, has, _ := unstructured.NestedFieldNoCopy(after.Object, "spec", "suspend")
			if tc.suspend == nil && has || tc.suspend != nil && suspend != tc.suspend {
				t.Errorf("spec.suspend = %v (present %v), want %v", suspend, has, tc.suspend)
			}
			specBefore, _, _ := unstructured.NestedMap(before.Object, "spec")
			specAfter, _, _ := unstructured.NestedMap(after.Object, "spec")
			delete(specBefore, "suspend")
			delete(specAfter, "suspend")
			if !reflect.DeepEqual(specBefore, specAfter) {
				t.Errorf("spec changed beyond suspend:\nbefore %v\nafter  %v", specBefore, specAfter)
			}
			if !reflect.DeepEqual(before.Object["status"], after.Object["status"]) {
				t.Errorf("status changed: %v -> %v", before.Object["status"], after.Object["status"])
			}
		})
	}
}

// TestLeversRefuseOutsideTheirPhase keeps a stale request from acting on a later run: promote and
// abort need a run in flight, retry a Failed canary, unless --force.
func TestLeversRefuseOutsideTheirPhase(t *testing.T) {
	testenv.Require(t, env)
	ns := env.Namespace(t)
	for _, tc := range []struct {
		lever, annotation string
		phase             sluicev1.CanaryPhase
	}{
		{"promote", AnnotationPromote, sluicev1.CanaryPhaseSucceeded},
		{"abort", AnnotationAbort, sluicev1.CanaryPhaseInitialized},
		{"retry", AnnotationRetry, sluicev1.CanaryPhaseProgressing},
	} {
		t.Run(tc.lever, func(t *testing.T) {
			cn := newCanary(t, ns, tc.lever, nil)
			setStatus(t, cn, sluicev1.CanaryStatus{Phase: tc.phase})
			key := types.NamespacedName{Namespace: ns, Name: tc.lever}
			out, err := run(t, ns, tc.lever, tc.lever)
			if err == nil || !strings.Contains(err.Error(), string(tc.phase)) || !strings.Contains(err.Error(), "--force") {
				t.Errorf("%s on a %s canary: err = %v, out %q", tc.lever, tc.phase, err, out)
			}
			if ann := stored(t, key).GetAnnotations(); len(ann) != 0 {
				t.Errorf("refused %s still annotated: %v", tc.lever, ann)
			}
			if _, err := run(t, ns, tc.lever, tc.lever, "--force"); err != nil {
				t.Fatalf("%s --force: %v", tc.lever, err)
			}
			if _, ok := stored(t, key).GetAnnotations()[tc.annotation]; !ok {
				t.Errorf("%s --force did not set %s", tc.lever, tc.annotation)
			}
		})
	}
	if _, err := run(t, ns, "pause", "missing"); err == nil || !strings.Contains(err.Error(), `canary "missing" not found in namespace "`+ns+`"`) {
		t.Errorf("pause of a missing canary: %v", err)
	}
}

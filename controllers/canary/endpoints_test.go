package canary

import (
	"context"
	"fmt"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
	"sluice.dev/sluice/controllers/canary/plan"
)

// endpoint is one pod endpoint of a test EndpointSlice.
func endpoint(pod, ip string, ready, terminating bool) discoveryv1.Endpoint {
	return discoveryv1.Endpoint{Addresses: []string{ip},
		Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(ready), Serving: ptr.To(ready), Terminating: ptr.To(terminating)},
		TargetRef:  &corev1.ObjectReference{Kind: "Pod", Name: pod}}
}

func TestCountEndpoints(t *testing.T) {
	v4 := discoveryv1.EndpointSlice{AddressType: discoveryv1.AddressTypeIPv4, Endpoints: []discoveryv1.Endpoint{
		endpoint("a", "10.0.0.1", true, false), endpoint("b", "10.0.0.2", false, false), endpoint("old", "10.0.0.3", false, true),
		{Addresses: []string{"10.0.0.9"}}, // no target reference, conditions unset: ready
	}}
	v6 := discoveryv1.EndpointSlice{AddressType: discoveryv1.AddressTypeIPv6, Endpoints: []discoveryv1.Endpoint{
		endpoint("a", "fd00::1", true, false), endpoint("b", "fd00::2", false, false),
	}}
	if got, want := countEndpoints([]discoveryv1.EndpointSlice{v4, v6}), (plan.Endpoints{Ready: 2, Serving: 3}); got != want {
		t.Fatalf("dual-stack slices: %+v, want %+v (each pod once, terminating left out)", got, want)
	}
	if got := countEndpoints(nil); got != (plan.Endpoints{}) {
		t.Fatalf("no slices: %+v", got)
	}
}

// TestKubernetesApexWaitsForPrimaryEndpoints (findings16 #7) on the real apiserver: the primary's
// Deployment reports its rollout complete, but its Service's EndpointSlice lags (a pod not a
// ready endpoint yet, then an old pod still an endpoint). The apex Service keeps selecting the
// canary until the EndpointSlice shows the rollout; then it selects the primary.
func TestKubernetesApexWaitsForPrimaryEndpoints(t *testing.T) {
	h := newHarnessFor(t, sluicev1.ProviderKubernetes)
	h.app(2, "6.7.0")
	h.create(h.blueGreenCanaryFor())
	h.runUntil(sluicev1.CanaryPhaseInitialized, 20)
	slice := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Name: "podinfo-primary-test", Namespace: h.ns,
			Labels: map[string]string{discoveryv1.LabelServiceName: "podinfo-primary", discoveryv1.LabelManagedBy: "test"}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints:   []discoveryv1.Endpoint{endpoint("old-1", "10.0.0.1", true, false), endpoint("old-2", "10.0.0.2", true, false)},
	}
	if err := h.c.Create(h.ctx, slice); err != nil {
		t.Fatal(err)
	}
	setEndpoints := func(eps ...discoveryv1.Endpoint) {
		t.Helper()
		slice.Endpoints = eps
		if err := h.c.Update(h.ctx, slice); err != nil {
			t.Fatal(err)
		}
	}

	h.setImage("6.7.1")
	for i := 0; i < 60 && !(h.last.Phase == sluicev1.CanaryPhasePromoting && h.apexSelects() == "canary"); i++ {
		h.tick()
	}
	if h.apexSelects() != "canary" {
		t.Fatalf("the apex never selected the canary\n%s", strings.Join(h.log, "\n"))
	}
	for _, lag := range [][]discoveryv1.Endpoint{
		{endpoint("new-1", "10.0.0.3", true, false), endpoint("new-2", "10.0.0.4", false, false)}, // one not ready yet
		{endpoint("old-2", "10.0.0.2", true, false), endpoint("new-1", "10.0.0.3", true, false), endpoint("new-2", "10.0.0.4", true, false)},
	} {
		setEndpoints(lag...)
		for i := 0; i < 5; i++ {
			h.tick()
			if got := h.apexSelects(); got != "canary" || h.last.Phase != sluicev1.CanaryPhasePromoting {
				t.Fatalf("primary endpoints %s: the apex selects %s (%s)\n%s", describe(lag), got, h.last.Phase, strings.Join(h.log, "\n"))
			}
		}
	}
	setEndpoints(endpoint("old-2", "10.0.0.2", false, true), endpoint("new-1", "10.0.0.3", true, false), endpoint("new-2", "10.0.0.4", true, false))
	h.runUntil(sluicev1.CanaryPhaseSucceeded, 10)
	if got := h.apexSelects(); got != "primary" {
		t.Fatalf("after the promotion the apex selects %s\n%s", got, strings.Join(h.log, "\n"))
	}
	t.Log("\n" + strings.Join(h.log, "\n"))
}

func describe(eps []discoveryv1.Endpoint) string {
	var out []string
	for _, e := range eps {
		out = append(out, fmt.Sprintf("%s ready=%t", e.TargetRef.Name, *e.Conditions.Ready))
	}
	return strings.Join(out, ", ")
}

// TestWorkloadOfCountsAvailableReplicas: a Deployment whose pods are ready but within
// minReadySeconds (available < ready) is not ready for the plan; the rollout rule is Flagger's:
// observed generation, every replica updated, none of an older ReplicaSet, all available.
func TestWorkloadOfCountsAvailableReplicas(t *testing.T) {
	d := func(st appsv1.DeploymentStatus) *appsv1.Deployment {
		st.ObservedGeneration = 2
		return &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Generation: 2}, Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](6)}, Status: st}
	}
	for _, c := range []struct {
		name  string
		st    appsv1.DeploymentStatus
		ready bool
	}{
		{"rolled out", appsv1.DeploymentStatus{Replicas: 6, UpdatedReplicas: 6, ReadyReplicas: 6, AvailableReplicas: 6}, true},
		{"one pod within minReadySeconds", appsv1.DeploymentStatus{Replicas: 6, UpdatedReplicas: 6, ReadyReplicas: 6, AvailableReplicas: 5}, false},
		{"an old pod left", appsv1.DeploymentStatus{Replicas: 7, UpdatedReplicas: 6, ReadyReplicas: 7, AvailableReplicas: 7}, false},
		{"4 of 6 updated", appsv1.DeploymentStatus{Replicas: 6, UpdatedReplicas: 4, ReadyReplicas: 6, AvailableReplicas: 6}, false},
	} {
		if got := workloadOf(d(c.st), "r").IsReady(100); got != c.ready {
			t.Errorf("%s: IsReady %t, want %t", c.name, got, c.ready)
		}
	}
	stale := d(appsv1.DeploymentStatus{Replicas: 6, UpdatedReplicas: 6, ReadyReplicas: 6, AvailableReplicas: 6})
	stale.Generation = 3 // the Deployment controller has not seen the new template yet
	if workloadOf(stale, "r").IsReady(100) {
		t.Error("a status from before the controller saw the generation counts as rolled out")
	}
}

// endpointSliceReads counts the EndpointSlice lists a Reconciler makes around the cache, by the
// Canary's phase at the start of the tick.
type endpointSliceReads struct {
	client.Reader
	phase *sluicev1.CanaryPhase
	count map[sluicev1.CanaryPhase]int
}

func (r *endpointSliceReads) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	if _, ok := list.(*discoveryv1.EndpointSliceList); ok {
		r.count[*r.phase]++
	}
	return r.Reader.List(ctx, list, opts...)
}

// TestNoEndpointSliceReadDuringSteps: the primary's endpoints are read only by the tick that
// moves all traffic back to the primary, never during the steps of a weighted run.
func TestNoEndpointSliceReadDuringSteps(t *testing.T) {
	h := newHarness(t)
	var phase sluicev1.CanaryPhase
	reads := &endpointSliceReads{Reader: h.c, phase: &phase, count: map[sluicev1.CanaryPhase]int{}}
	h.r.APIReader = reads
	h.app(2, "6.7.0")
	h.create(h.canaryFor())
	h.runUntil(sluicev1.CanaryPhaseInitialized, 20)
	h.setImage("6.7.1")
	steps := 0
	for i := 0; i < 80 && h.last.Phase != sluicev1.CanaryPhaseSucceeded; i++ {
		phase = h.last.Phase
		if phase == sluicev1.CanaryPhaseProgressing && h.last.CanaryWeight > 0 {
			steps++
		}
		h.tick()
	}
	if h.last.Phase != sluicev1.CanaryPhaseSucceeded || steps < 5 {
		t.Fatalf("phase %s after %d ticks at a weight\n%s", h.last.Phase, steps, strings.Join(h.log, "\n"))
	}
	total := 0
	for _, n := range reads.count {
		total += n
	}
	if reads.count[sluicev1.CanaryPhaseProgressing] != 0 || total != 1 {
		t.Fatalf("EndpointSlice reads by phase %v: want one, by the takeover tick only\n%s", reads.count, strings.Join(h.log, "\n"))
	}
	t.Logf("EndpointSlice reads by phase: %v over %d ticks at a weight", reads.count, steps)
}

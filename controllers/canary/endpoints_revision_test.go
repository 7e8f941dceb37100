package canary

import (
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// TestCurrentReplicaSet: the primary's current ReplicaSet is the one its Progressing condition
// names once the Deployment controller has seen the current generation; nothing otherwise.
func TestCurrentReplicaSet(t *testing.T) {
	dep := func(gen, observed int64, reason, msg string) workload {
		d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web-primary", Generation: gen}, Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](2)}}
		d.Status.ObservedGeneration = observed
		if reason != "" {
			d.Status.Conditions = []appsv1.DeploymentCondition{{Type: appsv1.DeploymentAvailable, Status: corev1.ConditionTrue, Reason: "MinimumReplicasAvailable",
				Message: `Deployment has minimum availability.`}, {Type: appsv1.DeploymentProgressing, Status: corev1.ConditionTrue, Reason: reason, Message: msg}}
		}
		return &deployment{d: d}
	}
	for _, tc := range []struct {
		name string
		w    workload
		want string
	}{
		{"rolled out", dep(3, 3, "NewReplicaSetAvailable", `ReplicaSet "web-primary-7d9f8c6b5" has successfully progressed.`), "web-primary-7d9f8c6b5"},
		{"rolling", dep(3, 3, "ReplicaSetUpdated", `ReplicaSet "web-primary-7d9f8c6b5" is progressing.`), "web-primary-7d9f8c6b5"},
		{"just created", dep(3, 3, "NewReplicaSetCreated", `Created new replica set "web-primary-7d9f8c6b5"`), "web-primary-7d9f8c6b5"},
		{"a status from the last generation", dep(4, 3, "NewReplicaSetAvailable", `ReplicaSet "web-primary-5c4b" has successfully progressed.`), ""},
		{"paused", dep(3, 3, "DeploymentPaused", "Deployment is paused"), ""},
		{"no condition (no Deployment controller)", dep(3, 3, "", ""), ""},
		{"another Deployment's ReplicaSet", dep(3, 3, "NewReplicaSetAvailable", `ReplicaSet "web-7d9f8c6b5" has successfully progressed.`), ""},
		{"a name its pods cannot show whole", dep(3, 3, "NewReplicaSetAvailable", `ReplicaSet "web-primary-`+strings.Repeat("x", 40)+`-7d9f8c6b5" has successfully progressed.`), ""},
		{"a DaemonSet", &daemonSet{d: &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Name: "web-primary"}}}, ""},
		{"no primary", nil, ""},
	} {
		if got := currentReplicaSet(tc.w); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}

// TestOtherRevisionEndpoints: serving endpoints not of the current ReplicaSet are counted, each
// pod once over a dual-stack Service's slices; terminating ones are not; an endpoint that names
// no pod counts (nothing shows it current); a ReplicaSet whose name extends the current one's is
// another.
func TestOtherRevisionEndpoints(t *testing.T) {
	v4 := discoveryv1.EndpointSlice{Endpoints: []discoveryv1.Endpoint{
		endpoint("web-primary-new-aaaaa", "10.0.0.1", true, false), endpoint("web-primary-old-bbbbb", "10.0.0.2", true, false),
		endpoint("web-primary-old-ccccc", "10.0.0.3", false, false), endpoint("web-primary-old-ddddd", "10.0.0.4", false, true),
		{Addresses: []string{"10.0.0.9"}},
	}}
	v6 := discoveryv1.EndpointSlice{Endpoints: []discoveryv1.Endpoint{
		endpoint("web-primary-new-aaaaa", "fd00::1", true, false), endpoint("web-primary-old-bbbbb", "fd00::2", true, false),
	}}
	if got := otherRevisionEndpoints([]discoveryv1.EndpointSlice{v4, v6}, "web-primary-new"); got != 3 {
		t.Errorf("mixed slices: %d of another revision, want 3 (old-bbbbb, old-ccccc, the address)", got)
	}
	if got := otherRevisionEndpoints([]discoveryv1.EndpointSlice{v6}, "web-primary-newer"); got != 2 {
		t.Errorf("a ReplicaSet whose name extends another's: %d, want 2", got)
	}
}

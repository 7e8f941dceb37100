package faults

import (
	"context"
	"errors"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"sluice.dev/sluice/controllers/scheme"
)

// TestFaultModes: fail writes nothing and returns a conflict, drop writes nothing and returns
// success, crash writes and then fails every write until Restart; counting is per kind.
func TestFaultModes(t *testing.T) {
	ctx := context.Background()
	base := fake.NewClientBuilder().WithScheme(scheme.New()).Build()
	c := Wrap(base, Fault{Kind: Scale, N: 1, Mode: Fail}, Fault{Kind: Scale, N: 2, Mode: Drop}, Fault{Kind: Primary, N: 1, Mode: Crash})
	dep := func(name string, replicas int32) *appsv1.Deployment {
		return &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns"}, Spec: appsv1.DeploymentSpec{Replicas: ptr.To(replicas)}}
	}
	if err := c.Create(ctx, dep("app", 1)); !apierrors.IsConflict(err) {
		t.Fatalf("first scale write: %v, want a conflict", err)
	}
	if err := c.Create(ctx, dep("app", 2)); err != nil {
		t.Fatalf("dropped write: %v, want success", err)
	}
	if err := base.Get(ctx, client.ObjectKey{Namespace: "ns", Name: "app"}, &appsv1.Deployment{}); !apierrors.IsNotFound(err) {
		t.Fatalf("failed and dropped writes reached the server: %v", err)
	}
	if err := c.Create(ctx, dep("app", 3)); err != nil {
		t.Fatal(err)
	}
	if err := c.Create(ctx, dep("app-primary", 3)); err != nil {
		t.Fatalf("the crashing write itself succeeds: %v", err)
	}
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: "ns"}}
	if err := c.Create(ctx, svc); !errors.Is(err, ErrCrashed) || !c.Crashed() {
		t.Fatalf("write after a crash: %v, want ErrCrashed", err)
	}
	c.Restart()
	if err := c.Create(ctx, svc); err != nil {
		t.Fatal(err)
	}
	want := []Write{{Scale, "create", "Deployment/ns/app"}, {Primary, "create", "Deployment/ns/app-primary"}, {Service, "create", "Service/ns/app"}}
	got := c.Writes()
	if len(got) != len(want) {
		t.Fatalf("writes %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("write %d = %v, want %v", i, got[i], want[i])
		}
	}
	if n := c.Counts(); n[Scale] != 3 || n[Primary] != 1 || n[Service] != 1 || len(c.Hit()) != 3 {
		t.Fatalf("counts %v, hit %v", n, c.Hit())
	}
}

package v1alpha1_test

import (
	"context"
	"fmt"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
	"sluice.dev/sluice/test/testenv"
)

// TestCanaryTableColumns reads the server-side table for canaries (what `kubectl get canary`
// prints) and checks the columns and one row's values.
func TestCanaryTableColumns(t *testing.T) {
	testenv.Require(t, env)
	ctx := context.Background()
	ns := env.Namespace(t)
	c := seedCanary()
	c.Namespace = ns
	if err := env.Client.Create(ctx, c); err != nil {
		t.Fatal(err)
	}
	c.Status.Phase = "Progressing"
	c.Status.CanaryWeight = 20
	c.Status.FailedChecks = 2
	now := metav1.Now()
	c.Status.LastTransitionTime = &now
	if err := env.Client.Status().Update(ctx, c); err != nil {
		t.Fatal(err)
	}

	table, err := env.Table(ctx, fmt.Sprintf("/apis/sluice.dev/v1alpha1/namespaces/%s/canaries", ns))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, col := range table.ColumnDefinitions {
		names = append(names, col.Name)
	}
	want := []string{"Name", "Status", "Weight", "FailedChecks", "LastTransition"}
	if fmt.Sprint(names) != fmt.Sprint(want) {
		t.Fatalf("columns %v, want %v", names, want)
	}
	if len(table.Rows) != 1 {
		t.Fatalf("%d rows", len(table.Rows))
	}
	cells := table.Rows[0].Cells
	if cells[0] != "user-service" || cells[1] != "Progressing" || cells[2] != float64(20) || cells[3] != float64(2) || cells[4] == "" {
		t.Fatalf("row %v", cells)
	}
	// A Canary whose status never held a weight shows 0, not a blank: the CRD defaults it as soon
	// as the controller writes any status.
	fresh := seedCanary()
	fresh.Namespace, fresh.Name = ns, "fresh"
	if err := env.Client.Create(ctx, fresh); err != nil {
		t.Fatal(err)
	}
	fresh.Status.Phase = "Initialized"
	if err := env.Client.Status().Update(ctx, fresh); err != nil {
		t.Fatal(err)
	}
	stored := &unstructured.Unstructured{}
	stored.SetGroupVersionKind(sluicev1.GroupVersion.WithKind("Canary"))
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(fresh), stored); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"canaryWeight", "failedChecks", "iterations"} {
		if v, found, _ := unstructured.NestedInt64(stored.Object, "status", f); !found || v != 0 {
			t.Errorf("status.%s = %v (present %v), want a stored 0", f, v, found)
		}
	}
}

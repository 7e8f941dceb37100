package canary

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/event"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"sluice.dev/sluice/controllers/scheme"
	"sluice.dev/sluice/providers"
)

// TestRouteWatchSkipsOnlyTheEchoOfOurOwnWrite: the route watches pass every event but the
// creation or update that shows the version our routers' own write produced; a deletion, someone
// else's version, and any event without the shared memory (RouterClient unset) wake the Canary.
func TestRouteWatchSkipsOnlyTheEchoOfOurOwnWrite(t *testing.T) {
	ctx := context.Background()
	apiserver := fake.NewClientBuilder().WithScheme(scheme.New()).Build()
	own := providers.ReadOwnWrites(apiserver)
	r := &Reconciler{RouterClient: own}
	p := r.notOwnRouteWrite()

	route := &gwv1.HTTPRoute{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "app"}}
	if err := own.Create(ctx, route); err != nil {
		t.Fatal(err)
	}
	ours := route.DeepCopy()
	if p.Create(event.CreateEvent{Object: ours}) {
		t.Error("the creation our own write made wakes the Canary")
	}
	older := ours.DeepCopy()
	patch := client.MergeFrom(route.DeepCopy())
	route.Labels = map[string]string{"weight": "10"}
	if err := own.Patch(ctx, route, patch); err != nil {
		t.Fatal(err)
	}
	if p.Update(event.UpdateEvent{ObjectOld: older, ObjectNew: route.DeepCopy()}) {
		t.Error("the update our own write made wakes the Canary")
	}
	if !p.Delete(event.DeleteEvent{Object: route.DeepCopy()}) {
		t.Error("a deletion of the route (its last version ours) does not wake the Canary")
	}

	theirs := route.DeepCopy()
	patch = client.MergeFrom(theirs.DeepCopy())
	theirs.Spec.Hostnames = []gwv1.Hostname{"edited.example"}
	if err := apiserver.Patch(ctx, theirs, patch); err != nil {
		t.Fatal(err)
	}
	if !p.Update(event.UpdateEvent{ObjectOld: route.DeepCopy(), ObjectNew: theirs}) {
		t.Error("someone else's edit of the route does not wake the Canary")
	}
	if !(&Reconciler{}).notOwnRouteWrite().Update(event.UpdateEvent{ObjectOld: older, ObjectNew: route.DeepCopy()}) {
		t.Error("without the routers' shared memory (RouterClient nil) an update is skipped")
	}
}

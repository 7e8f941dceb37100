package providers_test

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"sluice.dev/sluice/controllers/scheme"
	"sluice.dev/sluice/providers"
)

// TestIsOwnWriteTellsOnlyTheVersionOurWriteProduced: the echo of a write through the client is
// ours; an older version, someone else's newer one, and the same version seen through another
// client are not; once a Get shows the cache caught up, the memory (and the answer) is gone.
func TestIsOwnWriteTellsOnlyTheVersionOurWriteProduced(t *testing.T) {
	ctx := context.Background()
	apiserver := fake.NewClientBuilder().WithScheme(scheme.New()).Build()
	own := providers.ReadOwnWrites(apiserver)

	route := &gwv1.HTTPRoute{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "app"}}
	if err := own.Create(ctx, route); err != nil {
		t.Fatal(err)
	}
	created := route.DeepCopy()
	if !providers.IsOwnWrite(own, created) {
		t.Fatalf("the version our create produced (rv %s) is not told as ours", created.ResourceVersion)
	}
	if providers.IsOwnWrite(apiserver, created) {
		t.Fatal("a client that is not ReadOwnWrites' tells a version as its own write")
	}

	patch := client.MergeFrom(route.DeepCopy())
	route.Labels = map[string]string{"step": "2"}
	if err := own.Patch(ctx, route, patch); err != nil {
		t.Fatal(err)
	}
	if providers.IsOwnWrite(own, created) {
		t.Fatal("the version our patch replaced is told as our latest write")
	}
	if !providers.IsOwnWrite(own, route) {
		t.Fatal("the version our patch produced is not told as ours")
	}

	// Someone else writes: their version is not ours.
	theirs := route.DeepCopy()
	p := client.MergeFrom(theirs.DeepCopy())
	theirs.Labels = map[string]string{"edited": "by-hand"}
	if err := apiserver.Patch(ctx, theirs, p); err != nil {
		t.Fatal(err)
	}
	if providers.IsOwnWrite(own, theirs) {
		t.Fatal("someone else's version is told as our own write")
	}
	// A Get that sees a version that is not ours ends the memory.
	if err := own.Get(ctx, client.ObjectKeyFromObject(route), &gwv1.HTTPRoute{}); err != nil {
		t.Fatal(err)
	}
	if providers.IsOwnWrite(own, route) {
		t.Fatal("our write is still told as ours after the cache showed a newer version")
	}
	if providers.IsOwnWrite(own, nil) || providers.IsOwnWrite(own, &gwv1.HTTPRoute{}) {
		t.Fatal("an object without a version is told as our own write")
	}
}

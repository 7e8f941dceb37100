package testenv

import (
	"context"
	"sync"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// ChangeCRD applies change to the CRD named name (e.g. metrictemplates.sluice.dev) and returns a
// function that puts the original back, which also runs when the test ends: a test writes an
// object as an older release's CRD (without a validation added since) would have admitted it,
// then upgrades. The apiserver takes a new schema up shortly after the update; a test creating an
// object retries until it is admitted (CreateEventually). Objects written meanwhile stay stored
// after the restore.
func (e *Env) ChangeCRD(t testing.TB, name string, change func(*apiextensionsv1.CustomResourceDefinition)) (restore func()) {
	t.Helper()
	s := runtime.NewScheme()
	if err := apiextensionsv1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	c, err := client.New(e.Config, client.Options{Scheme: s})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	var original *apiextensionsv1.CustomResourceDefinition
	update := func(mutate func(*apiextensionsv1.CustomResourceDefinition)) error {
		return retry.RetryOnConflict(retry.DefaultRetry, func() error {
			crd := &apiextensionsv1.CustomResourceDefinition{}
			if err := c.Get(ctx, client.ObjectKey{Name: name}, crd); err != nil {
				return err
			}
			if original == nil {
				original = crd.DeepCopy()
			}
			mutate(crd)
			return c.Update(ctx, crd)
		})
	}
	if err := update(change); err != nil {
		t.Fatalf("changing CRD %s: %v", name, err)
	}
	var once sync.Once
	restore = func() {
		once.Do(func() {
			if err := update(func(crd *apiextensionsv1.CustomResourceDefinition) { crd.Spec = original.Spec }); err != nil {
				t.Errorf("restoring CRD %s: %v", name, err)
			}
		})
	}
	t.Cleanup(restore)
	return restore
}

// CreateEventually creates obj, retrying for up to 30 s while the apiserver refuses it (a CRD
// change taking effect, see ChangeCRD). errors: the last refusal.
func CreateEventually(ctx context.Context, c client.Client, obj client.Object) error {
	deadline := time.Now().Add(30 * time.Second)
	for {
		err := c.Create(ctx, obj)
		if err == nil || time.Now().After(deadline) {
			return err
		}
		time.Sleep(100 * time.Millisecond)
	}
}

package configread

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
)

// TestGetReadsOnlyWhenChanged: the contents are read once per resourceVersion; a change is read
// again; a deleted object is NotFound and forgotten; a copy unused for TTL is dropped.
func TestGetReadsOnlyWhenChanged(t *testing.T) {
	scheme := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(scheme)
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: "ns"}, Data: map[string][]byte{"k": []byte("v1")}}
	api := fake.NewClientBuilder().WithScheme(scheme).WithObjects(s).Build()
	now := time.Unix(0, 0)
	c := New(api, api, Options{TTL: time.Minute, Now: func() time.Time { return now }})
	ctx := context.Background()
	key := client.ObjectKey{Namespace: "ns", Name: "s"}
	read := func() string {
		got := &corev1.Secret{}
		if err := c.Get(ctx, key, got); err != nil {
			t.Fatal(err)
		}
		return string(got.Data["k"])
	}
	for range 3 {
		if v := read(); v != "v1" {
			t.Fatalf("read %q", v)
		}
	}
	if kept, reads := c.Stats(); kept != 1 || reads != 1 {
		t.Fatalf("kept %d, reads %d after three Gets of one version; want 1, 1", kept, reads)
	}
	s.Data["k"] = []byte("v2")
	if err := api.Update(ctx, s); err != nil {
		t.Fatal(err)
	}
	if v := read(); v != "v2" {
		t.Fatalf("after an update read %q, want v2", v)
	}
	if _, reads := c.Stats(); reads != 2 {
		t.Fatalf("reads %d after the update, want 2", reads)
	}
	now = now.Add(2 * time.Minute)
	c.store(entryKey{kind: "ConfigMap", key: key}, &corev1.ConfigMap{}) // any store evicts
	if kept, _ := c.Stats(); kept != 1 {
		t.Fatalf("kept %d after TTL, want only the new entry", kept)
	}
	if err := api.Delete(ctx, s); err != nil {
		t.Fatal(err)
	}
	if err := c.Get(ctx, key, &corev1.Secret{}); !apierrors.IsNotFound(err) {
		t.Fatalf("Get of a deleted Secret = %v, want NotFound", err)
	}
}

// TestWrittenCopiesAreNotReadBack: a ConfigMap or Secret the client creates or patches is kept as
// the apiserver returned it, so the next Get of that version sends no request; a later change by
// someone else is read; a deleted one is forgotten.
func TestWrittenCopiesAreNotReadBack(t *testing.T) {
	scheme := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(scheme)
	gets := 0
	api := fake.NewClientBuilder().WithScheme(scheme).WithInterceptorFuncs(interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			if _, meta := obj.(*metav1.PartialObjectMetadata); !meta {
				gets++
			}
			return c.Get(ctx, key, obj, opts...)
		},
	}).Build()
	c := New(api, api, Options{})
	ctx := context.Background()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "app-primary", Namespace: "ns"}, Data: map[string]string{"k": "v1"}}
	if err := c.Create(ctx, cm); err != nil {
		t.Fatal(err)
	}
	read := func() string {
		t.Helper()
		got := &corev1.ConfigMap{}
		if err := c.Get(ctx, client.ObjectKeyFromObject(cm), got); err != nil {
			t.Fatal(err)
		}
		return got.Data["k"]
	}
	if v := read(); v != "v1" || gets != 0 {
		t.Fatalf("Get after Create: %q with %d reads of contents, want v1 with none", v, gets)
	}
	patch := client.MergeFrom(cm.DeepCopy())
	cm.Data["k"] = "v2"
	if err := c.Patch(ctx, cm, patch); err != nil {
		t.Fatal(err)
	}
	if v := read(); v != "v2" || gets != 0 {
		t.Fatalf("Get after Patch: %q with %d reads of contents, want v2 with none", v, gets)
	}
	other := cm.DeepCopy()
	other.Data["k"] = "v3"
	if err := api.Update(ctx, other); err != nil { // someone else's write
		t.Fatal(err)
	}
	if v := read(); v != "v3" || gets != 1 {
		t.Fatalf("Get after an outside change: %q with %d reads of contents, want v3 with one", v, gets)
	}
	if err := c.Delete(ctx, cm); err != nil {
		t.Fatal(err)
	}
	if kept, _ := c.Stats(); kept != 0 {
		t.Fatalf("%d copies kept after the Delete, want 0", kept)
	}
}

// TestBeyondMaxEntriesTheLeastRecentlyReadGo: with more objects than MaxEntries, the copy read
// least recently is dropped (and read again when asked for), the others are still answered
// without a request.
func TestBeyondMaxEntriesTheLeastRecentlyReadGo(t *testing.T) {
	scheme := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(scheme)
	var objs []client.Object
	for _, name := range []string{"a", "b", "c"} {
		objs = append(objs, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns"}, Data: map[string]string{"k": name}})
	}
	api := fake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).Build()
	now := time.Unix(0, 0)
	c := New(api, api, Options{MaxEntries: 2, Now: func() time.Time { return now }})
	ctx := context.Background()
	read := func(name string) {
		t.Helper()
		now = now.Add(time.Second)
		got := &corev1.ConfigMap{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: "ns", Name: name}, got); err != nil || got.Data["k"] != name {
			t.Fatalf("Get %s: %v, data %v", name, err, got.Data)
		}
	}
	read("a")
	read("b")
	read("a") // b is now the least recently read
	read("c") // beyond the bound: b goes
	if kept, reads := c.Stats(); kept != 2 || reads != 3 {
		t.Fatalf("kept %d, reads %d; want 2 kept (a, c) after 3 reads", kept, reads)
	}
	read("a")
	read("c")
	if _, reads := c.Stats(); reads != 3 {
		t.Fatalf("reads %d after asking for the kept a and c again, want still 3", reads)
	}
	read("b")
	if _, reads := c.Stats(); reads != 4 {
		t.Fatalf("reads %d after asking for the dropped b, want 4", reads)
	}
}

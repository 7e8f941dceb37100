package canary

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
)

// sliceCache starts an informer cache of ns holding the primary Services' EndpointSlices alone —
// selected by the role label, as the manager's cache is (controllers/manager cacheslices.go) —
// until the test ends.
func sliceCache(t *testing.T, ns string) cache.Cache {
	t.Helper()
	c, err := cache.New(env.Config, cache.Options{Scheme: env.Scheme, DefaultNamespaces: map[string]cache.Config{ns: {}},
		ByObject: map[client.Object]cache.ByObject{&discoveryv1.EndpointSlice{}: {
			Label: labels.SelectorFromSet(labels.Set{sluicev1.LabelServiceRole: sluicev1.ServiceRolePrimary})}}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = c.Start(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	if _, err := c.GetInformer(ctx, &discoveryv1.EndpointSlice{}); err != nil {
		t.Fatal(err)
	}
	if !c.WaitForCacheSync(ctx) {
		t.Fatal("the EndpointSlice cache did not sync")
	}
	return c
}

// sliceCacheClient is Client with EndpointSlice lists served by an informer cache, as the
// manager's client serves them; cached counts them.
type sliceCacheClient struct {
	client.Client
	cache  client.Reader
	cached *atomic.Int32
}

func (c sliceCacheClient) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	if _, ok := list.(*discoveryv1.EndpointSliceList); ok {
		c.cached.Add(1)
		return c.cache.List(ctx, list, opts...)
	}
	return c.Client.List(ctx, list, opts...)
}

// awaitCached waits until the cache holds slice at its resourceVersion (its watch event arrived).
func awaitCached(t *testing.T, c client.Reader, slice *discoveryv1.EndpointSlice) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		got := &discoveryv1.EndpointSlice{}
		if err := c.Get(context.Background(), client.ObjectKeyFromObject(slice), got); err == nil && got.ResourceVersion == slice.ResourceVersion {
			return
		}
	}
	t.Fatalf("the cache never saw EndpointSlice %s at resourceVersion %s", slice.Name, slice.ResourceVersion)
}

// sliceController plays the EndpointSlice controller for the primary Service: its slice lists
// the primary's pods, named after the ReplicaSet the Deployment's status names (primaryReplicaSet).
// A rolling primary lists its old pods ready and its new ones not ready yet; once its status
// says ready, the new pods alone, ready. Each write is awaited in the cache, as a watch event
// would be before the tick it wakes.
type sliceController struct {
	t      *testing.T
	c      client.Client
	cache  client.Reader
	slice  *discoveryv1.EndpointSlice
	serves string // the ReplicaSet the slice lists ready
}

func (s *sliceController) sync(d *appsv1.Deployment) {
	s.t.Helper()
	rs := primaryReplicaSet(d)
	var eps []discoveryv1.Endpoint
	if d.Status.ReadyReplicas >= d.Status.UpdatedReplicas && d.Status.UpdatedReplicas > 0 {
		s.serves = rs
		for i := range d.Status.UpdatedReplicas {
			eps = append(eps, endpoint(rs+"-pod"+string(rune('a'+i)), "10.0.1."+string(rune('1'+i)), true, false))
		}
	} else {
		for i := range d.Status.ReadyReplicas {
			eps = append(eps, endpoint(s.serves+"-pod"+string(rune('a'+i)), "10.0.0."+string(rune('1'+i)), true, false))
		}
		for i := range d.Status.UpdatedReplicas {
			eps = append(eps, endpoint(rs+"-pod"+string(rune('a'+i)), "10.0.1."+string(rune('1'+i)), false, false))
		}
	}
	s.slice.Endpoints = eps
	if err := s.c.Update(context.Background(), s.slice); err != nil {
		s.t.Fatal(err)
	}
	awaitCached(s.t, s.cache, s.slice)
}

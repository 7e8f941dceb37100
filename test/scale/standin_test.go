package scale

import (
	"context"
	"fmt"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
	"sluice.dev/sluice/test/testenv"
)

// standIn plays the cluster around the manager: it stands in for the Deployment controller,
// writing for every Deployment a status that reports all replicas updated, ready and available
// for the current generation (only when the status differs), and it watches Canaries so the test
// can wait on their phases without polling the apiserver. It uses the uncounted envtest config:
// none of its requests count against the manager.
type standIn struct {
	cache  cache.Cache
	c      client.Client
	queue  workqueue.TypedInterface[types.NamespacedName]
	cancel context.CancelFunc
	wg     sync.WaitGroup
	once   sync.Once
}

// standInWorkers is how many Deployment status writes the stand-in makes at once.
const standInWorkers = 4

// startStandIn starts the stand-in and waits until its informers have synced.
// errors: a cache that cannot start or sync.
func startStandIn(e *testenv.Env) (*standIn, error) {
	informers, err := cache.New(e.Config, cache.Options{Scheme: e.Scheme})
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &standIn{cache: informers, c: e.Client, cancel: cancel, queue: workqueue.NewTyped[types.NamespacedName]()}
	deployments, err := informers.GetInformer(ctx, &appsv1.Deployment{}, cache.BlockUntilSynced(false))
	if err == nil {
		_, err = informers.GetInformer(ctx, &sluicev1.Canary{}, cache.BlockUntilSynced(false))
	}
	if err != nil {
		cancel()
		return nil, err
	}
	enqueue := func(o any) {
		if d, ok := o.(*appsv1.Deployment); ok {
			s.queue.Add(types.NamespacedName{Namespace: d.Namespace, Name: d.Name})
		}
	}
	if _, err := deployments.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    enqueue,
		UpdateFunc: func(_, o any) { enqueue(o) },
	}); err != nil {
		cancel()
		return nil, err
	}
	s.wg.Go(func() { _ = informers.Start(ctx) })
	if !informers.WaitForCacheSync(ctx) {
		s.stop()
		return nil, fmt.Errorf("stand-in: cache did not sync")
	}
	for range standInWorkers {
		s.wg.Go(func() { s.work(ctx) })
	}
	return s, nil
}

func (s *standIn) work(ctx context.Context) {
	for {
		key, shutdown := s.queue.Get()
		if shutdown {
			return
		}
		if err := s.sync(ctx, key); err != nil && ctx.Err() == nil {
			// The apiserver is busy or the cache lags: try again shortly.
			s.wg.Go(func() {
				time.Sleep(100 * time.Millisecond)
				s.queue.Add(key)
			})
		}
		s.queue.Done(key)
	}
}

// rolledOut is the status the Deployment controller reports once d is fully rolled out.
func rolledOut(d *appsv1.Deployment) appsv1.DeploymentStatus {
	n := int32(1)
	if d.Spec.Replicas != nil {
		n = *d.Spec.Replicas
	}
	return appsv1.DeploymentStatus{ObservedGeneration: d.Generation, Replicas: n, UpdatedReplicas: n,
		ReadyReplicas: n, AvailableReplicas: n}
}

func (s *standIn) sync(ctx context.Context, key types.NamespacedName) error {
	d := &appsv1.Deployment{}
	if err := s.cache.Get(ctx, key, d); err != nil {
		return client.IgnoreNotFound(err)
	}
	st := rolledOut(d)
	if equality.Semantic.DeepEqual(d.Status, st) {
		return nil
	}
	patch := client.MergeFrom(d.DeepCopy())
	d.Status = st
	if err := s.c.Status().Patch(ctx, d, patch); err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	return nil
}

// settled reports whether every Deployment has its rolled-out status and no write is pending.
func (s *standIn) settled(ctx context.Context) bool {
	if s.queue.Len() > 0 {
		return false
	}
	list := &appsv1.DeploymentList{}
	if err := s.cache.List(ctx, list); err != nil {
		return false
	}
	for i := range list.Items {
		if !equality.Semantic.DeepEqual(list.Items[i].Status, rolledOut(&list.Items[i])) {
			return false
		}
	}
	return true
}

// waitSettled waits until settled holds. errors: timeout.
func (s *standIn) waitSettled(timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for !s.settled(context.Background()) {
		if time.Now().After(deadline) {
			return fmt.Errorf("deployment stand-in not settled after %s", timeout)
		}
		time.Sleep(100 * time.Millisecond)
	}
	return nil
}

// canaries lists the Canaries as the stand-in's cache sees them.
func (s *standIn) canaries(ctx context.Context) ([]sluicev1.Canary, error) {
	list := &sluicev1.CanaryList{}
	if err := s.cache.List(ctx, list); err != nil {
		return nil, err
	}
	return list.Items, nil
}

// stop stops the informers and the workers and waits for them; later calls do nothing.
func (s *standIn) stop() {
	s.once.Do(func() {
		s.cancel()
		s.queue.ShutDown()
		s.wg.Wait()
	})
}

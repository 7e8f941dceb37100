package canary

import (
	"context"
	"reflect"
	"sync"
	"sync/atomic"

	"sigs.k8s.io/controller-runtime/pkg/client"
)

// lagCache plays an informer cache one tick behind for one kind of object: from a write to the
// end of the next tick, reads return the object as it was before the first write of that stretch
// (the apiserver holds the new one; like an informer cache, it never goes back once it showed a
// version). The test calls nextTick before each tick; the client wrappers built on it
// (laggingRoutes, laggingWorkloads) call beforeWrite and readStale.
type lagCache[T client.Object] struct {
	mu      sync.Mutex
	tick    int
	old     map[client.ObjectKey]staleVersion[T]
	newItem func() T
	// staleReads counts the reads answered with a version older than the apiserver's.
	staleReads atomic.Int32
}

type staleVersion[T any] struct {
	obj  T
	tick int
}

func newLagCache[T client.Object](newItem func() T) *lagCache[T] {
	return &lagCache[T]{old: map[client.ObjectKey]staleVersion[T]{}, newItem: newItem}
}

func (l *lagCache[T]) nextTick() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.tick++
	for k, v := range l.old {
		if v.tick < l.tick-1 {
			delete(l.old, k)
		}
	}
}

// beforeWrite keeps the version of key the apiserver holds before a write, unless the cache
// already lags on key (it keeps the older version then).
func (l *lagCache[T]) beforeWrite(ctx context.Context, apiserver client.Reader, key client.ObjectKey) {
	l.mu.Lock()
	_, lagging := l.old[key]
	l.mu.Unlock()
	before := l.newItem()
	if lagging || apiserver.Get(ctx, key, before) != nil {
		return
	}
	l.mu.Lock()
	l.old[key] = staleVersion[T]{before, l.tick}
	l.mu.Unlock()
}

// readStale copies into obj (of the cache's kind) the version of key the cache still shows, and
// reports whether it lags on key; a read of another kind is not answered.
func (l *lagCache[T]) readStale(key client.ObjectKey, obj client.Object) bool {
	if _, ok := obj.(T); !ok {
		return false
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	v, ok := l.old[key]
	if !ok || v.tick < l.tick-1 {
		return false
	}
	l.staleReads.Add(1)
	reflect.ValueOf(obj).Elem().Set(reflect.ValueOf(v.obj.DeepCopyObject()).Elem())
	return true
}

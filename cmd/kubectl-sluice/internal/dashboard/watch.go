package dashboard

import (
	"context"
	"fmt"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
)

// Kinds the dashboard watches.
const (
	kindCanary    = "canary"
	kindDataPlane = "dataplane"
)

// objKey names one watched object: its kind and its cache key ("namespace/name", or "name" for a
// cluster-scoped DataPlane).
type objKey struct {
	kind, key string
}

// watcher is the one informer (a list, then a watch) of one kind, made with the user's
// credentials. It remembers the last list or watch error, so the page can show the apiserver's
// answer (a Forbidden, a missing CRD) instead of an empty table.
type watcher struct {
	kind     string
	informer toolscache.SharedIndexInformer
	notify   func(objKey)

	mu      sync.Mutex
	lastErr string
}

// newWatcher builds the informer of kind over c: Canaries of namespace ("" for all), or every
// DataPlane. Every change is passed to notify.
func newWatcher(c client.WithWatch, kind, namespace string, notify func(objKey)) (*watcher, error) {
	w := &watcher{kind: kind, notify: notify}
	var example client.Object
	var newList func() client.ObjectList
	switch kind {
	case kindCanary:
		example, newList = &sluicev1.Canary{}, func() client.ObjectList { return &sluicev1.CanaryList{} }
	case kindDataPlane:
		example, newList, namespace = &sluicev1.DataPlane{}, func() client.ObjectList { return &sluicev1.DataPlaneList{} }, ""
	default:
		return nil, fmt.Errorf("unknown kind %q", kind)
	}
	lw := &toolscache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			list := newList()
			err := c.List(ctx, list, &client.ListOptions{Namespace: namespace, Raw: &opts})
			w.setErr(err)
			return list, err
		},
		WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			wi, err := c.Watch(ctx, newList(), &client.ListOptions{Namespace: namespace, Raw: &opts})
			w.setErr(err)
			return wi, err
		},
	}
	w.informer = toolscache.NewSharedIndexInformer(lw, example, 0, toolscache.Indexers{})
	if err := w.informer.SetWatchErrorHandlerWithContext(func(_ context.Context, _ *toolscache.Reflector, err error) {
		w.setErr(err)
	}); err != nil {
		return nil, err
	}
	// The page never shows managed fields: drop them from the cache.
	if err := w.informer.SetTransform(func(o any) (any, error) {
		if m, ok := o.(metav1.Object); ok {
			m.SetManagedFields(nil)
		}
		return o, nil
	}); err != nil {
		return nil, err
	}
	changed := func(o any) {
		if key, err := toolscache.DeletionHandlingMetaNamespaceKeyFunc(o); err == nil {
			notify(objKey{kind: kind, key: key})
		}
	}
	if _, err := w.informer.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    changed,
		UpdateFunc: func(_, o any) { changed(o) },
		DeleteFunc: changed,
	}); err != nil {
		return nil, err
	}
	return w, nil
}

func (w *watcher) setErr(err error) {
	msg := ""
	if err != nil {
		msg = err.Error()
	}
	w.mu.Lock()
	changed := w.lastErr != msg
	w.lastErr = msg
	w.mu.Unlock()
	if changed {
		w.notify(objKey{kind: w.kind})
	}
}

// err is the apiserver's answer to the last failed list or watch; "" once one succeeded.
func (w *watcher) err() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.lastErr
}

// get returns the cached object under key, or nil.
func (w *watcher) get(key string) any {
	o, ok, err := w.informer.GetStore().GetByKey(key)
	if err != nil || !ok {
		return nil
	}
	return o
}

// list returns every cached object.
func (w *watcher) list() []any { return w.informer.GetStore().List() }

// hub fans the watchers' changes out to the open streams. Each stream keeps a set of the keys that
// changed since it last wrote, so a slow browser gets the latest state of each object once, and
// memory stays bounded by the number of objects whatever the rate of changes.
type hub struct {
	mu   sync.Mutex
	subs map[*subscriber]struct{}
}

// subscriber is one open stream.
type subscriber struct {
	wants func(objKey) bool

	mu      sync.Mutex
	pending map[objKey]struct{}
	wake    chan struct{}
}

func newHub() *hub { return &hub{subs: map[*subscriber]struct{}{}} }

func (h *hub) subscribe(wants func(objKey) bool) *subscriber {
	s := &subscriber{wants: wants, pending: map[objKey]struct{}{}, wake: make(chan struct{}, 1)}
	h.mu.Lock()
	h.subs[s] = struct{}{}
	h.mu.Unlock()
	return s
}

func (h *hub) unsubscribe(s *subscriber) {
	h.mu.Lock()
	delete(h.subs, s)
	h.mu.Unlock()
}

// notify marks key changed for every stream that wants it.
func (h *hub) notify(key objKey) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for s := range h.subs {
		if s.wants(key) {
			s.mark(key)
		}
	}
}

func (s *subscriber) mark(key objKey) {
	s.mu.Lock()
	s.pending[key] = struct{}{}
	s.mu.Unlock()
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// take returns the keys changed since the last take.
func (s *subscriber) take() []objKey {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]objKey, 0, len(s.pending))
	for k := range s.pending {
		out = append(out, k)
	}
	clear(s.pending)
	return out
}

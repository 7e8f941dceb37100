package configread

import (
	"context"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Defaults of Options. A Canary keeps two to four copies (the configs its target references and
// their -primary copies): 65536 holds those of ten thousand Canaries. Copies are kept only of what
// Canaries reference, so below the bound each costs its own size, as an informer's copy would; a
// bound smaller than the Canaries need reads the least recently used again at every promotion
// (with 4096, N = 3000 cost 2 more reads per rollout) and scans the copies at every read.
const (
	DefaultTTL        = 30 * time.Minute
	DefaultMaxEntries = 65536
)

// Options tune a Client.
type Options struct {
	// TTL drops a copy not read for this long. Default 30m.
	TTL time.Duration
	// MaxEntries bounds the copies kept; beyond it the least recently read go. Default 65536.
	MaxEntries int
	// Now is the clock (tests). Default time.Now.
	Now func() time.Time
}

// Client is a client.Client whose Get of a Secret or ConfigMap is served as the package doc says;
// everything else goes to the wrapped client unchanged. It is safe for concurrent use.
type Client struct {
	client.Client
	meta client.Reader
	opts Options

	mu      sync.Mutex
	entries map[entryKey]*entry
	reads   int // apiserver reads of contents, for tests and figures
}

type entryKey struct {
	kind string
	key  types.NamespacedName
}

type entry struct {
	uid      types.UID
	version  string
	obj      client.Object // deep copy of what the apiserver returned
	lastRead time.Time
}

// New wraps c (whose typed Secret and ConfigMap reads must bypass its cache, see
// client.CacheOptions.DisableFor) with meta, a reader of PartialObjectMetadata (the manager's
// cache, with a metadata-only watch of both kinds).
func New(c client.Client, meta client.Reader, opts Options) *Client {
	if opts.TTL <= 0 {
		opts.TTL = DefaultTTL
	}
	if opts.MaxEntries <= 0 {
		opts.MaxEntries = DefaultMaxEntries
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &Client{Client: c, meta: meta, opts: opts, entries: map[entryKey]*entry{}}
}

var (
	secretGVK    = corev1.SchemeGroupVersion.WithKind("Secret")
	configMapGVK = corev1.SchemeGroupVersion.WithKind("ConfigMap")
)

// Get reads key into obj. For a Secret or ConfigMap: NotFound when the metadata cache does not
// know it; the copy read last when its resourceVersion is current; else a read from the
// apiserver (also when the metadata cache cannot answer, e.g. outside its namespaces).
func (c *Client) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	var gvk schema.GroupVersionKind
	switch obj.(type) {
	case *corev1.Secret:
		gvk = secretGVK
	case *corev1.ConfigMap:
		gvk = configMapGVK
	default:
		return c.Client.Get(ctx, key, obj, opts...)
	}
	ek := entryKey{kind: gvk.Kind, key: key}
	meta := &metav1.PartialObjectMetadata{}
	meta.SetGroupVersionKind(gvk)
	err := c.meta.Get(ctx, key, meta)
	switch {
	case apierrors.IsNotFound(err):
		c.forget(ek)
		return err
	case err != nil:
		return c.Client.Get(ctx, key, obj, opts...) // the cache cannot answer: read, keep nothing
	}
	if c.copyCurrent(ek, meta, obj) {
		return nil
	}
	if err := c.Client.Get(ctx, key, obj, opts...); err != nil {
		if apierrors.IsNotFound(err) {
			c.forget(ek)
		}
		return err
	}
	c.store(ek, obj)
	return nil
}

// Create implements client.Writer. A Secret or ConfigMap created is kept as read: the apiserver
// returned its contents and resourceVersion, so the first Get after it costs no request.
func (c *Client) Create(ctx context.Context, obj client.Object, opts ...client.CreateOption) error {
	if err := c.Client.Create(ctx, obj, opts...); err != nil {
		return err
	}
	if o := (&client.CreateOptions{}).ApplyOptions(opts); len(o.DryRun) == 0 {
		c.keepWritten(obj)
	}
	return nil
}

// Update implements client.Writer; a Secret or ConfigMap written is kept as Create says.
func (c *Client) Update(ctx context.Context, obj client.Object, opts ...client.UpdateOption) error {
	if err := c.Client.Update(ctx, obj, opts...); err != nil {
		return err
	}
	if o := (&client.UpdateOptions{}).ApplyOptions(opts); len(o.DryRun) == 0 {
		c.keepWritten(obj)
	}
	return nil
}

// Patch implements client.Writer; a Secret or ConfigMap written is kept as Create says.
func (c *Client) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
	if err := c.Client.Patch(ctx, obj, patch, opts...); err != nil {
		return err
	}
	if o := (&client.PatchOptions{}).ApplyOptions(opts); len(o.DryRun) == 0 {
		c.keepWritten(obj)
	}
	return nil
}

// Delete implements client.Writer; a Secret or ConfigMap deleted is forgotten.
func (c *Client) Delete(ctx context.Context, obj client.Object, opts ...client.DeleteOption) error {
	err := c.Client.Delete(ctx, obj, opts...)
	if ek, ok := keyOf(obj); ok {
		c.forget(ek)
	}
	return err
}

// keepWritten keeps obj, as the apiserver returned it from a write, when it is a Secret or a
// ConfigMap (callers skip dry runs).
func (c *Client) keepWritten(obj client.Object) {
	ek, ok := keyOf(obj)
	if !ok || obj.GetResourceVersion() == "" {
		return
	}
	c.put(ek, obj)
}

func keyOf(obj client.Object) (entryKey, bool) {
	var kind string
	switch obj.(type) {
	case *corev1.Secret:
		kind = secretGVK.Kind
	case *corev1.ConfigMap:
		kind = configMapGVK.Kind
	default:
		return entryKey{}, false
	}
	return entryKey{kind: kind, key: client.ObjectKeyFromObject(obj)}, true
}

// copyCurrent copies the kept object into obj when it is the version meta describes.
func (c *Client) copyCurrent(ek entryKey, meta *metav1.PartialObjectMetadata, obj client.Object) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[ek]
	if !ok || e.uid != meta.UID || e.version != meta.ResourceVersion {
		return false
	}
	e.lastRead = c.opts.Now()
	switch dst := obj.(type) {
	case *corev1.Secret:
		e.obj.(*corev1.Secret).DeepCopyInto(dst)
	case *corev1.ConfigMap:
		e.obj.(*corev1.ConfigMap).DeepCopyInto(dst)
	}
	return true
}

// store keeps obj as just read from the apiserver.
func (c *Client) store(ek entryKey, obj client.Object) {
	c.mu.Lock()
	c.reads++
	c.mu.Unlock()
	c.put(ek, obj)
}

func (c *Client) put(ek entryKey, obj client.Object) {
	now := c.opts.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	c.entries[ek] = &entry{uid: obj.GetUID(), version: obj.GetResourceVersion(),
		obj: obj.DeepCopyObject().(client.Object), lastRead: now}
	c.evictLocked(now)
}

// evictLocked drops copies older than TTL, then the least recently read beyond MaxEntries.
func (c *Client) evictLocked(now time.Time) {
	for k, e := range c.entries {
		if now.Sub(e.lastRead) > c.opts.TTL {
			delete(c.entries, k)
		}
	}
	for len(c.entries) > c.opts.MaxEntries {
		var oldest entryKey
		var at time.Time
		for k, e := range c.entries {
			if at.IsZero() || e.lastRead.Before(at) {
				oldest, at = k, e.lastRead
			}
		}
		delete(c.entries, oldest)
	}
}

func (c *Client) forget(ek entryKey) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.entries, ek)
}

// Stats reports the copies kept and the apiserver reads of contents so far.
func (c *Client) Stats() (kept, reads int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.entries), c.reads
}

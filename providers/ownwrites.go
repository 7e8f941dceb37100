package providers

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// ReadOwnWrites wraps a (cached) client so that a router reads its own writes back at once.
//
// A manager's cache shows a write only when its watch delivers it, some milliseconds to seconds
// later. A router that rewrites a whole rules list from what it reads (an HTTPRoute's rules are
// atomic) must not rebuild it from the version its own last write replaced: the rule that write
// added (a session-affinity cookie rule, an A/B rule, a weight) would be dropped again. So every
// write through the returned client remembers the object the apiserver returned, and the versions
// it replaced; a Get whose cache still holds one of those replaced versions returns the written
// object instead. Any other version (someone else's write that the cache has seen) ends the memory.
// Writes are the routers' own optimistic locks' business: a write conditioned on a
// resourceVersion read through this client is conditioned on the newest version this process knows.
// The memory costs no request and holds one object per key until the cache catches up (the next
// Get of that key) or the key is deleted. List is not overlaid.
func ReadOwnWrites(c client.Client) client.Client {
	if _, ok := c.(*ownWrites); ok {
		return c
	}
	return &ownWrites{Client: c, decoder: serializer.NewCodecFactory(c.Scheme()).UniversalDeserializer()}
}

// IsOwnWrite reports whether obj, a version of an object a watch delivers, is exactly the version
// a write through c (a client ReadOwnWrites returned) produced: the echo of our own write, which
// tells the writer nothing new. False for any other version, for an object whose write the
// memory no longer holds (a Get saw the cache catch up), and for any other client: a watch that
// skips only what this reports skips no one else's change.
func IsOwnWrite(c client.Client, obj client.Object) bool {
	o, ok := c.(*ownWrites)
	if !ok || obj == nil || obj.GetResourceVersion() == "" {
		return false
	}
	v, ok := o.written.Load(o.keyOf(obj, client.ObjectKeyFromObject(obj)))
	return ok && v.(*ownWrite).obj.GetResourceVersion() == obj.GetResourceVersion()
}

type ownWrites struct {
	client.Client
	decoder runtime.Decoder
	written sync.Map // memoKey → *ownWrite
}

// ownWrite is the object a write of ours produced and every version our writes replaced since the
// cache last showed a version of its own.
type ownWrite struct {
	obj      client.Object
	replaced []string // resourceVersions; "" for "absent" (our write created it)
}

type memoKey struct {
	kind string
	key  client.ObjectKey
}

func (o *ownWrites) keyOf(obj runtime.Object, key client.ObjectKey) memoKey {
	return memoKey{kind: reflect.TypeOf(obj).String(), key: key}
}

// Get reads through the wrapped client and returns our own newer write instead of a version it
// replaced (or of its absence, for an object our write created).
func (o *ownWrites) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	err := o.Client.Get(ctx, key, obj, opts...)
	if err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	mk := o.keyOf(obj, key)
	v, ok := o.written.Load(mk)
	if !ok {
		return err
	}
	w := v.(*ownWrite)
	cached := "" // absent
	if err == nil {
		cached = obj.GetResourceVersion()
	}
	if !slices.Contains(w.replaced, cached) {
		o.written.CompareAndDelete(mk, v) // the cache caught up, or shows someone else's write
		return err
	}
	return copyInto(w.obj, obj)
}

func (o *ownWrites) Create(ctx context.Context, obj client.Object, opts ...client.CreateOption) error {
	replaced := o.before(ctx, obj, client.ObjectKeyFromObject(obj))
	if err := o.Client.Create(ctx, obj, opts...); err != nil {
		return err
	}
	o.remember(obj, replaced)
	return nil
}

func (o *ownWrites) Update(ctx context.Context, obj client.Object, opts ...client.UpdateOption) error {
	replaced := o.before(ctx, obj, client.ObjectKeyFromObject(obj))
	if err := o.Client.Update(ctx, obj, opts...); err != nil {
		return err
	}
	o.remember(obj, replaced)
	return nil
}

func (o *ownWrites) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
	replaced := o.before(ctx, obj, client.ObjectKeyFromObject(obj))
	if err := o.Client.Patch(ctx, obj, patch, opts...); err != nil {
		return err
	}
	o.remember(obj, replaced)
	return nil
}

func (o *ownWrites) Delete(ctx context.Context, obj client.Object, opts ...client.DeleteOption) error {
	o.written.Delete(o.keyOf(obj, client.ObjectKeyFromObject(obj)))
	return o.Client.Delete(ctx, obj, opts...)
}

// Apply server-side applies ac and remembers the object the apiserver returned (decoded with the
// client's scheme; a kind the scheme does not know is applied and not remembered).
func (o *ownWrites) Apply(ctx context.Context, ac runtime.ApplyConfiguration, opts ...client.ApplyOption) error {
	probe, key, known := o.applyTarget(ac)
	var replaced []string
	if known {
		replaced = o.before(ctx, probe, key)
	}
	if err := o.Client.Apply(ctx, ac, opts...); err != nil {
		return err
	}
	if !known {
		return nil
	}
	data, err := json.Marshal(ac) // the apply response was decoded into ac
	if err != nil {
		return fmt.Errorf("reading the apply response of %s: %w", key, err)
	}
	out, _, err := o.decoder.Decode(data, nil, probe)
	if err != nil {
		return fmt.Errorf("reading the apply response of %s: %w", key, err)
	}
	if obj, ok := out.(client.Object); ok {
		o.remember(obj, replaced)
	}
	return nil
}

// applyTarget is an empty object of ac's kind and ac's key; known is false when ac names no kind
// the scheme knows.
func (o *ownWrites) applyTarget(ac runtime.ApplyConfiguration) (client.Object, client.ObjectKey, bool) {
	var meta struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
		Metadata   struct {
			Name      string `json:"name"`
			Namespace string `json:"namespace"`
		} `json:"metadata"`
	}
	data, err := json.Marshal(ac)
	if err != nil || json.Unmarshal(data, &meta) != nil {
		return nil, client.ObjectKey{}, false
	}
	key := client.ObjectKey{Namespace: meta.Metadata.Namespace, Name: meta.Metadata.Name}
	gvk := schema.FromAPIVersionAndKind(meta.APIVersion, meta.Kind)
	obj, err := o.Scheme().New(gvk)
	if err != nil {
		return nil, key, false
	}
	typed, ok := obj.(client.Object)
	return typed, key, ok
}

// before is the list of versions a write of obj replaces: the ones already remembered for it, plus
// the version it reads now (through Get, so our own last write counts). A version that is neither
// ours nor the cache's starts a new list.
func (o *ownWrites) before(ctx context.Context, obj client.Object, k client.ObjectKey) []string {
	current := obj.DeepCopyObject().(client.Object)
	rv := ""
	if err := o.Get(ctx, k, current); err == nil {
		rv = current.GetResourceVersion()
	} else if !apierrors.IsNotFound(err) {
		return nil // unknown: remember nothing for this write
	}
	var replaced []string
	if v, ok := o.written.Load(o.keyOf(obj, k)); ok {
		w := v.(*ownWrite)
		if w.obj.GetResourceVersion() == rv {
			replaced = w.replaced
		}
	}
	return append(slices.Clone(replaced), rv)
}

func (o *ownWrites) remember(obj client.Object, replaced []string) {
	if replaced == nil || obj.GetResourceVersion() == "" {
		return
	}
	o.written.Store(o.keyOf(obj, client.ObjectKeyFromObject(obj)),
		&ownWrite{obj: obj.DeepCopyObject().(client.Object), replaced: replaced})
}

// copyInto copies from into to, which must be of the same type.
func copyInto(from, to client.Object) error {
	fv, tv := reflect.ValueOf(from.DeepCopyObject()), reflect.ValueOf(to)
	if fv.Type() != tv.Type() || tv.Kind() != reflect.Pointer {
		return fmt.Errorf("reading %s: own write of type %s read as %s", client.ObjectKeyFromObject(from), fv.Type(), tv.Type())
	}
	tv.Elem().Set(fv.Elem())
	return nil
}

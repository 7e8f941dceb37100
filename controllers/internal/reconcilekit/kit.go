package reconcilekit

import (
	"context"
	"fmt"
	"reflect"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"sluice.dev/sluice/controllers/internal/planevent"
)

// StaleRetry is how soon to look again when the cache turned out to lag behind our own writes
// (or behind the apiserver, see Kit.IsStale).
const StaleRetry = 250 * time.Millisecond

// StaleResult is what Reconcile returns when Begin refuses a tick.
func StaleResult() ctrl.Result { return ctrl.Result{RequeueAfter: StaleRetry} }

// Kit bundles what every tick of a controller needs. It is a small value: build it per
// Reconcile from the Reconciler's fields (tests set those fields directly).
type Kit struct {
	// Client reads through the manager's cache and writes the status.
	Client client.Client
	// APIReader reads around the cache for IsStale. Nil: trust the cache.
	APIReader client.Reader
	// Recorder emits Kubernetes events. Nil: events are only logged.
	Recorder events.EventRecorder
	// Clock is the only source of time (a fake in tests). Nil: the real clock.
	Clock clock.PassiveClock
	// Writes is the controller's memory of its own status writes; required, one per controller
	// (a zero WriteLog field of the Reconciler).
	Writes *WriteLog
	// Deliveries runs the notification deliveries in the background, one per controller (a zero
	// Deliveries field of the Reconciler, added to the manager). Nil: each in its own goroutine.
	Deliveries *Deliveries
}

// Now is the time of the tick.
func (k Kit) Now() time.Time {
	if k.Clock == nil {
		return time.Now()
	}
	return k.Clock.Now()
}

// Record emits e on obj and logs it. Controllers call it only from the outbox (Tick.Event), so
// an event is recorded once its status is written.
func (k Kit) Record(ctx context.Context, obj runtime.Object, e planevent.Event) {
	log.FromContext(ctx).Info(e.Message, "reason", e.Reason, "type", e.Type)
	if k.Recorder != nil {
		k.Recorder.Eventf(obj, nil, e.Type, e.Reason, "Reconcile", "%s", e.Message)
	}
}

// IsStale reports whether the cached obj is older than what the apiserver holds, reading it
// through APIReader. Call it before a side effect that must not run twice (a webhook gate, an
// analysis check, a restart) and return StaleResult when it says so. Without an APIReader it
// reports false. errors: the read's.
func (k Kit) IsStale(ctx context.Context, obj client.Object) (bool, error) {
	if k.APIReader == nil {
		return false, nil
	}
	live, ok := obj.DeepCopyObject().(client.Object)
	if !ok {
		return false, fmt.Errorf("%T is not a client.Object", obj)
	}
	if err := k.APIReader.Get(ctx, client.ObjectKeyFromObject(obj), live); err != nil {
		return false, fmt.Errorf("reading %s: %w", client.ObjectKeyFromObject(obj), err)
	}
	return live.GetResourceVersion() != obj.GetResourceVersion(), nil
}

// ShowsOwnWrite reports, without a request, whether the cached obj is the very version this
// controller's last status patch produced. Then the cache is as current as a read around it
// would have been when that patch returned: every write before ours, and ours, is in it; a write
// by someone else since is the same race as one landing right after a read (and a status patch
// decided before seeing it fails its optimistic lock). A caller may skip IsStale then. After a
// restart, a lost memory or any other version, it reports false.
func (k Kit) ShowsOwnWrite(obj client.Object) bool { return k.Writes.showsOwnWrite(obj) }

// Begin starts a tick on obj as just read from the cache. It reports false, starting nothing,
// when the cache still holds the very version this controller last patched the status of: the
// cache has not seen that write yet, and deciding from it would repeat the last transition (and
// fail its patch with a conflict). Return StaleResult then. The check costs no request; after a
// restart the memory is empty and the optimistic lock still guards the write.
func (k Kit) Begin(obj Object) (*Tick, bool) {
	if k.Writes.cacheBehind(obj, k.Now()) {
		return nil, false
	}
	base, ok := obj.DeepCopyObject().(Object)
	if !ok {
		panic(fmt.Sprintf("reconcilekit: DeepCopyObject of %T is not an Object", obj))
	}
	return &Tick{kit: k, obj: obj, base: base}, true
}

// WriteLog remembers, per object, its last write by this controller (a status patch, or any
// other patch the controller records with Wrote): the resourceVersion it was based on, the one it
// produced, and when. Objects are told apart by Go type too, so one log can hold a Deployment and
// a DaemonSet of the same name. The zero value is ready; it is safe for concurrent use.
type WriteLog struct {
	patchedFrom sync.Map // logKey → ownWrite
}

// logKey names an object in a WriteLog: its Go type and its key.
type logKey struct {
	kind string
	key  client.ObjectKey
}

func keyOf(obj client.Object) logKey {
	return logKey{kind: reflect.TypeOf(obj).String(), key: client.ObjectKeyFromObject(obj)}
}

// Wrote records that this controller's write, based on the version basedOn (the resourceVersion
// the object had before it), produced obj (as the write returned it) at time at.
func (w *WriteLog) Wrote(obj client.Object, basedOn string, at time.Time) { w.wrote(obj, basedOn, at) }

// Behind reports, without a request, whether the cached obj is still the very version this
// controller's last recorded write of it replaced, less than OwnWriteMemory ago: the cache has
// not shown that write yet, and a decision from obj would repeat it. Return StaleResult then.
// Once the cache shows another version the write is forgotten (the log of a controller that
// records writes only for Behind holds just the writes its cache has not shown yet).
func (w *WriteLog) Behind(obj client.Object, now time.Time) bool {
	key := keyOf(obj)
	v, ok := w.patchedFrom.Load(key)
	if !ok {
		return false // every tick of an object not written lately: a lock-free read, no delete
	}
	if w.cacheBehind(obj, now) {
		return true
	}
	w.patchedFrom.CompareAndDelete(key, v)
	return false
}

// ownWrite is one remembered status patch.
type ownWrite struct {
	basedOn, wroteAs string
	at               time.Time
}

// OwnWriteMemory bounds how long Begin waits for the cache to show the controller's own last
// status write: a write that never shows (lost after it was acknowledged) must not hold the
// object forever.
const OwnWriteMemory = 5 * time.Second

func (w *WriteLog) cacheBehind(obj client.Object, now time.Time) bool {
	key := keyOf(obj)
	v, ok := w.patchedFrom.Load(key)
	if !ok {
		return false
	}
	ow := v.(ownWrite)
	if ow.basedOn != obj.GetResourceVersion() || ow.wroteAs == ow.basedOn {
		// The cache shows another version, or the write changed nothing (the apiserver kept the
		// version): nothing to wait for.
		return false
	}
	if now.Sub(ow.at) < OwnWriteMemory {
		return true
	}
	w.patchedFrom.Delete(key) // the write never showed: stop waiting for it
	return false
}

// showsOwnWrite reports whether obj is exactly the version this controller's last status patch
// of it produced: the cache holds every write up to and including our own.
func (w *WriteLog) showsOwnWrite(obj client.Object) bool {
	v, ok := w.patchedFrom.Load(keyOf(obj))
	if !ok {
		return false
	}
	ow := v.(ownWrite)
	return ow.wroteAs != "" && ow.wroteAs == obj.GetResourceVersion()
}

func (w *WriteLog) wrote(obj client.Object, basedOn string, at time.Time) {
	w.patchedFrom.Store(keyOf(obj), ownWrite{basedOn: basedOn, wroteAs: obj.GetResourceVersion(), at: at})
}

// Forget drops what the log holds for obj (a deleted object).
func (w *WriteLog) Forget(obj client.Object) { w.patchedFrom.Delete(keyOf(obj)) }

package faults

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Kind is a kind of write.
type Kind string

// Kinds of writes a Canary controller makes.
const (
	Status  Kind = "status"  // a status patch or update of any object
	Route   Kind = "route"   // HTTPRoute, VirtualService, DestinationRule
	Primary Kind = "primary" // the <target>-primary Deployment
	Scale   Kind = "scale"   // any other Deployment (the target's replicas)
	Service Kind = "service" // Services
	Other   Kind = "other"   // anything else (ConfigMaps, Secrets, finalizers)
)

// Kinds lists every kind, in a stable order.
var Kinds = []Kind{Status, Route, Primary, Scale, Service, Other}

// Mode is what happens to the faulted write.
type Mode string

const (
	// Fail returns a conflict error; nothing is written.
	Fail Mode = "fail"
	// Drop returns success; nothing is written (a write lost on the way).
	Drop Mode = "drop"
	// Crash writes, then "crashes": every later write fails with ErrCrashed until Restart.
	Crash Mode = "crash"
)

// ErrCrashed is returned by every write after a Crash fault, until Restart.
var ErrCrashed = errors.New("faults: the process crashed")

// Fault faults the Nth (1-based) write of Kind.
type Fault struct {
	Kind Kind
	N    int
	Mode Mode
}

func (f Fault) String() string { return fmt.Sprintf("%s the %s write #%d", f.Mode, f.Kind, f.N) }

// Write is one write that reached the apiserver.
type Write struct {
	Kind Kind
	Verb string // create, update, patch, delete, status
	Name string // Kind/namespace/name of the object
}

// Client wraps a client.Client. It is safe for concurrent use.
type Client struct {
	client.Client

	mu      sync.Mutex
	faults  []Fault
	counts  map[Kind]int
	crashed bool
	hit     []Fault
	writes  []Write
}

// Wrap returns c with faults armed.
func Wrap(c client.Client, faults ...Fault) *Client {
	return &Client{Client: c, faults: faults, counts: map[Kind]int{}}
}

// Restart ends a crash: writes go through again (the test starts a fresh controller).
func (c *Client) Restart() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.crashed = false
}

// Crashed reports whether a Crash fault fired and no Restart followed.
func (c *Client) Crashed() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.crashed
}

// Hit returns the faults that fired.
func (c *Client) Hit() []Fault {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]Fault(nil), c.hit...)
}

// Writes returns the writes that reached the apiserver, in order.
func (c *Client) Writes() []Write {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]Write(nil), c.writes...)
}

// Counts returns how many writes of each kind were attempted.
func (c *Client) Counts() map[Kind]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[Kind]int, len(c.counts))
	for k, v := range c.counts {
		out[k] = v
	}
	return out
}

// KindOf classifies a write of obj (status: a status subresource write).
func KindOf(obj client.Object, status bool) Kind {
	if status {
		return Status
	}
	switch o := obj.(type) {
	case *appsv1.Deployment:
		if strings.HasSuffix(o.Name, "-primary") {
			return Primary
		}
		return Scale
	case *corev1.Service:
		return Service
	}
	switch gvkKind(obj) {
	case "HTTPRoute", "VirtualService", "DestinationRule":
		return Route
	}
	return Other
}

func gvkKind(obj client.Object) string {
	if k := obj.GetObjectKind().GroupVersionKind().Kind; k != "" {
		return k
	}
	t := fmt.Sprintf("%T", obj)
	return t[strings.LastIndex(t, ".")+1:]
}

// write runs do unless a fault says otherwise.
func (c *Client) write(obj client.Object, status bool, verb string, do func() error) error {
	return c.writeKind(KindOf(obj, status), fmt.Sprintf("%s/%s/%s", gvkKind(obj), obj.GetNamespace(), obj.GetName()), verb, do)
}

func (c *Client) writeKind(kind Kind, name, verb string, do func() error) error {
	c.mu.Lock()
	if c.crashed {
		c.mu.Unlock()
		return ErrCrashed
	}
	c.counts[kind]++
	var fault *Fault
	for i := range c.faults {
		if f := c.faults[i]; f.Kind == kind && f.N == c.counts[kind] {
			fault = &c.faults[i]
			c.hit = append(c.hit, f)
		}
	}
	c.mu.Unlock()
	if fault != nil {
		switch fault.Mode {
		case Fail:
			return apierrors.NewConflict(schema.GroupResource{Resource: string(kind)}, name,
				fmt.Errorf("injected fault: %s", fault))
		case Drop:
			return nil
		}
	}
	if err := do(); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.writes = append(c.writes, Write{Kind: kind, Verb: verb, Name: name})
	if fault != nil && fault.Mode == Crash {
		c.crashed = true
	}
	return nil
}

// Create implements client.Writer.
func (c *Client) Create(ctx context.Context, obj client.Object, opts ...client.CreateOption) error {
	return c.write(obj, false, "create", func() error { return c.Client.Create(ctx, obj, opts...) })
}

// Update implements client.Writer.
func (c *Client) Update(ctx context.Context, obj client.Object, opts ...client.UpdateOption) error {
	return c.write(obj, false, "update", func() error { return c.Client.Update(ctx, obj, opts...) })
}

// Patch implements client.Writer.
func (c *Client) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
	return c.write(obj, false, "patch", func() error { return c.Client.Patch(ctx, obj, patch, opts...) })
}

// Apply implements client.Writer. Sluice server-side applies only routes, so every Apply is a
// Route write.
func (c *Client) Apply(ctx context.Context, obj runtime.ApplyConfiguration, opts ...client.ApplyOption) error {
	return c.writeKind(Route, fmt.Sprintf("%T", obj), "apply", func() error { return c.Client.Apply(ctx, obj, opts...) })
}

// Delete implements client.Writer.
func (c *Client) Delete(ctx context.Context, obj client.Object, opts ...client.DeleteOption) error {
	return c.write(obj, false, "delete", func() error { return c.Client.Delete(ctx, obj, opts...) })
}

// Status returns a status writer whose writes are faulted as Status.
func (c *Client) Status() client.SubResourceWriter {
	return &statusWriter{c: c, w: c.Client.Status()}
}

type statusWriter struct {
	c *Client
	w client.SubResourceWriter
}

func (s *statusWriter) Create(ctx context.Context, obj client.Object, sub client.Object, opts ...client.SubResourceCreateOption) error {
	return s.c.write(obj, true, "status", func() error { return s.w.Create(ctx, obj, sub, opts...) })
}

func (s *statusWriter) Update(ctx context.Context, obj client.Object, opts ...client.SubResourceUpdateOption) error {
	return s.c.write(obj, true, "status", func() error { return s.w.Update(ctx, obj, opts...) })
}

func (s *statusWriter) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
	return s.c.write(obj, true, "status", func() error { return s.w.Patch(ctx, obj, patch, opts...) })
}

func (s *statusWriter) Apply(ctx context.Context, obj runtime.ApplyConfiguration, opts ...client.SubResourceApplyOption) error {
	return s.w.Apply(ctx, obj, opts...)
}

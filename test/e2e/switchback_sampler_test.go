package e2e

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
	"sluice.dev/sluice/test/stack"
)

// servedSet is what one Service's EndpointSlices send traffic to at one moment: its endpoints
// that are not terminating and whose pod the Service's selector selects, with the pod's image and
// pod-template-hash. Endpoints of pods the selector no longer selects (the EndpointSlice
// controller has not caught up with a selector change yet) are counted apart, as lagging.
type servedSet struct {
	ready, notReady, lagging int
	// oldRevision names the endpoints whose pod does not run the release's image.
	oldRevision []string
	// hashes counts ready/total endpoints per pod-template-hash ("7d9f:4/5").
	hashes string
}

// readServedSet reads Service name's EndpointSlices and the namespace's pods through the
// apiserver (the stack's client has no cache). newImage is the release's image: an endpoint
// whose pod runs any other image is of the old revision.
func readServedSet(ctx context.Context, c client.Client, ns, name string, selector map[string]string, newImage string) (servedSet, error) {
	eps := &discoveryv1.EndpointSliceList{}
	if err := c.List(ctx, eps, client.InNamespace(ns), client.MatchingLabels{discoveryv1.LabelServiceName: name}); err != nil {
		return servedSet{}, err
	}
	pods := &corev1.PodList{}
	if err := c.List(ctx, pods, client.InNamespace(ns)); err != nil {
		return servedSet{}, err
	}
	byName := map[string]*corev1.Pod{}
	for i := range pods.Items {
		byName[pods.Items[i].Name] = &pods.Items[i]
	}
	var out servedSet
	type count struct{ ready, total int }
	perHash := map[string]*count{}
	for _, sl := range eps.Items {
		for _, ep := range sl.Endpoints {
			if ep.Conditions.Terminating != nil && *ep.Conditions.Terminating {
				continue // kube-proxy sends no new connection to a terminating endpoint with ready ones
			}
			hash, image := "?", "?"
			podName := ""
			if ep.TargetRef != nil {
				podName = ep.TargetRef.Name
			}
			if pod := byName[podName]; pod != nil {
				if !labels.SelectorFromSet(selector).Matches(labels.Set(pod.Labels)) {
					out.lagging++
					continue
				}
				hash = pod.Labels[appsv1.DefaultDeploymentUniqueLabelKey]
				if len(pod.Spec.Containers) > 0 {
					image = pod.Spec.Containers[0].Image
				}
			}
			ready := ep.Conditions.Ready != nil && *ep.Conditions.Ready
			if ready {
				out.ready++
			} else {
				out.notReady++
			}
			if image != newImage {
				out.oldRevision = append(out.oldRevision, fmt.Sprintf("%s(%s ready=%t)", podName, image, ready))
			}
			if perHash[hash] == nil {
				perHash[hash] = &count{}
			}
			perHash[hash].total++
			if ready {
				perHash[hash].ready++
			}
		}
	}
	var hs []string
	for _, h := range slices.Sorted(maps.Keys(perHash)) {
		hs = append(hs, fmt.Sprintf("%s:%d/%d", h, perHash[h].ready, perHash[h].total))
	}
	out.hashes = strings.Join(hs, ",")
	return out, nil
}

// rollout is a Deployment's spec and status as one sample saw them.
type rollout struct {
	generation, observed                             int64
	spec, replicas, updated, ready, available, unavl int32
}

func rolloutOf(d *appsv1.Deployment) rollout {
	spec := int32(1)
	if d.Spec.Replicas != nil {
		spec = *d.Spec.Replicas
	}
	s := d.Status
	return rollout{generation: d.Generation, observed: s.ObservedGeneration, spec: spec, replicas: s.Replicas,
		updated: s.UpdatedReplicas, ready: s.ReadyReplicas, available: s.AvailableReplicas, unavl: s.UnavailableReplicas}
}

// complete is Flagger's primary readiness: the controller saw the spec, every replica runs the
// current template and is available, and none of an older ReplicaSet is left.
func (r rollout) complete() bool {
	return r.observed == r.generation && r.updated == r.spec && r.replicas == r.spec && r.available == r.spec &&
		r.ready >= r.spec
}

func (r rollout) String() string {
	return fmt.Sprintf("gen=%d/%d spec=%d replicas=%d upd=%d ready=%d avail=%d", r.observed, r.generation, r.spec,
		r.replicas, r.updated, r.ready, r.available)
}

// backendSample is one 500 ms sample of where the traffic goes and what serves it.
type backendSample struct {
	at    time.Time
	phase sluicev1.CanaryPhase
	// apexOn is which backend the apex Service selects (provider kubernetes): primary, canary or
	// other; primaryWeight the route's primary weight in percent (Gateway API), -1 if unread.
	apexOn        string
	primaryWeight int32
	// apex is the apex Service's served set (provider kubernetes); primarySet the primary
	// Service's (Gateway API).
	apex, primarySet servedSet
	primary, canary  rollout
}

func (b backendSample) String() string {
	where := "apex->" + b.apexOn + " " + fmt.Sprintf("ready=%d notready=%d old=%d lagging=%d [%s]", b.apex.ready, b.apex.notReady,
		len(b.apex.oldRevision), b.apex.lagging, b.apex.hashes)
	if b.primaryWeight >= 0 {
		where = fmt.Sprintf("route primary=%d%% primarySvc ready=%d notready=%d old=%d [%s]", b.primaryWeight,
			b.primarySet.ready, b.primarySet.notReady, len(b.primarySet.oldRevision), b.primarySet.hashes)
	}
	return fmt.Sprintf("%s %-11s %s | primary %s | canary ready=%d", b.at.Format("15:04:05.000"), b.phase, where,
		b.primary, b.canary.ready)
}

// backendSampler samples the demo app every 500 ms through the apiserver until stopped.
type backendSampler struct {
	mu      sync.Mutex
	samples []backendSample
	errs    int
	stop    context.CancelFunc
	done    chan struct{}
}

// sampleBackends starts sampling the demo app's Canary, its primary and canary Deployments and
// either the apex Service (route "" : provider kubernetes) or the HTTPRoute route with the
// primary Service's endpoints (Gateway API). newImage is the release's image.
func sampleBackends(s *stack.Stack, route, newImage string) *backendSampler {
	ctx, cancel := context.WithCancel(context.Background())
	b := &backendSampler{stop: cancel, done: make(chan struct{})}
	go func() {
		defer close(b.done)
		tick := time.NewTicker(500 * time.Millisecond)
		defer tick.Stop()
		for {
			x, err := sampleOnce(ctx, s.Client, route, newImage)
			b.mu.Lock()
			if err != nil {
				b.errs++
			} else {
				b.samples = append(b.samples, x)
			}
			b.mu.Unlock()
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	return b
}

func sampleOnce(ctx context.Context, c client.Client, route, newImage string) (backendSample, error) {
	ns, app := stack.DemoNamespace, stack.DemoApp
	key := func(n string) client.ObjectKey { return client.ObjectKey{Namespace: ns, Name: n} }
	x := backendSample{at: time.Now(), primaryWeight: -1}
	cn, p, t := &sluicev1.Canary{}, &appsv1.Deployment{}, &appsv1.Deployment{}
	if err := c.Get(ctx, key(app), cn); err != nil {
		return x, err
	}
	if err := c.Get(ctx, key(app+"-primary"), p); err != nil {
		return x, err
	}
	if err := c.Get(ctx, key(app), t); err != nil {
		return x, err
	}
	x.phase, x.primary, x.canary = cn.Status.Phase, rolloutOf(p), rolloutOf(t)
	var err error
	if route == "" {
		svc := &corev1.Service{}
		if err := c.Get(ctx, key(app), svc); err != nil {
			return x, err
		}
		switch {
		case maps.Equal(svc.Spec.Selector, map[string]string{"app": app + "-primary"}):
			x.apexOn = "primary"
		case maps.Equal(svc.Spec.Selector, map[string]string{"app": app}):
			x.apexOn = "canary"
		default:
			x.apexOn = fmt.Sprintf("other%v", svc.Spec.Selector)
		}
		x.apex, err = readServedSet(ctx, c, ns, app, svc.Spec.Selector, newImage)
		return x, err
	}
	rt := &gwv1.HTTPRoute{}
	if err := c.Get(ctx, key(route), rt); err != nil {
		return x, err
	}
	var primaryW, total int32
	for _, rule := range rt.Spec.Rules {
		for _, ref := range rule.BackendRefs {
			w := int32(1)
			if ref.Weight != nil {
				w = *ref.Weight
			}
			total += w
			if string(ref.Name) == app+"-primary" {
				primaryW += w
			}
		}
		break // the demo route has one rule
	}
	if total > 0 {
		x.primaryWeight = primaryW * 100 / total
	}
	x.primarySet, err = readServedSet(ctx, c, ns, app+"-primary", p.Spec.Selector.MatchLabels, newImage)
	return x, err
}

// finish stops sampling and returns the samples.
func (b *backendSampler) finish() ([]backendSample, int) {
	b.stop()
	<-b.done
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.samples, b.errs
}

// changes keeps the first sample and every sample that differs from the one before (time aside).
func changes(samples []backendSample) []string {
	var out []string
	last := ""
	for _, x := range samples {
		k := x.String()[len("15:04:05.000"):]
		if k != last {
			out = append(out, x.String())
			last = k
		}
	}
	return out
}

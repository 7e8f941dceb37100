package dataplane

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
	"sluice.dev/sluice/controllers/dataplane/waves"
	"sluice.dev/sluice/mesh"
)

// maxConcurrentWrites bounds the API writes (pins, restarts, evictions) of one tick in flight.
const maxConcurrentWrites = 16

// execute carries out d's actions, up to maxConcurrentWrites at a time (they are independent:
// restarts only target namespaces already pinned in the cache), and records each outcome in d,
// in action order. A blocked eviction is noted and is not an error. errors: the first API
// failure; the actions that went through are recorded all the same.
func (r *Reconciler) execute(ctx context.Context, dp *sluicev1.DataPlane, d *waves.Decision) error {
	logger := log.FromContext(ctx)
	results := make([]error, len(d.Actions))
	sem := make(chan struct{}, maxConcurrentWrites)
	var wg sync.WaitGroup
	for i, a := range d.Actions {
		logger.Info(capitalize(a.String()), "wave", a.Wave, "value", a.Value)
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			results[i] = r.do(ctx, dp.Spec.Mesh, a)
		}()
	}
	wg.Wait()
	var first error
	for i, a := range d.Actions {
		d.Record(a, results[i])
		if err := results[i]; err != nil && !errors.Is(err, waves.ErrBlocked) && first == nil {
			first = err
		}
	}
	return first
}

func (r *Reconciler) do(ctx context.Context, m sluicev1.Mesh, a waves.Action) error {
	switch a.Type {
	case waves.ActionPin:
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: a.Namespace}}
		if err := r.Patch(ctx, ns, mesh.PinPatch(m, a.Value)); err != nil {
			return fmt.Errorf("pinning namespace %s: %w", a.Namespace, err)
		}
	case waves.ActionRestart:
		obj := newWorkload(a.Kind)
		if obj == nil {
			return fmt.Errorf("cannot restart a %s", a.Kind)
		}
		obj.SetNamespace(a.Namespace)
		obj.SetName(a.Name)
		patch := mesh.RestartPatch(a.Value)
		if a.Kind == mesh.KindRollout {
			patch = mesh.RestartAtPatch(a.Value)
		}
		if err := r.Patch(ctx, obj, patch); err != nil {
			return fmt.Errorf("restarting %s %s/%s: %w", a.Kind, a.Namespace, a.Name, err)
		}
	case waves.ActionEvict:
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: a.Pod, Namespace: a.Namespace, UID: types.UID(a.UID)}}
		err := r.evictor().Evict(ctx, pod)
		if errors.Is(err, mesh.ErrEvictionBlocked) {
			return fmt.Errorf("%w: eviction of pod %s/%s (%s %s) refused by %s", waves.ErrBlocked, a.Namespace, a.Pod, a.Kind, a.Name,
				r.budgetsOf(ctx, a.Namespace, a.Pod))
		}
		return err
	}
	return nil
}

// budgetsOf names the PodDisruptionBudgets that select pod ns/name, with what each allows, from
// the cache: "PodDisruptionBudget ns/db (0 disruptions allowed, 1 of 2 pods healthy)".
func (r *Reconciler) budgetsOf(ctx context.Context, ns, name string) string {
	pod := &corev1.Pod{}
	var pdbs policyv1.PodDisruptionBudgetList
	if r.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, pod) != nil || r.List(ctx, &pdbs, client.InNamespace(ns)) != nil {
		return "a PodDisruptionBudget"
	}
	var out []string
	for _, b := range pdbs.Items {
		sel, err := metav1.LabelSelectorAsSelector(b.Spec.Selector)
		if err != nil || !sel.Matches(labels.Set(pod.Labels)) {
			continue
		}
		out = append(out, fmt.Sprintf("PodDisruptionBudget %s/%s (%d disruptions allowed, %d of %d pods healthy)", ns, b.Name,
			b.Status.DisruptionsAllowed, b.Status.CurrentHealthy, b.Status.ExpectedPods))
	}
	if len(out) == 0 {
		return "a PodDisruptionBudget"
	}
	return strings.Join(out, ", ")
}

func (r *Reconciler) evictor() Evictor {
	if r.Evictor != nil {
		return r.Evictor
	}
	return apiEvictor{r.Client}
}

// apiEvictor evicts through the Eviction API.
type apiEvictor struct{ c client.Client }

func (e apiEvictor) Evict(ctx context.Context, pod *corev1.Pod) error {
	return mesh.Evict(ctx, e.c, pod)
}

func capitalize(s string) string {
	if s == "" || s[0] < 'a' || s[0] > 'z' {
		return s
	}
	return string(s[0]-'a'+'A') + s[1:]
}

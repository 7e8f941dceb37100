package dataplane

import (
	"context"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
	"sluice.dev/sluice/controllers/internal/planevent"
	"sluice.dev/sluice/mesh"
)

// finalize leaves every namespace of a deleted DataPlane coherent, records what it did in an
// event, and removes the finalizer:
//
//   - Linkerd: every pin the DataPlane wrote (status.pins) that is still in place is removed, so
//     every namespace follows the control plane's version (the declared one, which the control
//     plane runs before any wave starts): one version for all, none older than the control plane.
//   - Istio: istio.io/rev is also the injection switch and cannot be removed. Every namespace the
//     DataPlane relabelled gets the declared revision when its istiod is available (the
//     namespaces not moved yet follow on their next restart), else the revision it had before
//     its wave.
//
// Pods are not restarted: deletion never starts a rollout. errors: API errors (the finalizer
// stays and deletion is retried).
func (r *Reconciler) finalize(ctx context.Context, dp *sluicev1.DataPlane) error {
	if !controllerutil.ContainsFinalizer(dp, sluicev1.FinalizerDataPlane) {
		return nil
	}
	first, err := r.firstOfMesh(ctx, dp)
	if err != nil {
		return err
	}
	var msg string
	if first == "" { // a duplicate DataPlane never pinned anything
		if msg, err = r.releasePins(ctx, dp); err != nil {
			return err
		}
	}
	patch := client.MergeFrom(dp.DeepCopy())
	controllerutil.RemoveFinalizer(dp, sluicev1.FinalizerDataPlane)
	if err := r.Patch(ctx, dp, patch); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("removing finalizer: %w", err)
	}
	if msg != "" {
		r.record(ctx, dp, planevent.Normal(sluicev1.ReasonDeleted, msg))
	}
	return nil
}

// releasePins carries out finalize's pin policy and describes what it did.
func (r *Reconciler) releasePins(ctx context.Context, dp *sluicev1.DataPlane) (string, error) {
	names := make([]string, 0, len(dp.Status.Pins))
	for ns := range dp.Status.Pins {
		names = append(names, ns)
	}
	slices.Sort(names)
	m := dp.Spec.Mesh
	target := dp.Status.Version
	cp, err := r.observeControlPlane(ctx, dp)
	if err != nil {
		return "", err
	}
	var changed, kept []string
	for _, name := range names {
		ns := &corev1.Namespace{}
		if err := r.Get(ctx, client.ObjectKey{Name: name}, ns); err != nil {
			if client.IgnoreNotFound(err) == nil {
				continue
			}
			return "", fmt.Errorf("reading namespace %s: %w", name, err)
		}
		current := mesh.Pin(ns, m)
		if current != dp.Status.Pins[name] {
			kept = append(kept, fmt.Sprintf("%s (pinned to %s by someone else)", name, orNone(current)))
			continue
		}
		var patch client.Patch
		switch {
		case m == sluicev1.MeshLinkerd:
			patch = mesh.UnpinPatch()
		case cp.state.Ready && current != target:
			patch = mesh.PinPatch(m, target)
		case !cp.state.Ready:
			if prev := previousOf(dp, name); prev != "" && prev != current {
				patch = mesh.PinPatch(m, prev)
			}
		}
		if patch == nil {
			continue
		}
		if err := r.Patch(ctx, ns, patch); err != nil {
			return "", fmt.Errorf("releasing the pin of namespace %s: %w", name, err)
		}
		changed = append(changed, name)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "DataPlane deleted with the %s data plane at %s (%d of %d meshed pods, phase %s)", m, orNone(target),
		dp.Status.Current, dp.Status.Desired, orNone(string(dp.Status.Phase)))
	switch {
	case m == sluicev1.MeshLinkerd && len(changed) > 0:
		fmt.Fprintf(&b, "; removed its pins from %s: every namespace follows the control plane's version (%s)",
			strings.Join(changed, ", "), orNone(cp.state.Version))
	case m == sluicev1.MeshIstio && len(changed) > 0 && cp.state.Ready:
		fmt.Fprintf(&b, "; set istio.io/rev=%s on %s: every namespace it moved follows one revision", target, strings.Join(changed, ", "))
	case m == sluicev1.MeshIstio && len(changed) > 0:
		fmt.Fprintf(&b, "; the istiod of %s is not available: returned %s to the revision each had before", target, strings.Join(changed, ", "))
	default:
		b.WriteString("; no pin of its own to release")
	}
	if len(kept) > 0 {
		fmt.Fprintf(&b, "; left alone: %s", strings.Join(kept, ", "))
	}
	b.WriteString(". No pod was restarted.")
	return b.String(), nil
}

// previousOf is the version namespace ns ran before its wave in dp's run.
func previousOf(dp *sluicev1.DataPlane, ns string) string {
	for _, w := range dp.Status.Waves {
		if v, ok := w.Previous[ns]; ok {
			return v
		}
	}
	return ""
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

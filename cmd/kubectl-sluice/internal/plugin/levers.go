package plugin

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
	"sluice.dev/sluice/cmd/kubectl-sluice/internal/view"
)

// Annotations through which the plugin (or anyone editing the Canary) asks the controller to act;
// each holds the RFC 3339 time of the request, and every new value is a new request.
const (
	AnnotationPromote = sluicev1.AnnotationPromote
	AnnotationAbort   = sluicev1.AnnotationAbort
	AnnotationRetry   = sluicev1.AnnotationRetry
)

// Phases in which a run is in flight, so promote and abort have something to act on.
var inFlight = []sluicev1.CanaryPhase{
	sluicev1.CanaryPhaseWaiting, sluicev1.CanaryPhaseProgressing, sluicev1.CanaryPhaseWaitingPromotion,
}

// LeverOptions tune the levers.
type LeverOptions struct {
	// Force sets the annotation whatever the phase. Without it, promote and abort need a run in
	// flight and retry a Failed canary, so a stale request does not act on a later run.
	Force bool
}

// Promote asks the controller to approve the gates of the run in flight and skip to promotion,
// stamping the request with now. errors: the Canary not found, no run in flight (without Force),
// the patch refused.
func Promote(ctx context.Context, c client.Client, w io.Writer, key types.NamespacedName, now time.Time, o LeverOptions) error {
	return request(ctx, c, w, key, now, o, AnnotationPromote, "promotion", func(cn *sluicev1.Canary) error {
		if !slices.Contains(inFlight, cn.Status.Phase) {
			return fmt.Errorf("canary %s is %s: no run in flight to promote (--force sets %s anyway)", key, view.Phase(cn), AnnotationPromote)
		}
		return nil
	})
}

// Abort asks the controller to roll the run in flight back now, stamping the request with now.
// errors: the Canary not found, no run in flight (without Force), the patch refused.
func Abort(ctx context.Context, c client.Client, w io.Writer, key types.NamespacedName, now time.Time, o LeverOptions) error {
	return request(ctx, c, w, key, now, o, AnnotationAbort, "rollback", func(cn *sluicev1.Canary) error {
		if !slices.Contains(inFlight, cn.Status.Phase) {
			return fmt.Errorf("canary %s is %s: no run in flight to abort (--force sets %s anyway)", key, view.Phase(cn), AnnotationAbort)
		}
		return nil
	})
}

// Retry asks the controller to run the failed revision again, stamping the request with now.
// errors: the Canary not found, not Failed (without Force), the patch refused.
func Retry(ctx context.Context, c client.Client, w io.Writer, key types.NamespacedName, now time.Time, o LeverOptions) error {
	return request(ctx, c, w, key, now, o, AnnotationRetry, "retry", func(cn *sluicev1.Canary) error {
		if cn.Status.Phase != sluicev1.CanaryPhaseFailed {
			return fmt.Errorf("canary %s is %s, not Failed: nothing to retry (--force sets %s anyway)", key, view.Phase(cn), AnnotationRetry)
		}
		return nil
	})
}

// request sets a request annotation to the RFC 3339 time now, after allowed (skipped with Force)
// accepted the Canary's phase.
func request(ctx context.Context, c client.Client, w io.Writer, key types.NamespacedName, now time.Time, o LeverOptions,
	annotation, what string, allowed func(*sluicev1.Canary) error) error {
	cn, err := fetch(ctx, c, key)
	if err != nil {
		return err
	}
	if !o.Force {
		if err := allowed(cn); err != nil {
			return err
		}
	}
	stamp := now.UTC().Format(time.RFC3339)
	if err := annotate(ctx, c, cn, annotation, stamp); err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "canary %s: %s requested (%s=%s)\n", key, what, annotation, stamp)
	return err
}

// Pause sets spec.suspend: the controller stops acting on the Canary and traffic stays as it is.
// errors: the Canary not found, the patch refused.
func Pause(ctx context.Context, c client.Client, w io.Writer, key types.NamespacedName) error {
	return suspend(ctx, c, w, key, true)
}

// Resume clears spec.suspend (sets it false).
// errors: the Canary not found, the patch refused.
func Resume(ctx context.Context, c client.Client, w io.Writer, key types.NamespacedName) error {
	return suspend(ctx, c, w, key, false)
}

func suspend(ctx context.Context, c client.Client, w io.Writer, key types.NamespacedName, on bool) error {
	cn, err := fetch(ctx, c, key)
	if err != nil {
		return err
	}
	if err := mergePatch(ctx, c, cn, map[string]any{"spec": map[string]any{"suspend": on}}); err != nil {
		return err
	}
	verb := "resumed"
	if on {
		verb = "paused"
	}
	_, err = fmt.Fprintf(w, "canary %s: %s (spec.suspend=%v)\n", key, verb, on)
	return err
}

func annotate(ctx context.Context, c client.Client, cn *sluicev1.Canary, key, value string) error {
	return mergePatch(ctx, c, cn, map[string]any{"metadata": map[string]any{"annotations": map[string]string{key: value}}})
}

// mergePatch sends patch as a JSON merge patch: only the fields it names change.
func mergePatch(ctx context.Context, c client.Client, cn *sluicev1.Canary, patch map[string]any) error {
	data, err := json.Marshal(patch)
	if err != nil {
		return err
	}
	if err := c.Patch(ctx, cn, client.RawPatch(types.MergePatchType, data)); err != nil {
		return fmt.Errorf("patching canary %s/%s: %w", cn.Namespace, cn.Name, err)
	}
	return nil
}

func fetch(ctx context.Context, c client.Client, key types.NamespacedName) (*sluicev1.Canary, error) {
	cn := &sluicev1.Canary{}
	if err := c.Get(ctx, key, cn); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("canary %q not found in namespace %q", key.Name, key.Namespace)
		}
		return nil, fmt.Errorf("reading canary %s: %w", key, err)
	}
	return cn, nil
}

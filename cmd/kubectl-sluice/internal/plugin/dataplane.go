package plugin

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
	"sluice.dev/sluice/cmd/kubectl-sluice/internal/view"
)

// Kind is what a command acts on: a Canary (the default) or a DataPlane.
type Kind string

// Kinds the commands take as an optional first argument.
const (
	KindCanary    Kind = "canary"
	KindDataPlane Kind = "dataplane"
)

// parseTarget reads "[KIND] NAME": KIND is canary (canaries, cn) or dataplane (dataplanes, dp);
// without it the command acts on a Canary.
// errors: an unknown kind, a wrong number of arguments.
func parseTarget(args []string) (Kind, string, error) {
	switch len(args) {
	case 1:
		return KindCanary, args[0], nil
	case 2:
		switch strings.ToLower(args[0]) {
		case "canary", "canaries", "cn":
			return KindCanary, args[1], nil
		case "dataplane", "dataplanes", "dp":
			return KindDataPlane, args[1], nil
		}
		return "", "", fmt.Errorf("unknown kind %q: use canary or dataplane", args[0])
	}
	return "", "", fmt.Errorf("expected [canary|dataplane] NAME, got %d arguments", len(args))
}

func fetchDataPlane(ctx context.Context, c client.Client, name string) (*sluicev1.DataPlane, error) {
	dp := &sluicev1.DataPlane{}
	if err := c.Get(ctx, types.NamespacedName{Name: name}, dp); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("dataplane %q not found", name)
		}
		return nil, fmt.Errorf("reading dataplane %s: %w", name, err)
	}
	return dp, nil
}

// getDataPlanes prints the DataPlanes, if any, after a blank line. A cluster without the
// DataPlane CRD (or a user who may not list them) simply gets none.
func getDataPlanes(ctx context.Context, c client.Client, w io.Writer) error {
	var list sluicev1.DataPlaneList
	if err := c.List(ctx, &list); err != nil || len(list.Items) == 0 {
		return nil
	}
	sort.Slice(list.Items, func(i, j int) bool { return list.Items[i].Name < list.Items[j].Name })
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 3, ' ', 0)
	fmt.Fprintln(tw, "DATAPLANE\tMESH\tVERSION\tWAVE\tDESIRED\tCURRENT\tSTATUS")
	for i := range list.Items {
		dp := &list.Items[i]
		s := dp.Status
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%d\t%s\n", dp.Name, dp.Spec.Mesh, orDash(view.Declared(dp)), s.CurrentWave, s.Desired, s.Current, view.DataPlanePhase(dp))
	}
	return tw.Flush()
}

// StatusDataPlane prints one DataPlane: its declared version, the control plane, the fleet's
// counts, the last update attempt, then one row per namespace (NAMESPACE WAVE DESIRED CURRENT
// STATUS REASON, skipped namespaces included), the pods that keep it from being up to date, and
// the conditions. errors: the DataPlane not found or unreadable.
func StatusDataPlane(ctx context.Context, c client.Client, w io.Writer, name string, now time.Time) error {
	dp, err := fetchDataPlane(ctx, c, name)
	if err != nil {
		return err
	}
	return PrintDataPlaneStatus(w, dp, now)
}

// PrintDataPlaneStatus writes the status report of dp as of now.
func PrintDataPlaneStatus(w io.Writer, dp *sluicev1.DataPlane, now time.Time) error {
	s := dp.Status
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	field := func(name, format string, args ...any) {
		fmt.Fprintf(tw, "%s:\t%s\n", name, fmt.Sprintf(format, args...))
	}
	field("DataPlane", "%s", dp.Name)
	field("Mesh", "%s", dp.Spec.Mesh)
	version := view.Declared(dp)
	if s.ConvergedVersion != "" && s.ConvergedVersion != version {
		version += " (last converged on " + s.ConvergedVersion + ")"
	}
	if s.Rollback {
		version += ", a rollback (" + string(orDefault(dp.Spec.Rollback, sluicev1.RollbackCanaried)) + ")"
	}
	field("Version", "%s", version)
	cp := "ready"
	if !s.ControlPlane.Ready {
		cp = "NOT READY: " + orDash(s.ControlPlane.Message)
	}
	field("Control plane", "%s (%s)", orDash(s.ControlPlane.Version), cp)
	phase := view.DataPlanePhase(dp)
	if len(s.Waves) > 0 {
		phase += fmt.Sprintf(", wave %d of %d", s.CurrentWave, len(s.Waves)-1)
	}
	field("Phase", "%s", phase)
	field("Desired/Current", "%d/%d", s.Desired, s.Current)
	if s.LastUpdateAttempt != nil {
		field("Last update", "%s %s ago: %s", s.LastUpdateAttemptResult, age(s.LastUpdateAttempt, now), s.LastUpdateAttemptMessage)
	}
	if req := view.DataPlaneRequests(dp); req != "" {
		field("Requested", "%s", req)
	}
	if err := tw.Flush(); err != nil {
		return err
	}

	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 0, 3, ' ', 0)
	fmt.Fprintln(tw, "NAMESPACE\tWAVE\tDESIRED\tCURRENT\tSTATUS\tREASON")
	for _, r := range s.Namespaces {
		reason := r.Reason
		if r.RevisionTag != "" {
			reason = strings.TrimSpace(reason + " (tag " + r.RevisionTag + ")")
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%s\t%s\n", r.Namespace, r.Wave, r.Desired, r.Current, r.Status, orDash(reason))
	}
	for _, sk := range s.Skipped {
		fmt.Fprintf(tw, "%s\t-\t-\t-\tSkipped\t%s\n", sk.Namespace, sk.Reason)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, l := range []struct {
		name string
		pods []string
	}{{"Unmanaged pods (cannot be restarted)", s.UnmanagedPods}, {"Pods without the proxy", s.UnmeshedPods}, {"Drifted pods", s.DriftedPods}} {
		if len(l.pods) > 0 {
			fmt.Fprintf(w, "%s: %s\n", l.name, strings.Join(l.pods, ", "))
		}
	}
	if len(s.Conditions) > 0 {
		fmt.Fprintln(w, "Conditions:")
		tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "  TYPE\tSTATUS\tREASON\tAGE\tMESSAGE")
		for _, cond := range s.Conditions {
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\n", cond.Type, cond.Status, cond.Reason, age(&cond.LastTransitionTime, now), cond.Message)
		}
		return tw.Flush()
	}
	return nil
}

func orDefault[T ~string](v, def T) T {
	if v == "" {
		return def
	}
	return v
}

// mergePatchDataPlane sends patch to dp as a JSON merge patch.
func mergePatchDataPlane(ctx context.Context, c client.Client, dp *sluicev1.DataPlane, patch map[string]any) error {
	data, err := json.Marshal(patch)
	if err != nil {
		return err
	}
	if err := c.Patch(ctx, dp, client.RawPatch(types.MergePatchType, data)); err != nil {
		return fmt.Errorf("patching dataplane %s: %w", dp.Name, err)
	}
	return nil
}

package plugin

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strconv"
	"text/tabwriter"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
	"sluice.dev/sluice/cmd/kubectl-sluice/internal/view"
)

// Get prints the Canaries of namespace (every namespace when allNamespaces) as a table:
// [NAMESPACE] NAME STATUS WEIGHT FAILEDCHECKS LASTTRANSITION, the last one as an age; then, when
// there are any, the (cluster-scoped) DataPlanes: DATAPLANE MESH VERSION WAVE DESIRED CURRENT
// STATUS. errors: listing refused.
func Get(ctx context.Context, c client.Client, w io.Writer, namespace string, allNamespaces bool, now time.Time) error {
	if err := getCanaries(ctx, c, w, namespace, allNamespaces, now); err != nil {
		return err
	}
	return getDataPlanes(ctx, c, w)
}

// getCanaries prints the Canary table of Get.
func getCanaries(ctx context.Context, c client.Client, w io.Writer, namespace string, allNamespaces bool, now time.Time) error {
	var opts []client.ListOption
	if !allNamespaces {
		opts = append(opts, client.InNamespace(namespace))
	}
	var list sluicev1.CanaryList
	if err := c.List(ctx, &list, opts...); err != nil {
		return fmt.Errorf("listing canaries: %w", err)
	}
	if len(list.Items) == 0 {
		if allNamespaces {
			_, err := fmt.Fprintln(w, "No canaries found.")
			return err
		}
		_, err := fmt.Fprintf(w, "No canaries found in namespace %s.\n", namespace)
		return err
	}
	sort.Slice(list.Items, func(i, j int) bool {
		a, b := list.Items[i], list.Items[j]
		if a.Namespace != b.Namespace {
			return a.Namespace < b.Namespace
		}
		return a.Name < b.Name
	})
	tw := tabwriter.NewWriter(w, 0, 0, 3, ' ', 0)
	if allNamespaces {
		fmt.Fprint(tw, "NAMESPACE\t")
	}
	fmt.Fprintln(tw, "NAME\tSTATUS\tWEIGHT\tFAILEDCHECKS\tLASTTRANSITION")
	for i := range list.Items {
		cn := &list.Items[i]
		if allNamespaces {
			fmt.Fprintf(tw, "%s\t", cn.Namespace)
		}
		status := view.Phase(cn)
		if cn.Spec.Suspend {
			status += " (paused)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", cn.Name, status,
			strconv.Itoa(int(cn.Status.CanaryWeight)), strconv.Itoa(int(cn.Status.FailedChecks)),
			age(cn.Status.LastTransitionTime, now))
	}
	return tw.Flush()
}

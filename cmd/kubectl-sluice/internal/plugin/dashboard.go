package plugin

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"sluice.dev/sluice/cmd/kubectl-sluice/internal/dashboard"
)

// canaryLevers are the dashboard's levers on a Canary: the functions of the plugin's commands.
func canaryLevers(now func() time.Time) map[string]dashboard.Lever {
	return map[string]dashboard.Lever{
		"promote": func(ctx context.Context, c client.Client, w io.Writer, k types.NamespacedName) error {
			return Promote(ctx, c, w, k, now(), LeverOptions{})
		},
		"abort": func(ctx context.Context, c client.Client, w io.Writer, k types.NamespacedName) error {
			return Abort(ctx, c, w, k, now(), LeverOptions{})
		},
		"retry": func(ctx context.Context, c client.Client, w io.Writer, k types.NamespacedName) error {
			return Retry(ctx, c, w, k, now(), LeverOptions{})
		},
		"pause": func(ctx context.Context, c client.Client, w io.Writer, k types.NamespacedName) error {
			return Pause(ctx, c, w, k)
		},
		"resume": func(ctx context.Context, c client.Client, w io.Writer, k types.NamespacedName) error {
			return Resume(ctx, c, w, k)
		},
	}
}

// dataPlaneLevers are the dashboard's levers on a DataPlane: the functions of the plugin's
// commands.
func dataPlaneLevers(now func() time.Time) map[string]dashboard.Lever {
	return map[string]dashboard.Lever{
		"approve": func(ctx context.Context, c client.Client, w io.Writer, k types.NamespacedName) error {
			return ApproveDataPlane(ctx, c, w, k.Name, now(), LeverOptions{})
		},
		"abort": func(ctx context.Context, c client.Client, w io.Writer, k types.NamespacedName) error {
			return AbortDataPlane(ctx, c, w, k.Name, now(), LeverOptions{})
		},
		"retry": func(ctx context.Context, c client.Client, w io.Writer, k types.NamespacedName) error {
			return RetryDataPlane(ctx, c, w, k.Name, now(), LeverOptions{})
		},
		"pause": func(ctx context.Context, c client.Client, w io.Writer, k types.NamespacedName) error {
			return SuspendDataPlane(ctx, c, w, k.Name, true)
		},
		"resume": func(ctx context.Context, c client.Client, w io.Writer, k types.NamespacedName) error {
			return SuspendDataPlane(ctx, c, w, k.Name, false)
		},
	}
}

func newDashboardCommand(o Options, kf *KubeFlags) *cobra.Command {
	var (
		address       string
		port          int
		allNamespaces bool
		readOnly      bool
		open          bool
	)
	cmd := &cobra.Command{
		Use:   "dashboard",
		Short: "Serve a live web UI of the canaries and data planes, with your own credentials",
		Long: `Serve a web UI on http://127.0.0.1:3100: an overview of every Canary and DataPlane, and a page per
object with its run plotted check by check, its gates, conditions, events and last runs. It
follows the cluster live (one watch per kind) and acts with your kubeconfig's credentials, so
your RBAC applies to every read and to the levers (promote, abort, retry, pause, resume,
approve), which do exactly what the commands of the same name do.

It listens on loopback only unless --address says otherwise, and then warns: whoever reaches a
non-loopback address acts with your credentials. --read-only hides the levers.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, ns, err := o.RESTConfig(*kf)
			if err != nil {
				return err
			}
			if allNamespaces {
				ns = ""
			}
			srv, err := dashboard.New(dashboard.Options{
				Config: cfg, Namespace: ns, Address: address, Port: port, ReadOnly: readOnly,
				CanaryLevers: canaryLevers(o.Now), DataPlaneLevers: dataPlaneLevers(o.Now), Log: o.ErrOut,
			})
			if err != nil {
				return err
			}
			if open {
				if err := o.OpenBrowser(srv.URL()); err != nil {
					fmt.Fprintf(o.ErrOut, "could not open a browser (%v): open %s\n", err, srv.URL())
				}
			}
			return srv.Run(cmd.Context())
		},
	}
	f := cmd.Flags()
	f.StringVar(&address, "address", "127.0.0.1", "IP address to listen on; anything but loopback is reachable by others, who act with your credentials.")
	f.IntVar(&port, "port", dashboard.DefaultPort, "Port to listen on (0: any free port).")
	f.BoolVarP(&allNamespaces, "all-namespaces", "A", false, "Show the canaries of every namespace (data planes are cluster-wide).")
	f.BoolVar(&readOnly, "read-only", false, "Hide the levers and refuse their requests.")
	f.BoolVar(&open, "open", false, "Open the dashboard in the default browser.")
	return cmd
}

func newReportCommand(o Options, session func() (client.Client, string, error)) *cobra.Command {
	var out string
	cmd := &cobra.Command{
		Use:   "report NAME",
		Short: "Write a canary's run as one self-contained HTML file (charts, checks, runs, events) that opens offline",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, ns, err := session()
			if err != nil {
				return err
			}
			key := types.NamespacedName{Namespace: ns, Name: args[0]}
			if out == "" || out == "-" {
				return dashboard.Report(cmd.Context(), c, o.Out, key, o.Now())
			}
			f, err := os.Create(out)
			if err != nil {
				return err
			}
			if err := dashboard.Report(cmd.Context(), c, f, key, o.Now()); err != nil {
				f.Close()
				os.Remove(out)
				return err
			}
			if err := f.Close(); err != nil {
				return err
			}
			_, err = fmt.Fprintf(o.Out, "canary %s: report written to %s\n", key, out)
			return err
		},
	}
	cmd.Flags().StringVarP(&out, "output", "o", "", "File to write (default: standard output).")
	return cmd
}

// openBrowser opens url with the system's opener.
func openBrowser(url string) error {
	switch runtime.GOOS {
	case "darwin":
		return exec.Command("open", url).Start()
	case "windows":
		return exec.Command("rundll32", "url.dll,FileProtocolHandler", url).Start()
	default:
		return exec.Command("xdg-open", url).Start()
	}
}

package plugin

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
)

// KubeFlags are the kubeconfig flags every command takes.
type KubeFlags struct {
	// Kubeconfig is the kubeconfig file; empty: $KUBECONFIG or ~/.kube/config.
	Kubeconfig string
	// Context in the kubeconfig; empty: its current context.
	Context string
	// Namespace of the Canary; empty: the context's namespace, else "default".
	Namespace string
}

// Options wire NewRootCommand to the outside world; zero fields take the defaults.
type Options struct {
	Out, ErrOut io.Writer
	// Connect returns a client and the namespace to use; default: Connect.
	Connect func(KubeFlags) (client.Client, string, error)
	// Now is the clock of ages, next step times and retry stamps; default time.Now.
	Now func() time.Time
	// IsTerminal says whether w is a terminal; default: golang.org/x/term on an *os.File.
	IsTerminal func(w io.Writer) bool
	// RESTConfig returns the user's REST config and namespace, for the dashboard; default:
	// LoadConfig.
	RESTConfig func(KubeFlags) (*rest.Config, string, error)
	// OpenBrowser opens url for `dashboard --open`; default: the system's opener.
	OpenBrowser func(url string) error
}

// NewRootCommand returns the kubectl-sluice command tree.
func NewRootCommand(o Options) *cobra.Command {
	if o.Out == nil {
		o.Out = os.Stdout
	}
	if o.ErrOut == nil {
		o.ErrOut = os.Stderr
	}
	if o.Connect == nil {
		o.Connect = Connect
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.IsTerminal == nil {
		o.IsTerminal = isTerminal
	}
	if o.RESTConfig == nil {
		o.RESTConfig = LoadConfig
	}
	if o.OpenBrowser == nil {
		o.OpenBrowser = openBrowser
	}
	var kf KubeFlags
	root := &cobra.Command{
		Use:   "kubectl-sluice",
		Short: "Inspect and steer Sluice canary releases and mesh data planes",
		Long: `kubectl sluice shows Sluice Canaries and DataPlanes and steers their runs. Commands take a
Canary's NAME, or "dataplane NAME" for a DataPlane (one per mesh, cluster-scoped). It changes
nothing but annotations and spec.suspend, so it works with GitOps: the controller does the rest.`,
		Annotations:   map[string]string{cobra.CommandDisplayNameAnnotation: "kubectl sluice"},
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetOut(o.Out)
	root.SetErr(o.ErrOut)
	pf := root.PersistentFlags()
	pf.StringVar(&kf.Kubeconfig, "kubeconfig", "", "Path to the kubeconfig file.")
	pf.StringVar(&kf.Context, "context", "", "The kubeconfig context to use.")
	pf.StringVarP(&kf.Namespace, "namespace", "n", "", "Namespace of the canary (default: the context's).")

	// session connects once the flags are parsed.
	session := func() (client.Client, string, error) { return o.Connect(kf) }
	named := func(args []string, ns string) types.NamespacedName {
		return types.NamespacedName{Namespace: ns, Name: args[0]}
	}

	var allNamespaces bool
	get := &cobra.Command{
		Use:   "get",
		Short: "List canaries (NAME, STATUS, WEIGHT, FAILEDCHECKS, LASTTRANSITION) and data planes (MESH, VERSION, WAVE, DESIRED, CURRENT, STATUS)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, ns, err := session()
			if err != nil {
				return err
			}
			return Get(cmd.Context(), c, o.Out, ns, allNamespaces, o.Now())
		},
	}
	get.Flags().BoolVarP(&allNamespaces, "all-namespaces", "A", false, "List the canaries of every namespace (data planes are cluster-wide).")

	status := &cobra.Command{
		Use:   "status [dataplane] NAME",
		Short: "Show a canary's phase, weight, checks and next step, or a data plane's namespaces (NAMESPACE, WAVE, DESIRED, CURRENT, STATUS, REASON)",
		Args:  cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			kind, name, err := parseTarget(args)
			if err != nil {
				return err
			}
			c, ns, err := session()
			if err != nil {
				return err
			}
			if kind == KindDataPlane {
				return StatusDataPlane(cmd.Context(), c, o.Out, name, o.Now())
			}
			return Status(cmd.Context(), c, o.Out, named([]string{name}, ns), o.Now())
		},
	}

	var wo WatchOptions
	var timeout time.Duration
	watch := &cobra.Command{
		Use:   "watch [dataplane] NAME",
		Short: "Follow a canary or data plane run until it succeeds (exit 0) or fails (exit 1)",
		Long: `Follow a canary run. In a terminal it draws the weight against the maximum weight; piped,
it prints one line per change: "HH:MM:SS phase weight failed-checks". It returns when a run ends
while watched: exit status 0 on Succeeded, 1 on Failed.

With "dataplane NAME" it follows a DataPlane, one line per change: "HH:MM:SS phase version wave N
current/desired", until it is UpToDate (exit 0), or RolledBack or Failed (exit 1).`,
		Args: cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			kind, name, err := parseTarget(args)
			if err != nil {
				return err
			}
			args = []string{name}
			c, ns, err := session()
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			if timeout > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, timeout)
				defer cancel()
			}
			wo.Terminal, wo.Now = o.IsTerminal(o.Out), o.Now
			watchOne := func() error { return Watch(ctx, c, o.Out, named(args, ns), wo) }
			if kind == KindDataPlane {
				watchOne = func() error { return WatchDataPlane(ctx, c, o.Out, name, wo) }
			}
			if err := watchOne(); err != nil {
				return err
			}
			if errors.Is(ctx.Err(), context.DeadlineExceeded) && cmd.Context().Err() == nil {
				return fmt.Errorf("the canary run did not end within %s", timeout)
			}
			return nil
		},
	}
	watch.Flags().DurationVar(&wo.Interval, "interval", 2*time.Second, "How often to read the canary.")
	watch.Flags().DurationVar(&timeout, "timeout", 0, "Give up after this long, with exit status 1 (0: no limit).")

	var lo LeverOptions
	// lever is a command on a Canary ("NAME") or, when onDataPlane is set, on a DataPlane
	// ("dataplane NAME").
	lever := func(use, short string, act func(context.Context, client.Client, types.NamespacedName) error,
		onDataPlane func(context.Context, client.Client, string) error) *cobra.Command {
		return &cobra.Command{
			Use:   use + " [dataplane] NAME",
			Short: short,
			Args:  cobra.RangeArgs(1, 2),
			RunE: func(cmd *cobra.Command, args []string) error {
				kind, name, err := parseTarget(args)
				if err != nil {
					return err
				}
				c, ns, err := session()
				if err != nil {
					return err
				}
				switch {
				case kind == KindDataPlane && onDataPlane != nil:
					return onDataPlane(cmd.Context(), c, name)
				case kind == KindDataPlane:
					return fmt.Errorf("%s acts on a canary; a DataPlane has no %s", use, use)
				case act == nil:
					return fmt.Errorf("%s acts on a DataPlane: kubectl sluice %s dataplane NAME", use, use)
				}
				return act(cmd.Context(), c, named([]string{name}, ns))
			},
		}
	}
	promote := lever("promote", "Approve the gates of the canary run in flight and skip to promotion ("+AnnotationPromote+")",
		func(ctx context.Context, c client.Client, k types.NamespacedName) error {
			return Promote(ctx, c, o.Out, k, o.Now(), lo)
		}, nil)
	approve := lever("approve", "Let a data plane's fleet waves start after its canary wave ("+sluicev1.AnnotationApproveFleet+")",
		nil, func(ctx context.Context, c client.Client, name string) error {
			return ApproveDataPlane(ctx, c, o.Out, name, o.Now(), lo)
		})
	abort := lever("abort", "Roll the run in flight back now: a canary's run, or a data plane's wave ("+AnnotationAbort+")",
		func(ctx context.Context, c client.Client, k types.NamespacedName) error {
			return Abort(ctx, c, o.Out, k, o.Now(), lo)
		}, func(ctx context.Context, c client.Client, name string) error {
			return AbortDataPlane(ctx, c, o.Out, name, o.Now(), lo)
		})
	retry := lever("retry", "Run a failed canary revision, or a rolled-back data plane version, again ("+AnnotationRetry+")",
		func(ctx context.Context, c client.Client, k types.NamespacedName) error {
			return Retry(ctx, c, o.Out, k, o.Now(), lo)
		}, func(ctx context.Context, c client.Client, name string) error {
			return RetryDataPlane(ctx, c, o.Out, name, o.Now(), lo)
		})
	for _, cmd := range []*cobra.Command{promote, approve, abort, retry} {
		cmd.Flags().BoolVar(&lo.Force, "force", false, "Set the annotation whatever the phase.")
	}
	pause := lever("pause", "Suspend a canary or data plane: the controller stops acting, traffic and pods stay as they are (spec.suspend=true)",
		func(ctx context.Context, c client.Client, k types.NamespacedName) error {
			return Pause(ctx, c, o.Out, k)
		}, func(ctx context.Context, c client.Client, name string) error {
			return SuspendDataPlane(ctx, c, o.Out, name, true)
		})
	resume := lever("resume", "Resume a paused canary or data plane (spec.suspend=false)",
		func(ctx context.Context, c client.Client, k types.NamespacedName) error {
			return Resume(ctx, c, o.Out, k)
		}, func(ctx context.Context, c client.Client, name string) error {
			return SuspendDataPlane(ctx, c, o.Out, name, false)
		})

	root.AddCommand(get, status, watch, promote, approve, abort, retry, pause, resume, newConvertCommand(o),
		newDashboardCommand(o, &kf), newReportCommand(o, session))
	return root
}

// Connect loads the kubeconfig as kubectl does (--kubeconfig, else $KUBECONFIG, else
// ~/.kube/config; --context; --namespace, else the context's namespace, else "default") and
// returns a client for Sluice's types.
// errors: no usable kubeconfig.
func Connect(kf KubeFlags) (client.Client, string, error) {
	cfg, ns, err := LoadConfig(kf)
	if err != nil {
		return nil, "", err
	}
	scheme := runtime.NewScheme()
	if err := sluicev1.AddToScheme(scheme); err != nil {
		return nil, "", err
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return nil, "", fmt.Errorf("creating the client: %w", err)
	}
	return c, ns, nil
}

// LoadConfig loads the kubeconfig as kubectl does (see Connect) and returns its REST config and
// namespace. errors: no usable kubeconfig.
func LoadConfig(kf KubeFlags) (*rest.Config, string, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = kf.Kubeconfig
	overrides := &clientcmd.ConfigOverrides{CurrentContext: kf.Context}
	overrides.Context.Namespace = kf.Namespace
	cc := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, overrides)
	cfg, err := cc.ClientConfig()
	if err != nil {
		return nil, "", fmt.Errorf("loading kubeconfig: %w", err)
	}
	ns, _, err := cc.Namespace()
	if err != nil {
		return nil, "", fmt.Errorf("resolving the namespace: %w", err)
	}
	return cfg, ns, nil
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

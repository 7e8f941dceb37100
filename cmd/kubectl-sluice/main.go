// Command kubectl-sluice is the kubectl plugin for Sluice canaries: `kubectl sluice get`,
// `status`, `watch`, `promote`, `abort`, `retry`, `pause`, `resume`, `convert` (Flagger
// manifests to Sluice's), `dashboard` (a live web UI) and `report` (a run as one HTML file).
// Install it by putting the binary on $PATH.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"sluice.dev/sluice/cmd/kubectl-sluice/internal/plugin"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := plugin.NewRootCommand(plugin.Options{}).ExecuteContext(ctx)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		var exit *plugin.ExitError
		if errors.As(err, &exit) {
			os.Exit(exit.Code)
		}
		os.Exit(1)
	}
}

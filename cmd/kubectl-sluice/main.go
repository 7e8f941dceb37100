// Command kubectl-sluice is the kubectl plugin for Sluice canaries: `kubectl sluice get`,
// `status`, `watch`, `promote`, `abort`, `retry`, `pause` and `resume`. Install it by putting the
// binary on $PATH.
package main

import (
	"context"
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
		os.Exit(1)
	}
}

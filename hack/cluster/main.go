// Command cluster runs the local test cluster (package test/cluster) for exploring by hand.
//
//	go run ./hack/cluster up [--detach] [--nodes N] [--pod-ready-delay D] [--linkerd-injector VERSION]
//	go run ./hack/cluster down
//	go run ./hack/cluster env
//
// up starts the cluster with its state in .cache/cluster (--dir), prints `export KUBECONFIG=...`
// and stays in the foreground until SIGINT or SIGTERM, then stops everything. With --detach it
// exits at once and leaves the components running; down stops them. env prints the export line.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"sluice.dev/sluice/test/cluster"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "cluster:", err)
		os.Exit(1)
	}
}

func usage() error {
	return errors.New("usage: cluster up [--detach] [--nodes N] [--pod-ready-delay D] [--linkerd-injector VERSION] | down | env  (each takes --dir)")
}

func run(args []string) error {
	if len(args) == 0 {
		return usage()
	}
	cmd := args[0]
	fs := flag.NewFlagSet(cmd, flag.ContinueOnError)
	dir := fs.String("dir", filepath.Join(".cache", "cluster"), "state folder")
	detach := fs.Bool("detach", false, "up: leave the cluster running and exit (stop it with down)")
	nodes := fs.Int("nodes", 2, "up: number of fake nodes")
	delay := fs.Duration("pod-ready-delay", 0, "up: delay before kwok marks a new pod Ready")
	proxy := fs.String("linkerd-injector", "", "up: run the simulated Linkerd proxy injector with this proxy version (not with --detach)")
	bin := fs.String("bin", cluster.DefaultBinDir(), "up: folder of the component binaries")
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	abs, err := filepath.Abs(*dir)
	if err != nil {
		return err
	}
	kubeconfig := filepath.Join(abs, "kubeconfig")
	switch cmd {
	case "env":
		if _, err := os.Stat(kubeconfig); err != nil {
			return fmt.Errorf("no cluster state in %s (run up first)", abs)
		}
		fmt.Printf("export KUBECONFIG=%s\n", kubeconfig)
		return nil
	case "down":
		stopped, err := cluster.StopRecorded(abs, 10*time.Second)
		if len(stopped) > 0 {
			fmt.Fprintf(os.Stderr, "stopped %s\n", strings.Join(stopped, ", "))
		}
		return err
	case "up":
	default:
		return usage()
	}

	// A detached cluster from an earlier up would hold the state folder: stop it first.
	if stopped, err := cluster.StopRecorded(abs, 10*time.Second); err != nil {
		return err
	} else if len(stopped) > 0 {
		fmt.Fprintf(os.Stderr, "stopped the earlier cluster's %s\n", strings.Join(stopped, ", "))
	}
	if err := os.MkdirAll(abs, 0o755); err != nil {
		return err
	}
	opts := cluster.Options{
		BinDir: *bin, Dir: abs, Nodes: *nodes, PodReadyDelay: *delay, Detach: *detach,
		Logf: func(format string, args ...any) { fmt.Fprintf(os.Stderr, format+"\n", args...) },
	}
	if *proxy != "" {
		opts.Injector = &cluster.InjectorOptions{Version: *proxy, Logf: opts.Logf}
	}
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	c, err := cluster.Start(ctx, opts)
	if err != nil {
		return err
	}
	fmt.Printf("export KUBECONFIG=%s\n", c.Kubeconfig())
	if *detach {
		fmt.Fprintf(os.Stderr, "cluster left running (logs in %s); stop it with: go run ./hack/cluster down\n",
			filepath.Join(abs, "logs"))
		return nil
	}
	fmt.Fprintln(os.Stderr, "cluster running; press Ctrl-C to stop it")
	<-ctx.Done()
	fmt.Fprintln(os.Stderr, "stopping")
	return c.Stop()
}

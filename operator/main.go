// Command operator runs the kubectl-sched controllers: UserDeployment,
// AgentTask, Workflow, CronWorkflow and SchedExt. This file only wires flags to the
// manager; the controllers live in one package per kind.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/kubectl-sched/kubectl-sched/operator/app"
	"github.com/kubectl-sched/kubectl-sched/operator/clone"
	"github.com/kubectl-sched/kubectl-sched/operator/fileoutputs"
)

// version is set at build time with -ldflags -X main.version=...
var version = "v0.0.0-dev"

func main() {
	// The same image runs the helpers in tasks' pods: the clone of
	// spec.repos and the outputs sidecar, with no manager.
	if len(os.Args) > 1 && os.Args[1] == clone.Command {
		ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
		code := clone.Main(ctx, os.Getenv, os.Stderr, "/dev/termination-log")
		stop()
		os.Exit(code)
	}
	if len(os.Args) > 1 && os.Args[1] == fileoutputs.Command {
		os.Exit(fileoutputs.Main(os.Args[2:]))
	}
	opts := app.DefaultOptions()
	opts.Version = version
	opts.BindFlags(flag.CommandLine)
	zapOpts := zap.Options{}
	zapOpts.BindFlags(flag.CommandLine)
	showVersion := flag.Bool("version", false, "Print the version and exit.")
	flag.Parse()
	if *showVersion {
		fmt.Println(version)
		return
	}
	if err := opts.ApplyEnv(flag.CommandLine, os.LookupEnv); err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(2)
	}
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&zapOpts)))
	log := ctrl.Log.WithName("setup")
	limit, ok, err := app.SoftMemoryLimit(os.LookupEnv)
	if err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(2)
	}
	if ok {
		debug.SetMemoryLimit(limit)
		log.Info("Set the Go memory limit", "bytes", limit)
	}

	cfg, err := ctrl.GetConfig()
	if err != nil {
		log.Error(err, "Unable to load a kubeconfig; set --kubeconfig or KUBECONFIG, or run in a cluster")
		os.Exit(1)
	}
	mgr, err := app.NewManager(cfg, opts)
	if err != nil {
		log.Error(err, "Unable to create the manager")
		os.Exit(1)
	}
	log.Info("Starting manager", "version", version)
	if err := mgr.Start(ctrl.SetupSignalHandler()); err != nil {
		log.Error(err, "Manager stopped with an error")
		os.Exit(1)
	}
}

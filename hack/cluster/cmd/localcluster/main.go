// Command localcluster runs the simulated cluster of package
// hack/cluster for people (make cluster-up / cluster-down).
//
//	localcluster up     [--dir D] [--bin-dir B] [--real-node=false]
//	                                             start (or reuse) a cluster; it keeps running
//	localcluster down   [--dir D]                stop it
//	localcluster status [--dir D]                exit status 1 unless it is healthy
//
// D defaults to ${KUBECTL_SCHED_CACHE:-${XDG_CACHE_HOME:-~/.cache}/kubectl-sched}/cluster.
// up prints progress on stderr and, on stdout, a line to eval:
//
//	eval "$(go run ./hack/cluster/cmd/localcluster up)"
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"sort"
	"syscall"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kubectl-sched/kubectl-sched/hack/cluster"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "localcluster:", err)
		os.Exit(1)
	}
}

const usage = "usage: localcluster up|down|status [--dir DIR] [--bin-dir DIR] [--real-node=false]"

func run(args []string) error {
	if len(args) == 0 {
		return errors.New(usage)
	}
	verb := args[0]
	fs := flag.NewFlagSet("localcluster "+verb, flag.ContinueOnError)
	dir := fs.String("dir", defaultDir(), "cluster state folder")
	binDir := fs.String("bin-dir", "", "folder with the binaries (default: $KUBEBUILDER_ASSETS or hack/build-control-plane.sh)")
	realNode := fs.Bool("real-node", os.Getenv("REAL_NODE") != "false", "add the real node (kubelet + containerd) when this host can run it; REAL_NODE=false also turns it off")
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return errors.New(usage)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	switch verb {
	case "up":
		c, err := cluster.Start(ctx, cluster.Options{Dir: *dir, BinDir: *binDir, Log: os.Stderr, Detach: true, RealNode: *realNode})
		if err != nil {
			return err
		}
		if c.RealNode != "" {
			fmt.Fprintf(os.Stderr, "real node %s runs pods that ask for placement.nodePools: [%s]\n", c.RealNode, cluster.RealNodePool)
		}
		fmt.Fprintf(os.Stderr, "cluster running; logs in %s\n", filepath.Join(c.Dir, "logs"))
		fmt.Printf("# kubeconfig: %s\nexport KUBECONFIG=%s\n", c.Kubeconfig, c.Kubeconfig)
		return nil
	case "down":
		if err := cluster.Stop(*dir); err != nil {
			return err
		}
		fmt.Fprintf(os.Stderr, "stopped the cluster in %s\n", *dir)
		return nil
	case "status":
		return status(ctx, *dir)
	default:
		return errors.New(usage)
	}
}

func status(ctx context.Context, dir string) error {
	c, err := cluster.Attach(ctx, dir)
	if err != nil {
		return fmt.Errorf("not healthy: %w", err)
	}
	fmt.Printf("server:     %s\nkubeconfig: %s\n", c.Server, c.Kubeconfig)
	pids := c.PIDs()
	names := make([]string, 0, len(pids))
	for name := range pids {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		fmt.Printf("%-24s pid %d\n", name, pids[name])
	}
	cfg, err := c.RESTConfig()
	if err != nil {
		return err
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	nodes, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	notReady := 0
	for _, n := range nodes.Items {
		ready := "NotReady"
		for _, cond := range n.Status.Conditions {
			if cond.Type == corev1.NodeReady && cond.Status == corev1.ConditionTrue {
				ready = "Ready"
			}
		}
		if ready != "Ready" {
			notReady++
		}
		fmt.Printf("node %-20s %s\n", n.Name, ready)
	}
	if notReady > 0 {
		return fmt.Errorf("not healthy: %d of %d nodes not Ready", notReady, len(nodes.Items))
	}
	return nil
}

// defaultDir follows hack/build-control-plane.sh's cache root.
func defaultDir() string { return filepath.Join(cluster.CacheRoot(), "cluster") }

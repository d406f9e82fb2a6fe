// Command demo is the README's first command (`make demo`): it builds what
// it needs, starts the simulated cluster, installs kubectl-sched, runs the
// operator and narrates the tour in hack/tour with the real binaries. The
// cluster and the operator keep running afterwards for you to continue.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"strconv"
	"syscall"
	"time"

	"github.com/kubectl-sched/kubectl-sched/hack/cluster"
	"github.com/kubectl-sched/kubectl-sched/hack/tour"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "demo:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context) error {
	root, err := cluster.RepoRoot()
	if err != nil {
		return err
	}
	dir := filepath.Join(cluster.CacheRoot(), "cluster")
	kubectl, err := exec.LookPath("kubectl")
	if err != nil {
		return fmt.Errorf("the tour drives the real kubectl, and there is none on PATH: install kubectl 1.26 or later")
	}
	say("kubectl-sched demo")
	fmt.Println("The first run builds etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kwok and, for the")
	fmt.Println("real node, the kubelet from Go modules (each step below says about how long); later runs reuse them.")

	realNode := realNodePackages(ctx, root)
	// Only the real node runs the kubelet: without it, no need to build it.
	if !realNode {
		_ = os.Setenv("KUBELET", "false")
	}

	// The plugin and the operator build beside the control plane, into the
	// folder make test's builds use (same flags), so its first run links
	// neither again; bin/ gets a copy.
	shared, err := tour.SharedBinDir(nil)
	if err != nil {
		return err
	}
	e := &tour.Env{Root: root, Dir: dir, BinDir: shared, Kubectl: kubectl, Log: os.Stderr}
	say(fmt.Sprintf("Building kubectl-sched and the operator (%s from an empty Go cache) and the control plane", estimate(pluginAndOperatorCPU)))
	built := make(chan error, 1)
	go func() { built <- e.Build(ctx) }()
	bins, err := cluster.BinDir(ctx, os.Stderr)
	if err != nil {
		return err
	}
	say("Starting a fresh local cluster: kwok nodes and, when this host can run it, one real node (about 15 s)")
	stopOperator(dir)
	_ = cluster.Stop(dir)
	_ = os.RemoveAll(dir)
	c, err := cluster.Start(ctx, cluster.Options{Dir: dir, BinDir: bins, Log: os.Stderr, Detach: true, RealNode: realNode})
	if err != nil {
		return err
	}
	e.Kubeconfig, e.Cluster = c.Kubeconfig, c
	if err := <-built; err != nil {
		return err
	}
	e.BinDir = filepath.Join(root, "bin")
	for _, name := range []string{"kubectl-sched", "operator"} {
		if err := copyFile(filepath.Join(shared, name), filepath.Join(e.BinDir, name)); err != nil {
			return err
		}
	}

	steps := tour.Steps(c.RealNode != "")
	say(fmt.Sprintf("The tour: %d steps, about a minute", len(steps)))
	// The install step comes first: the operator needs its RBAC.
	if _, err := runStep(ctx, e, steps[0]); err != nil {
		return err
	}
	say("Starting the operator as its own process, with only its generated RBAC")
	if err := e.StartOperator(ctx, true); err != nil {
		return err
	}
	_ = os.WriteFile(filepath.Join(dir, "operator.pid"), []byte(strconv.Itoa(e.OperatorPID())), 0o644)
	for _, s := range steps[1:] {
		if _, err := runStep(ctx, e, s); err != nil {
			return err
		}
	}

	say("The tour is complete")
	fmt.Printf(`The cluster and the operator keep running. Continue by hand:

  export KUBECONFIG=%s
  export PATH=%s:$PATH
  kubectl sched get
  kubectl sched describe workflow release
  kubectl sched template list
  kubectl sched task run hello --image busybox --annotation sim.kubectl-sched.dev/termination-message=greeting=hi --wait -- echo hi
  kubectl sched describe ud shop -n payments --as alice    # as the tenant's member

%s

Operator log: %s
Stop everything: make cluster-down
`, c.Kubeconfig, e.BinDir, nodesNote(c), filepath.Join(dir, "operator.log"))
	return nil
}

// realNodePackages installs what the real node needs (Debian's containerd,
// runc and CNI plugins, as .ci/run installs them; the script says what it
// does, and does nothing where it cannot: not root, no apt-get) and says
// whether this host can run it. REAL_NODE=false skips it.
func realNodePackages(ctx context.Context, root string) bool {
	if os.Getenv("REAL_NODE") == "false" {
		return false
	}
	say("The real node's packages: containerd, runc, CNI plugins, a static busybox, iptables (installed with apt-get when missing and this is root)")
	script := exec.CommandContext(ctx, filepath.Join(root, "hack", "install-node-packages.sh"))
	script.Stdout, script.Stderr = os.Stdout, os.Stdout
	if err := script.Run(); err != nil {
		fmt.Printf("Could not install them (%v).\n", err)
	}
	if err := cluster.RealNodeUnavailable(""); err != nil {
		fmt.Printf("The tour runs on the kwok nodes alone: %v\n", err)
		return false
	}
	return true
}

// pluginAndOperatorCPU is the CPU the plugin and the operator take to
// build from an empty Go cache: 98 s on two cores.
const pluginAndOperatorCPU = 200 * time.Second

// estimate says about how long work of this much CPU takes on this
// machine's cores.
func estimate(cpu time.Duration) string {
	d := cpu / time.Duration(runtime.NumCPU())
	if d < 90*time.Second {
		return fmt.Sprintf("about %d s", int(d.Seconds()))
	}
	return fmt.Sprintf("about %d minutes", int(d.Round(time.Minute).Minutes()))
}

// copyFile copies an executable, replacing dst (a running demo operator
// from before keeps its own inode).
func copyFile(src, dst string) error {
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	tmp := dst + ".tmp"
	out, err := os.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o755)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	if err := out.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, dst)
}

func nodesNote(c *cluster.Cluster) string {
	kwok := `The kwok nodes simulate pods: they run nothing, and annotations such as
sim.kubectl-sched.dev/exit-code decide how they end (see docs/contributors/testing.md).`
	if c.RealNode == "" {
		return kwok + "\nThis host cannot run the real node; see the start of the output for why."
	}
	return kwok + `
Pods that ask for placement.nodePools: [real] run for real on ` + c.RealNode + `
(containerd and runc; images: busybox under the names docs/contributors/testing.md lists):

  kubectl sched task run hi --image busybox:1.36 --node-pool real -f -- sh -c 'echo "hello from $(hostname)"; echo greeting=hi > /dev/termination-log'`
}

// runStep narrates one step; a step that does not do what the tour expects
// stops the demo, since what follows builds on it.
func runStep(ctx context.Context, e *tour.Env, s tour.Step) (tour.Result, error) {
	r, err := e.RunStep(ctx, s, os.Stdout)
	if err != nil {
		return r, err
	}
	if err := r.Check(); err != nil {
		return r, fmt.Errorf("the tour went wrong (operator log: %s): %w", filepath.Join(e.Dir, "operator.log"), err)
	}
	return r, nil
}

// stopOperator stops an operator a previous demo left running.
func stopOperator(dir string) {
	b, err := os.ReadFile(filepath.Join(dir, "operator.pid"))
	if err != nil {
		return
	}
	pid, err := strconv.Atoi(string(b))
	if err != nil {
		return
	}
	// Only our operator: the pid may have been reused.
	if cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid)); err == nil && filepath.Base(firstArg(cmdline)) == "operator" {
		_ = syscall.Kill(pid, syscall.SIGTERM)
	}
}

func firstArg(cmdline []byte) string {
	for i, b := range cmdline {
		if b == 0 {
			return string(cmdline[:i])
		}
	}
	return string(cmdline)
}

func say(s string) {
	if _, set := os.LookupEnv("NO_COLOR"); !set && isTerminal(os.Stdout) {
		fmt.Printf("\n\033[1m==> %s\033[0m\n", s)
		return
	}
	fmt.Printf("\n==> %s\n", s)
}

func isTerminal(f *os.File) bool {
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

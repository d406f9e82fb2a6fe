// Package plugin times the built kubectl-sched binary against kubectl on a
// real API server: get of 200 objects, deploy against kubectl apply
// --server-side of the same object, and a warm --help. It prints figures and
// asserts nothing about time; see docs/contributors/benchmarks.md.
package plugin

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	. "github.com/kubectl-sched/kubectl-sched/api/builders"
	"github.com/kubectl-sched/kubectl-sched/hack/testenv"
	"github.com/kubectl-sched/kubectl-sched/hack/testenv/plugintest"
)

var (
	env     *plugintest.Env
	plugin  string // the built kubectl-sched
	kubectl string
	work    string
)

// TestMain starts the API server and builds the binary only when benchmarks
// run, so `go test ./...` pays nothing here.
func TestMain(m *testing.M) {
	flag.Parse()
	if f := flag.Lookup("test.bench"); f == nil || f.Value.String() == "" {
		os.Exit(m.Run())
	}
	os.Exit(setUp(m))
}

func setUp(m *testing.M) int {
	var err error
	if kubectl, err = exec.LookPath("kubectl"); err != nil {
		fmt.Fprintln(os.Stderr, "the plugin benchmarks compare with kubectl, which is not on PATH")
		return 1
	}
	if env, err = plugintest.Start(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() { _ = env.Stop() }()
	if work, err = os.MkdirTemp("", "plugin-bench-"); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(work)
	root, _ := testenv.RepoRoot()
	plugin = filepath.Join(work, "kubectl-sched")
	build := exec.Command("go", "build", "-trimpath", "-ldflags", "-s -w", "-o", plugin, "./plugin")
	build.Dir, build.Stderr = root, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "build:", err)
		return 1
	}
	return m.Run()
}

// timeRuns runs the command n times after one warm-up and returns the runs'
// durations.
func timeRuns(b *testing.B, n int, name string, args ...string) []time.Duration {
	b.Helper()
	run := func() time.Duration {
		cmd := exec.Command(name, args...)
		cmd.Env = append(os.Environ(), "KUBECONFIG="+env.Kubeconfig)
		start := time.Now()
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("%s %v: %v\n%s", name, args, err, out)
		}
		return time.Since(start)
	}
	run()
	var d []time.Duration
	for range n {
		d = append(d, run())
	}
	return d
}

func median(d []time.Duration) time.Duration {
	s := append([]time.Duration(nil), d...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[len(s)/2]
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func BenchmarkGet200(b *testing.B) {
	ns := fmt.Sprintf("get-%d", time.Now().UnixNano()%100000)
	ctx := context.Background()
	if err := env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		b.Fatal(err)
	}
	for i := range 200 {
		if err := env.Client.Create(ctx, MakeAgentTask(fmt.Sprintf("t%03d", i), ns).Image("x").Obj()); err != nil {
			b.Fatal(err)
		}
	}
	cache := filepath.Join(work, "kube-cache") // kubectl's discovery cache, warm after the first run
	for range b.N {
		ours := median(timeRuns(b, 10, plugin, "get", "agenttasks", "-n", ns))
		theirs := median(timeRuns(b, 10, kubectl, "get", "agenttasks", "-n", ns, "--cache-dir", cache))
		b.ReportMetric(ms(ours), "sched-ms")
		b.ReportMetric(ms(theirs), "kubectl-ms")
		b.ReportMetric(ms(ours)/ms(theirs), "ratio")
		fmt.Printf("get of 200 AgentTasks (median of 10): kubectl sched %v, kubectl %v, ratio %.2f\n", ours.Round(time.Millisecond/10), theirs.Round(time.Millisecond/10), ms(ours)/ms(theirs))
	}
}

func BenchmarkDeploy(b *testing.B) {
	ns := fmt.Sprintf("deploy-%d", time.Now().UnixNano()%100000)
	ctx := context.Background()
	if err := env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		b.Fatal(err)
	}
	rendered := filepath.Join(work, "shop.yaml")
	out, err := exec.Command(plugin, "template", "render", "web-app", "shop", "--set", "apiImage=api:1", "-n", ns).Output()
	if err != nil {
		b.Fatalf("render: %v", err)
	}
	if err := os.WriteFile(rendered, out, 0o644); err != nil {
		b.Fatal(err)
	}
	cache := filepath.Join(work, "kube-cache")
	for range b.N {
		ours := median(timeRuns(b, 10, plugin, "deploy", "shop", "--template", "web-app", "--set", "apiImage=api:1", "-n", ns))
		theirs := median(timeRuns(b, 10, kubectl, "apply", "--server-side", "--field-manager", "bench", "-f", rendered, "-n", ns, "--cache-dir", cache))
		b.ReportMetric(ms(ours), "sched-ms")
		b.ReportMetric(ms(theirs), "kubectl-ms")
		b.ReportMetric(ms(ours)/ms(theirs), "ratio")
		fmt.Printf("deploy (median of 10): kubectl sched deploy %v, kubectl apply --server-side %v, ratio %.2f\n", ours.Round(time.Millisecond/10), theirs.Round(time.Millisecond/10), ms(ours)/ms(theirs))
	}
}

func BenchmarkHelp(b *testing.B) {
	for range b.N {
		d := timeRuns(b, 20, plugin, "--help")
		b.ReportMetric(ms(median(d)), "median-ms")
		fmt.Printf("warm kubectl-sched --help (median of 20): %v\n", median(d).Round(time.Millisecond/10))
	}
}

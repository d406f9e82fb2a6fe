package chaos

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/kubectl-sched/kubectl-sched/hack/cluster"
	"github.com/kubectl-sched/kubectl-sched/hack/tour"
	"github.com/kubectl-sched/kubectl-sched/operator/app"
	"github.com/kubectl-sched/kubectl-sched/operator/crashpoint"
)

// simEnv is a simulated cluster with kubectl-sched's API installed, the
// plugin and operator built, and an admin client.
type simEnv struct {
	cluster *cluster.Cluster
	client  client.Client
	root    string
	kubectl string
	dir     string
}

// The plugin and operator are built once for all the package's tests, into
// the folder the other test packages share (tour.SharedBinDir).
var (
	binDir   string
	buildErr error
	build    sync.Once
)

// longFault skips a fault run that takes minutes under `go test -short`
// (make test); make test-faults and make chaos run it.
func longFault(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("a long fault run: make test-faults or make chaos runs it")
	}
}

// startSim starts the cluster for one test; it stops with the test.
func startSim(t *testing.T) *simEnv {
	t.Helper()
	// The admin client logs through controller-runtime, which otherwise
	// prints a stack trace saying no logger was set.
	ctrllog.SetLogger(zap.New(zap.WriteTo(os.Stderr)))
	kubectl, err := exec.LookPath("kubectl")
	if err != nil {
		t.Fatalf("this test needs kubectl on PATH: %v", err)
	}
	root, err := cluster.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	s := &simEnv{root: root, kubectl: kubectl, dir: t.TempDir()}
	ctx := context.Background()
	if s.cluster, err = cluster.Start(ctx, cluster.Options{Dir: filepath.Join(s.dir, "cluster"), Log: os.Stderr}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.cluster.Stop() })
	build.Do(func() {
		if binDir, buildErr = tour.SharedBinDir([]string{crashpoint.Tag}); buildErr == nil {
			buildErr = s.env(t, "build", nil).Build(ctx)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	if out, errOut, code, err := s.env(t, "install", nil).KubectlRun(ctx, "sched", "install", "--without-operator"); err != nil || code != 0 {
		t.Fatalf("install: exit %d %v\n%s%s", code, err, out, errOut)
	}
	cfg, err := s.cluster.RESTConfig()
	if err != nil {
		t.Fatal(err)
	}
	if s.client, err = client.New(cfg, client.Options{Scheme: app.Scheme()}); err != nil {
		t.Fatal(err)
	}
	return s
}

// env is an operator's own folder (its kubeconfig and log) sharing the
// built binaries.
func (s *simEnv) env(t *testing.T, name string, args []string) *tour.Env {
	t.Helper()
	d := filepath.Join(s.dir, name)
	if err := os.MkdirAll(d, 0o755); err != nil {
		t.Fatal(err)
	}
	return &tour.Env{Root: s.root, Dir: d, BinDir: binDir, Kubeconfig: s.cluster.Kubeconfig,
		Kubectl: s.kubectl, Cluster: s.cluster, Log: os.Stderr, OperatorArgs: args,
		// The crash points TestKillsBetweenWrites aims at exist only in
		// this build.
		OperatorTags: []string{crashpoint.Tag}}
}

// operator starts an operator process with args added to its command line;
// it stops with the test, which logs the tail of its log if it failed.
func (s *simEnv) operator(t *testing.T, name string, args ...string) *tour.Env {
	t.Helper()
	e := s.env(t, name, args)
	if err := e.StartOperator(context.Background(), false); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = e.StopOperator()
		if t.Failed() {
			if log, err := os.ReadFile(filepath.Join(e.Dir, "operator.log")); err == nil {
				t.Logf("operator %s log (last 4 KiB):\n%s", name, log[max(0, len(log)-4096):])
			}
		}
	})
	return e
}

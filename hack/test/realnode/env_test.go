package realnode

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
	"github.com/kubectl-sched/kubectl-sched/hack/cluster"
	"github.com/kubectl-sched/kubectl-sched/hack/tour"
	"github.com/kubectl-sched/kubectl-sched/operator/app"
)

// ns is where the tests' tasks, workflows and apps go.
const ns = "default"

// env is the cluster with a real node that every test shares; need starts
// it on first use.
type env struct {
	cluster *cluster.Cluster
	client  client.Client
	kube    kubernetes.Interface
	root    string
	kubectl string
	dir     string
	bin     string // the shared plugin and operator (tour.SharedBinDir)
}

var (
	setUpOnce sync.Once
	shared    *env
	noNode    string // why this host has no real node
	setUpErr  error
)

func TestMain(m *testing.M) {
	code := m.Run()
	if shared != nil {
		if err := shared.cluster.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "stop the cluster:", err)
		}
		_ = os.RemoveAll(shared.dir)
	}
	os.Exit(code)
}

// need returns the shared cluster, or skips the test with the reason this
// host cannot run the real node (fails instead under REQUIRE_REAL_NODE).
func need(t *testing.T) *env {
	t.Helper()
	setUpOnce.Do(func() { shared, noNode, setUpErr = setUp() })
	if noNode != "" {
		if os.Getenv("REQUIRE_REAL_NODE") != "" {
			t.Fatalf("REQUIRE_REAL_NODE is set, but this host cannot run the real node: %s", noNode)
		}
		t.Skip("no real node on this host: " + noNode)
	}
	if setUpErr != nil {
		t.Fatal(setUpErr)
	}
	return shared
}

func setUp() (*env, string, error) {
	if os.Getenv("REAL_NODE") == "false" {
		return nil, "REAL_NODE=false", nil
	}
	ctx := context.Background()
	binDir, err := cluster.BinDir(ctx, os.Stderr)
	if err != nil {
		return nil, "", err
	}
	if err := cluster.RealNodeUnavailable(binDir); err != nil {
		return nil, err.Error(), nil
	}
	kubectl, err := exec.LookPath("kubectl")
	if err != nil {
		return nil, "", fmt.Errorf("these tests need kubectl on PATH: %w", err)
	}
	root, err := cluster.RepoRoot()
	if err != nil {
		return nil, "", err
	}
	dir, err := os.MkdirTemp("", "kubectl-sched-realnode-")
	if err != nil {
		return nil, "", err
	}
	e := &env{root: root, kubectl: kubectl, dir: dir}
	e.cluster, err = cluster.Start(ctx, cluster.Options{Dir: filepath.Join(dir, "cluster"), BinDir: binDir, RealNode: true, Log: os.Stderr,
		// A tenant's quota made before the quota controller discovered the
		// CRDs (30s after install) counts them on its next full resync.
		ExtraControllerManagerArgs: []string{"--resource-quota-sync-period=5s"}})
	if err != nil {
		return nil, "", err
	}
	if e.cluster.RealNode == "" {
		return e, "", errors.New("the host passed the real node's checks, but the cluster started without it; see the log above")
	}
	cfg, err := e.cluster.RESTConfig()
	if err != nil {
		return e, "", err
	}
	if e.client, err = client.New(cfg, client.Options{Scheme: app.Scheme()}); err != nil {
		return e, "", err
	}
	if e.kube, err = kubernetes.NewForConfig(cfg); err != nil {
		return e, "", err
	}
	if e.bin, err = tour.SharedBinDir(nil); err != nil {
		return e, "", err
	}
	t := e.tour(filepath.Join(dir, "build"))
	if err := t.Build(ctx); err != nil {
		return e, "", err
	}
	if out, errOut, code, err := t.KubectlRun(ctx, "sched", "install", "--without-operator"); err != nil || code != 0 {
		return e, "", fmt.Errorf("kubectl sched install --without-operator: exit %d %v\n%s%s", code, err, out, errOut)
	}
	return e, "", nil
}

// tour is a tour.Env in its own folder: the shared binaries and kubeconfig.
func (e *env) tour(dir string) *tour.Env {
	_ = os.MkdirAll(dir, 0o755)
	return &tour.Env{Root: e.root, Dir: dir, BinDir: e.bin, Kubeconfig: e.cluster.Kubeconfig,
		Kubectl: e.kubectl, Cluster: e.cluster, Log: os.Stderr}
}

// operator runs the operator as a process on this host (with only its
// generated RBAC) until the test ends.
func (e *env) operator(t *testing.T, environ ...string) {
	t.Helper()
	op := e.tour(t.TempDir())
	op.OperatorEnv = environ
	if err := op.StartOperator(context.Background(), false); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = op.StopOperator()
		if t.Failed() {
			if log, err := os.ReadFile(filepath.Join(op.Dir, "operator.log")); err == nil {
				t.Logf("operator log (last 4 KiB):\n%s", log[max(0, len(log)-4096):])
			}
		}
	})
}

// kubectl runs kubectl with the plugin on PATH.
func (e *env) kubectlRun(t *testing.T, timeout time.Duration, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	stdout, stderr, code, err := e.tour(filepath.Join(e.dir, "kubectl")).KubectlRun(ctx, args...)
	if err != nil {
		t.Fatalf("kubectl %s: %v", strings.Join(args, " "), err)
	}
	return stdout, stderr, code
}

func (e *env) create(t *testing.T, obj client.Object) {
	t.Helper()
	if err := e.client.Create(context.Background(), obj); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = client.IgnoreNotFound(e.client.Delete(context.Background(), obj, client.PropagationPolicy(metav1.DeletePropagationBackground)))
	})
}

// eventually polls get until done says so, and fails with the last state
// it saw after timeout.
func eventually[T client.Object](t *testing.T, e *env, obj T, timeout time.Duration, done func(T) bool) T {
	t.Helper()
	key := client.ObjectKeyFromObject(obj)
	deadline := time.Now().Add(timeout)
	for {
		err := e.client.Get(context.Background(), key, obj)
		if err == nil && done(obj) {
			return obj
		}
		if time.Now().After(deadline) {
			t.Fatalf("%T %s not as wanted after %s (get: %v); last seen:\n%s", obj, key, timeout, err, dump(obj))
		}
		time.Sleep(250 * time.Millisecond)
	}
}

func dump(obj client.Object) string {
	switch o := obj.(type) {
	case *schedv1.AgentTask:
		return fmt.Sprintf("%+v", o.Status)
	case *schedv1.Workflow:
		return fmt.Sprintf("%+v", o.Status)
	case *schedv1.UserDeployment:
		return fmt.Sprintf("%+v", o.Status)
	case *schedv1.SchedExt:
		return fmt.Sprintf("%+v", o.Status)
	}
	return fmt.Sprintf("%+v", obj)
}

// onRealNode is placement on the real node's pool.
func onRealNode() *schedv1.Placement {
	return &schedv1.Placement{NodePools: []string{cluster.RealNodePool}}
}

// shTask is a task that runs script with sh -c on the real node.
func shTask(name, script string) *schedv1.AgentTask {
	return &schedv1.AgentTask{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: schedv1.AgentTaskSpec{
			Image:     "busybox:1.36",
			Command:   []string{"sh", "-c", script},
			Placement: onRealNode(),
		},
	}
}

func finished(t *schedv1.AgentTask) bool { return t.Status.Phase.Finished() }

// podNode is the node a task's pod ran on.
func (e *env) podNode(t *testing.T, pod string) string {
	t.Helper()
	p, err := e.kube.CoreV1().Pods(ns).Get(context.Background(), pod, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return p.Spec.NodeName
}

func hasReason(conds []metav1.Condition, reason string) bool {
	for _, c := range conds {
		if c.Reason == reason {
			return true
		}
	}
	return false
}

// podsOf lists the pods with the given labels.
func (e *env) podsOf(t *testing.T, namespace string, labels map[string]string) []corev1.Pod {
	t.Helper()
	var sel []string
	for k, v := range labels {
		sel = append(sel, k+"="+v)
	}
	list, err := e.kube.CoreV1().Pods(namespace).List(context.Background(), metav1.ListOptions{LabelSelector: strings.Join(sel, ",")})
	if err != nil {
		t.Fatal(err)
	}
	return list.Items
}

package argo

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
	"github.com/kubectl-sched/kubectl-sched/hack/testenv"
	"github.com/kubectl-sched/kubectl-sched/hack/tour"
	"github.com/kubectl-sched/kubectl-sched/operator/app"
)

// The namespace every workflow of either system runs in: a plain one,
// with neither system's extras (no tier, quota or admission of ours).
const benchNamespace = "bench"

// argoVersion is the controller hack/build-argo.sh builds.
const argoVersion = "v4.0.5"

// argoController builds (once; hack/build-argo.sh caches it) Argo's
// workflow-controller and returns its path; $ARGO_CONTROLLER wins.
func argoController() (string, error) {
	if p := os.Getenv("ARGO_CONTROLLER"); p != "" {
		return p, nil
	}
	root, err := testenv.RepoRoot()
	if err != nil {
		return "", err
	}
	cmd := exec.Command(filepath.Join(root, "hack", "build-argo.sh"))
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("hack/build-argo.sh: %w", err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	return lines[len(lines)-1], nil
}

var crdGVR = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// startArgo installs Argo's CRDs (server-side apply, from crds/ beside
// the controller) and its ConfigMap, starts the executor emulation and
// then the controller, as shipped or tuned, and waits until it leads.
func (r *run) startArgo(tuned bool) {
	b := r.b
	bin, err := argoController()
	if err != nil {
		b.Fatal(err)
	}
	files, err := filepath.Glob(filepath.Join(filepath.Dir(bin), "crds", "argoproj.io_*.yaml"))
	if err != nil || len(files) == 0 {
		b.Fatalf("no Argo CRDs beside %s (run hack/build-argo.sh): %v", bin, err)
	}
	var names []string
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			b.Fatal(err)
		}
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal(data, &u.Object); err != nil {
			b.Fatalf("%s: %v", f, err)
		}
		force := true
		if _, err := r.dyn.Resource(crdGVR).Apply(r.ctx, u.GetName(), u, metav1.ApplyOptions{FieldManager: "argo-bench", Force: force}); err != nil {
			b.Fatalf("apply %s: %v", f, err)
		}
		names = append(names, u.GetName())
	}
	r.waitEstablished(names)
	r.makeNamespace()
	// Argo's metrics server listens on every interface: off, the
	// benchmark reads the API server's and /proc instead.
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "workflow-controller-configmap", Namespace: benchNamespace},
		Data: map[string]string{"metricsConfig": "enabled: false\n"}}
	if _, err := r.cs.CoreV1().ConfigMaps(benchNamespace).Create(r.ctx, cm, metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	// The controller's pprof listener on :6060 (every interface) is fixed;
	// holding the port on loopback makes it fail, which it logs and
	// carries on.
	if l, err := net.Listen("tcp", "127.0.0.1:6060"); err == nil {
		r.cleanups = append(r.cleanups, func() { l.Close() })
	}

	if r.emu, err = startEmulator(r.sim.Kubeconfig, benchNamespace, r.cfg.emulateWorkers, filepath.Join(r.dir, "executor-emulation.log")); err != nil {
		b.Fatal(err)
	}
	args := []string{"--kubeconfig=" + r.sim.Kubeconfig, "--namespace=" + benchNamespace, "--namespaced",
		"--executor-image=registry.example.com/argoexec:" + argoVersion}
	env := []string{"LEADER_ELECTION_IDENTITY=argo-bench"}
	if tuned {
		args = append(args, fmt.Sprintf("--qps=%d", r.cfg.tunedQPS), fmt.Sprintf("--burst=%d", 2*r.cfg.tunedQPS),
			"--workflow-workers=32", "--pod-cleanup-workers=32")
		env = append(env, "DEFAULT_REQUEUE_TIME=1s")
	}
	r.controllerArgs = strings.Join(append(append([]string{}, env...), args[1:]...), " ")
	logf, err := os.Create(filepath.Join(r.dir, "workflow-controller.log"))
	if err != nil {
		b.Fatal(err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); logf.Close(); close(done) }()
	r.controllerPID = cmd.Process.Pid
	r.cleanups = append(r.cleanups, func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(15 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	})
	err = wait.PollUntilContextTimeout(r.ctx, 200*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		select {
		case <-done:
			return false, fmt.Errorf("Argo's workflow-controller exited; see %s", logf.Name())
		default:
		}
		l, err := r.cs.CoordinationV1().Leases(benchNamespace).Get(ctx, "workflow-controller", metav1.GetOptions{})
		return err == nil && l.Spec.HolderIdentity != nil && *l.Spec.HolderIdentity == "argo-bench", nil
	})
	if err != nil {
		b.Fatalf("Argo's workflow-controller does not lead after 2 minutes: %v (log %s)", err, logf.Name())
	}
}

// waitEstablished waits until the CRDs named are served.
func (r *run) waitEstablished(names []string) {
	pending := ""
	err := wait.PollUntilContextTimeout(r.ctx, 200*time.Millisecond, 5*time.Minute, true, func(ctx context.Context) (bool, error) {
		for _, n := range names {
			pending = n
			u, err := r.dyn.Resource(crdGVR).Get(ctx, n, metav1.GetOptions{})
			if err != nil {
				return false, nil
			}
			conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
			established := false
			for _, c := range conds {
				m, _ := c.(map[string]any)
				if m["type"] == "Established" && m["status"] == "True" {
					established = true
				}
			}
			if !established {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		r.b.Fatalf("Argo's CRD %s is not established after 5 minutes: %v", pending, err)
	}
}

func (r *run) makeNamespace() {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: benchNamespace}}
	if _, err := r.cs.CoreV1().Namespaces().Create(r.ctx, ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		r.b.Fatal(err)
	}
	// Pods need the namespace's default ServiceAccount, which the
	// controller manager makes.
	err := wait.PollUntilContextTimeout(r.ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		_, err := r.cs.CoreV1().ServiceAccounts(benchNamespace).Get(ctx, "default", metav1.GetOptions{})
		return err == nil, nil
	})
	if err != nil {
		r.b.Fatal("no default ServiceAccount in the benchmark's namespace after a minute")
	}
}

// startSched installs kubectl-sched as `kubectl sched install
// --without-operator` does and runs the operator built from this tree as
// its own process, with its service account's RBAC and its default
// settings, as shipped.
func (r *run) startSched() {
	b := r.b
	root, err := testenv.RepoRoot()
	if err != nil {
		b.Fatal(err)
	}
	bins, err := tour.SharedBinDir(nil)
	if err != nil {
		b.Fatal(err)
	}
	env := &tour.Env{Root: root, Dir: r.dir, BinDir: bins, Kubeconfig: r.sim.Kubeconfig, Cluster: r.sim.Cluster, Log: os.Stderr}
	if err := env.Build(r.ctx); err != nil {
		b.Fatal(err)
	}
	install := exec.CommandContext(r.ctx, filepath.Join(bins, "kubectl-sched"), "install", "--without-operator")
	install.Env = append(os.Environ(), "KUBECONFIG="+r.sim.Kubeconfig, "NO_COLOR=1")
	if out, err := install.CombinedOutput(); err != nil {
		b.Fatalf("kubectl sched install --without-operator: %v\n%s", err, out)
	}
	// A client made now finds the new kinds.
	if r.client, err = client.New(r.adminConfig(), client.Options{Scheme: app.Scheme()}); err != nil {
		b.Fatal(err)
	}
	r.makeNamespace()
	if err := env.StartOperator(r.ctx, false); err != nil {
		b.Fatal(err)
	}
	r.controllerPID = env.OperatorPID()
	r.controllerArgs = "defaults (--kube-api-qps=50 --kube-api-burst=100 per kind, --max-concurrent-reconciles=10)"
	r.cleanups = append(r.cleanups, func() { _ = env.StopOperator() })
}

// workflowsGVR is the system's workflow resource.
func workflowsGVR(system string) schema.GroupVersionResource {
	if system == kubectlSched {
		return schedv1.GroupVersion.WithResource("workflows")
	}
	return argoWorkflowGVR
}

package realnode

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	coordinationv1 "k8s.io/api/coordination/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
	"github.com/kubectl-sched/kubectl-sched/hack/cluster"
	"github.com/kubectl-sched/kubectl-sched/operator/app"
)

// operatorImage is the name the test gives the image it builds.
const operatorImage = "kubectl-sched.local/operator:realnode"

// The operator as users run it: its image built without Docker (the static
// binary, non-root, on an empty base as distroless/static is), installed by
// `kubectl sched install --wait`, running as pods with config/manager's
// probes, security context and leader election, and reconciling a task.
func TestInstalledOperatorRunsATask(t *testing.T) {
	e := need(t)
	ctx := context.Background()

	bin := filepath.Join(t.TempDir(), "operator")
	build := exec.Command("go", "build", "-trimpath", "-ldflags", "-s -w", "-o", bin, "./operator")
	build.Dir, build.Env = e.root, append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build the operator: %v\n%s", err, out)
	}
	if err := e.cluster.ImportImage(ctx, cluster.Image{
		Tags:       []string{operatorImage},
		Files:      map[string]string{"/operator": bin},
		Entrypoint: []string{"/operator"},
		User:       "65532:65532",
	}); err != nil {
		t.Fatal(err)
	}

	t.Cleanup(func() {
		// The other tests run the operator on the host; one leader only.
		_, _, _ = e.kubectlRun(t, 2*time.Minute, "-n", schedv1.DefaultOperatorNamespace, "delete", "deployment", "kubectl-sched-operator", "--wait")
	})
	out, errOut, code := e.kubectlRun(t, 4*time.Minute, "sched", "install", "--pin-image=false", "--wait", "--timeout", "3m",
		"--image", operatorImage, "--node-pool", cluster.RealNodePool)
	if code != 0 {
		pods, _ := exec.Command(e.kubectl, "--kubeconfig", e.cluster.Kubeconfig, "-n", schedv1.DefaultOperatorNamespace, "describe", "pods").CombinedOutput()
		t.Fatalf("install --wait: exit %d\n%s%s\npods:\n%s", code, out, errOut, pods)
	}

	pods := e.podsOf(t, schedv1.DefaultOperatorNamespace, map[string]string{"app.kubernetes.io/name": "kubectl-sched-operator"})
	var ready []string
	for _, p := range pods {
		if p.Spec.NodeName != cluster.RealNodeName {
			t.Errorf("operator pod %s runs on %s, want the real node", p.Name, p.Spec.NodeName)
		}
		sc := p.Spec.Containers[0].SecurityContext
		if sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem {
			t.Errorf("operator pod %s: the manifest's read-only root file system is gone", p.Name)
		}
		for _, cs := range p.Status.ContainerStatuses {
			if cs.Ready {
				ready = append(ready, p.Name)
			}
		}
	}
	if len(ready) != 2 {
		t.Errorf("ready operator pods %v, want the manifest's 2 replicas", ready)
	}

	// One replica leads; the lease names it.
	lease := &coordinationv1.Lease{}
	deadline := time.Now().Add(time.Minute)
	for {
		err := e.client.Get(ctx, client.ObjectKey{Namespace: schedv1.DefaultOperatorNamespace, Name: app.DefaultOptions().LeaderElectionID}, lease)
		if err == nil && lease.Spec.HolderIdentity != nil && holderIsPod(*lease.Spec.HolderIdentity, ready) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no operator pod holds the leader lease (get: %v, lease %+v)", err, lease.Spec)
		}
		time.Sleep(time.Second)
	}

	task := shTask("by-installed-operator", `echo "answer=$((6 * 7))" > /dev/termination-log`)
	e.create(t, task)
	task = eventually(t, e, task, 2*time.Minute, finished)
	if diff := cmp.Diff(map[string]string{"answer": "42"}, task.Status.Outputs); task.Status.Phase != schedv1.TaskSucceeded || diff != "" {
		t.Errorf("phase %s (%s); outputs (-want +got):\n%s", task.Status.Phase, task.Status.Message, diff)
	}
}

// holderIsPod: controller-runtime's identity is the pod's host name and a
// random suffix.
func holderIsPod(holder string, pods []string) bool {
	for _, p := range pods {
		if strings.HasPrefix(holder, p+"_") {
			return true
		}
	}
	return false
}

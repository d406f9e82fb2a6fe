package realnode

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/kubectl-sched/kubectl-sched/api/accounts"
	"github.com/kubectl-sched/kubectl-sched/api/names"
	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
	"github.com/kubectl-sched/kubectl-sched/hack/cluster"
	"github.com/kubectl-sched/kubectl-sched/hack/testenv"
	"github.com/kubectl-sched/kubectl-sched/operator/app"
	"github.com/kubectl-sched/kubectl-sched/operator/podsecurity"
)

// The release as a user gets it: the operator image pushed by the release's
// own command (hack/tools/release: ko, the nonroot base) to a registry,
// pulled from there by the real node's containerd over plain HTTP, installed
// pinned to its digest by `kubectl sched install --wait`, running as pods
// with config/manager's security context, probes and leader election, and
// running a workflow whose steps run on the real node.
func TestReleasedOperatorFromARegistry(t *testing.T) {
	e := need(t)
	ctx := context.Background()

	reg := testenv.Registry(t)
	if err := e.cluster.TrustRegistry(reg); err != nil {
		t.Fatal(err)
	}

	// The release's own command, as `make release` runs it, for the host's
	// platform only: the node runs it, and the other one's build is the
	// release test's (make test-release). Its Docker credentials are none.
	const version = "v0.0.0-realnode"
	out := t.TempDir()
	release := exec.Command("go", "-C", filepath.Join(e.root, "hack", "tools"), "run", "./release",
		"-root", e.root, "-version", version, "-registry", reg+"/kubectl-sched", "-out", out, "-platforms", "linux/"+runtime.GOARCH)
	release.Env = append(os.Environ(), "DOCKER_CONFIG="+t.TempDir())
	start := time.Now()
	if b, err := release.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", release, err, b)
	}
	b, err := os.ReadFile(filepath.Join(out, "operator-image.txt"))
	if err != nil {
		t.Fatal(err)
	}
	pinned := strings.TrimSpace(string(b))
	t.Logf("pushed %s in %s", pinned, time.Since(start).Round(time.Millisecond))

	t.Cleanup(func() {
		// The other tests run the operator on the host; one leader only.
		// The webhook first: the operators the other tests run on the host
		// act as the same account, and no pod would answer for them.
		_, _, _ = e.kubectlRun(t, time.Minute, "delete", "validatingwebhookconfiguration", accounts.ConfigurationName, "--ignore-not-found")
		_, _, _ = e.kubectlRun(t, 2*time.Minute, "-n", schedv1.DefaultOperatorNamespace, "delete", "deployment", "kubectl-sched-operator", "--wait")
	})
	tagged := reg + "/kubectl-sched/operator:" + version
	stdout, errOut, code := e.kubectlRun(t, 4*time.Minute, "sched", "install", "--wait", "--timeout", "3m",
		"--image", tagged, "--node-pool", cluster.RealNodePool, "--service-accounts-webhook")
	if code != 0 {
		pods, _ := exec.Command(e.kubectl, "--kubeconfig", e.cluster.Kubeconfig, "-n", schedv1.DefaultOperatorNamespace, "describe", "pods").CombinedOutput()
		t.Fatalf("install --wait: exit %d\n%s%s\npods:\n%s", code, stdout, errOut, pods)
	}
	if strings.Contains(errOut, "not pinned") {
		t.Errorf("install did not pin the image: %s", errOut)
	}

	dep := &appsv1.Deployment{}
	if err := e.client.Get(ctx, client.ObjectKey{Namespace: schedv1.DefaultOperatorNamespace, Name: "kubectl-sched-operator"}, dep); err != nil {
		t.Fatal(err)
	}
	if got := dep.Spec.Template.Spec.Containers[0].Image; got != pinned {
		t.Errorf("the Deployment runs %s, want %s (the tag pinned to what was pushed)", got, pinned)
	}
	_, digest, _ := strings.Cut(pinned, "@")
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
			if !strings.HasSuffix(cs.ImageID, digest) {
				t.Errorf("operator pod %s runs image %s, want the pushed %s", p.Name, cs.ImageID, digest)
			}
		}
	}
	if len(ready) != 2 {
		t.Errorf("ready operator pods %v, want the manifest's 2 replicas", ready)
	}
	// One replica leads (the image runs config/manager's leader election);
	// the lease names it.
	lease := &coordinationv1.Lease{}
	if err := wait.PollUntilContextTimeout(ctx, time.Second, time.Minute, true, func(ctx context.Context) (bool, error) {
		err := e.client.Get(ctx, client.ObjectKey{Namespace: schedv1.DefaultOperatorNamespace, Name: app.DefaultOptions().LeaderElectionID}, lease)
		return err == nil && lease.Spec.HolderIdentity != nil && holderIsPod(*lease.Spec.HolderIdentity, ready), nil
	}); err != nil {
		t.Fatalf("no operator pod holds the leader lease (lease %+v)", lease.Spec)
	}

	step := func(name, script string) schedv1.WorkflowStep {
		return schedv1.WorkflowStep{Name: name, Task: shTask("", script).Spec}
	}
	wf := &schedv1.Workflow{
		ObjectMeta: metav1.ObjectMeta{Name: "from-release", Namespace: ns},
		Spec: schedv1.WorkflowSpec{Steps: []schedv1.WorkflowStep{
			step("pick", `echo "n=6" > /dev/termination-log`),
			step("times", `echo "answer=$(( ${steps.pick.output.n} * 7 ))" > /dev/termination-log`),
		}},
	}
	e.create(t, wf)
	wf = eventually(t, e, wf, 3*time.Minute, func(w *schedv1.Workflow) bool { return w.Status.Phase.Finished() })
	if wf.Status.Phase != schedv1.WorkflowSucceeded {
		t.Fatalf("workflow %s: %s", wf.Status.Phase, dump(wf))
	}
	got := map[string]map[string]string{}
	for _, s := range wf.Status.Steps {
		got[s.Name] = s.Outputs
		if node := e.podNode(t, taskPod(t, e, s.TaskName)); node != cluster.RealNodeName {
			t.Errorf("step %s ran on %s, want the real node", s.Name, node)
		}
	}
	if diff := cmp.Diff(map[string]map[string]string{"pick": {"n": "6"}, "times": {"answer": "42"}}, got); diff != "" {
		t.Errorf("step outputs (-want +got):\n%s", diff)
	}

	// The steps' tasks and Jobs above passed the service-accounts webhook,
	// served by the operator's pods through its Service; a Job the
	// operator's account would run as another account than its task's is
	// refused by it.
	cfg, err := e.cluster.RESTConfig()
	if err != nil {
		t.Fatal(err)
	}
	cfg.Impersonate = rest.ImpersonationConfig{UserName: accounts.Username(schedv1.DefaultOperatorNamespace),
		Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + schedv1.DefaultOperatorNamespace, "system:authenticated"}}
	// Quiet: controller-runtime warns of a client made with no logger set.
	ctrllog.SetLogger(logr.Discard())
	op, err := client.New(cfg, client.Options{Scheme: app.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	task := &schedv1.AgentTask{}
	if err := e.client.Get(ctx, client.ObjectKey{Namespace: ns, Name: wf.Status.Steps[0].TaskName}, task); err != nil {
		t.Fatal(err)
	}
	stolen := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: names.Job(task.Name) + "-as-other", Namespace: ns,
			Labels: map[string]string{schedv1.LabelManagedBy: schedv1.ManagedByValue},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: schedv1.GroupVersion.String(), Kind: "AgentTask", Name: task.Name, UID: task.UID,
				Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}}},
		Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			RestartPolicy:      corev1.RestartPolicyNever,
			ServiceAccountName: "other",
			SecurityContext:    podsecurity.Pod(),
			Containers:         []corev1.Container{{Name: "task", Image: "busybox", SecurityContext: podsecurity.Container(nil)}},
		}}},
	}
	err = op.Create(ctx, stolen, client.DryRunAll)
	if err == nil || !strings.Contains(err.Error(), accounts.WebhookName) || !strings.Contains(err.Error(), `would run as service account "other"`) {
		t.Errorf("a Job of task %s as another account: err = %v, want the webhook's refusal", task.Name, err)
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

package workflow_test

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"sigs.k8s.io/controller-runtime/pkg/client"

	. "github.com/kubectl-sched/kubectl-sched/api/builders"
	"github.com/kubectl-sched/kubectl-sched/api/names"
	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
	"github.com/kubectl-sched/kubectl-sched/hack/testenv"
	"github.com/kubectl-sched/kubectl-sched/operator/app"
	plugincmd "github.com/kubectl-sched/kubectl-sched/plugin/cmd"
)

// release is a run alice asks for: build, bob's approval, then deploy
// with the image built, which exits deployExit.
func release(ns, name string, deploy schedv1.AgentTaskSpec) *schedv1.Workflow {
	return MakeWorkflow(name, ns).StepTask("build", step("builder:1", 0, "image=reg/app:1", 0)).
		Approval("gate", "ship reg/app:1?").Approvers([]string{"bob"}, nil).
		StepTask("deploy", deploy).Obj()
}

// approvedThenFailed has alice run release, bob approve its gate with the
// plugin, and waits for its deploy step to fail.
func approvedThenFailed(t *testing.T, ns string, alice client.Client, requester string) {
	t.Helper()
	wf := release(ns, "release", step("deployer:1", 1, "", 0, "${steps.build.output.image}"))
	wf.Spec.RequestedBy = requester
	if err := alice.Create(t.Context(), wf); err != nil {
		t.Fatal(err)
	}
	waitWorkflow(t, ns, "release", "waiting for approval", func(w *schedv1.Workflow) bool {
		return len(w.Status.Steps) == 3 && w.Status.Steps[1].Phase == schedv1.StepWaitingForApproval
	})
	sched(t, "workflow", "approve", "release", "gate", "-n", ns, "--as", "bob")
	got := waitWorkflow(t, ns, "release", "finished", finished)
	if got.Status.Phase != schedv1.WorkflowFailed || got.Status.Steps[1].Outputs["approvedBy"] != "bob" {
		t.Fatalf("release: %s, gate %+v; want Failed at deploy after bob's approval", got.Status.Phase, got.Status.Steps[1])
	}
}

// asksAgain waits until the retry name's gate waits for a new approval, its
// message saying why, and checks its deploy step never got a task.
func asksAgain(t *testing.T, ns, name string, why ...string) {
	t.Helper()
	got := waitWorkflow(t, ns, name, "its gate waiting for approval", func(w *schedv1.Workflow) bool {
		return len(w.Status.Steps) == 3 && w.Status.Steps[1].Phase == schedv1.StepWaitingForApproval || w.Status.Phase.Finished()
	})
	gate := got.Status.Steps[1]
	if gate.Phase != schedv1.StepWaitingForApproval {
		t.Fatalf("%s: gate %+v, deploy %+v; want the gate waiting for a new approval", name, gate, got.Status.Steps[2])
	}
	contains(t, name+"'s gate message", gate.Message, why...)
	err := sim.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: names.StepTask(name, 2, "deploy")}, &schedv1.AgentTask{})
	if !apierrors.IsNotFound(err) {
		t.Errorf("%s: deploy's task: %v; want none, as nobody approved it", name, err)
	}
}

// schedErr runs the plugin as sched does, expecting it to fail, and
// returns what it printed.
func schedErr(t *testing.T, args ...string) string {
	t.Helper()
	var out bytes.Buffer
	streams := genericiooptions.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &out}
	root := plugincmd.NewRootCommand(streams)
	root.SetArgs(append(args, "--kubeconfig", sim.Kubeconfig))
	if code := plugincmd.Execute(root, streams); code == 0 {
		t.Fatalf("kubectl sched %s: exit 0, want it refused\n%s", strings.Join(args, " "), out.String())
	}
	return out.String()
}

func contains(t *testing.T, what, got string, want ...string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(got, w) {
			t.Errorf("%s %q lacks %q", what, got, w)
		}
	}
}

// TestRetryKeepsAnApprovalToWhatItApproved: alice, a tenant's member (a
// namespace made as tenant create makes it), runs a release whose deploy
// bob approves and which fails. She writes a retry that wraps another
// deploy step around bob's approval: its gate asks again, and the other
// deploy never runs. 'workflow retry' of the same steps reuses the
// approval, and deploy runs again at once.
func TestRetryKeepsAnApprovalToWhatItApproved(t *testing.T) {
	t.Parallel()
	ns := testenv.TenantNamespace(t, sim.Client, "team", []string{"alice", "bob"}, nil)
	alice, err := testenv.Impersonate(sim.Config, "alice")
	if err != nil {
		t.Fatal(err)
	}
	approvedThenFailed(t, ns, alice, "alice")

	sneaky := release(ns, "sneaky", step("exfiltrate:1", 0, "", 0, "${steps.build.output.image}"))
	sneaky.Spec.RequestedBy = "alice"
	sneaky.Spec.RetryOf = &schedv1.WorkflowRetry{Workflow: "release", FromStep: "deploy"}
	if err := alice.Create(t.Context(), sneaky); err != nil {
		t.Fatal(err)
	}
	asksAgain(t, ns, "sneaky", "waiting for approval by bob", "the approval by bob in workflow release is not reused: step deploy changed since")

	out := sched(t, "workflow", "retry", "release", "-n", ns, "--as", "alice")
	retried := strings.TrimPrefix(strings.Fields(out)[0], "workflow.sched.kubectl-sched.dev/")
	got := waitWorkflow(t, ns, retried, "finished", finished)
	gate := got.Status.Steps[1]
	if gate.Phase != schedv1.StepSucceeded || gate.Outputs["approvedBy"] != "bob" || gate.Message != "reused from workflow release: approved by bob" {
		t.Errorf("%s: gate %+v; want bob's approval reused", retried, gate)
	}
	if got.Spec.RequestedBy != "alice" {
		t.Errorf("%s: requestedBy %q, want alice, who retried it", retried, got.Spec.RequestedBy)
	}
	if d := got.Status.Steps[2]; d.TaskName != names.StepTask(retried, 2, "deploy") {
		t.Errorf("%s: deploy %+v; want it run again", retried, d)
	}
}

// TestRetryDoesNotReuseTheRetriersOwnApproval: where approving one's own
// run is forbidden (the operator's forbid-self-approval, and its
// ConfigMap for the policy), bob asks for a release that alice, a member,
// approves. When alice retries it, her own approval would let her run go
// on: the retry's gate asks again, and alice cannot approve it.
func TestRetryDoesNotReuseTheRetriersOwnApproval(t *testing.T) {
	// Not parallel: it restarts the operator with the setting.
	restart := func(forbid bool) {
		t.Helper()
		if err := operator.Stop(); err != nil {
			t.Fatal(err)
		}
		if err := operator.Start(func(o *app.Options) { o.Settings.ForbidSelfApproval = forbid }); err != nil {
			t.Fatal(err)
		}
	}
	restart(true)
	t.Cleanup(func() { restart(false) })
	forbidSelfApproval(t)

	ns := testenv.TenantNamespace(t, sim.Client, "team", []string{"alice", "bob"}, nil)
	bob, err := testenv.Impersonate(sim.Config, "bob")
	if err != nil {
		t.Fatal(err)
	}
	wf := MakeWorkflow("release", ns).StepTask("build", step("builder:1", 0, "image=reg/app:1", 0)).
		Approval("gate", "ship reg/app:1?").StepTask("deploy", step("deployer:1", 1, "", 0)).RequestedBy("bob").Obj()
	if err := bob.Create(t.Context(), wf); err != nil {
		t.Fatal(err)
	}
	waitWorkflow(t, ns, "release", "waiting for approval", func(w *schedv1.Workflow) bool {
		return len(w.Status.Steps) == 3 && w.Status.Steps[1].Phase == schedv1.StepWaitingForApproval
	})
	sched(t, "workflow", "approve", "release", "gate", "-n", ns, "--as", "alice")
	if got := waitWorkflow(t, ns, "release", "finished", finished); got.Status.Steps[1].Outputs["approvedBy"] != "alice" {
		t.Fatalf("release: gate %+v; want alice's approval", got.Status.Steps[1])
	}

	out := sched(t, "workflow", "retry", "release", "-n", ns, "--as", "alice")
	retried := strings.TrimPrefix(strings.Fields(out)[0], "workflow.sched.kubectl-sched.dev/")
	asksAgain(t, ns, retried, "the approval by alice in workflow release is not reused: alice asked for this run (spec.requestedBy), and this cluster forbids approving one's own run")
	res := schedErr(t, "workflow", "approve", retried, "gate", "-n", ns, "--as", "alice")
	contains(t, "alice approving her retry", res, `user "alice" asked for workflow `+retried, "someone else must approve step gate")
}

// forbidSelfApproval writes FORBID_SELF_APPROVAL=true into the operator's
// ConfigMap, as install --forbid-self-approval=true does, and waits until
// the kubectl-sched-self-approval policy applies it; the ConfigMap goes
// when the test ends.
func forbidSelfApproval(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "kubectl-sched-operator-config", Namespace: schedv1.DefaultOperatorNamespace},
		Data: map[string]string{"FORBID_SELF_APPROVAL": "true"}}
	if err := sim.Client.Create(ctx, cm); err != nil {
		t.Fatal(err)
	}
	probe := MakeWorkflow("probe", "default").Approval("review", "").Obj()
	enforced := func(ctx context.Context) (bool, error) {
		err := sim.Client.Create(ctx, probe.DeepCopy(), client.DryRunAll)
		return err != nil && strings.Contains(err.Error(), "forbids approving one's own run"), nil
	}
	if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, enforced); err != nil {
		t.Fatalf("FORBID_SELF_APPROVAL is not enforced: %v", err)
	}
	t.Cleanup(func() {
		if err := sim.Client.Delete(ctx, cm); err != nil {
			t.Error(err)
		}
		gone := func(ctx context.Context) (bool, error) { ok, err := enforced(ctx); return !ok, err }
		if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, gone); err != nil {
			t.Errorf("FORBID_SELF_APPROVAL is still enforced after its ConfigMap went: %v", err)
		}
	})
}

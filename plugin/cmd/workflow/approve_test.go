package workflow_test

import (
	"context"
	"strings"
	"testing"

	authorizationv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubectl-sched/kubectl-sched/api/builders"
	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
	"github.com/kubectl-sched/kubectl-sched/hack/testenv"
	"github.com/kubectl-sched/kubectl-sched/hack/testenv/plugintest"
	"github.com/kubectl-sched/kubectl-sched/plugin/internal/cmdutil"
)

// createGated creates a workflow with two approval steps, gate and second,
// and a step that runs a task.
func createGated(t *testing.T, name string) {
	t.Helper()
	wf := builders.MakeWorkflow(name, "default").Approval("gate", "ship it?").Approval("second", "").Step("ship", "busybox").Obj()
	if err := env.Client.Create(context.Background(), wf); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = client.IgnoreNotFound(env.Client.Delete(context.Background(), wf)) })
}

func waitingFor(steps ...string) update {
	return func(s *schedv1.WorkflowStatus) {
		s.Phase, s.StartTime = schedv1.WorkflowRunning, at(0)
		s.Steps = nil
		for _, name := range steps {
			s.Steps = append(s.Steps, schedv1.StepStatus{Name: name, Phase: schedv1.StepWaitingForApproval, StartTime: at(0)})
		}
	}
}

// TestApproveAndDeny records decisions as the user the API server knows:
// the admin of the test kubeconfig, and a namespace member impersonated
// with --as, whose decision names them.
func TestApproveAndDeny(t *testing.T) {
	createGated(t, "gated")
	env.RunErrorCases(t, map[string]plugintest.ErrorCase{
		"not waiting yet": {Args: []string{"workflow", "approve", "gated", "gate"}, Code: cmdutil.ExitError,
			Stderr: []string{"step gate of workflow gated is not waiting for approval (phase Waiting)", "kubectl sched workflow watch gated"}},
		"no such step": {Args: []string{"workflow", "approve", "gated", "nope"}, Code: cmdutil.ExitUsage,
			Stderr: []string{`workflow gated has no step "nope"`, "Its steps that wait for approval: gate, second."}},
		"a task step": {Args: []string{"workflow", "deny", "gated", "ship"}, Code: cmdutil.ExitUsage,
			Stderr: []string{"step ship of workflow gated runs a task; it does not wait for approval"}},
		"no such workflow": {Args: []string{"workflow", "approve", "nope", "gate"}, Code: cmdutil.ExitNotFound,
			Stderr: []string{`workflows.sched.kubectl-sched.dev "nope" not found`}},
		"one argument": {Args: []string{"workflow", "approve", "gated"}, Code: cmdutil.ExitUsage},
		"a long reason": {Args: []string{"workflow", "deny", "gated", "gate", "--reason", strings.Repeat("x", 1025)}, Code: cmdutil.ExitUsage,
			Stderr: []string{"--reason has 1025 characters; at most 1024 are allowed"}},
	}, nil)

	setStatus(t, "gated", waitingFor("gate", "second"))
	res := env.Run("workflow", "approve", "gated", "gate", "--dry-run=server")
	if res.Code != 0 || !strings.Contains(res.Stdout, "step gate approved by admin (server dry run)") || len(getWF(t, "gated").Spec.Approvals) != 0 {
		t.Errorf("server dry run: exit %d, stdout %q, stderr %q, approvals %v", res.Code, res.Stdout, res.Stderr, getWF(t, "gated").Spec.Approvals)
	}
	res = env.Run("workflow", "approve", "gated", "gate", "--reason", "CHG-1")
	if res.Code != 0 || res.Stdout != "workflow.sched.kubectl-sched.dev/gated step gate approved by admin\nFollow it: kubectl sched workflow watch gated\n" {
		t.Fatalf("approve: exit %d, stdout %q, stderr %q", res.Code, res.Stdout, res.Stderr)
	}
	res = env.Run("workflow", "deny", "gated", "gate")
	if res.Code != cmdutil.ExitError || !strings.Contains(res.Stderr, "step gate of workflow gated was already approved by admin") || !strings.Contains(res.Stderr, "kubectl sched workflow stop gated") {
		t.Errorf("a second decision: exit %d, stderr %q", res.Code, res.Stderr)
	}

	// A namespace member, impersonated: the decision names them.
	if _, err := testenv.BindUser(context.Background(), env.Client, env.Config, "default", "alice", "kubectl-sched-edit",
		authorizationv1.ResourceAttributes{Verb: "patch", Group: schedv1.GroupVersion.Group, Resource: "workflows"}); err != nil {
		t.Fatal(err)
	}
	res = env.Run("workflow", "deny", "gated", "second", "--reason", "not on a Friday", "--as", "alice")
	if res.Code != 0 || !strings.HasPrefix(res.Stdout, "workflow.sched.kubectl-sched.dev/gated step second denied by alice\n") {
		t.Fatalf("deny as alice: exit %d, stdout %q, stderr %q", res.Code, res.Stdout, res.Stderr)
	}
	want := []schedv1.StepDecision{
		{Step: "gate", Decision: schedv1.Approved, User: "admin", Reason: "CHG-1"},
		{Step: "second", Decision: schedv1.Denied, User: "alice", Reason: "not on a Friday"},
	}
	wf := getWF(t, "gated")
	if got := wf.Spec.Approvals; len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("approvals %+v, want %+v", got, want)
	}
	written := false
	for _, m := range wf.ManagedFields {
		written = written || m.Manager == "kubectl-sched" && m.FieldsV1 != nil && strings.Contains(m.FieldsV1.GetRawString(), `"f:approvals"`)
	}
	if !written {
		t.Errorf("spec.approvals not written by field manager kubectl-sched: %+v", wf.ManagedFields)
	}

	// A retry is a new attempt that nobody decided on yet: it does not
	// carry alice's decision, which the admin could not record.
	setStatus(t, "gated", end(schedv1.WorkflowFailed, 5, "step 1 (second) was denied",
		schedv1.StepStatus{Name: "gate", Phase: schedv1.StepSucceeded}, schedv1.StepStatus{Name: "second", Phase: schedv1.StepFailed}))
	res = env.Run("workflow", "retry", "gated")
	if res.Code != 0 || !strings.Contains(res.Stdout, "a retry of gated from step second") {
		t.Errorf("retry: exit %d, stdout %q, stderr %q", res.Code, res.Stdout, res.Stderr)
	} else {
		name := strings.TrimPrefix(strings.Fields(res.Stdout)[0], "workflow.sched.kubectl-sched.dev/")
		t.Cleanup(func() { _ = env.Client.Delete(context.Background(), getWF(t, name)) })
	}

	// Someone without rights in the namespace.
	nobody, err := env.UserKubeconfig("nobody")
	if err != nil {
		t.Fatal(err)
	}
	createGated(t, "gated-2")
	setStatus(t, "gated-2", waitingFor("gate"))
	res = plugintest.RunWithInput("", "workflow", "approve", "gated-2", "gate", "--kubeconfig", nobody)
	if res.Code != cmdutil.ExitForbidden {
		t.Errorf("nobody: exit %d, stderr %q", res.Code, res.Stderr)
	}

	setStatus(t, "gated-2", end(schedv1.WorkflowCancelled, 3, "cancelled (spec.cancel)"))
	res = env.Run("workflow", "approve", "gated-2", "gate")
	if res.Code != cmdutil.ExitError || !strings.Contains(res.Stderr, "workflow gated-2 already ended (Cancelled): nothing to approve") {
		t.Errorf("an ended workflow: exit %d, stderr %q", res.Code, res.Stderr)
	}
}

func TestSuspendAndResume(t *testing.T) {
	createWF(t, "held")
	steps := []struct {
		args    []string
		stdout  string
		suspend bool
	}{
		{[]string{"suspend", "held", "--dry-run=server"}, "workflow.sched.kubectl-sched.dev/held suspended (server dry run)\n", false},
		{[]string{"suspend", "held"}, "workflow.sched.kubectl-sched.dev/held suspended\nRunning steps go on; no other step starts until: kubectl sched workflow resume held\n", true},
		{[]string{"suspend", "held"}, "workflow.sched.kubectl-sched.dev/held is already suspended\n", true},
		{[]string{"resume", "held"}, "workflow.sched.kubectl-sched.dev/held resumed\nFollow it: kubectl sched workflow watch held\n", false},
		{[]string{"resume", "held"}, "workflow.sched.kubectl-sched.dev/held is not suspended\n", false},
	}
	for _, s := range steps {
		res := env.Run(append([]string{"workflow"}, s.args...)...)
		if res.Code != 0 || res.Stdout != s.stdout {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want %q", s.args, res.Code, res.Stdout, res.Stderr, s.stdout)
		}
		if got := getWF(t, "held").Spec.Suspend; got != s.suspend {
			t.Errorf("%v: spec.suspend %v, want %v", s.args, got, s.suspend)
		}
	}
	setStatus(t, "held", end(schedv1.WorkflowSucceeded, 3, "all 2 steps succeeded"))
	res := env.Run("workflow", "suspend", "held")
	if res.Code != 0 || res.Stdout != "workflow.sched.kubectl-sched.dev/held already ended (Succeeded): nothing to suspend\n" {
		t.Errorf("an ended workflow: exit %d, stdout %q", res.Code, res.Stdout)
	}
	res = env.Run("workflow", "resume", "gone")
	if res.Code != cmdutil.ExitNotFound || !apierrors.IsNotFound(env.Client.Get(context.Background(), client.ObjectKey{Namespace: "default", Name: "gone"}, &schedv1.Workflow{})) {
		t.Errorf("a missing workflow: exit %d, stderr %q", res.Code, res.Stderr)
	}
}

// TestRunRefusesBadLoopsBeforeSubmitting: every mistake in a forEach, named
// with its step, at once.
func TestRunRefusesBadLoopsBeforeSubmitting(t *testing.T) {
	res := env.Run("workflow", "run", "-f", "testdata/bad-foreach.yaml")
	if res.Code != cmdutil.ExitInvalid || res.Stdout != "" {
		t.Errorf("exit %d, stdout %q; want exit 7 and nothing printed", res.Code, res.Stdout)
	}
	plugintest.Golden(t, "run-bad-foreach.stderr", res.Stderr)
	if !apierrors.IsNotFound(env.Client.Get(context.Background(), client.ObjectKey{Namespace: "default", Name: "bad-foreach"}, &schedv1.Workflow{})) {
		t.Error("the workflow was submitted")
	}
}

func TestRunRefusesBadWhenBeforeSubmitting(t *testing.T) {
	res := env.Run("workflow", "run", "-f", "testdata/bad-when.yaml")
	if res.Code != cmdutil.ExitInvalid || res.Stdout != "" {
		t.Errorf("exit %d, stdout %q; want exit 7 and nothing printed", res.Code, res.Stdout)
	}
	plugintest.Golden(t, "run-bad-when.stderr", res.Stderr)
	if !apierrors.IsNotFound(env.Client.Get(context.Background(), client.ObjectKey{Namespace: "default", Name: "bad-when"}, &schedv1.Workflow{})) {
		t.Error("the workflow was submitted")
	}
}

// TestOnlyApproversMayDecide: a step that names its approvers says, before
// asking the cluster, who may decide when the user may not; a member of a
// group it names decides. Runs and retries of a workflow with an approval
// step record who asked for them.
func TestOnlyApproversMayDecide(t *testing.T) {
	ctx := context.Background()
	wf := builders.MakeWorkflow("named", "default").Approval("gate", "ship it?").Approvers([]string{"bob"}, []string{"release"}).
		Step("ship", "busybox").Obj()
	if err := env.Client.Create(ctx, wf); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = client.IgnoreNotFound(env.Client.Delete(context.Background(), wf)) })
	setStatus(t, "named", waitingFor("gate"))
	for _, user := range []string{"carol", "dana"} {
		if _, err := testenv.BindUser(ctx, env.Client, env.Config, "default", user, "kubectl-sched-edit",
			authorizationv1.ResourceAttributes{Verb: "patch", Group: schedv1.GroupVersion.Group, Resource: "workflows"}); err != nil {
			t.Fatal(err)
		}
	}
	res := env.Run("workflow", "approve", "named", "gate", "--as", "carol")
	if res.Code != cmdutil.ExitForbidden ||
		!strings.Contains(res.Stderr, `user "carol" may not approve step gate of workflow named: only bob or a member of group release may (its approval.approvers)`) ||
		!strings.Contains(res.Stderr, "Ask one of them to run 'kubectl sched workflow approve named gate'.") {
		t.Errorf("carol: exit %d, stderr %q", res.Code, res.Stderr)
	}
	res = env.Run("workflow", "deny", "named", "gate", "--as", "dana", "--as-group", "release", "--as-group", "system:authenticated")
	if res.Code != 0 || !strings.HasPrefix(res.Stdout, "workflow.sched.kubectl-sched.dev/named step gate denied by dana\n") {
		t.Fatalf("dana, of group release: exit %d, stdout %q, stderr %q", res.Code, res.Stdout, res.Stderr)
	}

	// A run is asked for by whoever runs it, whatever its file says.
	res = env.Run("workflow", "run", "-f", "testdata/gated.yaml", "--name", "gated-run", "--as", "carol")
	if res.Code != 0 {
		t.Fatalf("run as carol: exit %d, stderr %q", res.Code, res.Stderr)
	}
	run := getWF(t, "gated-run")
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), run) })
	if run.Spec.RequestedBy != "carol" || run.Spec.Steps[1].Approval.Approvers.Describe() != "bob or a member of group release" {
		t.Errorf("run as carol: requestedBy %q, approvers %+v", run.Spec.RequestedBy, run.Spec.Steps[1].Approval.Approvers)
	}

	// The retry is asked for by whoever runs it.
	setStatus(t, "named", end(schedv1.WorkflowFailed, 3, "step 0 (gate) was denied", schedv1.StepStatus{Name: "gate", Phase: schedv1.StepFailed}))
	res = env.Run("workflow", "retry", "named", "--as", "carol")
	if res.Code != 0 {
		t.Fatalf("retry as carol: exit %d, stderr %q", res.Code, res.Stderr)
	}
	next := getWF(t, strings.TrimPrefix(strings.Fields(res.Stdout)[0], "workflow.sched.kubectl-sched.dev/"))
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), next) })
	if next.Spec.RequestedBy != "carol" {
		t.Errorf("the retry's requestedBy %q, want carol", next.Spec.RequestedBy)
	}
}

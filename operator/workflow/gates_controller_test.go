package workflow_test

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	. "github.com/kubectl-sched/kubectl-sched/api/builders"
	"github.com/kubectl-sched/kubectl-sched/api/names"
	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
	"github.com/kubectl-sched/kubectl-sched/hack/testenv"
)

func phases(steps []schedv1.StepStatus) []string {
	var out []string
	for _, s := range steps {
		out = append(out, s.Name+"="+string(s.Phase))
	}
	return out
}

// TestConditionsAndFinallyOnTheSimulatedCluster runs, on kwok nodes, a
// workflow with a conditional step that is skipped, one that runs, and
// finally steps that read ${workflow.phase} and a main step's output; then
// one whose step fails, after which the finally steps run all the same.
func TestConditionsAndFinallyOnTheSimulatedCluster(t *testing.T) {
	t.Parallel()
	cases := map[string]struct {
		testExit   int
		testMsg    string
		wantPhase  schedv1.WorkflowPhase
		wantReason string
		wantSteps  []string
		wantFinal  []string
		wantNotify []string
	}{
		"the tests pass": {
			testExit: 0, testMsg: "result=passed", wantPhase: schedv1.WorkflowSucceeded, wantReason: schedv1.ReasonSucceeded,
			wantSteps:  []string{"test=Succeeded", "deploy=Succeeded", "rollback=Skipped"},
			wantFinal:  []string{"notify=Succeeded", "page=Skipped"},
			wantNotify: []string{"Succeeded", "passed"},
		},
		"the tests fail": {
			testExit: 3, testMsg: "2 tests failed", wantPhase: schedv1.WorkflowFailed, wantReason: schedv1.ReasonStepFailed,
			wantSteps:  []string{"test=Failed", "deploy=Skipped", "rollback=Skipped"},
			wantFinal:  []string{"notify=Failed", "page=Succeeded"},
			wantNotify: nil, // test wrote no result: notify fails on it
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ns := namespace(t)
			wf := MakeWorkflow("ci", ns).Param("env", "prod").
				StepTask("test", step("x", tc.testExit, tc.testMsg, 0)).
				StepTask("deploy", step("x", 0, "url=https://shop", 0)).DependsOn("test").When("steps.test.outputs.result == 'passed' && params.env == 'prod'").
				StepTask("rollback", step("x", 0, "", 0)).DependsOn("test").When("steps.test.outputs.result != 'passed'").
				Finally("notify", step("x", 0, "sent=yes", 0, "${workflow.phase}", "${steps.test.output.result}")).
				Finally("page", step("x", 0, "", 0)).When("workflow.phase == 'Failed'").Obj()
			if err := sim.Client.Create(t.Context(), wf); err != nil {
				t.Fatal(err)
			}
			got := waitWorkflow(t, ns, "ci", "finished", finished)
			if got.Status.Phase != tc.wantPhase || got.Status.Reason != tc.wantReason {
				t.Errorf("phase %s reason %s message %q; want %s %s", got.Status.Phase, got.Status.Reason, got.Status.Message, tc.wantPhase, tc.wantReason)
			}
			if diff := cmp.Diff(tc.wantSteps, phases(got.Status.Steps)); diff != "" {
				t.Errorf("steps (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantFinal, phases(got.Status.Finally)); diff != "" {
				t.Errorf("finally steps (-want +got):\n%s", diff)
			}
			if m := got.Status.Main; m == nil || m.Phase != tc.wantPhase {
				t.Errorf("status.main %+v, want phase %s", m, tc.wantPhase)
			}
			if tc.wantNotify != nil {
				notify := getTask(t, ns, names.FinallyTask("ci", 0, "notify"))
				if diff := cmp.Diff(tc.wantNotify, notify.Spec.Args); diff != "" {
					t.Errorf("notify args (-want +got):\n%s", diff)
				}
				if got.Status.Finally[0].Outputs["sent"] != "yes" {
					t.Errorf("notify outputs %v", got.Status.Finally[0].Outputs)
				}
				if r := got.Status.Steps[2]; r.Reason != schedv1.ReasonWhenFalse || !strings.Contains(r.Message, `when "steps.test.outputs.result != 'passed'" was false`) {
					t.Errorf("rollback %+v", r)
				}
			} else {
				// Its finally steps ran after the failure: page did, and
				// notify failed on the output test never wrote.
				if n := got.Status.Finally[0]; !strings.Contains(n.Message, `did not output "result"`) {
					t.Errorf("notify %+v", n)
				}
				if !strings.Contains(got.Status.Message, "; finally step 0 (notify) failed:") {
					t.Errorf("message %q does not say what the finally step did", got.Status.Message)
				}
			}
			// Every finally step's end is an event too (sent after the
			// status write that tells the same).
			testenv.Poll(t, testenv.LongTimeout, "an event for each finally step", func(ctx context.Context) (bool, error) {
				var evs corev1.EventList
				if err := sim.Client.List(ctx, &evs, client.InNamespace(ns)); err != nil {
					return false, err
				}
				finallyEvents := 0
				for _, e := range evs.Items {
					if e.InvolvedObject.Kind == "Workflow" && strings.HasPrefix(e.Message, "finally step ") {
						finallyEvents++
					}
				}
				return finallyEvents >= 2, nil
			})
		})
	}
}

// TestApprovalByANamespaceMember: a step waits for approval until a member
// of the namespace (impersonated, bound to kubectl-sched-edit) approves it
// with the plugin; the operator records who, and the next step runs. A
// second workflow is denied: its step Fails with reason Denied, the step
// after it is skipped, and its finally step runs.
func TestApprovalByANamespaceMember(t *testing.T) {
	t.Parallel()
	ns := namespace(t)
	if _, err := testenv.BindUser(t.Context(), sim.Client, sim.Config, ns, "alice", "kubectl-sched-edit",
		authorizationv1.ResourceAttributes{Verb: "patch", Group: schedv1.GroupVersion.Group, Resource: "workflows"}); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"approved", "denied"} {
		wf := MakeWorkflow(name, ns).StepTask("build", step("x", 0, "image=reg/app:1", 0)).
			Approval("gate", "ship reg/app:1?").
			StepTask("ship", step("x", 0, "", 0, "${steps.gate.output.approvedBy}")).
			Finally("notify", step("x", 0, "", 0, "${workflow.phase}")).Obj()
		if err := sim.Client.Create(t.Context(), wf); err != nil {
			t.Fatal(err)
		}
		got := waitWorkflow(t, ns, name, "waiting for approval", func(w *schedv1.Workflow) bool {
			return len(w.Status.Steps) == 3 && w.Status.Steps[1].Phase == schedv1.StepWaitingForApproval
		})
		if got.Status.Reason != schedv1.ReasonWaitingForApproval || !strings.Contains(got.Status.Message, "kubectl sched workflow approve "+name+" gate") {
			t.Errorf("%s: reason %s message %q", name, got.Status.Reason, got.Status.Message)
		}
	}
	out := sched(t, "workflow", "approve", "approved", "gate", "--reason", "CHG-1", "-n", ns, "--as", "alice")
	if !strings.HasPrefix(out, "workflow.sched.kubectl-sched.dev/approved step gate approved by alice\n") {
		t.Errorf("approve printed:\n%s", out)
	}
	got := waitWorkflow(t, ns, "approved", "finished", finished)
	if got.Status.Phase != schedv1.WorkflowSucceeded || !cmp.Equal(phases(got.Status.Steps), []string{"build=Succeeded", "gate=Succeeded", "ship=Succeeded"}) {
		t.Errorf("approved: phase %s, steps %v, message %q", got.Status.Phase, phases(got.Status.Steps), got.Status.Message)
	}
	if g := got.Status.Steps[1]; g.Reason != schedv1.ReasonApproved || g.Message != "approved by alice: CHG-1" || g.TaskName != "" {
		t.Errorf("gate %+v", g)
	}
	if args := getTask(t, ns, names.StepTask("approved", 2, "ship")).Spec.Args; !cmp.Equal(args, []string{"alice"}) {
		t.Errorf("ship args %v, want the approver", args)
	}
	// No task was made for the approval step.
	var tasks schedv1.AgentTaskList
	if err := sim.Client.List(t.Context(), &tasks, client.InNamespace(ns), client.MatchingLabels{schedv1.LabelWorkflowStep: "1"}); err != nil || len(tasks.Items) != 0 {
		t.Errorf("tasks of the approval steps: %d (%v)", len(tasks.Items), err)
	}

	sched(t, "workflow", "deny", "denied", "gate", "--reason", "freeze", "-n", ns, "--as", "alice")
	got = waitWorkflow(t, ns, "denied", "finished", finished)
	if got.Status.Phase != schedv1.WorkflowFailed || got.Status.Reason != schedv1.ReasonDenied ||
		!cmp.Equal(phases(got.Status.Steps), []string{"build=Succeeded", "gate=Failed", "ship=Skipped"}) ||
		!cmp.Equal(phases(got.Status.Finally), []string{"notify=Succeeded"}) {
		t.Errorf("denied: phase %s (%s), steps %v, finally %v", got.Status.Phase, got.Status.Reason, phases(got.Status.Steps), phases(got.Status.Finally))
	}
	if got.Status.Message != "step 1 (gate) was denied: denied by alice: freeze" {
		t.Errorf("denied: message %q", got.Status.Message)
	}
	if args := getTask(t, ns, names.FinallyTask("denied", 0, "notify")).Spec.Args; !cmp.Equal(args, []string{"Failed"}) {
		t.Errorf("notify args %v, want the workflow's phase", args)
	}
}

// TestSuspendHoldsTheNextStep: suspended while a step runs, the step
// finishes and the next one does not start; the condition and reason say
// so; resumed, it runs to the end.
func TestSuspendHoldsTheNextStep(t *testing.T) {
	t.Parallel()
	ns := namespace(t)
	wf := MakeWorkflow("held", ns).StepTask("a", step("x", 0, "k=v", 8)).StepTask("b", step("x", 0, "", 0)).Obj()
	if err := sim.Client.Create(t.Context(), wf); err != nil {
		t.Fatal(err)
	}
	waitWorkflow(t, ns, "held", "running step a", func(w *schedv1.Workflow) bool {
		return len(w.Status.Steps) == 2 && w.Status.Steps[0].Phase == schedv1.StepRunning
	})
	sched(t, "workflow", "suspend", "held", "-n", ns)
	got := waitWorkflow(t, ns, "held", "suspended after step a", func(w *schedv1.Workflow) bool {
		return w.Status.Steps[0].Phase == schedv1.StepSucceeded && w.Status.Reason == schedv1.ReasonSuspended
	})
	c := meta(got.Status.Conditions, schedv1.ConditionSuspended)
	if got.Status.Steps[1].Phase != schedv1.StepWaiting || c == nil || c.Status != metav1.ConditionTrue {
		t.Errorf("step b %+v, Suspended condition %+v", got.Status.Steps[1], c)
	}
	if err := sim.Client.Get(t.Context(), client.ObjectKeyFromObject(wf), &schedv1.AgentTask{ObjectMeta: metav1.ObjectMeta{Name: names.StepTask("held", 1, "b"), Namespace: ns}}); err == nil {
		t.Error("step b's task was created while suspended")
	}
	sched(t, "workflow", "resume", "held", "-n", ns)
	got = waitWorkflow(t, ns, "held", "finished", finished)
	c = meta(got.Status.Conditions, schedv1.ConditionSuspended)
	if got.Status.Phase != schedv1.WorkflowSucceeded || c == nil || c.Status != metav1.ConditionFalse || c.Reason != schedv1.ReasonResumed {
		t.Errorf("phase %s, Suspended condition %+v", got.Status.Phase, c)
	}
}

func meta(conds []metav1.Condition, typ string) *metav1.Condition {
	for i := range conds {
		if conds[i].Type == typ {
			return &conds[i]
		}
	}
	return nil
}

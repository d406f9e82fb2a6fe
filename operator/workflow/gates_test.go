package workflow

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	. "github.com/kubectl-sched/kubectl-sched/api/builders"
	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
)

// tested: test, then deploy only when the tests passed, then report.
func tested() *WorkflowWrapper {
	return MakeWorkflow("ci", "ns").Param("env", "prod").
		Step("test", "test:1").
		Step("deploy", "deploy:1", "${steps.test.output.result}").When("steps.test.outputs.result == 'passed' && params.env == 'prod'").
		Step("report", "report:1")
}

func contains(t *testing.T, what, got string, want ...string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(got, w) {
			t.Errorf("%s %q lacks %q", what, got, w)
		}
	}
}

func TestDecideWhen(t *testing.T) {
	cases := map[string]struct {
		wf    *schedv1.Workflow
		tasks func(wf *schedv1.Workflow) map[int]*schedv1.AgentTask
		want  summary
		check func(t *testing.T, p plan)
	}{
		"true: the step starts": {
			wf: tested().Obj(),
			tasks: func(wf *schedv1.Workflow) map[int]*schedv1.AgentTask {
				return map[int]*schedv1.AgentTask{0: stepTask(wf, 0, schedv1.TaskSucceeded, map[string]string{"result": "passed"}, "")}
			},
			want: summary{Phase: schedv1.WorkflowRunning, Reason: schedv1.ReasonRunning, Progress: "1/3",
				Steps: []string{"test=Succeeded", "deploy=Pending", "report=Waiting"}, Create: "ci-1-deploy"},
		},
		"false: the step is skipped with the expression, and so is the one after it": {
			wf: tested().Obj(),
			tasks: func(wf *schedv1.Workflow) map[int]*schedv1.AgentTask {
				return map[int]*schedv1.AgentTask{0: stepTask(wf, 0, schedv1.TaskSucceeded, map[string]string{"result": "failed"}, "")}
			},
			want: summary{Phase: schedv1.WorkflowSucceeded, Reason: schedv1.ReasonSucceeded, Progress: "1/3",
				Steps: []string{"test=Succeeded", "deploy=Skipped", "report=Skipped"}},
			check: func(t *testing.T, p plan) {
				d := p.status.Steps[1]
				if d.Reason != schedv1.ReasonWhenFalse || d.Message != `skipped: when "steps.test.outputs.result == 'passed' && params.env == 'prod'" was false` {
					t.Errorf("deploy: reason %q message %q", d.Reason, d.Message)
				}
				if m := p.status.Steps[2].Message; m != "skipped: step deploy was skipped" {
					t.Errorf("report message %q", m)
				}
				if p.status.Message != "1 of 3 steps succeeded, 2 skipped by their when" {
					t.Errorf("workflow message %q", p.status.Message)
				}
			},
		},
		"an evaluation error fails the step, naming it and with CEL's message": {
			wf: tested().Obj(),
			tasks: func(wf *schedv1.Workflow) map[int]*schedv1.AgentTask {
				return map[int]*schedv1.AgentTask{0: stepTask(wf, 0, schedv1.TaskSucceeded, map[string]string{"other": "x"}, "")}
			},
			want: summary{Phase: schedv1.WorkflowFailed, Reason: schedv1.ReasonWhenError, Progress: "1/3",
				Steps: []string{"test=Succeeded", "deploy=Failed", "report=Skipped"}},
			check: func(t *testing.T, p plan) {
				if r := p.status.Steps[1].Reason; r != schedv1.ReasonWhenError {
					t.Errorf("step reason %q", r)
				}
				contains(t, "workflow message", p.status.Message, "step 1 (deploy) cannot start: when \"steps.test.outputs.result", "failed: no such key: result")
			},
		},
		"side by side, a false when skips only its branch": {
			wf: MakeWorkflow("dag", "ns").Step("a", "x").
				Step("b", "x").DependsOn("a").When("steps.a.phase == 'Failed'").
				Step("c", "x").DependsOn("b").
				Step("d", "x").DependsOn("a").Obj(),
			tasks: func(wf *schedv1.Workflow) map[int]*schedv1.AgentTask {
				return map[int]*schedv1.AgentTask{0: stepTask(wf, 0, schedv1.TaskSucceeded, nil, "")}
			},
			want: summary{Phase: schedv1.WorkflowRunning, Reason: schedv1.ReasonRunning, Progress: "1/4",
				Steps: []string{"a=Succeeded", "b=Skipped", "c=Skipped", "d=Pending"}, Create: "dag-3-d"},
		},
		"a when that names a step it does not depend on fails the workflow before anything runs": {
			wf: MakeWorkflow("bad", "ns").Step("a", "x").Step("b", "x").DependsOn("a").
				Step("c", "x").DependsOn("a").When("steps.b.outputs.ok == 'yes'").Obj(),
			tasks: func(*schedv1.Workflow) map[int]*schedv1.AgentTask { return nil },
			want: summary{Phase: schedv1.WorkflowFailed, Reason: schedv1.ReasonInvalidSpec, Progress: "0/3",
				Steps: []string{"a=Skipped", "b=Skipped", "c=Skipped"}},
			check: func(t *testing.T, p plan) {
				contains(t, "message", p.status.Message, `spec.steps[2].when: Invalid value: "steps.b.outputs.ok == 'yes'": step "c": it reads steps["b"], but it does not depend on step "b"`)
			},
		},
		"a when that does not compile fails the workflow with CEL's error": {
			wf:    MakeWorkflow("bad", "ns").Step("a", "x").Step("b", "x").When("steps.a.outputs.ok = 'yes'").Obj(),
			tasks: func(*schedv1.Workflow) map[int]*schedv1.AgentTask { return nil },
			want: summary{Phase: schedv1.WorkflowFailed, Reason: schedv1.ReasonInvalidSpec, Progress: "0/2",
				Steps: []string{"a=Skipped", "b=Skipped"}},
			check: func(t *testing.T, p plan) {
				contains(t, "message", p.status.Message, `spec.steps[1].when`, `step "b": when is not a valid CEL expression`, "Syntax error")
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			p := run(tc.wf, tc.tasks(tc.wf))
			if diff := cmp.Diff(tc.want, summarize(p)); diff != "" {
				t.Errorf("plan (-want +got):\n%s", diff)
			}
			if tc.check != nil {
				tc.check(t, p)
			}
		})
	}
}

// gated: build, then a person approves, then ship.
func gated() *WorkflowWrapper {
	return MakeWorkflow("rel", "ns").Step("build", "b:1").Approval("gate", "ship it?").Step("ship", "s:1", "${steps.gate.output.approvedBy}")
}

func TestDecideApproval(t *testing.T) {
	built := func(wf *schedv1.Workflow) map[int]*schedv1.AgentTask {
		return map[int]*schedv1.AgentTask{0: stepTask(wf, 0, schedv1.TaskSucceeded, nil, "")}
	}

	// It waits, running no task, and says how to approve.
	wf := gated().Obj()
	p := run(wf, built(wf))
	if diff := cmp.Diff(summary{Phase: schedv1.WorkflowRunning, Reason: schedv1.ReasonWaitingForApproval, Progress: "1/3",
		Steps: []string{"build=Succeeded", "gate=WaitingForApproval", "ship=Waiting"}}, summarize(p)); diff != "" {
		t.Errorf("waiting (-want +got):\n%s", diff)
	}
	g := p.status.Steps[1]
	if g.Reason != schedv1.ReasonWaitingForApproval || g.StartTime == nil || g.TaskName != "" {
		t.Errorf("gate status %+v", g)
	}
	contains(t, "gate message", g.Message, "ship it?", "kubectl sched workflow approve rel gate")
	contains(t, "workflow message", p.status.Message, "step gate is waiting for approval: kubectl sched workflow approve rel gate")
	// Nothing new: nothing changes.
	if again := decide(wf, built(wf), nil, nil, approvalRules{}, metav1.NewTime(now.Add(time.Hour))); !cmp.Equal(p.status, again.status) || len(again.creates) > 0 {
		t.Errorf("a second look changed the status or creates:\n%s", cmp.Diff(p.status, again.status))
	}

	// Approved: it Succeeds with the approver as output, and ship starts.
	approved := wf.DeepCopy()
	approved.Spec.Approvals = []schedv1.StepDecision{{Step: "gate", Decision: schedv1.Approved, User: "alice", Reason: "looks good"}}
	p = run(approved, built(approved))
	if diff := cmp.Diff(summary{Phase: schedv1.WorkflowRunning, Reason: schedv1.ReasonRunning, Progress: "2/3",
		Steps: []string{"build=Succeeded", "gate=Succeeded", "ship=Pending"}, Create: "rel-2-ship"}, summarize(p)); diff != "" {
		t.Errorf("approved (-want +got):\n%s", diff)
	}
	if g := p.status.Steps[1]; g.Reason != schedv1.ReasonApproved || g.Message != "approved by alice: looks good" || g.Outputs[OutputApprovedBy] != "alice" || g.CompletionTime == nil {
		t.Errorf("gate status %+v", g)
	}
	if diff := cmp.Diff([]string{"alice"}, created(p).Spec.Args); diff != "" {
		t.Errorf("ship args (-want +got):\n%s", diff)
	}

	// Denied: it Fails with reason Denied, and the workflow with it.
	denied := wf.DeepCopy()
	denied.Spec.Approvals = []schedv1.StepDecision{{Step: "gate", Decision: schedv1.Denied, User: "bob", Reason: "not on a Friday"}}
	p = run(denied, built(denied))
	if diff := cmp.Diff(summary{Phase: schedv1.WorkflowFailed, Reason: schedv1.ReasonDenied, Progress: "1/3",
		Steps: []string{"build=Succeeded", "gate=Failed", "ship=Skipped"}}, summarize(p)); diff != "" {
		t.Errorf("denied (-want +got):\n%s", diff)
	}
	if g := p.status.Steps[1]; g.Reason != schedv1.ReasonDenied || g.Message != "denied by bob: not on a Friday" {
		t.Errorf("gate status %+v", g)
	}
	if p.status.Message != "step 1 (gate) was denied: denied by bob: not on a Friday" {
		t.Errorf("workflow message %q", p.status.Message)
	}

	// A decision given before the step waits counts once it does.
	early := gated().Decide("gate", schedv1.Approved, "alice", "").Obj()
	p = run(early, built(early))
	if s := summarize(p); s.Create != "rel-2-ship" || p.status.Steps[1].Phase != schedv1.StepSucceeded {
		t.Errorf("early approval: %+v", s)
	}

	// Side by side, a denied branch skips what depends on it; the other runs.
	dag := MakeWorkflow("dag", "ns").Step("a", "x").Approval("gate", "").DependsOn("a").Step("b", "x").DependsOn("gate").Step("c", "x").DependsOn("a").
		Decide("gate", schedv1.Denied, "bob", "").Obj()
	dag.Status.Steps = []schedv1.StepStatus{{Name: "a", Phase: schedv1.StepSucceeded}, {Name: "gate", Phase: schedv1.StepWaitingForApproval}}
	p = run(dag, nil)
	if diff := cmp.Diff(summary{Phase: schedv1.WorkflowRunning, Reason: schedv1.ReasonRunning, Progress: "1/4",
		Steps: []string{"a=Succeeded", "gate=Failed", "b=Skipped", "c=Pending"}, Create: "dag-3-c"}, summarize(p)); diff != "" {
		t.Errorf("denied branch (-want +got):\n%s", diff)
	}

	// spec.cancel ends a step waiting for approval.
	cancelled := wf.DeepCopy()
	cancelled.Spec.Cancel = true
	if got := summarize(run(cancelled, built(cancelled))).Steps; !cmp.Equal(got, []string{"build=Succeeded", "gate=Cancelled", "ship=Skipped"}) {
		t.Errorf("cancelled: steps %v", got)
	}
}

func TestDecideSuspend(t *testing.T) {
	wf := threeSteps().Timeout(time.Hour).Obj()
	wf.Spec.Suspend = true
	// Suspended from the start: nothing starts.
	p := run(wf, nil)
	if diff := cmp.Diff(summary{Phase: schedv1.WorkflowRunning, Reason: schedv1.ReasonSuspended, Progress: "0/3",
		Steps: []string{"fetch=Waiting", "build=Waiting", "report=Waiting"}}, summarize(p)); diff != "" {
		t.Errorf("suspended (-want +got):\n%s", diff)
	}
	c := condition(p.status, schedv1.ConditionSuspended)
	if c == nil || c.Status != metav1.ConditionTrue || c.Reason != schedv1.ReasonSuspended || !strings.Contains(c.Message, "kubectl sched workflow resume rel") {
		t.Errorf("Suspended condition %+v", c)
	}
	if p.status.StartTime == nil || !p.requeueAt.Equal(p.status.StartTime.Add(time.Hour)) {
		t.Errorf("the timeout does not count while suspended: start %v requeue %v", p.status.StartTime, p.requeueAt)
	}

	// Resumed: the first step starts and the condition says so.
	wf.Spec.Suspend = false
	p = run(wf, nil)
	if s := summarize(p); s.Create != "rel-0-fetch" {
		t.Errorf("resumed: %+v", s)
	}
	if c := condition(p.status, schedv1.ConditionSuspended); c == nil || c.Status != metav1.ConditionFalse || c.Reason != schedv1.ReasonResumed {
		t.Errorf("Suspended condition after resume %+v", c)
	}

	// Suspended while a step runs: it goes on, the next does not start.
	wf.Spec.Suspend = true
	tasks := map[int]*schedv1.AgentTask{0: stepTask(wf, 0, schedv1.TaskRunning, nil, "")}
	p = run(wf, tasks)
	if s := summarize(p); s.Reason != schedv1.ReasonRunning || s.Create != "" || len(p.cancels) > 0 {
		t.Errorf("suspended while running: %+v", s)
	}
	contains(t, "message", p.status.Message, "step 0 (fetch) is running; suspended: no other step starts")
	tasks[0] = stepTask(wf, 0, schedv1.TaskSucceeded, map[string]string{"sha": "abc"}, "")
	if s := summarize(run(wf, tasks)); s.Create != "" || s.Reason != schedv1.ReasonSuspended || s.Steps[1] != "build=Waiting" {
		t.Errorf("suspended after the step: %+v", s)
	}

	// The workflow timeout keeps counting: past it, it times out.
	late := decide(wf, tasks, nil, nil, approvalRules{}, metav1.NewTime(wf.Status.StartTime.Add(time.Hour)))
	if s := summarize(late); s.Phase != schedv1.WorkflowTimeout || s.Steps[1] != "build=Skipped" {
		t.Errorf("suspended past the timeout: %+v", s)
	}
}

func condition(st schedv1.WorkflowStatus, typ string) *metav1.Condition {
	for i := range st.Conditions {
		if st.Conditions[i].Type == typ {
			return &st.Conditions[i]
		}
	}
	return nil
}

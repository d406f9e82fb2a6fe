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

// withFinally: build then test; finally notify (always, with the phase and
// build's image) and, after it, cleanup; and page only on failure.
func withFinally() *WorkflowWrapper {
	return MakeWorkflow("rel", "ns").
		Step("build", "b:1").Step("test", "t:1").
		Finally("notify", schedv1.AgentTaskSpec{Image: "n:1", Args: []string{"${workflow.phase}", "${steps.build.output.image}"}}).
		Finally("page", schedv1.AgentTaskSpec{Image: "p:1"}).When("workflow.phase != 'Succeeded'").
		Finally("cleanup", schedv1.AgentTaskSpec{Image: "c:1", Args: []string{"${steps.notify.output.id}"}}).DependsOn("notify")
}

// finallyTask is finally step j's task, as stepTask makes a main step's.
func finallyTask(wf *schedv1.Workflow, j int, phase schedv1.AgentTaskPhase, outputs map[string]string) *schedv1.AgentTask {
	return stepTask(wf, len(wf.Spec.Steps)+j, phase, outputs, "")
}

func TestDecideFinally(t *testing.T) {
	image := map[string]string{"image": "reg/app:1"}
	cases := map[string]struct {
		wf      *schedv1.Workflow
		prepare func(wf *schedv1.Workflow) map[int]*schedv1.AgentTask
		want    summary
		check   func(t *testing.T, p plan)
	}{
		"the finally steps wait for the main steps": {
			wf: withFinally().Obj(),
			prepare: func(wf *schedv1.Workflow) map[int]*schedv1.AgentTask {
				return map[int]*schedv1.AgentTask{0: stepTask(wf, 0, schedv1.TaskRunning, nil, "")}
			},
			want: summary{Phase: schedv1.WorkflowRunning, Reason: schedv1.ReasonRunning, Progress: "0/2",
				Steps: []string{"build=Running", "test=Waiting"}, Finally: []string{"notify=Waiting", "page=Waiting", "cleanup=Waiting"}},
		},
		"after success: they start with the phase, the main outcome recorded": {
			wf: withFinally().Obj(),
			prepare: func(wf *schedv1.Workflow) map[int]*schedv1.AgentTask {
				return map[int]*schedv1.AgentTask{0: stepTask(wf, 0, schedv1.TaskSucceeded, image, ""), 1: stepTask(wf, 1, schedv1.TaskSucceeded, nil, "")}
			},
			want: summary{Phase: schedv1.WorkflowRunning, Reason: schedv1.ReasonRunningFinally, Progress: "2/2",
				Steps: []string{"build=Succeeded", "test=Succeeded"}, Finally: []string{"notify=Pending", "page=Skipped", "cleanup=Waiting"}, Create: "rel-finally0-notify"},
			check: func(t *testing.T, p plan) {
				if m := p.status.Main; m == nil || m.Phase != schedv1.WorkflowSucceeded || m.Message != "all 2 steps succeeded" || !m.Time.Equal(&now) {
					t.Errorf("status.main %+v", m)
				}
				task := created(p)
				if diff := cmp.Diff([]string{"Succeeded", "reg/app:1"}, task.Spec.Args); diff != "" {
					t.Errorf("notify args (-want +got):\n%s", diff)
				}
				if task.Labels[schedv1.LabelWorkflowStep] != "finally0" {
					t.Errorf("labels %v", task.Labels)
				}
				if pg := p.status.Finally[1]; pg.Reason != schedv1.ReasonWhenFalse || !strings.Contains(pg.Message, `when "workflow.phase != 'Succeeded'" was false`) {
					t.Errorf("page %+v", pg)
				}
				if p.status.CompletionTime != nil {
					t.Error("the workflow ended before its finally steps")
				}
			},
		},
		"a finally step its when skips skips those that depend on it, in the same pass": {
			wf: MakeWorkflow("rel", "ns").Step("build", "b:1").
				Finally("page", schedv1.AgentTaskSpec{Image: "p:1"}).When("workflow.phase != 'Succeeded'").
				Finally("ack", schedv1.AgentTaskSpec{Image: "a:1"}).DependsOn("page").Obj(),
			prepare: func(wf *schedv1.Workflow) map[int]*schedv1.AgentTask {
				return map[int]*schedv1.AgentTask{0: stepTask(wf, 0, schedv1.TaskSucceeded, nil, "")}
			},
			want: summary{Phase: schedv1.WorkflowSucceeded, Reason: schedv1.ReasonSucceeded, Progress: "1/1",
				Steps: []string{"build=Succeeded"}, Finally: []string{"page=Skipped", "ack=Skipped"}},
			check: func(t *testing.T, p plan) {
				if ack := p.status.Finally[1]; ack.Message != "skipped: step page was skipped" {
					t.Errorf("ack %+v", ack)
				}
			},
		},
		"after a failure: they run too, and page runs": {
			wf: withFinally().Obj(),
			prepare: func(wf *schedv1.Workflow) map[int]*schedv1.AgentTask {
				return map[int]*schedv1.AgentTask{0: stepTask(wf, 0, schedv1.TaskFailed, nil, "exit 1")}
			},
			want: summary{Phase: schedv1.WorkflowRunning, Reason: schedv1.ReasonRunningFinally, Progress: "0/2",
				Steps: []string{"build=Failed", "test=Skipped"}, Finally: []string{"notify=Failed", "page=Pending", "cleanup=Skipped"}, Create: "rel-finally1-page"},
			check: func(t *testing.T, p plan) {
				if m := p.status.Main; m == nil || m.Phase != schedv1.WorkflowFailed || m.Reason != schedv1.ReasonStepFailed {
					t.Errorf("status.main %+v", m)
				}
				// build produced no image: notify fails on it, and only
				// cleanup, which depends on it, is skipped.
				n := p.status.Finally[0]
				if n.Reason != schedv1.ReasonMissingOutput || !strings.Contains(n.Message, `did not output "image"`) {
					t.Errorf("notify %+v", n)
				}
			},
		},
		"after spec.cancel: they run": {
			wf: withFinally().Obj(),
			prepare: func(wf *schedv1.Workflow) map[int]*schedv1.AgentTask {
				wf.Spec.Cancel = true
				return map[int]*schedv1.AgentTask{0: stepTask(wf, 0, schedv1.TaskSucceeded, image, ""), 1: stepTask(wf, 1, schedv1.TaskRunning, nil, "")}
			},
			want: summary{Phase: schedv1.WorkflowRunning, Reason: schedv1.ReasonRunningFinally, Progress: "1/2",
				Steps: []string{"build=Succeeded", "test=Cancelled"}, Finally: []string{"notify=Pending", "page=Pending", "cleanup=Waiting"},
				Create: "rel-finally0-notify,rel-finally1-page", Cancel: "rel-1-test"},
			check: func(t *testing.T, p plan) {
				if diff := cmp.Diff([]string{"Cancelled", "reg/app:1"}, created(p).Spec.Args); diff != "" {
					t.Errorf("notify args (-want +got):\n%s", diff)
				}
			},
		},
		"after failFast cancelled a branch: they run": {
			wf: MakeWorkflow("ff", "ns").FailFast().Step("a", "x").Step("b", "x").DependsOn("a").Step("c", "x").DependsOn("a").
				Finally("notify", schedv1.AgentTaskSpec{Image: "n", Args: []string{"${workflow.phase}"}}).Obj(),
			prepare: func(wf *schedv1.Workflow) map[int]*schedv1.AgentTask {
				return map[int]*schedv1.AgentTask{0: stepTask(wf, 0, schedv1.TaskSucceeded, nil, ""), 1: stepTask(wf, 1, schedv1.TaskFailed, nil, "exit 1"), 2: stepTask(wf, 2, schedv1.TaskRunning, nil, "")}
			},
			want: summary{Phase: schedv1.WorkflowRunning, Reason: schedv1.ReasonRunningFinally, Progress: "1/3",
				Steps: []string{"a=Succeeded", "b=Failed", "c=Cancelled"}, Finally: []string{"notify=Pending"}, Create: "ff-finally0-notify", Cancel: "ff-2-c"},
		},
		"after the workflow timeout: they run": {
			wf: withFinally().Timeout(30 * time.Second).Obj(),
			prepare: func(wf *schedv1.Workflow) map[int]*schedv1.AgentTask {
				wf.Status.StartTime = &t0
				return map[int]*schedv1.AgentTask{0: stepTask(wf, 0, schedv1.TaskRunning, nil, "")}
			},
			want: summary{Phase: schedv1.WorkflowRunning, Reason: schedv1.ReasonRunningFinally, Progress: "0/2",
				Steps: []string{"build=Timeout", "test=Skipped"}, Finally: []string{"notify=Failed", "page=Pending", "cleanup=Skipped"},
				Create: "rel-finally1-page", Cancel: "rel-0-build"},
			check: func(t *testing.T, p plan) {
				// The grace runs from the end of the main steps.
				if want := now.Add(FinallyGrace); !p.requeueAt.Equal(want) {
					t.Errorf("requeue at %v, want %v (the grace)", p.requeueAt, want)
				}
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			p := run(tc.wf, tc.prepare(tc.wf))
			if diff := cmp.Diff(tc.want, summarize(p)); diff != "" {
				t.Errorf("plan (-want +got):\n%s", diff)
			}
			if tc.check != nil {
				tc.check(t, p)
			}
		})
	}
}

// TestDecideFinallyEnds: the workflow ends when its finally steps have, in
// the main steps' phase, unless a finally step failed a Succeeded one.
func TestDecideFinallyEnds(t *testing.T) {
	image := map[string]string{"image": "reg/app:1"}
	// main is the workflow once its main steps ended as phase says.
	main := func(phase schedv1.WorkflowPhase, reason, msg string) *schedv1.Workflow {
		wf := withFinally().Obj()
		wf.Status = schedv1.WorkflowStatus{Phase: schedv1.WorkflowRunning, StartTime: &t0,
			Main: &schedv1.WorkflowOutcome{Phase: phase, Reason: reason, Message: msg, Time: t0},
			Steps: []schedv1.StepStatus{
				{Name: "build", Phase: schedv1.StepSucceeded, Outputs: image},
				{Name: "test", Phase: schedv1.StepSucceeded},
			}}
		return wf
	}
	cases := map[string]struct {
		wf    *schedv1.Workflow
		tasks func(wf *schedv1.Workflow) map[int]*schedv1.AgentTask
		want  summary
		msg   string
	}{
		"all succeeded": {
			wf: main(schedv1.WorkflowSucceeded, schedv1.ReasonSucceeded, "all 2 steps succeeded"),
			tasks: func(wf *schedv1.Workflow) map[int]*schedv1.AgentTask {
				return map[int]*schedv1.AgentTask{2: finallyTask(wf, 0, schedv1.TaskSucceeded, map[string]string{"id": "7"}), 4: finallyTask(wf, 2, schedv1.TaskSucceeded, nil)}
			},
			want: summary{Phase: schedv1.WorkflowSucceeded, Reason: schedv1.ReasonSucceeded, Progress: "2/2",
				Steps: []string{"build=Succeeded", "test=Succeeded"}, Finally: []string{"notify=Succeeded", "page=Skipped", "cleanup=Succeeded"}},
			msg: "all 2 steps succeeded",
		},
		"cleanup waits for notify": {
			wf: main(schedv1.WorkflowSucceeded, schedv1.ReasonSucceeded, "all 2 steps succeeded"),
			tasks: func(wf *schedv1.Workflow) map[int]*schedv1.AgentTask {
				return map[int]*schedv1.AgentTask{2: finallyTask(wf, 0, schedv1.TaskSucceeded, map[string]string{"id": "7"})}
			},
			want: summary{Phase: schedv1.WorkflowRunning, Reason: schedv1.ReasonRunningFinally, Progress: "2/2",
				Steps: []string{"build=Succeeded", "test=Succeeded"}, Finally: []string{"notify=Succeeded", "page=Skipped", "cleanup=Pending"}, Create: "rel-finally2-cleanup"},
			msg: "the steps ended Succeeded; finally steps run: cleanup",
		},
		"a failed finally step makes a Succeeded workflow Failed": {
			wf: main(schedv1.WorkflowSucceeded, schedv1.ReasonSucceeded, "all 2 steps succeeded"),
			tasks: func(wf *schedv1.Workflow) map[int]*schedv1.AgentTask {
				t := finallyTask(wf, 0, schedv1.TaskFailed, nil)
				t.Status.Message = "smtp refused"
				return map[int]*schedv1.AgentTask{2: t}
			},
			want: summary{Phase: schedv1.WorkflowFailed, Reason: schedv1.ReasonFinallyFailed, Progress: "2/2",
				Steps: []string{"build=Succeeded", "test=Succeeded"}, Finally: []string{"notify=Failed", "page=Skipped", "cleanup=Skipped"}},
			msg: "finally step 0 (notify) failed: smtp refused",
		},
		"a failed workflow stays Failed and says what its finally step did": {
			wf: main(schedv1.WorkflowFailed, schedv1.ReasonStepFailed, "step 1 (test) failed: exit 1"),
			tasks: func(wf *schedv1.Workflow) map[int]*schedv1.AgentTask {
				t := finallyTask(wf, 0, schedv1.TaskFailed, nil)
				t.Status.Message = "smtp refused"
				return map[int]*schedv1.AgentTask{2: t, 3: finallyTask(wf, 1, schedv1.TaskSucceeded, nil)}
			},
			want: summary{Phase: schedv1.WorkflowFailed, Reason: schedv1.ReasonStepFailed, Progress: "2/2",
				Steps: []string{"build=Succeeded", "test=Succeeded"}, Finally: []string{"notify=Failed", "page=Succeeded", "cleanup=Skipped"}},
			msg: "step 1 (test) failed: exit 1; finally step 0 (notify) failed: smtp refused",
		},
		"a cancelled workflow stays Cancelled": {
			wf: main(schedv1.WorkflowCancelled, schedv1.ReasonCancelled, "cancelled (spec.cancel)"),
			tasks: func(wf *schedv1.Workflow) map[int]*schedv1.AgentTask {
				return map[int]*schedv1.AgentTask{2: finallyTask(wf, 0, schedv1.TaskSucceeded, map[string]string{"id": "7"}), 3: finallyTask(wf, 1, schedv1.TaskSucceeded, nil), 4: finallyTask(wf, 2, schedv1.TaskSucceeded, nil)}
			},
			want: summary{Phase: schedv1.WorkflowCancelled, Reason: schedv1.ReasonCancelled, Progress: "2/2",
				Steps: []string{"build=Succeeded", "test=Succeeded"}, Finally: []string{"notify=Succeeded", "page=Succeeded", "cleanup=Succeeded"}},
			msg: "cancelled (spec.cancel)",
		},
		"spec.cancel does not stop them": {
			wf: func() *schedv1.Workflow {
				wf := main(schedv1.WorkflowSucceeded, schedv1.ReasonSucceeded, "all 2 steps succeeded")
				wf.Spec.Cancel = true
				return wf
			}(),
			tasks: func(wf *schedv1.Workflow) map[int]*schedv1.AgentTask {
				return map[int]*schedv1.AgentTask{2: finallyTask(wf, 0, schedv1.TaskRunning, nil)}
			},
			want: summary{Phase: schedv1.WorkflowRunning, Reason: schedv1.ReasonRunningFinally, Progress: "2/2",
				Steps: []string{"build=Succeeded", "test=Succeeded"}, Finally: []string{"notify=Running", "page=Skipped", "cleanup=Waiting"}},
			msg: "the steps ended Succeeded; finally steps run: notify",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			p := run(tc.wf, tc.tasks(tc.wf))
			if diff := cmp.Diff(tc.want, summarize(p)); diff != "" {
				t.Errorf("plan (-want +got):\n%s", diff)
			}
			if p.status.Message != tc.msg {
				t.Errorf("message %q, want %q", p.status.Message, tc.msg)
			}
			if p.status.Phase.Finished() && p.status.CompletionTime == nil {
				t.Error("finished without a completion time")
			}
		})
	}
}

// TestDecideFinallyTimeout: past spec.timeout and the grace, the finally
// steps are stopped; a Succeeded workflow then times out.
func TestDecideFinallyTimeout(t *testing.T) {
	wf := withFinally().Timeout(time.Minute).Obj()
	wf.Status = schedv1.WorkflowStatus{Phase: schedv1.WorkflowRunning, StartTime: &t0,
		Main:  &schedv1.WorkflowOutcome{Phase: schedv1.WorkflowSucceeded, Reason: schedv1.ReasonSucceeded, Message: "all 2 steps succeeded", Time: t0},
		Steps: []schedv1.StepStatus{{Name: "build", Phase: schedv1.StepSucceeded}, {Name: "test", Phase: schedv1.StepSucceeded}},
	}
	tasks := map[int]*schedv1.AgentTask{2: finallyTask(wf, 0, schedv1.TaskRunning, nil)}
	// Within the grace (the timeout has passed), they go on.
	p := decide(wf, tasks, nil, nil, approvalRules{}, metav1.NewTime(t0.Add(2*time.Minute)))
	if p.status.Phase != schedv1.WorkflowRunning || !p.requeueAt.Equal(t0.Add(FinallyGrace)) {
		t.Errorf("within the grace: phase %s, requeue %v", p.status.Phase, p.requeueAt)
	}
	p = decide(wf, tasks, nil, nil, approvalRules{}, metav1.NewTime(t0.Add(FinallyGrace)))
	if diff := cmp.Diff(summary{Phase: schedv1.WorkflowTimeout, Reason: schedv1.ReasonDeadlineExceeded, Progress: "2/2",
		Steps: []string{"build=Succeeded", "test=Succeeded"}, Finally: []string{"notify=Timeout", "page=Skipped", "cleanup=Skipped"},
		Cancel: "rel-finally0-notify"}, summarize(p)); diff != "" {
		t.Errorf("past the grace (-want +got):\n%s", diff)
	}
	if want := "the finally steps ran past spec.timeout 1m0s and the 5m0s after the steps"; p.status.Message != want {
		t.Errorf("message %q, want %q", p.status.Message, want)
	}
}

// TestDecideFinallyIsStable: with finally steps running, deciding again on
// the same observation changes nothing.
func TestDecideFinallyIsStable(t *testing.T) {
	wf := withFinally().Obj()
	image := map[string]string{"image": "x"}
	tasks := map[int]*schedv1.AgentTask{0: stepTask(wf, 0, schedv1.TaskSucceeded, image, ""), 1: stepTask(wf, 1, schedv1.TaskSucceeded, nil, "")}
	run(wf, tasks)
	tasks[2] = finallyTask(wf, 0, schedv1.TaskRunning, nil)
	first := run(wf, tasks)
	second := decide(wf, tasks, nil, nil, approvalRules{}, metav1.NewTime(now.Add(time.Hour)))
	if diff := cmp.Diff(first.status, second.status); diff != "" {
		t.Errorf("status changed on a second look (-first +second):\n%s", diff)
	}
	if len(second.creates) > 0 {
		t.Errorf("second look creates %s", created(second).Name)
	}
}

// TestDecideFinallyInvalid: a workflow that cannot run at all runs no
// finally step either.
func TestDecideFinallyInvalid(t *testing.T) {
	wf := withFinally().Obj()
	wf.Spec.Finally[0].When = "steps.nope.phase == 'x'"
	p := run(wf, nil)
	if diff := cmp.Diff(summary{Phase: schedv1.WorkflowFailed, Reason: schedv1.ReasonInvalidSpec, Progress: "0/2",
		Steps: []string{"build=Skipped", "test=Skipped"}, Finally: []string{"notify=Skipped", "page=Skipped", "cleanup=Skipped"}}, summarize(p)); diff != "" {
		t.Errorf("plan (-want +got):\n%s", diff)
	}
	contains(t, "message", p.status.Message, `spec.finally[0].when`, `finally step "notify": it reads steps["nope"], but there is no step "nope"`)
}

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

var (
	t0  = metav1.NewTime(time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC))
	now = metav1.NewTime(t0.Add(time.Minute))
)

// threeSteps passes outputs by param, index and name.
func threeSteps() *WorkflowWrapper {
	return MakeWorkflow("rel", "ns").Param("repo", "https://example.com/x.git").
		Step("fetch", "git:1", "clone", "${params.repo}").
		Step("build", "builder:1", "--sha=${steps.0.output.sha}").
		StepTask("report", schedv1.AgentTaskSpec{Image: "busybox", Env: []schedv1.EnvVar{{Name: "IMAGE", Value: "${steps.build.output.image}"}}})
}

// stepTask is a step's task in the given phase with outputs.
func stepTask(wf *schedv1.Workflow, i int, phase schedv1.AgentTaskPhase, outputs map[string]string, msg string) *schedv1.AgentTask {
	t, err := stepTaskFor(wf, i)
	if err != nil {
		panic(err)
	}
	t.CreationTimestamp = t0
	t.Status = schedv1.AgentTaskStatus{Phase: phase, Outputs: outputs, Message: msg}
	if phase.Finished() {
		t.Status.CompletionTime = &t0
	}
	return t
}

// stepTaskFor builds the task of step i as the controller would, with
// placeholder outputs for the steps before it.
func stepTaskFor(wf *schedv1.Workflow, i int) (*schedv1.AgentTask, error) {
	st := &schedv1.WorkflowStatus{}
	syncSteps(wf, st, nil)
	for j := range st.Steps {
		st.Steps[j].Outputs = map[string]string{"sha": "x", "image": "y"}
	}
	for j := range st.Finally {
		st.Finally[j].Outputs = map[string]string{"id": "z"}
	}
	if i >= len(wf.Spec.Steps) {
		st.Main = &schedv1.WorkflowOutcome{Phase: schedv1.WorkflowSucceeded}
	}
	return newStepTask(wf, i, st)
}

type summary struct {
	Phase    schedv1.WorkflowPhase
	Reason   string
	Progress string
	Steps    []string // "name=Phase"
	Finally  []string // "name=Phase", when the workflow has finally steps
	Create   string   // name of the task to create
	Cancel   string   // name of the task to stop
}

func summarize(p plan) summary {
	s := summary{Phase: p.status.Phase, Reason: p.status.Reason, Progress: p.status.Progress}
	for _, st := range p.status.Steps {
		s.Steps = append(s.Steps, st.Name+"="+string(st.Phase))
	}
	for _, st := range p.status.Finally {
		s.Finally = append(s.Finally, st.Name+"="+string(st.Phase))
	}
	var creates, cancels []string
	for _, c := range p.creates {
		creates = append(creates, c.task.Name)
	}
	for _, c := range p.cancels {
		cancels = append(cancels, c.Name)
	}
	s.Create, s.Cancel = strings.Join(creates, ","), strings.Join(cancels, ",")
	return s
}

// created is the first task the plan creates.
func created(p plan) *schedv1.AgentTask { return p.creates[0].task }

// run applies decide repeatedly the way the controller would: status from
// one round feeds the next.
func run(wf *schedv1.Workflow, tasks map[int]*schedv1.AgentTask) plan {
	p := decide(wf, tasks, nil, nil, approvalRules{}, now)
	wf.Status = p.status
	return p
}

func TestDecide(t *testing.T) {
	cases := map[string]struct {
		wf      *schedv1.Workflow
		prepare func(wf *schedv1.Workflow) map[int]*schedv1.AgentTask
		want    summary
		check   func(t *testing.T, p plan)
	}{
		"a new workflow starts step 0 with its params resolved": {
			wf:      threeSteps().Obj(),
			prepare: func(*schedv1.Workflow) map[int]*schedv1.AgentTask { return nil },
			want: summary{Phase: schedv1.WorkflowRunning, Reason: schedv1.ReasonRunning, Progress: "0/3",
				Steps: []string{"fetch=Pending", "build=Waiting", "report=Waiting"}, Create: "rel-0-fetch"},
			check: func(t *testing.T, p plan) {
				if diff := cmp.Diff([]string{"clone", "https://example.com/x.git"}, created(p).Spec.Args); diff != "" {
					t.Errorf("args (-want +got):\n%s", diff)
				}
				if created(p).Labels[schedv1.LabelWorkflowStep] != "0" || created(p).Labels[schedv1.LabelWorkflow] != "rel" {
					t.Errorf("labels %v", created(p).Labels)
				}
			},
		},
		"a running step keeps the workflow running and creates nothing": {
			wf: threeSteps().Obj(),
			prepare: func(wf *schedv1.Workflow) map[int]*schedv1.AgentTask {
				return map[int]*schedv1.AgentTask{0: stepTask(wf, 0, schedv1.TaskRunning, nil, "")}
			},
			want: summary{Phase: schedv1.WorkflowRunning, Reason: schedv1.ReasonRunning, Progress: "0/3",
				Steps: []string{"fetch=Running", "build=Waiting", "report=Waiting"}},
		},
		"step 0 succeeded: step 1 gets its output by index": {
			wf: threeSteps().Obj(),
			prepare: func(wf *schedv1.Workflow) map[int]*schedv1.AgentTask {
				return map[int]*schedv1.AgentTask{0: stepTask(wf, 0, schedv1.TaskSucceeded, map[string]string{"sha": "abc ${x} $5"}, "")}
			},
			want: summary{Phase: schedv1.WorkflowRunning, Reason: schedv1.ReasonRunning, Progress: "1/3",
				Steps: []string{"fetch=Succeeded", "build=Pending", "report=Waiting"}, Create: "rel-1-build"},
			check: func(t *testing.T, p plan) {
				// Output values are inserted as written, never expanded again.
				if diff := cmp.Diff([]string{"--sha=abc ${x} $5"}, created(p).Spec.Args); diff != "" {
					t.Errorf("args (-want +got):\n%s", diff)
				}
				if created(p).Annotations["sched.kubectl-sched.dev/previous-step-finished-at"] == "" {
					t.Errorf("no hand-off annotation: %v", created(p).Annotations)
				}
			},
		},
		"step 2 gets step 1's output by name": {
			wf: threeSteps().Obj(),
			prepare: func(wf *schedv1.Workflow) map[int]*schedv1.AgentTask {
				return map[int]*schedv1.AgentTask{
					0: stepTask(wf, 0, schedv1.TaskSucceeded, map[string]string{"sha": "abc"}, ""),
					1: stepTask(wf, 1, schedv1.TaskSucceeded, map[string]string{"image": "reg/x:abc"}, ""),
				}
			},
			want: summary{Phase: schedv1.WorkflowRunning, Reason: schedv1.ReasonRunning, Progress: "2/3",
				Steps: []string{"fetch=Succeeded", "build=Succeeded", "report=Pending"}, Create: "rel-2-report"},
			check: func(t *testing.T, p plan) {
				if got := created(p).Spec.Env[0].Value; got != "reg/x:abc" {
					t.Errorf("IMAGE = %q", got)
				}
			},
		},
		"all succeeded": {
			wf: threeSteps().Obj(),
			prepare: func(wf *schedv1.Workflow) map[int]*schedv1.AgentTask {
				return map[int]*schedv1.AgentTask{
					0: stepTask(wf, 0, schedv1.TaskSucceeded, map[string]string{"sha": "abc"}, ""),
					1: stepTask(wf, 1, schedv1.TaskSucceeded, map[string]string{"image": "i"}, ""),
					2: stepTask(wf, 2, schedv1.TaskSucceeded, nil, ""),
				}
			},
			want: summary{Phase: schedv1.WorkflowSucceeded, Reason: schedv1.ReasonSucceeded, Progress: "3/3",
				Steps: []string{"fetch=Succeeded", "build=Succeeded", "report=Succeeded"}},
		},
		"a missing output fails the workflow naming the step and key": {
			wf: threeSteps().Obj(),
			prepare: func(wf *schedv1.Workflow) map[int]*schedv1.AgentTask {
				return map[int]*schedv1.AgentTask{0: stepTask(wf, 0, schedv1.TaskSucceeded, map[string]string{"commit": "abc"}, "")}
			},
			want: summary{Phase: schedv1.WorkflowFailed, Reason: schedv1.ReasonMissingOutput, Progress: "1/3",
				Steps: []string{"fetch=Succeeded", "build=Failed", "report=Skipped"}},
			check: func(t *testing.T, p plan) {
				for _, w := range []string{`step 1 (build) cannot start`, `did not output "sha"`, "its outputs are: commit"} {
					if !strings.Contains(p.status.Message, w) {
						t.Errorf("message %q lacks %q", p.status.Message, w)
					}
				}
			},
		},
		"outputs that render a step too large fail it naming the step and the sizes": {
			wf: MakeWorkflow("big", "ns").Step("a", "busybox").
				Step("b", "busybox", strings.Repeat("${steps.a.output.x}", 4096/len("${steps.a.output.x}"))).Step("c", "busybox").Obj(),
			prepare: func(wf *schedv1.Workflow) map[int]*schedv1.AgentTask {
				return map[int]*schedv1.AgentTask{0: stepTask(wf, 0, schedv1.TaskSucceeded, map[string]string{"x": strings.Repeat("x", 4000)}, "")}
			},
			want: summary{Phase: schedv1.WorkflowFailed, Reason: schedv1.ReasonTooLarge, Progress: "1/3",
				Steps: []string{"a=Succeeded", "b=Failed", "c=Skipped"}},
			check: func(t *testing.T, p plan) {
				if w := "step 1 (b) cannot start: "; !strings.HasPrefix(p.status.Message, w) {
					t.Errorf("message %q does not start with %q", p.status.Message, w)
				}
				for _, w := range []string{`step 1 ("b") renders to 839.9 KiB (860007 bytes) once its references are substituted`, "more than the 640.5 KiB (655872 bytes)", "args[0] alone"} {
					if !strings.Contains(p.status.Steps[1].Message, w) {
						t.Errorf("step message %q lacks %q", p.status.Steps[1].Message, w)
					}
				}
			},
		},
		"params that render a step too large fail the workflow before it starts": {
			wf: MakeWorkflow("big", "ns").Param("p", strings.Repeat("v", 4096)).
				Step("a", "busybox", strings.Repeat("${params.p}", 4096/len("${params.p}"))).Obj(),
			prepare: func(*schedv1.Workflow) map[int]*schedv1.AgentTask { return nil },
			want:    summary{Phase: schedv1.WorkflowFailed, Reason: schedv1.ReasonInvalidSpec, Progress: "0/1", Steps: []string{"a=Skipped"}},
			check: func(t *testing.T, p plan) {
				if w := `spec.steps[0].task: Invalid value: step 0 ("a") renders to 1.5 MiB`; !strings.Contains(p.status.Message, w) {
					t.Errorf("message %q lacks %q", p.status.Message, w)
				}
			},
		},
		"a failed step fails the workflow and skips the rest": {
			wf: threeSteps().Obj(),
			prepare: func(wf *schedv1.Workflow) map[int]*schedv1.AgentTask {
				return map[int]*schedv1.AgentTask{0: stepTask(wf, 0, schedv1.TaskFailed, nil, "exited with code 2")}
			},
			want: summary{Phase: schedv1.WorkflowFailed, Reason: schedv1.ReasonStepFailed, Progress: "0/3",
				Steps: []string{"fetch=Failed", "build=Skipped", "report=Skipped"}},
			check: func(t *testing.T, p plan) {
				if p.status.Message != "step 0 (fetch) failed: exited with code 2" {
					t.Errorf("message %q", p.status.Message)
				}
			},
		},
		"a timed-out step fails the workflow": {
			wf: threeSteps().Obj(),
			prepare: func(wf *schedv1.Workflow) map[int]*schedv1.AgentTask {
				return map[int]*schedv1.AgentTask{0: stepTask(wf, 0, schedv1.TaskTimeout, nil, "ran past spec.timeout 1s")}
			},
			want: summary{Phase: schedv1.WorkflowFailed, Reason: schedv1.ReasonStepFailed, Progress: "0/3",
				Steps: []string{"fetch=Timeout", "build=Skipped", "report=Skipped"}},
		},
		"the workflow deadline stops the running step": {
			wf: threeSteps().Timeout(30 * time.Second).Spec(func(s *schedv1.WorkflowSpec) {}).Obj(),
			prepare: func(wf *schedv1.Workflow) map[int]*schedv1.AgentTask {
				wf.Status.StartTime = &t0
				return map[int]*schedv1.AgentTask{0: stepTask(wf, 0, schedv1.TaskRunning, nil, "")}
			},
			want: summary{Phase: schedv1.WorkflowTimeout, Reason: schedv1.ReasonDeadlineExceeded, Progress: "0/3",
				Steps: []string{"fetch=Timeout", "build=Skipped", "report=Skipped"}, Cancel: "rel-0-fetch"},
		},
		"spec.cancel stops the running step and skips the rest": {
			wf: threeSteps().Obj(),
			prepare: func(wf *schedv1.Workflow) map[int]*schedv1.AgentTask {
				wf.Spec.Cancel = true
				wf.Status.Steps = []schedv1.StepStatus{{Name: "fetch", TaskName: "rel-0-fetch", Phase: schedv1.StepSucceeded, Outputs: map[string]string{"sha": "kept"}}}
				return map[int]*schedv1.AgentTask{
					0: stepTask(wf, 0, schedv1.TaskSucceeded, map[string]string{"sha": "kept"}, ""),
					1: stepTask(wf, 1, schedv1.TaskRunning, nil, ""),
				}
			},
			want: summary{Phase: schedv1.WorkflowCancelled, Reason: schedv1.ReasonCancelled, Progress: "1/3",
				Steps: []string{"fetch=Succeeded", "build=Cancelled", "report=Skipped"}, Cancel: "rel-1-build"},
			check: func(t *testing.T, p plan) {
				if p.status.Steps[0].Outputs["sha"] != "kept" {
					t.Errorf("outputs of the finished step lost: %+v", p.status.Steps[0])
				}
			},
		},
		"spec.cancel before anything started skips every step": {
			wf: threeSteps().Obj(),
			prepare: func(wf *schedv1.Workflow) map[int]*schedv1.AgentTask {
				wf.Spec.Cancel = true
				return nil
			},
			want: summary{Phase: schedv1.WorkflowCancelled, Reason: schedv1.ReasonCancelled, Progress: "0/3",
				Steps: []string{"fetch=Skipped", "build=Skipped", "report=Skipped"}},
		},
		"a step task cancelled on its own ends the workflow Cancelled": {
			wf: threeSteps().Obj(),
			prepare: func(wf *schedv1.Workflow) map[int]*schedv1.AgentTask {
				return map[int]*schedv1.AgentTask{0: stepTask(wf, 0, schedv1.TaskCancelled, nil, "")}
			},
			want: summary{Phase: schedv1.WorkflowCancelled, Reason: schedv1.ReasonCancelled, Progress: "0/3",
				Steps: []string{"fetch=Cancelled", "build=Skipped", "report=Skipped"}},
		},
		"a started step whose task was deleted is not run again": {
			wf: threeSteps().Obj(),
			prepare: func(wf *schedv1.Workflow) map[int]*schedv1.AgentTask {
				wf.Status.Steps = []schedv1.StepStatus{{Name: "fetch", TaskName: "rel-0-fetch", Phase: schedv1.StepRunning}}
				return nil
			},
			want: summary{Phase: schedv1.WorkflowFailed, Reason: schedv1.ReasonStepFailed, Progress: "0/3",
				Steps: []string{"fetch=Failed", "build=Skipped", "report=Skipped"}},
		},
		"recorded outputs outlive a deleted task": {
			wf: threeSteps().Obj(),
			prepare: func(wf *schedv1.Workflow) map[int]*schedv1.AgentTask {
				wf.Status.Steps = []schedv1.StepStatus{{Name: "fetch", TaskName: "rel-0-fetch", Phase: schedv1.StepSucceeded, Outputs: map[string]string{"sha": "kept"}}}
				return nil
			},
			want: summary{Phase: schedv1.WorkflowRunning, Reason: schedv1.ReasonRunning, Progress: "1/3",
				Steps: []string{"fetch=Succeeded", "build=Pending", "report=Waiting"}, Create: "rel-1-build"},
			check: func(t *testing.T, p plan) {
				if created(p).Spec.Args[0] != "--sha=kept" {
					t.Errorf("args %v", created(p).Spec.Args)
				}
			},
		},
		"a reference that got past admission (a cluster without the policy) fails before anything runs": {
			wf:      MakeWorkflow("bad", "ns").Step("a", "busybox", "${params.x}${params.y}").Param("x", "1").Obj(),
			prepare: func(*schedv1.Workflow) map[int]*schedv1.AgentTask { return nil },
			want: summary{Phase: schedv1.WorkflowFailed, Reason: schedv1.ReasonInvalidSpec, Progress: "0/1",
				Steps: []string{"a=Skipped"}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			tasks := tc.prepare(tc.wf)
			p := decide(tc.wf, tasks, nil, nil, approvalRules{}, now)
			if diff := cmp.Diff(tc.want, summarize(p)); diff != "" {
				t.Errorf("plan (-want +got):\n%s", diff)
			}
			if tc.check != nil {
				tc.check(t, p)
			}
		})
	}
}

// TestDecideIsStable: deciding again on the same observation changes
// nothing, so a reconcile with nothing new writes nothing.
func TestDecideIsStable(t *testing.T) {
	wf := threeSteps().Obj()
	tasks := map[int]*schedv1.AgentTask{0: stepTask(wf, 0, schedv1.TaskRunning, nil, "")}
	first := run(wf, tasks)
	second := decide(wf, tasks, nil, nil, approvalRules{}, metav1.NewTime(now.Add(time.Hour)))
	if diff := cmp.Diff(first.status, second.status); diff != "" {
		t.Errorf("status changed on a second look (-first +second):\n%s", diff)
	}
	if len(second.creates) > 0 {
		t.Errorf("second look creates %s", created(second).Name)
	}
}

// diamond: fetch, then lint and test side by side, then ship using both.
func diamond() *WorkflowWrapper {
	return MakeWorkflow("dia", "ns").
		Step("fetch", "git:1").
		Step("lint", "lint:1", "${steps.fetch.output.sha}").DependsOn("fetch").
		Step("test", "test:1", "${steps.fetch.output.sha}").DependsOn("fetch").
		Step("ship", "ship:1", "${steps.lint.output.ok}", "${steps.test.output.ok}", "${steps.fetch.output.sha}").DependsOn("lint", "test")
}

func TestDecideDAG(t *testing.T) {
	ok := map[string]string{"ok": "yes", "sha": "abc"}
	cases := map[string]struct {
		wf    *schedv1.Workflow
		tasks func(wf *schedv1.Workflow) map[int]*schedv1.AgentTask
		want  summary
	}{
		"the roots start at once": {
			wf:    diamond().Obj(),
			tasks: func(*schedv1.Workflow) map[int]*schedv1.AgentTask { return nil },
			want: summary{Phase: schedv1.WorkflowRunning, Reason: schedv1.ReasonRunning, Progress: "0/4",
				Steps: []string{"fetch=Pending", "lint=Waiting", "test=Waiting", "ship=Waiting"}, Create: "dia-0-fetch"},
		},
		"fan-out: both branches start together": {
			wf: diamond().Obj(),
			tasks: func(wf *schedv1.Workflow) map[int]*schedv1.AgentTask {
				return map[int]*schedv1.AgentTask{0: stepTask(wf, 0, schedv1.TaskSucceeded, ok, "")}
			},
			want: summary{Phase: schedv1.WorkflowRunning, Reason: schedv1.ReasonRunning, Progress: "1/4",
				Steps: []string{"fetch=Succeeded", "lint=Pending", "test=Pending", "ship=Waiting"}, Create: "dia-1-lint,dia-2-test"},
		},
		"the join waits for every branch": {
			wf: diamond().Obj(),
			tasks: func(wf *schedv1.Workflow) map[int]*schedv1.AgentTask {
				return map[int]*schedv1.AgentTask{
					0: stepTask(wf, 0, schedv1.TaskSucceeded, ok, ""),
					1: stepTask(wf, 1, schedv1.TaskSucceeded, ok, ""),
					2: stepTask(wf, 2, schedv1.TaskRunning, nil, ""),
				}
			},
			want: summary{Phase: schedv1.WorkflowRunning, Reason: schedv1.ReasonRunning, Progress: "2/4",
				Steps: []string{"fetch=Succeeded", "lint=Succeeded", "test=Running", "ship=Waiting"}},
		},
		"fan-in: the join starts once both succeeded": {
			wf: diamond().Obj(),
			tasks: func(wf *schedv1.Workflow) map[int]*schedv1.AgentTask {
				return map[int]*schedv1.AgentTask{
					0: stepTask(wf, 0, schedv1.TaskSucceeded, ok, ""),
					1: stepTask(wf, 1, schedv1.TaskSucceeded, ok, ""),
					2: stepTask(wf, 2, schedv1.TaskSucceeded, ok, ""),
				}
			},
			want: summary{Phase: schedv1.WorkflowRunning, Reason: schedv1.ReasonRunning, Progress: "3/4",
				Steps: []string{"fetch=Succeeded", "lint=Succeeded", "test=Succeeded", "ship=Pending"}, Create: "dia-3-ship"},
		},
		"a failed branch skips what depends on it and lets the other finish": {
			wf: diamond().Obj(),
			tasks: func(wf *schedv1.Workflow) map[int]*schedv1.AgentTask {
				return map[int]*schedv1.AgentTask{
					0: stepTask(wf, 0, schedv1.TaskSucceeded, ok, ""),
					1: stepTask(wf, 1, schedv1.TaskFailed, nil, "exit 1"),
					2: stepTask(wf, 2, schedv1.TaskRunning, nil, ""),
				}
			},
			want: summary{Phase: schedv1.WorkflowRunning, Reason: schedv1.ReasonRunning, Progress: "1/4",
				Steps: []string{"fetch=Succeeded", "lint=Failed", "test=Running", "ship=Skipped"}},
		},
		"then the workflow fails once nothing runs": {
			wf: diamond().Obj(),
			tasks: func(wf *schedv1.Workflow) map[int]*schedv1.AgentTask {
				return map[int]*schedv1.AgentTask{
					0: stepTask(wf, 0, schedv1.TaskSucceeded, ok, ""),
					1: stepTask(wf, 1, schedv1.TaskFailed, nil, "exit 1"),
					2: stepTask(wf, 2, schedv1.TaskSucceeded, ok, ""),
				}
			},
			want: summary{Phase: schedv1.WorkflowFailed, Reason: schedv1.ReasonStepFailed, Progress: "2/4",
				Steps: []string{"fetch=Succeeded", "lint=Failed", "test=Succeeded", "ship=Skipped"}},
		},
		"failFast cancels the other branch": {
			wf: diamond().FailFast().Obj(),
			tasks: func(wf *schedv1.Workflow) map[int]*schedv1.AgentTask {
				return map[int]*schedv1.AgentTask{
					0: stepTask(wf, 0, schedv1.TaskSucceeded, ok, ""),
					1: stepTask(wf, 1, schedv1.TaskFailed, nil, "exit 1"),
					2: stepTask(wf, 2, schedv1.TaskRunning, nil, ""),
				}
			},
			want: summary{Phase: schedv1.WorkflowFailed, Reason: schedv1.ReasonStepFailed, Progress: "1/4",
				Steps: []string{"fetch=Succeeded", "lint=Failed", "test=Cancelled", "ship=Skipped"}, Cancel: "dia-2-test"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			wf := tc.wf
			p := run(wf, tc.tasks(wf))
			if diff := cmp.Diff(tc.want, summarize(p)); diff != "" {
				t.Errorf("plan (-want +got):\n%s", diff)
			}
		})
	}
}

// TestDecideDAGJoinGetsEveryBranch: the join's task holds the outputs of
// both branches and of the root they share.
func TestDecideDAGJoinGetsEveryBranch(t *testing.T) {
	wf := diamond().Obj()
	p := run(wf, map[int]*schedv1.AgentTask{
		0: stepTask(wf, 0, schedv1.TaskSucceeded, map[string]string{"sha": "abc"}, ""),
		1: stepTask(wf, 1, schedv1.TaskSucceeded, map[string]string{"ok": "lint-ok"}, ""),
		2: stepTask(wf, 2, schedv1.TaskSucceeded, map[string]string{"ok": "test-ok"}, ""),
	})
	if diff := cmp.Diff([]string{"lint-ok", "test-ok", "abc"}, created(p).Spec.Args); diff != "" {
		t.Errorf("join args (-want +got):\n%s", diff)
	}
	if created(p).Annotations[schedv1.AnnotationPreviousStepFinished] == "" {
		t.Errorf("the join has no hand-off annotation")
	}
}

// TestDecideRetry: a retry reuses the outputs of the steps before
// fromStep that succeeded in the earlier attempt, and runs the rest.
func TestDecideRetry(t *testing.T) {
	prev := threeSteps().Obj()
	prev.Name = "rel-old"
	prev.Status = schedv1.WorkflowStatus{Phase: schedv1.WorkflowFailed, Steps: []schedv1.StepStatus{
		{Name: "fetch", Phase: schedv1.StepSucceeded, Outputs: map[string]string{"sha": "abc"}, StartTime: &t0, CompletionTime: &t0},
		{Name: "build", Phase: schedv1.StepFailed, Message: "exit 1"},
		{Name: "report", Phase: schedv1.StepSkipped},
	}}
	retry := func(from string) *schedv1.Workflow {
		wf := threeSteps().Obj()
		wf.Spec.RetryOf = &schedv1.WorkflowRetry{Workflow: "rel-old", FromStep: from}
		return wf
	}

	wf := retry("build")
	p := decide(wf, nil, nil, prev, approvalRules{}, now)
	if diff := cmp.Diff(summary{Phase: schedv1.WorkflowRunning, Reason: schedv1.ReasonRunning, Progress: "1/3",
		Steps: []string{"fetch=Succeeded", "build=Pending", "report=Waiting"}, Create: "rel-1-build"}, summarize(p)); diff != "" {
		t.Errorf("plan (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"--sha=abc"}, created(p).Spec.Args); diff != "" {
		t.Errorf("build args, from the reused output (-want +got):\n%s", diff)
	}
	if got := p.status.Steps[0].Message; got != "reused from workflow rel-old" {
		t.Errorf("reused step message %q", got)
	}

	// Retrying from the first step runs everything again.
	p = decide(retry("fetch"), nil, nil, prev, approvalRules{}, now)
	if got := summarize(p).Create; got != "rel-0-fetch" {
		t.Errorf("retry from the first step creates %q, want rel-0-fetch", got)
	}

	// In a DAG, a branch that succeeded keeps its outputs even when it is
	// listed after the failed step; only the failed step and what depends
	// on it run again.
	dag := func() *WorkflowWrapper {
		return MakeWorkflow("dag", "default").Step("root", "x").Step("a", "x").DependsOn("root").
			Step("b", "x").DependsOn("root").Step("c", "x").DependsOn("a")
	}
	prevDAG := dag().Obj()
	prevDAG.Name = "dag-old"
	prevDAG.Status = schedv1.WorkflowStatus{Phase: schedv1.WorkflowFailed, Steps: []schedv1.StepStatus{
		{Name: "root", Phase: schedv1.StepSucceeded, Outputs: map[string]string{"k": "1"}, StartTime: &t0, CompletionTime: &t0},
		{Name: "a", Phase: schedv1.StepFailed, Message: "exit 1"},
		{Name: "b", Phase: schedv1.StepSucceeded, Outputs: map[string]string{"k": "2"}, StartTime: &t0, CompletionTime: &t0},
		{Name: "c", Phase: schedv1.StepSkipped},
	}}
	retryDAG := dag().Obj()
	retryDAG.Spec.RetryOf = &schedv1.WorkflowRetry{Workflow: "dag-old", FromStep: "a"}
	p = decide(retryDAG, nil, nil, prevDAG, approvalRules{}, now)
	if diff := cmp.Diff(summary{Phase: schedv1.WorkflowRunning, Reason: schedv1.ReasonRunning, Progress: "2/4",
		Steps: []string{"root=Succeeded", "a=Pending", "b=Succeeded", "c=Waiting"}, Create: "dag-1-a"}, summarize(p)); diff != "" {
		t.Errorf("DAG retry plan (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]string{"k": "2"}, p.status.Steps[2].Outputs); diff != "" {
		t.Errorf("the succeeded branch's outputs (-want +got):\n%s", diff)
	}
	// Retrying from root runs the whole graph again.
	retryDAG.Spec.RetryOf.FromStep = "root"
	if got := summarize(decide(retryDAG, nil, nil, prevDAG, approvalRules{}, now)).Create; got != "dag-0-root" {
		t.Errorf("retry from root creates %q, want dag-0-root", got)
	}

	// A step that wrote a workspace a retried step mounts runs again: the
	// retry's claims are new and empty. A branch that does not touch it
	// keeps its outputs.
	ws := func() *WorkflowWrapper {
		return MakeWorkflow("ws", "default").Workspace("src", "1Gi").
			Step("root", "x").Step("checkout", "x").DependsOn("root").Mount("src", "/src", false).
			Step("other", "x").DependsOn("root").
			Step("test", "x").DependsOn("checkout").Mount("src", "/src", true)
	}
	prevWS := ws().Obj()
	prevWS.Name = "ws-old"
	prevWS.Status = schedv1.WorkflowStatus{Phase: schedv1.WorkflowFailed, Steps: []schedv1.StepStatus{
		{Name: "root", Phase: schedv1.StepSucceeded, StartTime: &t0, CompletionTime: &t0},
		{Name: "checkout", Phase: schedv1.StepSucceeded, StartTime: &t0, CompletionTime: &t0},
		{Name: "other", Phase: schedv1.StepSucceeded, StartTime: &t0, CompletionTime: &t0},
		{Name: "test", Phase: schedv1.StepFailed, Message: "exit 1"},
	}}
	retryWS := ws().Obj()
	retryWS.Spec.RetryOf = &schedv1.WorkflowRetry{Workflow: "ws-old", FromStep: "test"}
	p = decide(retryWS, nil, nil, prevWS, approvalRules{}, now)
	if diff := cmp.Diff(summary{Phase: schedv1.WorkflowRunning, Reason: schedv1.ReasonRunning, Progress: "2/4",
		Steps: []string{"root=Succeeded", "checkout=Pending", "other=Succeeded", "test=Waiting"}, Create: "ws-1-checkout"}, summarize(p)); diff != "" {
		t.Errorf("workspace retry plan (-want +got):\n%s", diff)
	}

	// The earlier attempt is gone: nothing can be reused.
	p = decide(retry("build"), nil, nil, nil, approvalRules{}, now)
	if p.status.Phase != schedv1.WorkflowFailed || !strings.Contains(p.status.Message, "workflow rel-old, which this one retries, is gone") {
		t.Errorf("phase %s message %q, want Failed saying the earlier attempt is gone", p.status.Phase, p.status.Message)
	}
}

// TestStepBackingOff: a step whose task waits to retry a failed attempt is
// Running with reason BackingOff and the task's message; once the next
// attempt runs, the reason goes.
func TestStepBackingOff(t *testing.T) {
	wf := threeSteps().Obj()
	wait := "attempt 1 of 3 failed (exit code 2); the next starts at 10:00:40 UTC (backoff 30s)"
	task := stepTask(wf, 0, schedv1.TaskRunning, nil, wait)
	task.Status.Reason = schedv1.ReasonBackingOff
	p := run(wf, map[int]*schedv1.AgentTask{0: task})
	got := p.status.Steps[0]
	if got.Phase != schedv1.StepRunning || got.Reason != schedv1.ReasonBackingOff || got.Message != wait {
		t.Errorf("step %+v, want Running, BackingOff, %q", got, wait)
	}

	task = stepTask(wf, 0, schedv1.TaskRunning, nil, "pod rel-0-fetch-x is running (attempt 2)")
	task.Status.Reason = schedv1.ReasonRunning
	p = run(wf, map[int]*schedv1.AgentTask{0: task})
	if got := p.status.Steps[0]; got.Phase != schedv1.StepRunning || got.Reason != "" {
		t.Errorf("step %+v, want Running without a reason", got)
	}

	task = stepTask(wf, 0, schedv1.TaskFailed, nil, "exited with code 2 after 3 attempt(s)")
	task.Status.Reason = schedv1.ReasonNonZeroExit
	p = run(wf, map[int]*schedv1.AgentTask{0: task})
	if got := p.status.Steps[0]; got.Phase != schedv1.StepFailed || got.Reason != "" {
		t.Errorf("step %+v, want Failed without BackingOff", got)
	}
}

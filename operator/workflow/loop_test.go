package workflow

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	. "github.com/kubectl-sched/kubectl-sched/api/builders"
	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
	"github.com/kubectl-sched/kubectl-sched/operator/cachetrim"
)

// world plays the controller and the AgentTask controller for decide: the
// tasks a plan creates exist (Pending) at the next look, those it cancels
// end Cancelled, and the test moves the others along.
type world struct {
	t     *testing.T
	wf    *schedv1.Workflow
	tasks map[int]*schedv1.AgentTask
	items itemTasks
	prev  *schedv1.Workflow
	clock time.Time
	// created counts each task name created, to find one made twice.
	created map[string]int
}

func newWorld(t *testing.T, wf *schedv1.Workflow) *world {
	return &world{t: t, wf: wf, tasks: map[int]*schedv1.AgentTask{}, items: itemTasks{}, clock: now.Time, created: map[string]int{}}
}

// look decides once, applies the plan and returns it.
func (w *world) look() plan {
	w.t.Helper()
	w.clock = w.clock.Add(time.Second)
	p := decide(w.wf, w.tasks, w.items, w.prev, approvalRules{}, metav1.NewTime(w.clock))
	for _, c := range p.creates {
		w.created[c.task.Name]++
		if w.created[c.task.Name] > 1 {
			w.t.Fatalf("%s created twice", c.task.Name)
		}
		task := c.task.DeepCopy()
		task.CreationTimestamp = metav1.NewTime(w.clock)
		if c.loop {
			w.items.add(c.step, c.item, task)
		} else {
			w.tasks[c.step] = task
		}
	}
	for _, t := range p.cancels {
		t.Spec.Cancel = true
		t.Status.Phase, t.Status.Message = schedv1.TaskCancelled, "cancelled"
	}
	w.wf.Status = p.status
	return p
}

// item sets item k of step i to phase, with outputs.
func (w *world) item(i, k int, phase schedv1.AgentTaskPhase, outputs map[string]string, msg string) {
	w.t.Helper()
	t := w.items[i][k]
	if t == nil {
		w.t.Fatalf("item %d of step %d has no task", k, i)
	}
	t.Status = schedv1.AgentTaskStatus{Phase: phase, Outputs: outputs, Message: msg}
	if phase.Finished() {
		ts := metav1.NewTime(w.clock)
		t.Status.CompletionTime = &ts
	}
}

// step sets step i's task to phase, with outputs.
func (w *world) step(i int, phase schedv1.AgentTaskPhase, outputs map[string]string) {
	w.t.Helper()
	t := w.tasks[i]
	if t == nil {
		w.t.Fatalf("step %d has no task", i)
	}
	t.Status = schedv1.AgentTaskStatus{Phase: phase, Outputs: outputs}
}

// names of the tasks a plan creates and cancels.
func creates(p plan) []string {
	var out []string
	for _, c := range p.creates {
		out = append(out, c.task.Name)
	}
	return out
}

func cancels(p plan) []string {
	var out []string
	for _, t := range p.cancels {
		out = append(out, t.Name)
	}
	return out
}

// itemPhases is "index=Phase" for each item of a loop's status.
func itemPhases(s schedv1.StepStatus) []string {
	if s.ForEach == nil {
		return nil
	}
	var out []string
	for _, it := range s.ForEach.Items {
		out = append(out, fmt.Sprintf("%d=%s", it.Index, it.Phase))
	}
	return out
}

// regions: plan writes a list, deploy runs over five items two at a time,
// report reads the gathered outputs.
func regions() *WorkflowWrapper {
	return MakeWorkflow("rel", "ns").
		Step("plan", "busybox").
		Step("deploy", "deployer:1", "--region=${item}", "--plan=${steps.plan.output.id}").ForEach([]string{"eu", "us", "ap", "sa", "af"}, "", 2).
		Step("report", "busybox", "${steps.deploy.output.url}")
}

func TestLoopStartsItemsInOrderWithinMaxParallel(t *testing.T) {
	w := newWorld(t, regions().Obj())
	w.look()
	w.step(0, schedv1.TaskSucceeded, map[string]string{"id": "p1"})
	p := w.look()
	if diff := cmp.Diff([]string{"rel-1-deploy-0", "rel-1-deploy-1"}, creates(p)); diff != "" {
		t.Fatalf("first items (-want +got):\n%s", diff)
	}
	first := p.creates[0].task
	if diff := cmp.Diff([]string{"--region=eu", "--plan=p1"}, first.Spec.Args); diff != "" {
		t.Errorf("item 0's args (-want +got):\n%s", diff)
	}
	wantLabels := map[string]string{schedv1.LabelManagedBy: schedv1.ManagedByValue, schedv1.LabelWorkflow: "rel", schedv1.LabelWorkflowStep: "1", schedv1.LabelWorkflowItem: "0"}
	if diff := cmp.Diff(wantLabels, first.Labels); diff != "" {
		t.Errorf("item 0's labels (-want +got):\n%s", diff)
	}
	s := w.wf.Status.Steps[1]
	if s.Phase != schedv1.StepPending || s.TaskName != "" || s.ForEach.Total != 5 || s.ForEach.Running != 2 {
		t.Errorf("deploy status %+v %+v", s, s.ForEach)
	}

	// Nothing new: nothing created, nothing written.
	again := decide(w.wf, w.tasks, w.items, nil, approvalRules{}, metav1.NewTime(w.clock.Add(time.Hour)))
	if len(again.creates) > 0 || !cmp.Equal(w.wf.Status, again.status) {
		t.Errorf("a second look creates %v or changes the status:\n%s", creates(again), cmp.Diff(w.wf.Status, again.status))
	}

	// Item 1 ends first: item 2 takes its place, not item 0's.
	w.item(1, 0, schedv1.TaskRunning, nil, "")
	w.item(1, 1, schedv1.TaskSucceeded, map[string]string{"url": "https://us"}, "")
	p = w.look()
	if diff := cmp.Diff([]string{"rel-1-deploy-2"}, creates(p)); diff != "" {
		t.Errorf("after item 1 (-want +got):\n%s", diff)
	}
	s = w.wf.Status.Steps[1]
	if s.Phase != schedv1.StepRunning || s.Message != "1/5 items succeeded, 2 running" {
		t.Errorf("deploy %s %q", s.Phase, s.Message)
	}
	if want := "step 1 (deploy) runs its items: 1/5 items succeeded, 2 running"; w.wf.Status.Message != want {
		t.Errorf("workflow message %q, want %q", w.wf.Status.Message, want)
	}
	if diff := cmp.Diff([]string{"0=Running", "1=Succeeded", "2=Pending"}, itemPhases(s)); diff != "" {
		t.Errorf("items (-want +got):\n%s", diff)
	}
}

func TestLoopGathersOutputsInItemOrder(t *testing.T) {
	w := newWorld(t, regions().Obj())
	w.look()
	w.step(0, schedv1.TaskSucceeded, map[string]string{"id": "p1"})
	outs := []map[string]string{
		{"url": "https://eu", "note": `"<quoted> & ✓"`},
		{"url": "https://us"},
		nil, // ap writes nothing: null
		{"url": "https://sa"},
		{"url": "https://af", "extra": "x"},
	}
	for range 10 {
		w.look()
		for k, t := range w.items[1] {
			if !t.Status.Phase.Finished() {
				w.item(1, k, schedv1.TaskSucceeded, outs[k], "")
			}
		}
	}
	s := w.wf.Status.Steps[1]
	want := map[string]string{
		"url":   `["https://eu","https://us",null,"https://sa","https://af"]`,
		"note":  `["\"<quoted> & ✓\"",null,null,null,null]`,
		"extra": `[null,null,null,null,"x"]`,
	}
	if diff := cmp.Diff(want, s.Outputs); diff != "" {
		t.Errorf("gathered outputs (-want +got):\n%s", diff)
	}
	if s.Phase != schedv1.StepSucceeded || s.Message != "all 5 items succeeded, 3 output(s) gathered" {
		t.Errorf("deploy %s %q", s.Phase, s.Message)
	}
	// The fan-in feeds the next step.
	if diff := cmp.Diff([]string{want["url"]}, w.tasks[2].Spec.Args); diff != "" {
		t.Errorf("report's args (-want +got):\n%s", diff)
	}
	for name, n := range w.created {
		if n != 1 {
			t.Errorf("%s created %d times", name, n)
		}
	}
	if len(w.created) != 7 {
		t.Errorf("%d tasks created, want 7: %v", len(w.created), w.created)
	}
}

func TestLoopItemFailure(t *testing.T) {
	for _, failFast := range []bool{false, true} {
		t.Run(fmt.Sprintf("failFast=%v", failFast), func(t *testing.T) {
			wf := regions().Obj()
			// Side by side, so that failFast decides.
			wf.Spec.Steps[1].DependsOn, wf.Spec.Steps[2].DependsOn = []string{"plan"}, []string{"deploy"}
			wf.Spec.FailFast = failFast
			w := newWorld(t, wf)
			w.look()
			w.step(0, schedv1.TaskSucceeded, map[string]string{"id": "p1"})
			w.look()
			w.item(1, 0, schedv1.TaskFailed, nil, "exited with code 3 after 1 attempt(s): no quota in eu")
			w.item(1, 1, schedv1.TaskRunning, nil, "")
			p := w.look()
			s := w.wf.Status.Steps[1]
			if len(p.creates) > 0 {
				t.Errorf("items start after one failed: %v", creates(p))
			}
			if !failFast {
				// The running item finishes; the step waits for it.
				if s.Phase != schedv1.StepRunning || len(p.cancels) > 0 || w.wf.Status.Phase != schedv1.WorkflowRunning {
					t.Fatalf("deploy %s, cancels %v, workflow %s: want the step running until item 1 ends", s.Phase, cancels(p), w.wf.Status.Phase)
				}
				if want := "0/5 items succeeded, 1 running, 1 failed; no more items start, as one did not succeed"; s.Message != want {
					t.Errorf("message %q, want %q", s.Message, want)
				}
				w.item(1, 1, schedv1.TaskSucceeded, map[string]string{"url": "https://us"}, "")
				w.look()
				s = w.wf.Status.Steps[1]
			} else if diff := cmp.Diff([]string{"rel-1-deploy-1"}, cancels(p)); diff != "" {
				t.Errorf("failFast cancels (-want +got):\n%s", diff)
			}
			if s.Phase != schedv1.StepFailed {
				t.Fatalf("deploy %s, want Failed", s.Phase)
			}
			wantStep := `item 0 ("eu") failed: exited with code 3 after 1 attempt(s): no quota in eu`
			if failFast {
				wantStep += "; 1 running items stopped (spec.failFast)"
			}
			if s.Message != wantStep {
				t.Errorf("step message %q, want %q", s.Message, wantStep)
			}
			wf = w.wf
			if wf.Status.Phase != schedv1.WorkflowFailed || wf.Status.Reason != schedv1.ReasonStepFailed || wf.Status.Message != "step 1 (deploy) failed: "+wantStep {
				t.Errorf("workflow %s %s %q", wf.Status.Phase, wf.Status.Reason, wf.Status.Message)
			}
			if got := wf.Status.Steps[2].Phase; got != schedv1.StepSkipped {
				t.Errorf("report %s, want Skipped", got)
			}
			wantItems := []string{"0=Failed", "1=Succeeded"}
			if failFast {
				wantItems = []string{"0=Failed", "1=Cancelled"}
			}
			if diff := cmp.Diff(wantItems, itemPhases(s)); diff != "" {
				t.Errorf("items (-want +got):\n%s", diff)
			}
		})
	}
}

func TestLoopLists(t *testing.T) {
	loop := func(from string, params ...string) *schedv1.Workflow {
		wf := MakeWorkflow("rel", "ns").Step("plan", "busybox").
			Step("deploy", "busybox", "${item}").ForEach(nil, from, 0).
			Step("report", "busybox", "${steps.deploy.output.url}")
		for i := 0; i+1 < len(params); i += 2 {
			wf.Param(params[i], params[i+1])
		}
		return wf.Obj()
	}
	cases := map[string]struct {
		wf          *schedv1.Workflow
		plan        map[string]string
		wantCreates []string
		wantPhase   schedv1.WorkflowPhase
		wantReason  string
		wantMsg     string
		check       func(t *testing.T, w *world)
	}{
		"from an output": {
			wf: loop("${steps.plan.output.regions}"), plan: map[string]string{"regions": `["eu", "us"]`},
			wantCreates: []string{"rel-1-deploy-0", "rel-1-deploy-1"}, wantPhase: schedv1.WorkflowRunning,
			check: func(t *testing.T, w *world) {
				if got := w.items[1][1].Spec.Args; !slices.Equal(got, []string{"us"}) {
					t.Errorf("item 1's args %q", got)
				}
			},
		},
		"from a file output": {
			wf: loop("${steps.plan.output.regions}"), plan: map[string]string{"regions": `["eu", "us", "ap"]`, fileOutputs: "true"},
			wantCreates: []string{"rel-1-deploy-0", "rel-1-deploy-1", "rel-1-deploy-2"}, wantPhase: schedv1.WorkflowRunning,
			check: func(t *testing.T, w *world) {
				if got := w.wf.Status.Steps[0].Outputs["regions"]; got != `["eu", "us", "ap"]` {
					t.Errorf("plan's outputs in the workflow %q", got)
				}
			},
		},
		"from a file output too big to pass on": {
			wf: loop("${steps.plan.output.regions}"), plan: map[string]string{"regions": `["eu"]`, "report": strings.Repeat("x", 5000), fileOutputs: "true"},
			wantPhase: schedv1.WorkflowFailed, wantReason: schedv1.ReasonTooLarge,
			wantMsg: `step 1 (deploy) cannot start: forEach.from uses ${steps.plan.output.regions}, but file output "regions" of step plan holds 6 bytes, ` +
				"and a workflow passes a step's file outputs on only when they hold at most 4096 bytes in all; " +
				"the output is in its task's status.fileOutputs: write what later steps need to a smaller file, or to the termination message",
		},
		"from an output missing beside file outputs too big to pass on": {
			wf: loop("${steps.plan.output.zones}"), plan: map[string]string{"regions": `["eu"]`, "report": strings.Repeat("x", 5000), fileOutputs: "true"},
			wantPhase: schedv1.WorkflowFailed, wantReason: schedv1.ReasonMissingOutput,
		},
		"from a param": {
			wf: loop("${params.regions}", "regions", `["eu"]`), plan: map[string]string{},
			wantCreates: []string{"rel-1-deploy-0"}, wantPhase: schedv1.WorkflowRunning,
		},
		"an empty list succeeds with no items, its outputs []": {
			wf: loop("${steps.plan.output.regions}"), plan: map[string]string{"regions": "[]"},
			wantCreates: []string{"rel-2-report"}, wantPhase: schedv1.WorkflowRunning,
			check: func(t *testing.T, w *world) {
				s := w.wf.Status.Steps[1]
				if s.Phase != schedv1.StepSucceeded || s.ForEach.Total != 0 || s.Message != "forEach.from ${steps.plan.output.regions} is an empty list: no item ran, and each output reads []" {
					t.Errorf("deploy %s %+v %q", s.Phase, s.ForEach, s.Message)
				}
				if got := w.tasks[2].Spec.Args; !slices.Equal(got, []string{"[]"}) {
					t.Errorf("report's args %q, want []", got)
				}
			},
		},
		"not a JSON array": {
			wf: loop("${steps.plan.output.regions}"), plan: map[string]string{"regions": "eu,us"},
			wantPhase: schedv1.WorkflowFailed, wantReason: schedv1.ReasonInvalidItems,
			wantMsg: `step 1 (deploy) cannot start: step deploy: forEach.from ${steps.plan.output.regions} is not a JSON array of strings: it does not start with [; its value is "eu,us"`,
		},
		"too many items": {
			wf: loop("${steps.plan.output.regions}"), plan: map[string]string{"regions": "[" + strings.Repeat(`"x",`, 100) + `"x"]`},
			wantPhase: schedv1.WorkflowFailed, wantReason: schedv1.ReasonInvalidItems,
			wantMsg: "step 1 (deploy) cannot start: step deploy: forEach.from ${steps.plan.output.regions} holds 101 items, more than the 100 a forEach step may run over",
		},
		"an output the step did not write": {
			wf: loop("${steps.plan.output.regions}"), plan: map[string]string{"zones": `["a"]`},
			wantPhase: schedv1.WorkflowFailed, wantReason: schedv1.ReasonMissingOutput,
			wantMsg: `step 1 (deploy) cannot start: forEach.from uses ${steps.plan.output.regions}, but step 0 ("plan") did not output "regions"; its outputs are: zones`,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			w := newWorld(t, tc.wf)
			w.look()
			if tc.plan[fileOutputs] != "" {
				outs := maps.Clone(tc.plan)
				delete(outs, fileOutputs)
				w.step(0, schedv1.TaskSucceeded, nil)
				// As the cache holds them (agenttask.TrimTask).
				if schedv1.PassedFileOutputs(outs) {
					w.tasks[0].Status.FileOutputs = outs
				} else {
					cachetrim.MarkHeldOutputs(&w.tasks[0].ObjectMeta, outs)
				}
			} else {
				w.step(0, schedv1.TaskSucceeded, tc.plan)
			}
			p := w.look()
			st := w.wf.Status
			if diff := cmp.Diff(tc.wantCreates, creates(p)); diff != "" {
				t.Errorf("creates (-want +got):\n%s", diff)
			}
			if st.Phase != tc.wantPhase || (tc.wantReason != "" && st.Reason != tc.wantReason) || (tc.wantMsg != "" && st.Message != tc.wantMsg) {
				t.Errorf("workflow %s %s %q\nwant %s %s %q", st.Phase, st.Reason, st.Message, tc.wantPhase, tc.wantReason, tc.wantMsg)
			}
			if tc.check != nil {
				tc.check(t, w)
			}
		})
	}
}

// fileOutputs in a test's plan outputs makes them the task's file outputs.
const fileOutputs = "#files"

// TestReferenceToAHeldOutput: a step's reference to a file output too big
// to pass on fails TooLarge, saying so, not MissingOutput; one to a key
// the step never wrote still fails MissingOutput.
func TestReferenceToAHeldOutput(t *testing.T) {
	for name, tc := range map[string]struct {
		ref, wantReason, wantIn string
	}{
		"a held output": {ref: "${steps.gen.output.report}", wantReason: schedv1.ReasonTooLarge,
			wantIn: `args[0] uses ${steps.gen.output.report}, but file output "report" of step gen holds 102400 bytes`},
		"by index":        {ref: "${steps.0.output.report}", wantReason: schedv1.ReasonTooLarge, wantIn: "holds 102400 bytes"},
		"a passed output": {ref: "${steps.gen.output.sha}", wantReason: ""},
		"never written":   {ref: "${steps.gen.output.nope}", wantReason: schedv1.ReasonMissingOutput, wantIn: `did not output "nope"`},
	} {
		t.Run(name, func(t *testing.T) {
			wf := MakeWorkflow("rel", "ns").Step("gen", "busybox").Step("use", "busybox", tc.ref).Obj()
			w := newWorld(t, wf)
			w.look()
			w.step(0, schedv1.TaskSucceeded, map[string]string{"sha": "abc"})
			cachetrim.MarkHeldOutputs(&w.tasks[0].ObjectMeta, map[string]string{"report": strings.Repeat("x", 100<<10), "list": "[]"})
			p := w.look()
			st := w.wf.Status
			if tc.wantReason == "" {
				if diff := cmp.Diff([]string{"rel-1-use"}, creates(p)); diff != "" {
					t.Errorf("creates (-want +got):\n%s", diff)
				}
				return
			}
			if st.Phase != schedv1.WorkflowFailed || st.Reason != tc.wantReason || !strings.Contains(st.Message, tc.wantIn) {
				t.Errorf("workflow %s %s %q; want Failed %s containing %q", st.Phase, st.Reason, st.Message, tc.wantReason, tc.wantIn)
			}
			if len(p.creates) != 0 {
				t.Errorf("created %v for a step that cannot start", creates(p))
			}
		})
	}
}

// TestLoopChain: a loop over another loop's gathered outputs.
func TestLoopChain(t *testing.T) {
	wf := MakeWorkflow("rel", "ns").
		Step("build", "busybox", "${item}").ForEach([]string{"a", "b"}, "", 0).
		Step("push", "busybox", "${item}").ForEach(nil, "${steps.build.output.image}", 0).Obj()
	w := newWorld(t, wf)
	w.look()
	w.item(0, 0, schedv1.TaskSucceeded, map[string]string{"image": "reg/a:1"}, "")
	w.item(0, 1, schedv1.TaskSucceeded, map[string]string{"image": "reg/b:1"}, "")
	p := w.look()
	if diff := cmp.Diff([]string{"rel-1-push-0", "rel-1-push-1"}, creates(p)); diff != "" {
		t.Fatalf("push items (-want +got):\n%s", diff)
	}
	if got := w.items[1][1].Spec.Args; !slices.Equal(got, []string{"reg/b:1"}) {
		t.Errorf("push item 1's args %q", got)
	}
}

func TestLoopSuspendHoldsNewItems(t *testing.T) {
	w := newWorld(t, regions().Obj())
	w.look()
	w.step(0, schedv1.TaskSucceeded, map[string]string{"id": "p1"})
	w.look()
	w.wf.Spec.Suspend = true
	w.item(1, 0, schedv1.TaskSucceeded, nil, "")
	w.item(1, 1, schedv1.TaskRunning, nil, "")
	if p := w.look(); len(p.creates) > 0 {
		t.Errorf("suspended, items start: %v", creates(p))
	}
	if s := w.wf.Status.Steps[1]; s.Phase != schedv1.StepRunning || w.wf.Status.Phase != schedv1.WorkflowRunning {
		t.Errorf("deploy %s, workflow %s: the running item goes on", s.Phase, w.wf.Status.Phase)
	}
	w.wf.Spec.Suspend = false
	if diff := cmp.Diff([]string{"rel-1-deploy-2"}, creates(w.look())); diff != "" {
		t.Errorf("resumed (-want +got):\n%s", diff)
	}
}

func TestLoopCancelAndTimeoutStopItems(t *testing.T) {
	for name, stop := range map[string]func(*schedv1.Workflow){
		"cancel":  func(wf *schedv1.Workflow) { wf.Spec.Cancel = true },
		"timeout": func(wf *schedv1.Workflow) { wf.Spec.Timeout = &metav1.Duration{Duration: time.Second} },
	} {
		t.Run(name, func(t *testing.T) {
			w := newWorld(t, regions().Obj())
			w.look()
			w.step(0, schedv1.TaskSucceeded, map[string]string{"id": "p1"})
			w.look()
			w.item(1, 0, schedv1.TaskRunning, nil, "")
			stop(w.wf)
			p := w.look()
			if diff := cmp.Diff([]string{"rel-1-deploy-0", "rel-1-deploy-1"}, cancels(p)); diff != "" {
				t.Errorf("cancels (-want +got):\n%s", diff)
			}
			s := w.wf.Status.Steps[1]
			want := []string{"0=Cancelled", "1=Cancelled"}
			if name == "timeout" {
				want = []string{"0=Timeout", "1=Timeout"}
			}
			if diff := cmp.Diff(want, itemPhases(s)); diff != "" {
				t.Errorf("items (-want +got):\n%s", diff)
			}
			if !w.wf.Status.Phase.Finished() {
				t.Errorf("workflow %s", w.wf.Status.Phase)
			}
			// Cancelled once: the next look asks nothing more.
			if p := w.look(); len(p.cancels)+len(p.creates) > 0 {
				t.Errorf("again: cancels %v creates %v", cancels(p), creates(p))
			}
		})
	}
}

// TestLoopRestart: the operator stopped after creating items and before
// writing the status that says so. The next one takes the items it finds
// for started, creates none of them again, and goes on.
func TestLoopRestart(t *testing.T) {
	w := newWorld(t, regions().Obj())
	w.look()
	w.step(0, schedv1.TaskSucceeded, map[string]string{"id": "p1"})
	before := *w.wf.Status.DeepCopy()
	w.look()
	w.wf.Status = before // the status write was lost
	w.item(1, 0, schedv1.TaskSucceeded, map[string]string{"url": "https://eu"}, "")
	p := w.look()
	if diff := cmp.Diff([]string{"rel-1-deploy-2"}, creates(p)); diff != "" {
		t.Errorf("after the restart (-want +got):\n%s", diff)
	}
	s := w.wf.Status.Steps[1]
	if diff := cmp.Diff([]string{"0=Succeeded", "1=Pending", "2=Pending"}, itemPhases(s)); diff != "" {
		t.Errorf("items (-want +got):\n%s", diff)
	}
	if s.Outputs["url"] != `["https://eu",null,null,null,null]` || s.StartTime == nil {
		t.Errorf("deploy outputs %v start %v", s.Outputs, s.StartTime)
	}

	// An item whose task was deleted before it finished fails, and is
	// never created again.
	delete(w.items[1], 1)
	w.look()
	s = w.wf.Status.Steps[1]
	if diff := cmp.Diff([]string{"0=Succeeded", "1=Failed", "2=Pending"}, itemPhases(s)); diff != "" {
		t.Errorf("items (-want +got):\n%s", diff)
	}
	if msg := s.ForEach.Items[1].Message; msg != "its AgentTask rel-1-deploy-1 was deleted before it finished" {
		t.Errorf("item 1's message %q", msg)
	}
}

// TestLoopOutputsBounded: gathered outputs past 32 KiB fail the step
// with reason TooLarge, and its running items are stopped.
func TestLoopOutputsBounded(t *testing.T) {
	wf := MakeWorkflow("big", "ns").Step("fan", "busybox", "${item}").ForEach(make([]string, 12), "", 0).Obj()
	w := newWorld(t, wf)
	w.look()
	for k := range 9 {
		w.item(0, k, schedv1.TaskSucceeded, map[string]string{"blob": strings.Repeat("x", 3900)}, "")
	}
	p := w.look()
	s := w.wf.Status.Steps[0]
	if s.Phase != schedv1.StepFailed || s.Reason != schedv1.ReasonTooLarge || !strings.Contains(s.Message, "step fan: the outputs of its items, gathered into JSON arrays, reach 35") || !strings.Contains(s.Message, "more than the 32768 a forEach step may hold") {
		t.Errorf("fan %s %s %q", s.Phase, s.Reason, s.Message)
	}
	if len(p.cancels) != 3 {
		t.Errorf("cancels %v, want the 3 running items", cancels(p))
	}
	if w.wf.Status.Reason != schedv1.ReasonTooLarge {
		t.Errorf("workflow reason %s", w.wf.Status.Reason)
	}
	if n := outputsSize(s.Outputs); n > schedv1.MaxLoopOutputBytes {
		t.Errorf("the status holds %d bytes of outputs", n)
	}
}

// TestLoopRetry: a retry reuses a loop that succeeded, outputs included,
// and runs one that did not whole.
func TestLoopRetry(t *testing.T) {
	prev := regions().Obj()
	prev.Name = "rel-old"
	gathered := map[string]string{"url": `["https://eu","https://us"]`}
	prev.Status = schedv1.WorkflowStatus{Phase: schedv1.WorkflowFailed, Steps: []schedv1.StepStatus{
		{Name: "plan", Phase: schedv1.StepSucceeded, Outputs: map[string]string{"id": "p1"}},
		{Name: "deploy", Phase: schedv1.StepSucceeded, Outputs: gathered, ForEach: &schedv1.ForEachStatus{Total: 5, Succeeded: 5}},
		{Name: "report", Phase: schedv1.StepFailed},
	}}
	wf := regions().Obj()
	wf.Spec.RetryOf = &schedv1.WorkflowRetry{Workflow: "rel-old", FromStep: "report"}
	w := newWorld(t, wf)
	w.prev = prev
	if diff := cmp.Diff([]string{"rel-2-report"}, creates(w.look())); diff != "" {
		t.Errorf("retry from report (-want +got):\n%s", diff)
	}
	if got := w.tasks[2].Spec.Args; !slices.Equal(got, []string{gathered["url"]}) {
		t.Errorf("report's args %q, want the reused fan-in", got)
	}

	prev.Status.Steps[1] = schedv1.StepStatus{Name: "deploy", Phase: schedv1.StepFailed, ForEach: &schedv1.ForEachStatus{Total: 5, Succeeded: 4, Failed: 1}}
	wf = regions().Obj()
	wf.Spec.RetryOf = &schedv1.WorkflowRetry{Workflow: "rel-old", FromStep: "deploy"}
	w = newWorld(t, wf)
	w.prev = prev
	if diff := cmp.Diff([]string{"rel-1-deploy-0", "rel-1-deploy-1"}, creates(w.look())); diff != "" {
		t.Errorf("retry of the failed loop (-want +got):\n%s", diff)
	}
}

// TestLoopFinally: a finally step may loop too, over any step's output.
func TestLoopFinally(t *testing.T) {
	wf := MakeWorkflow("rel", "ns").Step("plan", "busybox").
		Finally("notify", schedv1.AgentTaskSpec{Image: "busybox", Args: []string{"${item}", "${workflow.phase}"}}).
		ForEach(nil, "${steps.plan.output.who}", 1).Obj()
	w := newWorld(t, wf)
	w.look()
	w.step(0, schedv1.TaskSucceeded, map[string]string{"who": `["ops","dev"]`})
	p := w.look()
	if diff := cmp.Diff([]string{"rel-finally0-notify-0"}, creates(p)); diff != "" {
		t.Fatalf("finally items (-want +got):\n%s", diff)
	}
	item := p.creates[0].task
	if !slices.Equal(item.Spec.Args, []string{"ops", "Succeeded"}) || item.Labels[schedv1.LabelWorkflowStep] != "finally0" {
		t.Errorf("item args %q labels %v", item.Spec.Args, item.Labels)
	}
	w.item(1, 0, schedv1.TaskSucceeded, nil, "")
	if diff := cmp.Diff([]string{"rel-finally0-notify-1"}, creates(w.look())); diff != "" {
		t.Errorf("the second item (-want +got):\n%s", diff)
	}
	w.item(1, 1, schedv1.TaskSucceeded, nil, "")
	w.look()
	if w.wf.Status.Phase != schedv1.WorkflowSucceeded || w.wf.Status.Finally[0].Phase != schedv1.StepSucceeded {
		t.Errorf("workflow %s, notify %s", w.wf.Status.Phase, w.wf.Status.Finally[0].Phase)
	}
}

// TestLoopBuildsBoundedBytesPerPass: items whose tasks render large start
// a few megabytes' worth at a time, the rest at the next look, and an item
// that renders too large fails the step with reason TooLarge.
func TestLoopBuildsBoundedBytesPerPass(t *testing.T) {
	ref := "${params.p}"
	arg := strings.Repeat(ref, 4096/len(ref)) // 4 KiB once rendered
	args := make([]string, 60)                // 60 x 4 KiB: 240 KiB a task
	for i := range args {
		args[i] = arg
	}
	wf := MakeWorkflow("big", "ns").Param("p", strings.Repeat("v", len(ref))).
		Step("fan", "busybox", args...).ForEach(make([]string, 40), "", 0).Obj()
	w := newWorld(t, wf)
	first := len(w.look().creates)
	if first == 0 || first >= 40 || first*240<<10 > maxItemBytesPerPass+240<<10 {
		t.Errorf("the first look builds %d items of 240 KiB, want a few megabytes' worth", first)
	}
	second := len(w.look().creates)
	if second == 0 || first+second+len(w.look().creates)+len(w.look().creates) < 40 {
		t.Errorf("the next looks do not start the rest: %d, then %d of 40", first, second)
	}

	// ${item} makes one item of a list from a param render past what a
	// step may (items written out are checked before the workflow runs):
	// the step fails with TooLarge, and no item starts after it.
	items := strings.Repeat("${item}", 4096/len("${item}"))
	wf = MakeWorkflow("big", "ns").Param("list", `["a","`+strings.Repeat("x", 1024)+`","b"]`).
		Step("fan", "busybox", items, items).ForEach(nil, "${params.list}", 1).Obj()
	w = newWorld(t, wf)
	w.look()
	w.item(0, 0, schedv1.TaskSucceeded, nil, "")
	p := w.look()
	s := w.wf.Status.Steps[0]
	if len(p.creates) > 0 || s.Phase != schedv1.StepFailed || w.wf.Status.Reason != schedv1.ReasonTooLarge || !strings.Contains(s.Message, `item 1 ("`+strings.Repeat("x", 29)+`…") failed: cannot start: step 0 ("fan") renders to`) {
		t.Errorf("creates %v, fan %s %q, workflow reason %s", creates(p), s.Phase, s.Message, w.wf.Status.Reason)
	}
}

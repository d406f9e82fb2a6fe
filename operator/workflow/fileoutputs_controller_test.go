package workflow_test

import (
	"strings"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/client"

	. "github.com/kubectl-sched/kubectl-sched/api/builders"
	"github.com/kubectl-sched/kubectl-sched/api/names"
	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
)

// TestReferenceToAFileOutputTooBigToPass: a step whose task holds a 100
// KiB file output (written here as the operator writes it: kwok's pods
// have no logs to read it from) cannot hand it on, and the step that
// references it fails TooLarge, naming the step, the key and its size,
// through the operator's real cache, which keeps only those sizes.
func TestReferenceToAFileOutputTooBigToPass(t *testing.T) {
	t.Parallel()
	ns := namespace(t)
	wf := MakeWorkflow("big", ns).StepTask("gen", step("x", 0, "sha=abc", 8)).
		StepTask("use", step("x", 0, "", 0, "--report=${steps.gen.output.report}", "--sha=${steps.gen.output.sha}")).Obj()
	if err := sim.Client.Create(t.Context(), wf); err != nil {
		t.Fatal(err)
	}
	waitWorkflow(t, ns, "big", "running step gen", func(w *schedv1.Workflow) bool {
		return len(w.Status.Steps) == 2 && w.Status.Steps[0].Phase == schedv1.StepRunning
	})
	sched(t, "workflow", "suspend", "big", "-n", ns)
	waitWorkflow(t, ns, "big", "suspended after step gen", func(w *schedv1.Workflow) bool {
		return w.Status.Steps[0].Phase == schedv1.StepSucceeded && w.Status.Reason == schedv1.ReasonSuspended
	})
	gen := getTask(t, ns, names.StepTask("big", 0, "gen"))
	patch := client.MergeFrom(gen.DeepCopy())
	gen.Status.FileOutputs = map[string]string{"report": strings.Repeat("r", 100<<10)}
	if err := sim.Client.Status().Patch(t.Context(), gen, patch); err != nil {
		t.Fatal(err)
	}
	sched(t, "workflow", "resume", "big", "-n", ns)
	got := waitWorkflow(t, ns, "big", "finished", finished)
	want := `step 1 (use) cannot start: args[0] uses ${steps.gen.output.report}, but file output "report" of step gen holds 102400 bytes`
	if got.Status.Phase != schedv1.WorkflowFailed || got.Status.Reason != schedv1.ReasonTooLarge || !strings.HasPrefix(got.Status.Message, want) {
		t.Errorf("workflow %s %s %q; want Failed TooLarge starting %q", got.Status.Phase, got.Status.Reason, got.Status.Message, want)
	}
	if n := len(got.Status.Steps[0].Outputs); n != 1 {
		t.Errorf("gen's outputs in the workflow's status: %d keys, want its termination message's only", n)
	}
}

package workflow

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	. "github.com/kubectl-sched/kubectl-sched/api/builders"
	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
	"github.com/kubectl-sched/kubectl-sched/operator/cachetrim"
)

// TestTrimWorkflow: a small workflow is cached whole but for its
// metadata (kubectl's last-applied copy and a tenant's labels go); one
// whose steps, params, items and whens pass cachetrim.TrimAbove keeps its
// steps' names and status only, and one whose status does (a forEach
// step's gathered outputs) its status but for its steps' outputs and
// messages, each marked for the controller to read it whole.
func TestTrimWorkflow(t *testing.T) {
	small := MakeWorkflow("wf", "ns").Param("env", "prod").Step("a", "busybox", "echo").Step("b", "busybox").When("params.env == 'prod'").Obj()
	small.Labels = map[string]string{"team": "x"}
	small.Annotations = map[string]string{"kubectl.kubernetes.io/last-applied-configuration": strings.Repeat("{}", 10<<10)}
	small.Status.Phase = schedv1.WorkflowRunning
	got, _ := TrimWorkflow(small.DeepCopy())
	wf := got.(*schedv1.Workflow)
	if diff := cmp.Diff(small.Spec, wf.Spec); diff != "" || cachetrim.Trimmed(wf) || len(wf.Labels)+len(wf.Annotations) != 0 {
		t.Errorf("small workflow: labels %v, annotations %d, spec (-want +got):\n%s", wf.Labels, len(wf.Annotations), diff)
	}

	large := MakeWorkflow("wf", "ns").StepTask("a", LargestTenantTaskSpec()).Finally("f", LargestTenantTaskSpec()).Obj()
	large.Status = schedv1.WorkflowStatus{Phase: schedv1.WorkflowRunning, Steps: []schedv1.StepStatus{{Name: "a", Phase: schedv1.StepRunning}}}
	got, _ = TrimWorkflow(large.DeepCopy())
	wf = got.(*schedv1.Workflow)
	want := schedv1.WorkflowSpec{Steps: []schedv1.WorkflowStep{{Name: "a"}}, Finally: []schedv1.WorkflowStep{{Name: "f"}}}
	if diff := cmp.Diff(want, wf.Spec); diff != "" || !cachetrim.Trimmed(wf) {
		t.Errorf("large workflow: marked %v, spec (-want +got):\n%s", cachetrim.Trimmed(wf), diff)
	}
	if diff := cmp.Diff(large.Status, wf.Status); diff != "" {
		t.Errorf("large workflow's status (-want +got):\n%s", diff)
	}

	gathered := small.DeepCopy()
	gathered.Status.Steps = []schedv1.StepStatus{{Name: "a", Phase: schedv1.StepSucceeded, Message: "done",
		Outputs: map[string]string{"digests": strings.Repeat("x", 32<<10)}}}
	got, _ = TrimWorkflow(gathered.DeepCopy())
	wf = got.(*schedv1.Workflow)
	wantStatus := schedv1.WorkflowStatus{Phase: schedv1.WorkflowRunning, Steps: []schedv1.StepStatus{{Name: "a", Phase: schedv1.StepSucceeded}}}
	if diff := cmp.Diff(wantStatus, wf.Status); diff != "" || !cachetrim.Trimmed(wf) {
		t.Errorf("a workflow with a large status: marked %v, status (-want +got):\n%s", cachetrim.Trimmed(wf), diff)
	}
}

package workflow_test

import (
	"maps"
	"strings"
	"testing"

	authorizationv1 "k8s.io/api/authorization/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	. "github.com/kubectl-sched/kubectl-sched/api/builders"
	"github.com/kubectl-sched/kubectl-sched/api/names"
	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
	"github.com/kubectl-sched/kubectl-sched/hack/testenv"
)

// TestTakenStepTaskNameFailsTheStep: a tenant who makes, before the
// workflow, an AgentTask under the name a step's task would have does not
// get it taken as the step's (its outputs would flow into later steps):
// the step fails, naming the task and what to do, and that task is left
// alone.
func TestTakenStepTaskNameFailsTheStep(t *testing.T) {
	t.Parallel()
	ns := namespace(t)
	mallory, err := testenv.BindUser(t.Context(), sim.Client, sim.Config, ns, "mallory", "kubectl-sched-edit",
		authorizationv1.ResourceAttributes{Verb: "create", Group: schedv1.GroupVersion.Group, Resource: "agenttasks"})
	if err != nil {
		t.Fatal(err)
	}
	squat := MakeAgentTask(names.StepTask("victim", 0, "build"), ns).Spec(func(s *schedv1.AgentTaskSpec) { *s = step("busybox:1", 0, "digest=forged", 1) }).Obj()
	if err := mallory.Create(t.Context(), squat); err != nil {
		t.Fatal(err)
	}
	wf := MakeWorkflow("victim", ns).StepTask("build", step("busybox:1", 0, "digest=real", 1)).
		StepTask("ship", step("busybox:1", 0, "", 1, "${steps.build.output.digest}")).Obj()
	if err := mallory.Create(t.Context(), wf); err != nil {
		t.Fatal(err)
	}

	got := waitWorkflow(t, ns, "victim", "finished", finished)
	if got.Status.Phase != schedv1.WorkflowFailed || got.Status.Reason != schedv1.ReasonNameTaken {
		t.Fatalf("phase %s reason %s (%s), want Failed with %s", got.Status.Phase, got.Status.Reason, got.Status.Message, schedv1.ReasonNameTaken)
	}
	build := got.Status.Steps[0]
	for _, want := range []string{"AgentTask " + squat.Name + " already exists and is not this workflow's (it has no controller)", "kubectl sched workflow retry victim"} {
		if !strings.Contains(build.Message, want) {
			t.Errorf("step message %q, want it to say %q", build.Message, want)
		}
	}
	if build.Phase != schedv1.StepFailed || build.TaskName != "" || build.Outputs != nil {
		t.Errorf("step build %+v, want Failed with no task and no outputs", build)
	}
	if s := got.Status.Steps[1]; s.Phase != schedv1.StepSkipped {
		t.Errorf("step ship %s, want Skipped", s.Phase)
	}
	after := &schedv1.AgentTask{}
	if err := sim.Client.Get(t.Context(), client.ObjectKeyFromObject(squat), after); err != nil {
		t.Fatal(err)
	}
	if len(after.OwnerReferences) != 0 || !maps.Equal(after.Labels, squat.Labels) || after.Generation != squat.Generation {
		t.Errorf("the tenant's AgentTask was changed: owners %v, labels %v, generation %d -> %d", after.OwnerReferences, after.Labels, squat.Generation, after.Generation)
	}
}

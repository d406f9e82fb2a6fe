package workflow_test

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	authorizationv1 "k8s.io/api/authorization/v1"

	. "github.com/kubectl-sched/kubectl-sched/api/builders"
	"github.com/kubectl-sched/kubectl-sched/api/names"
	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
	"github.com/kubectl-sched/kubectl-sched/hack/cluster"
	"github.com/kubectl-sched/kubectl-sched/hack/testenv"
)

// TestLargeWorkflowRunsWhole: mallory, a member of a free-tier namespace,
// runs a workflow whose first step fills every string a tenant sizes most
// (over 1 MiB in all): the operator's cache keeps only its steps' names
// (TrimWorkflow) and each reconcile reads it whole, past the cache. It
// runs as any other: the first step's task has its whole command, args
// and env, the second reads its output in its when and its args.
func TestLargeWorkflowRunsWhole(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	ns := testenv.TierNamespace(t, sim.Client, "free", "15m", "1h")
	mallory, err := testenv.BindUser(ctx, sim.Client, sim.Config, ns, "mallory", "kubectl-sched-tenant",
		authorizationv1.ResourceAttributes{Verb: "create", Group: schedv1.GroupVersion.Group, Resource: "workflows"})
	if err != nil {
		t.Fatal(err)
	}
	big := LargestTenantTaskSpec()
	// The simulated pod's exit code and message, in place of three of the
	// 32 pod annotations.
	sim := step("x", 0, "k=v", 0)
	n := 0
	for k := range big.PodMetadata.Annotations {
		if n < 3 {
			delete(big.PodMetadata.Annotations, k)
			n++
		}
	}
	for k, v := range sim.PodMetadata.Annotations {
		big.PodMetadata.Annotations[k] = v
	}
	// Its workspaces' claims do not exist here: the pod would wait for them.
	big.Image, big.ServiceAccountName, big.Workspaces = "x", "", nil
	wf := MakeWorkflow("large", ns).StepTask("a", big).
		StepTask("b", step("x", 0, "", 0, "${steps.a.output.k}")).When("steps.a.outputs.k == 'v'").Obj()
	if err := mallory.Create(ctx, wf); err != nil {
		t.Fatal(err)
	}
	got := waitWorkflow(t, ns, "large", "finished", finished)
	if got.Status.Phase != schedv1.WorkflowSucceeded {
		t.Fatalf("phase %s reason %s message %q; want Succeeded", got.Status.Phase, got.Status.Reason, got.Status.Message)
	}
	a := getTask(t, ns, names.StepTask("large", 0, "a"))
	if diff := cmp.Diff(big.Args, a.Spec.Args); diff != "" || !cmp.Equal(big.Command, a.Spec.Command) || len(a.Spec.Env) != len(big.Env) {
		t.Errorf("step a's task: %d env vars, command equal %v, args (-step +task):\n%s", len(a.Spec.Env), cmp.Equal(big.Command, a.Spec.Command), diff)
	}
	if v := a.Spec.PodMetadata.Annotations[cluster.AnnotationTerminationMessage]; v != "k=v" {
		t.Errorf("step a's pod annotation %q", v)
	}
	if args := getTask(t, ns, names.StepTask("large", 1, "b")).Spec.Args; strings.Join(args, ",") != "v" {
		t.Errorf("step b's args %v, want its output", args)
	}

	// A retry from b reuses a's outputs, which the cache does not hold for
	// a workflow this large: they are read past it.
	again := MakeWorkflow("large-again", ns).StepTask("a", big).
		StepTask("b", step("x", 0, "", 0, "${steps.a.output.k}")).When("steps.a.outputs.k == 'v'").Obj()
	again.Spec.RetryOf = &schedv1.WorkflowRetry{Workflow: "large", FromStep: "b"}
	if err := mallory.Create(ctx, again); err != nil {
		t.Fatal(err)
	}
	got = waitWorkflow(t, ns, "large-again", "finished", finished)
	if got.Status.Phase != schedv1.WorkflowSucceeded || got.Status.Steps[0].Outputs["k"] != "v" {
		t.Fatalf("retry: phase %s message %q, step a %+v; want Succeeded with a's output reused", got.Status.Phase, got.Status.Message, got.Status.Steps[0])
	}
	if args := getTask(t, ns, names.StepTask("large-again", 1, "b")).Spec.Args; strings.Join(args, ",") != "v" {
		t.Errorf("the retry's step b args %v, want a's reused output", args)
	}
}

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
	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
	"github.com/kubectl-sched/kubectl-sched/hack/testenv"
)

// TestTenantCannotExhaustTheOperatorWithAWhen: mallory, a member of a
// namespace of the free tier, submits workflows whose when would have the
// operator build gigabytes. One whose estimated cost is past the limit
// (replace chained 12 times, 4^13 bytes) fails before any step runs, with
// reason InvalidSpec, its Ready condition and a Warning event saying why;
// one the estimate lets through (250 splits of an output into its 4,000
// characters, about 1,100,000 units) fails its step with reason WhenError
// at the cost limit. The operator stays up: her next, ordinary workflow
// runs.
func TestTenantCannotExhaustTheOperatorWithAWhen(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	ns := testenv.TierNamespace(t, sim.Client, "free", "15m", "1h")
	mallory, err := testenv.BindUser(ctx, sim.Client, sim.Config, ns, "mallory", "kubectl-sched-tenant",
		authorizationv1.ResourceAttributes{Verb: "create", Group: schedv1.GroupVersion.Group, Resource: "workflows"})
	if err != nil {
		t.Fatal(err)
	}
	big := "big=" + strings.Repeat("a", 4000)

	chained := "'aaaa'" + strings.Repeat(".replace('a','aaaa')", 12) + " != ''"
	wf := MakeWorkflow("bloat", ns).StepTask("a", step("x", 0, big, 0)).
		StepTask("b", step("x", 0, "", 0)).When(chained).Obj()
	if err := mallory.Create(ctx, wf); err != nil {
		t.Fatal(err)
	}
	got := waitWorkflow(t, ns, "bloat", "finished", finished)
	if got.Status.Phase != schedv1.WorkflowFailed || got.Status.Reason != schedv1.ReasonInvalidSpec {
		t.Fatalf("phase %s reason %s message %q; want Failed InvalidSpec", got.Status.Phase, got.Status.Reason, got.Status.Message)
	}
	for _, want := range []string{`spec.steps[1].when`, `step "b": when could cost too much to evaluate: the expression could cost`, "at most 10000000 are allowed"} {
		if !strings.Contains(got.Status.Message, want) {
			t.Errorf("message %q lacks %q", got.Status.Message, want)
		}
	}
	if c := meta(got.Status.Conditions, schedv1.ConditionReady); c == nil || c.Status != metav1.ConditionFalse || c.Reason != schedv1.ReasonInvalidSpec || c.ObservedGeneration != got.Generation {
		t.Errorf("Ready %+v, want False InvalidSpec at generation %d", c, got.Generation)
	}
	if diff := cmp.Diff([]string{"a=Skipped", "b=Skipped"}, phases(got.Status.Steps)); diff != "" {
		t.Errorf("steps (-want +got):\n%s", diff)
	}
	var tasks schedv1.AgentTaskList
	if err := sim.Client.List(ctx, &tasks, client.InNamespace(ns)); err != nil || len(tasks.Items) != 0 {
		t.Errorf("tasks in the namespace: %d (%v), want none: no step may run", len(tasks.Items), err)
	}
	testenv.Poll(t, testenv.LongTimeout, "a Warning event saying why", func(ctx context.Context) (bool, error) {
		var evs corev1.EventList
		if err := sim.Client.List(ctx, &evs, client.InNamespace(ns)); err != nil {
			return false, err
		}
		for _, e := range evs.Items {
			if e.InvolvedObject.Name == "bloat" && e.Type == corev1.EventTypeWarning && e.Reason == schedv1.ReasonInvalidSpec &&
				strings.Contains(e.Message, "when could cost too much to evaluate") {
				return true, nil
			}
		}
		return false, nil
	})

	splits := "[" + strings.Repeat("0, ", 249) + "0].all(i, steps.a.outputs.big.split('').size() > 0)"
	wf = MakeWorkflow("splits", ns).StepTask("a", step("x", 0, big, 0)).
		StepTask("b", step("x", 0, "", 0)).When(splits).Obj()
	if err := mallory.Create(ctx, wf); err != nil {
		t.Fatal(err)
	}
	got = waitWorkflow(t, ns, "splits", "finished", finished)
	if diff := cmp.Diff([]string{"a=Succeeded", "b=Failed"}, phases(got.Status.Steps)); diff != "" {
		t.Fatalf("steps (-want +got):\n%s; message %q", diff, got.Status.Message)
	}
	b := got.Status.Steps[1]
	if b.Reason != schedv1.ReasonWhenError || b.TaskName != "" || !strings.Contains(b.Message, "it cost more than the limit of 1000000") {
		t.Errorf("step b %+v: want WhenError at the cost limit, and no task", b)
	}

	// The operator is up and serves her: an ordinary workflow runs.
	wf = MakeWorkflow("ordinary", ns).StepTask("a", step("x", 0, "result=passed", 0)).
		StepTask("b", step("x", 0, "", 0)).When("steps.a.outputs.result == 'passed'").Obj()
	if err := mallory.Create(ctx, wf); err != nil {
		t.Fatal(err)
	}
	got = waitWorkflow(t, ns, "ordinary", "finished", finished)
	if got.Status.Phase != schedv1.WorkflowSucceeded {
		t.Errorf("the ordinary workflow: phase %s message %q", got.Status.Phase, got.Status.Message)
	}
}

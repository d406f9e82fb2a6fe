package chaos

import (
	"context"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	. "github.com/kubectl-sched/kubectl-sched/api/builders"
	"github.com/kubectl-sched/kubectl-sched/api/names"
	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
	"github.com/kubectl-sched/kubectl-sched/operator/crashpoint"
)

// TestKilledAtACacheHit kills the operator right after it decided that a
// step takes a cached result and before the Workflow's status says so
// (crash point workflow-step-cache-hit). The next operator looks up again:
// while the result is there it records the same hit, and runs nothing;
// when the result went meanwhile (its workflow deleted), it runs the step.
// Either way the step is recorded once, as a hit or as its own task,
// never both.
func TestKilledAtACacheHit(t *testing.T) {
	s := startSim(t)
	e := s.env(t, "op", []string{"--leader-elect=false"})
	t.Cleanup(func() { _ = e.StopOperator() })
	cl, ctx := s.client, context.Background()
	const ns = "default"
	release := func(name, image string) *schedv1.Workflow {
		return MakeWorkflow(name, ns).
			StepTask("build", schedv1.AgentTaskSpec{Image: "builder:1", PodMetadata: &schedv1.PodMetadata{Annotations: sim("image="+image, 0)}}).
			Spec(func(s *schedv1.WorkflowSpec) { s.Steps[0].Cache = &schedv1.StepCache{Key: "build:abc123"} }).Obj()
	}
	finished := func(name string) *schedv1.Workflow {
		t.Helper()
		got := &schedv1.Workflow{}
		err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
			if err := cl.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, got); err != nil {
				return false, nil
			}
			return got.Status.Phase.Finished(), nil
		})
		if err != nil || got.Status.Phase != schedv1.WorkflowSucceeded {
			t.Fatalf("workflow %s %s (%v): %s", name, got.Status.Phase, err, got.Status.Message)
		}
		return got
	}
	hasTask := func(name string) bool {
		t.Helper()
		err := cl.Get(ctx, client.ObjectKey{Namespace: ns, Name: names.StepTask(name, 0, "build")}, &schedv1.AgentTask{})
		if err != nil && !apierrors.IsNotFound(err) {
			t.Fatal(err)
		}
		return err == nil
	}

	if err := e.StartOperator(ctx, false); err != nil {
		t.Fatal(err)
	}
	if err := cl.Create(ctx, release("first", "reg/app:1")); err != nil {
		t.Fatal(err)
	}
	finished("first")
	if err := e.StopOperator(); err != nil {
		t.Fatal(err)
	}

	// The result is still there after the kill: the same hit.
	if err := cl.Create(ctx, release("second", "reg/app:2")); err != nil {
		t.Fatal(err)
	}
	killAt(t, e, crashpoint.StepCacheHit+":1")
	if err := e.StartOperator(ctx, false); err != nil {
		t.Fatal(err)
	}
	got := finished("second")
	if b := got.Status.Steps[0]; b.Reason != schedv1.ReasonCacheHit || b.CachedFrom == nil || b.CachedFrom.Task != "first-0-build" ||
		b.Outputs["image"] != "reg/app:1" || b.TaskName != "" || hasTask("second") {
		t.Errorf("second's build after the kill: %+v (own task %v); want the hit from first-0-build, and no task", b, hasTask("second"))
	}
	if err := e.StopOperator(); err != nil {
		t.Fatal(err)
	}

	// The result goes while no operator runs: the step runs instead.
	if err := cl.Create(ctx, release("third", "reg/app:3")); err != nil {
		t.Fatal(err)
	}
	killAt(t, e, crashpoint.StepCacheHit+":1")
	for _, name := range []string{"first", "second"} {
		if err := cl.Delete(ctx, MakeWorkflow(name, ns).Obj(), client.PropagationPolicy("Foreground")); err != nil && !apierrors.IsNotFound(err) {
			t.Fatal(err)
		}
	}
	err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		return !hasTask("first"), nil
	})
	if err != nil {
		t.Fatalf("first's task was not deleted with it: %v", err)
	}
	if err := e.StartOperator(ctx, false); err != nil {
		t.Fatal(err)
	}
	got = finished("third")
	if b := got.Status.Steps[0]; b.Reason == schedv1.ReasonCacheHit || b.CachedFrom != nil || b.Outputs["image"] != "reg/app:3" ||
		b.TaskName != names.StepTask("third", 0, "build") || !hasTask("third") {
		t.Errorf("third's build after the kill, its result gone: %+v; want it run as its own task", b)
	}
}

package workflow_test

import (
	"context"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	. "github.com/kubectl-sched/kubectl-sched/api/builders"
	"github.com/kubectl-sched/kubectl-sched/api/names"
	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
	"github.com/kubectl-sched/kubectl-sched/hack/testenv"
)

// TestTierDefaultDeletesTheWorkflowAndItsSteps: in a namespace of a tier,
// a finished workflow without ttlAfterFinished goes after the tier's
// default, its step tasks with it; the step tasks have no expiry of their
// own (a step task deleting itself could lose its outputs), even where
// the tier's default would apply to a task.
func TestTierDefaultDeletesTheWorkflowAndItsSteps(t *testing.T) {
	t.Parallel()
	ns := testenv.TierNamespace(t, sim.Client, "quick", "3s", "1h")
	wf := MakeWorkflow("brief", ns).StepTask("a", step("x", 0, "k=v", 0)).StepTask("b", step("x", 0, "", 0)).Obj()
	if err := sim.Client.Create(t.Context(), wf); err != nil {
		t.Fatal(err)
	}
	done := waitWorkflow(t, ns, "brief", "finished with its expiry", func(w *schedv1.Workflow) bool {
		return finished(w) && w.Status.Expiry != nil && w.Status.Expiry.DeleteTime != nil
	})
	e := done.Status.Expiry
	if done.Status.Phase != schedv1.WorkflowSucceeded || e.Source != schedv1.ExpiryFromTierDefault || e.Tier != "quick" ||
		e.TTLAfterFinished.Duration != 3*time.Second || !e.DeleteTime.Time.Equal(done.Status.CompletionTime.Add(3*time.Second)) {
		t.Errorf("phase %s, expiry %+v (completed %s): want Succeeded, deleted 3s after by the tier's default", done.Status.Phase, e, done.Status.CompletionTime)
	}
	for i, s := range []string{"a", "b"} {
		if at := getTask(t, ns, names.StepTask("brief", i, s)); at.Status.Expiry != nil {
			t.Errorf("step task %s has its own expiry %+v", at.Name, at.Status.Expiry)
		}
	}
	testenv.Poll(t, testenv.LongTimeout, "the workflow deleted after the tier's default", func(ctx context.Context) (bool, error) {
		err := sim.Client.Get(ctx, client.ObjectKeyFromObject(wf), &schedv1.Workflow{})
		return apierrors.IsNotFound(err), client.IgnoreNotFound(err)
	})
	testenv.Poll(t, testenv.LongTimeout, "its step tasks deleted with it", func(ctx context.Context) (bool, error) {
		var tasks schedv1.AgentTaskList
		err := sim.Client.List(ctx, &tasks, client.InNamespace(ns))
		return err == nil && len(tasks.Items) == 0, err
	})
}

// TestSpecTTLWithinTheTier: a workflow's own ttlAfterFinished wins over
// the tier's default.
func TestSpecTTLWithinTheTier(t *testing.T) {
	t.Parallel()
	ns := testenv.TierNamespace(t, sim.Client, "quick", "1h", "2h")
	wf := MakeWorkflow("own", ns).StepTask("a", step("x", 0, "", 0)).Obj()
	wf.Spec.TTLAfterFinished = &metav1.Duration{Duration: 30 * time.Minute}
	if err := sim.Client.Create(t.Context(), wf); err != nil {
		t.Fatal(err)
	}
	done := waitWorkflow(t, ns, "own", "finished with its expiry", func(w *schedv1.Workflow) bool {
		return finished(w) && w.Status.Expiry != nil && w.Status.Expiry.DeleteTime != nil
	})
	if e := done.Status.Expiry; e.Source != schedv1.ExpiryFromSpec || e.TTLAfterFinished.Duration != 30*time.Minute || e.Tier != "" {
		t.Errorf("expiry %+v, want the spec's 30m", e)
	}
}

// TestInstallDefaultTTL: outside a tier, a finished workflow without
// ttlAfterFinished gets the install's default (--default-ttl, a week
// unless set); its step tasks still go with it, not on their own.
func TestInstallDefaultTTL(t *testing.T) {
	t.Parallel()
	ns := testenv.Namespace(t, sim.Client)
	wf := MakeWorkflow("plain", ns).StepTask("a", step("x", 0, "", 0)).Obj()
	if err := sim.Client.Create(t.Context(), wf); err != nil {
		t.Fatal(err)
	}
	done := waitWorkflow(t, ns, "plain", "finished with its expiry", func(w *schedv1.Workflow) bool {
		return finished(w) && w.Status.Expiry != nil && w.Status.Expiry.DeleteTime != nil
	})
	week := 7 * 24 * time.Hour
	if e := done.Status.Expiry; e.Source != schedv1.ExpiryFromInstallDefault || e.Tier != "" || e.TTLAfterFinished.Duration != week ||
		!e.DeleteTime.Time.Equal(done.Status.CompletionTime.Add(week)) {
		t.Errorf("expiry %+v (completed %s), want the install's default, a week after completion", e, done.Status.CompletionTime)
	}
	if at := getTask(t, ns, names.StepTask("plain", 0, "a")); at.Status.Expiry != nil {
		t.Errorf("step task %s has its own expiry %+v", at.Name, at.Status.Expiry)
	}
}

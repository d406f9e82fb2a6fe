package agenttask_test

import (
	"strconv"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	. "github.com/kubectl-sched/kubectl-sched/api/builders"
	"github.com/kubectl-sched/kubectl-sched/api/names"
	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
	"github.com/kubectl-sched/kubectl-sched/hack/testenv"
	"github.com/kubectl-sched/kubectl-sched/operator/metrics"
)

// handoffs is how many hand-offs the histogram has counted.
func handoffs(t *testing.T) uint64 {
	t.Helper()
	var m dto.Metric
	if err := metrics.StepHandoff.Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetHistogram().GetSampleCount()
}

// TestHandoffAnnotationCountsOnlyOnStepTasks: the step hand-off histogram
// is fed by an annotation the Workflow controller sets on step tasks. A
// namespace user who stamps it on tasks of their own (an hour ago, to skew
// the figure) changes nothing: not on a standalone task, not on one that
// names their workflow as controller but is not its step. A step task as
// the Workflow controller makes it is counted. No workflow controller runs
// in this package, and no other test stamps the annotation, so the count
// moves only for these tasks.
func TestHandoffAnnotationCountsOnlyOnStepTasks(t *testing.T) {
	ns := namespace(t)
	ctx := t.Context()
	var allowed []authorizationv1.ResourceAttributes
	for _, r := range []string{"agenttasks", "workflows"} {
		allowed = append(allowed, authorizationv1.ResourceAttributes{Verb: "create", Group: schedv1.GroupVersion.Group, Resource: r})
	}
	mallory, err := testenv.BindUser(ctx, sim.Client, sim.Config, ns, "mallory", "kubectl-sched-edit", allowed...)
	if err != nil {
		t.Fatal(err)
	}
	hourAgo := map[string]string{schedv1.AnnotationPreviousStepFinished: time.Now().Add(-time.Hour).Format(time.RFC3339Nano)}
	wf := MakeWorkflow("mine", ns).Step("a", "registry.example/agent:1").Step("b", "registry.example/agent:1").Obj()
	if err := mallory.Create(ctx, wf); err != nil {
		t.Fatal(err)
	}
	controlledBy := func(wf *schedv1.Workflow) []metav1.OwnerReference {
		ref := metav1.NewControllerRef(wf, schedv1.GroupVersion.WithKind("Workflow"))
		ref.BlockOwnerDeletion = nil // which would take rights on the workflow's finalizers
		return []metav1.OwnerReference{*ref}
	}
	stepLabels := func(wf *schedv1.Workflow, i int) map[string]string {
		return map[string]string{schedv1.LabelWorkflow: names.Join(wf.Name), schedv1.LabelWorkflowStep: strconv.Itoa(i)}
	}
	withJob := func(t *testing.T, c client.Client, at *schedv1.AgentTask) {
		t.Helper()
		if err := c.Create(ctx, at); err != nil {
			t.Fatal(err)
		}
		// The histogram is fed as the Job is created, before the status
		// names the Job.
		waitTask(t, ns, at.Name, "given its Job", func(at *schedv1.AgentTask) bool { return at.Status.JobName != "" })
	}

	before := handoffs(t)
	attacks := map[string]func() *schedv1.AgentTask{
		"a standalone task": func() *schedv1.AgentTask {
			at := task("standalone", ns, 0, "").Obj()
			at.Annotations = hourAgo
			return at
		},
		"a task claiming her workflow as controller": func() *schedv1.AgentTask {
			at := task("decoy", ns, 0, "").Obj()
			at.Annotations, at.OwnerReferences = hourAgo, controlledBy(wf)
			return at
		},
		"a task named as her workflow's step, stamped an hour back": func() *schedv1.AgentTask {
			at := task(names.StepTask(wf.Name, 1, "b"), ns, 0, "").Obj()
			at.Annotations, at.OwnerReferences = hourAgo, controlledBy(wf)
			return at
		},
	}
	for name, build := range attacks {
		t.Run(name, func(t *testing.T) {
			withJob(t, mallory, build())
			if got := handoffs(t); got != before {
				t.Errorf("the hand-off histogram counted %d more", got-before)
			}
		})
	}

	// The Workflow controller's own step task: counted, once.
	real := MakeWorkflow("real", ns).Step("a", "registry.example/agent:1").Step("b", "registry.example/agent:1").Obj()
	create(t, real)
	step := task(names.StepTask(real.Name, 1, "b"), ns, 0, "").Obj()
	step.OwnerReferences, step.Labels = controlledBy(real), stepLabels(real, 1)
	step.Annotations = map[string]string{schedv1.AnnotationPreviousStepFinished: time.Now().Format(time.RFC3339Nano)}
	withJob(t, sim.Client, step)
	if got := handoffs(t); got != before+1 {
		t.Errorf("a step task as the Workflow controller makes it: counted %d hand-offs, want 1", got-before)
	}
}

package cronworkflow_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/controller-runtime/pkg/client"

	. "github.com/kubectl-sched/kubectl-sched/api/builders"
	"github.com/kubectl-sched/kubectl-sched/api/names"
	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
	"github.com/kubectl-sched/kubectl-sched/hack/testenv"
)

// TestLargeScheduleRunsWhole: tess, a member of a free-tier namespace,
// schedules a workflow whose step fills every string a tenant sizes most
// (over 1 MiB): the operator's cache keeps only its steps' names
// (TrimCron), and at its time the run is made from the whole spec, read
// past the cache.
func TestLargeScheduleRunsWhole(t *testing.T) {
	ctx := t.Context()
	ns := testenv.TierNamespace(t, env.Client, "free", "15m", "1h")
	tess, err := testenv.BindUser(ctx, env.Client, env.Config, ns, "tess", "kubectl-sched-tenant", createIn(ns))
	if err != nil {
		t.Fatal(err)
	}
	at := startClock()
	spec := LargestTenantTaskSpec()
	cw := MakeCronWorkflow("large", ns, "0 * * * *").StepTask("a", spec).Obj()
	if err := tess.Create(ctx, cw); err != nil {
		t.Fatal(err)
	}
	tick(t, cw, at)
	name := names.CronRun("large", at)
	run := waitRuns(t, cw, "the first run", func(r map[string]*schedv1.Workflow) bool { return r[name] != nil })[name]
	whole := &schedv1.CronWorkflow{}
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(cw), whole); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(whole.Spec.WorkflowSpec, run.Spec); diff != "" {
		t.Errorf("the run's spec is not the schedule's (-schedule +run):\n%s", diff)
	}
	if len(run.Spec.Steps) != 1 || len(run.Spec.Steps[0].Task.Args) != len(spec.Args) {
		t.Errorf("the run's step lost its args")
	}
}

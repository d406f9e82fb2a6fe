package cronworkflow

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	. "github.com/kubectl-sched/kubectl-sched/api/builders"
	"github.com/kubectl-sched/kubectl-sched/api/names"
	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
)

// TestFoldStart: what became of the due run's create is folded into the
// plan decide made, without changing it: started, the run is active and
// Ready says when the next starts; a name another owner holds, or a
// refusal for good, gives the time up (lastScheduleTime) and says why in
// Ready and an event; a full quota keeps the time, to be tried again.
func TestFoldStart(t *testing.T) {
	workflows := schema.GroupResource{Group: schedv1.GroupVersion.Group, Resource: "workflows"}
	quota := apierrors.NewForbidden(workflows, "r", errors.New("exceeded quota: q, requested: count/workflows.sched.kubectl-sched.dev=1"))
	invalid := apierrors.NewInvalid(schema.GroupKind{Group: workflows.Group, Kind: "Workflow"}, "r", nil)
	run := names.CronRun("nightly", at("02:00"))
	foreign := MakeWorkflow(run, "ns").Obj()
	for name, tc := range map[string]struct {
		o    startOutcome
		want want
	}{
		"started": {want: want{create: run, ready: metav1.ConditionTrue, reason: schedv1.ReasonScheduled, next: "03:00", last: "02:00", active: 1,
			eventWords: []string{"Created: created run " + run}}},
		"name taken": {o: startOutcome{taken: foreign}, want: want{create: run, ready: metav1.ConditionFalse, reason: schedv1.ReasonNameTaken, next: "03:00", last: "02:00",
			eventWords: []string{"NameTaken: not a run of this CronWorkflow; that time is skipped"}}},
		"refused for good": {o: startOutcome{err: invalid}, want: want{create: run, ready: metav1.ConditionFalse, reason: schedv1.ReasonRejected, next: "03:00", last: "02:00",
			eventWords: []string{"Rejected: fix spec.workflowSpec"}}},
		"a full quota": {o: startOutcome{err: quota}, want: want{create: run, ready: metav1.ConditionFalse, reason: schedv1.ReasonQuotaExceeded, next: "03:00"}},
	} {
		t.Run(name, func(t *testing.T) {
			cw := cron()
			p := decide(cw, nil, at("02:00"))
			was := *p.status.DeepCopy()
			got := foldStart(cw, p, tc.o)
			if diff := cmp.Diff(was, p.status); diff != "" || len(p.events) != 0 {
				t.Errorf("decide's plan was changed (events %v; status -was +now):\n%s", p.events, diff)
			}
			check(t, got, tc.want)
			if tc.o.err != nil && tc.o.err == quota && len(got.events) != 0 {
				t.Errorf("a full quota told in events %v; it waits, said in Ready only", got.events)
			}
		})
	}
}

package workflow

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	. "github.com/kubectl-sched/kubectl-sched/api/builders"
	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
)

// TestFoldCreates: what became of a reconcile's creates is folded into
// the status decide computed, without changing it: a name another owner
// holds or a refusal for good fails the step (or the item), a full quota
// keeps it waiting and is returned for the workqueue's backoff (an item
// forgotten, to be created again), and a create that succeeded, or found
// the workflow's own task, changes nothing: decide counted it started.
func TestFoldCreates(t *testing.T) {
	tasks := schema.GroupResource{Group: schedv1.GroupVersion.Group, Resource: "agenttasks"}
	quota := apierrors.NewForbidden(tasks, "t", errors.New("exceeded quota: q, requested: count/agenttasks.sched.kubectl-sched.dev=1"))
	invalid := apierrors.NewInvalid(schema.GroupKind{Group: tasks.Group, Kind: "AgentTask"}, "t", nil)
	exists := apierrors.NewAlreadyExists(tasks, "t")
	foreign := &schedv1.AgentTask{ObjectMeta: metav1.ObjectMeta{Name: "rel-0-fetch", Namespace: "ns"}}

	type want struct {
		Phase, Step, Item   string // the workflow's, step 0's (or the loop's) and item 0's phases
		Reason, StepMessage string
		Quota               bool
	}
	for name, tc := range map[string]struct {
		loop bool
		out  func(c stepCreate) createOutcome
		want want
	}{
		"created": {
			out:  func(c stepCreate) createOutcome { return createOutcome{create: c} },
			want: want{Phase: "Running", Step: "Pending", Reason: schedv1.ReasonRunning},
		},
		"the workflow's own, not cached yet": {
			out:  func(c stepCreate) createOutcome { return createOutcome{create: c, err: exists} },
			want: want{Phase: "Running", Step: "Pending", Reason: schedv1.ReasonRunning},
		},
		"name taken": {
			out: func(c stepCreate) createOutcome { return createOutcome{create: c, err: exists, taken: foreign} },
			want: want{Phase: "Failed", Step: "Failed", Reason: schedv1.ReasonNameTaken,
				StepMessage: nameTakenMessage(threeSteps().Obj(), foreign)},
		},
		"refused for good": {
			out: func(c stepCreate) createOutcome { return createOutcome{create: c, err: invalid} },
			want: want{Phase: "Failed", Step: "Failed", Reason: schedv1.ReasonRejected,
				StepMessage: "the API server refused its AgentTask: " + invalid.Error()},
		},
		"a full quota": {
			out: func(c stepCreate) createOutcome { return createOutcome{create: c, err: quota} },
			want: want{Phase: "Running", Step: "Waiting", Reason: schedv1.ReasonQuotaExceeded,
				StepMessage: "waiting for quota: " + quota.Error(), Quota: true},
		},
		"an item's name taken": {
			loop: true,
			out:  func(c stepCreate) createOutcome { return createOutcome{create: c, err: exists, taken: foreign} },
			want: want{Phase: "Running", Step: "Failed", Item: "Failed", Reason: schedv1.ReasonRunning},
		},
		"an item refused for good": {
			loop: true,
			out:  func(c stepCreate) createOutcome { return createOutcome{create: c, err: invalid} },
			want: want{Phase: "Running", Step: "Failed", Item: "Failed", Reason: schedv1.ReasonRunning},
		},
		"an item waiting for quota": {
			loop: true,
			out:  func(c stepCreate) createOutcome { return createOutcome{create: c, err: quota} },
			want: want{Phase: "Running", Step: "Pending", Reason: schedv1.ReasonQuotaExceeded, Quota: true},
		},
	} {
		t.Run(name, func(t *testing.T) {
			wf, step := threeSteps().Obj(), 0
			if tc.loop {
				wf, step = loopFirst().Obj(), 0
			}
			p := decide(wf, nil, nil, nil, approvalRules{}, now)
			if len(p.creates) == 0 || p.creates[0].step != step || p.creates[0].loop != tc.loop {
				t.Fatalf("decide created %v, want step %d (loop %v) first", creates(p), step, tc.loop)
			}
			was := *p.status.DeepCopy()
			st, err := foldCreates(wf, p.status, []createOutcome{tc.out(p.creates[0])}, now)
			if diff := cmp.Diff(was, p.status); diff != "" {
				t.Errorf("the computed status was changed (-was +now):\n%s", diff)
			}
			got := want{Phase: string(st.Phase), Step: string(st.Steps[step].Phase), Reason: st.Reason, Quota: err != nil}
			if !tc.loop {
				got.StepMessage = st.Steps[step].Message
				if tc.want.StepMessage == "" {
					got.StepMessage = ""
				}
			} else if fe := st.Steps[step].ForEach; fe != nil && len(fe.Items) > 0 && fe.Items[0].Index == 0 {
				got.Item = string(fe.Items[0].Phase)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("folded (-want +got):\n%s", diff)
			}
			if unchanged := tc.want.Step == "Pending" && !tc.want.Quota; unchanged {
				if diff := cmp.Diff(was, st); diff != "" {
					t.Errorf("a create that needs no word changed the status (-was +folded):\n%s", diff)
				}
			}
			if tc.want.Quota && !errors.Is(err, quota) {
				t.Errorf("returned %v, want the quota's refusal", err)
			}
		})
	}
}

// loopFirst starts with a loop over three items, one at a time.
func loopFirst() *WorkflowWrapper {
	return MakeWorkflow("rel", "ns").
		Step("deploy", "deployer:1", "--region=${item}").ForEach([]string{"eu", "us", "ap"}, "", 1).
		Step("report", "busybox")
}

package workflow

import (
	"slices"
	"testing"

	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
	"github.com/kubectl-sched/kubectl-sched/operator/cachetrim"
)

func TestStepOfLabelAndItsAccount(t *testing.T) {
	wf := &schedv1.Workflow{Spec: schedv1.WorkflowSpec{
		Steps:   []schedv1.WorkflowStep{{Name: "a", Task: schedv1.AgentTaskSpec{ServiceAccountName: "builder"}}, {Name: "b"}},
		Finally: []schedv1.WorkflowStep{{Name: "tidy", Task: schedv1.AgentTaskSpec{ServiceAccountName: "cleaner"}}},
	}}
	for label, want := range map[string]struct {
		i       int
		ok      bool
		account string
	}{
		"0": {0, true, "builder"}, "1": {1, true, ""}, "finally0": {2, true, "cleaner"},
		"2": {}, "-1": {}, "01": {}, "+1": {}, "finally1": {}, "finally": {}, "finally00": {}, "": {}, "a": {},
	} {
		i, ok := StepOfLabel(wf, label)
		if i != want.i || ok != want.ok {
			t.Errorf("StepOfLabel(%q) = %d, %v, want %d, %v", label, i, ok, want.i, want.ok)
			continue
		}
		if ok {
			if got := StepServiceAccount(wf, i); got != want.account {
				t.Errorf("StepServiceAccount(step %q) = %q, want %q", label, got, want.account)
			}
			// The builder and the webhook agree: the task built for the
			// step runs as the step's account.
			task, err := buildTask(wf, i, stepValues(wf, i, &schedv1.WorkflowStatus{Steps: make([]schedv1.StepStatus, 2), Finally: make([]schedv1.StepStatus, 1)}), "t")
			if err != nil {
				t.Fatal(err)
			}
			if task.Spec.ServiceAccountName != want.account || task.Labels[schedv1.LabelWorkflowStep] != label {
				t.Errorf("step %q's task runs as %q labelled %q, want %q labelled %q", label, task.Spec.ServiceAccountName, task.Labels[schedv1.LabelWorkflowStep], want.account, label)
			}
		}
	}
	if got, want := StepAccounts(&wf.Spec), []string{"builder", "", "cleaner"}; !slices.Equal(got, want) {
		t.Errorf("StepAccounts = %q, want %q", got, want)
	}
	// A trimmed workflow keeps the accounts the webhook reads.
	trimmed := cachetrim.StepNames(&wf.Spec)
	if got := StepAccounts(&trimmed); !slices.Equal(got, StepAccounts(&wf.Spec)) {
		t.Errorf("StepNames kept the accounts %q, want %q", got, StepAccounts(&wf.Spec))
	}
}

package workflow

import (
	"testing"

	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
	"github.com/kubectl-sched/kubectl-sched/operator/status"
)

// TestStatusPace: what a user or the next step waits on is written at
// once; a change that only mirrors a running step's task waits for the
// rest of the second after the last write (status.Paced; the Writer's own
// tests hold the second, an unchanged status sending nothing, and the
// cache that has not seen the last write).
func TestStatusPace(t *testing.T) {
	steps := func(phases ...schedv1.StepPhase) []schedv1.StepStatus {
		var out []schedv1.StepStatus
		for i, p := range phases {
			out = append(out, schedv1.StepStatus{Name: string(rune('a' + i)), Phase: p})
		}
		return out
	}
	running := schedv1.WorkflowStatus{Phase: schedv1.WorkflowRunning, Steps: steps(schedv1.StepPending, schedv1.StepWaiting)}
	cases := map[string]struct {
		after   schedv1.WorkflowStatus
		created bool
		want    status.Pace
	}{
		"a step runs": {
			after: schedv1.WorkflowStatus{Phase: schedv1.WorkflowRunning, Steps: steps(schedv1.StepRunning, schedv1.StepWaiting)},
			want:  status.Paced,
		},
		"a step's message": {
			after: schedv1.WorkflowStatus{Phase: schedv1.WorkflowRunning, Steps: []schedv1.StepStatus{{Name: "a", Phase: schedv1.StepPending, Message: "waiting"}, {Name: "b", Phase: schedv1.StepWaiting}}},
			want:  status.Paced,
		},
		"a step ends": {
			after: schedv1.WorkflowStatus{Phase: schedv1.WorkflowRunning, Steps: steps(schedv1.StepSucceeded, schedv1.StepWaiting)},
			want:  status.Now,
		},
		"a step is skipped": {
			after: schedv1.WorkflowStatus{Phase: schedv1.WorkflowRunning, Steps: steps(schedv1.StepPending, schedv1.StepSkipped)},
			want:  status.Now,
		},
		"a step waits for approval": {
			after: schedv1.WorkflowStatus{Phase: schedv1.WorkflowRunning, Steps: steps(schedv1.StepPending, schedv1.StepWaitingForApproval)},
			want:  status.Now,
		},
		"steps were created": {
			after:   schedv1.WorkflowStatus{Phase: schedv1.WorkflowRunning, Steps: steps(schedv1.StepRunning, schedv1.StepPending)},
			created: true,
			want:    status.Now,
		},
		"the workflow ends": {
			after: schedv1.WorkflowStatus{Phase: schedv1.WorkflowSucceeded, Steps: steps(schedv1.StepSucceeded, schedv1.StepSucceeded)},
			want:  status.Now,
		},
		"a finally step ends": {
			after: schedv1.WorkflowStatus{Phase: schedv1.WorkflowRunning, Steps: steps(schedv1.StepPending, schedv1.StepWaiting),
				Finally: []schedv1.StepStatus{{Name: "f", Phase: schedv1.StepFailed}}},
			want: status.Now,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			before := running
			before.Finally = []schedv1.StepStatus{{Name: "f", Phase: schedv1.StepRunning}}
			after := tc.after
			if after.Finally == nil {
				after.Finally = before.Finally
			}
			if got := statusPace(&before, &after, tc.created); got != tc.want {
				t.Errorf("statusPace = %v, want %v", got, tc.want)
			}
		})
	}
}

package workflow

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"

	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
)

// TestStatusWait: what a user or the next step waits on is written at
// once; a change that only mirrors a running step's task waits for the
// rest of the second after the last write.
func TestStatusWait(t *testing.T) {
	created := time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)
	now := created.Add(10 * time.Second)
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
		want    time.Duration
	}{
		"nothing changed": {after: running, want: 0},
		"a step runs": {
			after: schedv1.WorkflowStatus{Phase: schedv1.WorkflowRunning, Steps: steps(schedv1.StepRunning, schedv1.StepWaiting)},
			want:  700 * time.Millisecond,
		},
		"a step's message": {
			after: schedv1.WorkflowStatus{Phase: schedv1.WorkflowRunning, Steps: []schedv1.StepStatus{{Name: "a", Phase: schedv1.StepPending, Message: "waiting"}, {Name: "b", Phase: schedv1.StepWaiting}}},
			want:  700 * time.Millisecond,
		},
		"a step ends": {
			after: schedv1.WorkflowStatus{Phase: schedv1.WorkflowRunning, Steps: steps(schedv1.StepSucceeded, schedv1.StepWaiting)},
		},
		"a step is skipped": {
			after: schedv1.WorkflowStatus{Phase: schedv1.WorkflowRunning, Steps: steps(schedv1.StepPending, schedv1.StepSkipped)},
		},
		"a step waits for approval": {
			after: schedv1.WorkflowStatus{Phase: schedv1.WorkflowRunning, Steps: steps(schedv1.StepPending, schedv1.StepWaitingForApproval)},
		},
		"steps were created": {
			after:   schedv1.WorkflowStatus{Phase: schedv1.WorkflowRunning, Steps: steps(schedv1.StepRunning, schedv1.StepPending)},
			created: true,
		},
		"the workflow ends": {
			after: schedv1.WorkflowStatus{Phase: schedv1.WorkflowSucceeded, Steps: steps(schedv1.StepSucceeded, schedv1.StepSucceeded)},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			r := &Reconciler{Clock: clocktesting.NewFakePassiveClock(now)}
			wf := &schedv1.Workflow{ObjectMeta: metav1.ObjectMeta{UID: "w", CreationTimestamp: metav1.NewTime(created)}, Status: running}
			r.written.Add("w", now.Add(-300*time.Millisecond))
			if got := r.statusWait(wf, tc.after, tc.created); got != tc.want && (got > 0 || tc.want > 0) {
				t.Errorf("statusWait = %v, want %v", got, tc.want)
			}
		})
	}
	// A workflow whose status the operator has not written since it
	// started waits from its creation: long ago, so at once.
	r := &Reconciler{Clock: clocktesting.NewFakePassiveClock(now)}
	wf := &schedv1.Workflow{ObjectMeta: metav1.ObjectMeta{UID: "w", CreationTimestamp: metav1.NewTime(created)}, Status: running}
	if got := r.statusWait(wf, cases["a step runs"].after, false); got > 0 {
		t.Errorf("statusWait with no write known = %v, want none", got)
	}
}

// TestCacheBehind: a cached workflow at the version this controller's last
// status write was made against has not seen that write, and a write from
// it would be refused; any other version, or no write known, has.
func TestCacheBehind(t *testing.T) {
	now := time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)
	cases := map[string]struct {
		written func(r *Reconciler)
		cached  string
		want    bool
	}{
		"no write known":             {written: func(*Reconciler) {}, cached: "10"},
		"cache at the write's base":  {written: func(r *Reconciler) { r.written.AddVersion("w", now, "10") }, cached: "10", want: true},
		"cache past the write":       {written: func(r *Reconciler) { r.written.AddVersion("w", now, "10") }, cached: "11"},
		"a write with no version":    {written: func(r *Reconciler) { r.written.Add("w", now) }, cached: "10"},
		"another workflow's version": {written: func(r *Reconciler) { r.written.AddVersion("v", now, "10") }, cached: "10"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			r := &Reconciler{Clock: clocktesting.NewFakePassiveClock(now)}
			tc.written(r)
			wf := &schedv1.Workflow{ObjectMeta: metav1.ObjectMeta{UID: "w", ResourceVersion: tc.cached}}
			if got := r.cacheBehind(wf); got != tc.want {
				t.Errorf("cacheBehind = %v, want %v", got, tc.want)
			}
		})
	}
}

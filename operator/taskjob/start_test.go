package taskjob

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"

	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
)

// TestLeftToWorkflow: the AgentTask controller leaves a task's Job to the
// Workflow controller while that one's create is in flight, and while its
// cache has not shown a Job the Workflow controller created, for at most a
// minute; then, or once it has seen the Job, it creates (or recreates) the
// Job itself as for any task.
func TestLeftToWorkflow(t *testing.T) {
	t0 := time.Date(2026, 11, 28, 2, 0, 0, 0, time.UTC)
	clock := clocktesting.NewFakePassiveClock(t0)
	s := &Starter{Clock: clock}
	task := &schedv1.AgentTask{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "wf-0-a", UID: "u1"}}
	other := &schedv1.AgentTask{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "wf-1-b", UID: "u2"}}
	key := types.NamespacedName{Namespace: "ns", Name: "wf-0-a"}

	steps := []struct {
		name string
		do   func()
		task *schedv1.AgentTask
		want time.Duration
	}{
		{"nothing known", func() {}, task, 0},
		{"its create in flight", func() { s.hold(key) }, task, startingRecheck},
		{"another task", func() {}, other, 0},
		{"twice in flight, once released", func() { s.hold(key); s.release(key) }, task, startingRecheck},
		{"released, its Job not created", func() { s.release(key) }, task, 0},
		{"its Job created, not seen", func() { s.created.Add(task.UID, clock.Now()) }, task, createdRecheck},
		{"59s later, still not seen", func() { clock.SetTime(t0.Add(59 * time.Second)) }, task, createdRecheck},
		{"a minute later: the controller's own", func() { clock.SetTime(t0.Add(time.Minute)) }, task, 0},
		{"created again, then seen", func() { s.created.Add(task.UID, clock.Now()); s.JobSeen(task) }, task, 0},
	}
	for _, st := range steps {
		st.do()
		if got := s.LeftToWorkflow(st.task); got != st.want {
			t.Errorf("%s: LeftToWorkflow = %v, want %v", st.name, got, st.want)
		}
	}
	if len(s.starting) != 0 || s.created.Len() != 0 {
		t.Errorf("left behind: %d in flight, %d created", len(s.starting), s.created.Len())
	}
}

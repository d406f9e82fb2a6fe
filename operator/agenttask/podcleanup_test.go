package agenttask_test

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
	"github.com/kubectl-sched/kubectl-sched/operator/app"
)

// TestSucceededPodsDeletedAfterRetention runs the operator with a
// --succeeded-pod-retention of 2s: a succeeded task's pod is deleted 2s
// after the task finished, its outputs kept in the status and the
// PodDeleted condition saying when and why; a failed task's pod, finished
// before, is kept. Not parallel: it restarts the package's operator, while
// the parallel tests wait.
func TestSucceededPodsDeletedAfterRetention(t *testing.T) {
	const retention = 2 * time.Second
	restart := func(mutate func(*app.Options)) {
		t.Helper()
		if err := operator.Stop(); err != nil {
			t.Fatal(err)
		}
		if err := operator.Start(mutate); err != nil {
			t.Fatal(err)
		}
	}
	restart(func(o *app.Options) { o.Settings.SucceededPodRetention = retention })
	t.Cleanup(func() { restart(nil) })

	ns := namespace(t)
	create(t, task("broken", ns, 3, "").Obj())
	failed := waitTask(t, ns, "broken", "failed", finished)
	create(t, task("done", ns, 0, "answer=42").Obj())
	done := waitTask(t, ns, "done", "succeeded, its pod deleted", func(at *schedv1.AgentTask) bool {
		return finished(at) && findCond(at.Status.Conditions, schedv1.ConditionPodDeleted) != nil
	})
	waitPods(t, ns, "done", "deleted", func(pods []corev1.Pod) bool { return len(pods) == 0 })

	if done.Status.Phase != schedv1.TaskSucceeded || done.Status.Outputs["answer"] != "42" {
		t.Errorf("phase %s outputs %v, want Succeeded with its outputs", done.Status.Phase, done.Status.Outputs)
	}
	c := findCond(done.Status.Conditions, schedv1.ConditionPodDeleted)
	if c.Status != metav1.ConditionTrue || c.Reason != schedv1.ReasonSucceededPodRetention ||
		!strings.Contains(c.Message, "pod "+done.Status.PodName+" was deleted 2s after the task succeeded") || !strings.Contains(c.Message, "--succeeded-pod-retention") {
		t.Errorf("PodDeleted condition %+v", c)
	}
	if deleted := c.LastTransitionTime.Time; deleted.Before(done.Status.CompletionTime.Add(retention).Truncate(time.Second)) {
		t.Errorf("pod deleted at %s, before the retention since the task finished at %s", deleted, done.Status.CompletionTime)
	}
	if failed.Status.Phase != schedv1.TaskFailed {
		t.Fatalf("phase %s, want Failed", failed.Status.Phase)
	}
	waitPods(t, ns, "broken", "kept", func(pods []corev1.Pod) bool { return len(pods) == 1 })
	if got := waitTask(t, ns, "broken", "still failed", finished); findCond(got.Status.Conditions, schedv1.ConditionPodDeleted) != nil {
		t.Errorf("the failed task says its pod was deleted: %+v", got.Status.Conditions)
	}
}

package agenttask

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
)

func TestSucceededPodsDue(t *testing.T) {
	finishedAt := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	task := func(phase schedv1.AgentTaskPhase) *schedv1.AgentTask {
		return &schedv1.AgentTask{Status: schedv1.AgentTaskStatus{Phase: phase, CompletionTime: &metav1.Time{Time: finishedAt}}}
	}
	complete := &batchv1.Job{Status: batchv1.JobStatus{Conditions: []batchv1.JobCondition{{Type: batchv1.JobComplete, Status: corev1.ConditionTrue}}}}
	running := &batchv1.Job{}
	pod := func(name string, finalizers ...string) corev1.Pod {
		return corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Finalizers: finalizers}}
	}
	deleting := pod("deleting")
	deleting.DeletionTimestamp = &metav1.Time{Time: finishedAt}
	const retention = 10 * time.Minute
	later := finishedAt.Add(retention)
	cases := map[string]struct {
		task      *schedv1.AgentTask
		job       *batchv1.Job
		pods      []corev1.Pod
		retention time.Duration
		now       time.Time
		want      []string
		wait      time.Duration
	}{
		"due":                         {task: task(schedv1.TaskSucceeded), job: complete, pods: []corev1.Pod{pod("a"), pod("b")}, now: later, want: []string{"a", "b"}},
		"not yet":                     {task: task(schedv1.TaskSucceeded), job: complete, pods: []corev1.Pod{pod("a")}, now: finishedAt.Add(time.Minute), wait: 9 * time.Minute},
		"not yet, and no pod to wait": {task: task(schedv1.TaskSucceeded), job: complete, now: finishedAt.Add(time.Minute)},
		"a failed task keeps its pod": {task: task(schedv1.TaskFailed), job: complete, pods: []corev1.Pod{pod("a")}, now: later.Add(time.Hour)},
		"timed out keeps it too":      {task: task(schedv1.TaskTimeout), job: complete, pods: []corev1.Pod{pod("a")}, now: later.Add(time.Hour)},
		"retention 0 keeps it":        {task: task(schedv1.TaskSucceeded), job: complete, pods: []corev1.Pod{pod("a")}, retention: -1, now: later.Add(time.Hour)},
		"outputs not released yet":    {task: task(schedv1.TaskSucceeded), job: complete, pods: []corev1.Pod{pod("a", OutputsFinalizer), pod("b")}, now: later, want: []string{"b"}},
		"the Job has not counted it":  {task: task(schedv1.TaskSucceeded), job: running, pods: []corev1.Pod{pod("a")}, now: later},
		"no Job":                      {task: task(schedv1.TaskSucceeded), pods: []corev1.Pod{pod("a")}, now: later},
		"already deleting":            {task: task(schedv1.TaskSucceeded), job: complete, pods: []corev1.Pod{deleting}, now: later},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			r := retention
			if tc.retention != 0 {
				r = max(tc.retention, 0)
			}
			due, wait := succeededPodsDue(tc.task, tc.job, tc.pods, r, tc.now)
			var got []string
			for _, p := range due {
				got = append(got, p.Name)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" || wait != tc.wait {
				t.Errorf("due (-want +got):\n%s\nwait %v, want %v", diff, wait, tc.wait)
			}
		})
	}
}

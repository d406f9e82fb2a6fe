package agenttask

import (
	"context"
	"fmt"
	"slices"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/kubectl-sched/kubectl-sched/api/tiers"
	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
	"github.com/kubectl-sched/kubectl-sched/operator/status"
)

// succeededPodsDue says which pods of a finished task to delete now, or how
// long until some are due. Only a succeeded task's pods go, retention
// after it finished (0: never), once its outputs are safe: the task's
// status holds them and the pods no longer carry the outputs finalizer,
// and the Job has counted them (it is Complete, so no pod of it runs or
// is replaced). A failed or timed-out task keeps its pods as long as
// itself: their logs explain the failure. pods are the Job's own (matched
// by UID).
func succeededPodsDue(task *schedv1.AgentTask, job *batchv1.Job, pods []corev1.Pod, retention time.Duration, now time.Time) ([]corev1.Pod, time.Duration) {
	if retention <= 0 || task.Status.Phase != schedv1.TaskSucceeded || task.Status.CompletionTime == nil ||
		job == nil || jobCondition(job, batchv1.JobComplete) == nil {
		return nil, 0
	}
	if wait := task.Status.CompletionTime.Add(retention).Sub(now); wait > 0 {
		if len(pods) == 0 {
			return nil, 0
		}
		return nil, wait
	}
	var due []corev1.Pod
	for _, p := range pods {
		if p.DeletionTimestamp.IsZero() && !slices.Contains(p.Finalizers, OutputsFinalizer) {
			due = append(due, p)
		}
	}
	return due, 0
}

// podDeleted is the PodDeleted condition of a task whose pods go now.
func podDeleted(task *schedv1.AgentTask, retention time.Duration) metav1.Condition {
	pod := task.Status.PodName
	if pod == "" {
		pod = "of the task"
	}
	return metav1.Condition{
		Type: schedv1.ConditionPodDeleted, Status: metav1.ConditionTrue, Reason: schedv1.ReasonSucceededPodRetention,
		Message: fmt.Sprintf("pod %s was deleted %s after the task succeeded, as the cluster's --succeeded-pod-retention says; its log went with it, its outputs are in the task's status",
			pod, tiers.FormatDuration(retention)),
	}
}

// deleteSucceededPods deletes a succeeded task's pods once they are due
// (succeededPodsDue), saying so in the task's PodDeleted condition first,
// so that whoever looks for the log finds why it is gone. It returns how
// long until pods are due (0: none waits).
func (r *Reconciler) deleteSucceededPods(ctx context.Context, task *schedv1.AgentTask, job *batchv1.Job, pods []corev1.Pod) (time.Duration, error) {
	due, wait := succeededPodsDue(task, job, pods, r.SucceededPodRetention, r.Clock.Now())
	if len(due) == 0 {
		return wait, nil
	}
	if c := meta.FindStatusCondition(task.Status.Conditions, schedv1.ConditionPodDeleted); c == nil || c.Status != metav1.ConditionTrue {
		before := task.Status.DeepCopy()
		status.SetCondition(&task.Status.Conditions, task.Status.ObservedGeneration, podDeleted(task, r.SucceededPodRetention))
		out, err := r.writeTaskStatus(ctx, task, before, status.Now)
		if err != nil || out.Wait > 0 {
			// The condition first: the cache is behind the last write.
			return out.Wait, err
		}
	}
	for i := range due {
		pod := &due[i]
		uid := pod.UID
		if err := r.Delete(ctx, pod, client.Preconditions{UID: &uid}); err != nil && !apierrors.IsNotFound(err) {
			return 0, fmt.Errorf("delete pod %s of the succeeded task: %w", pod.Name, err)
		}
		log.FromContext(ctx).Info("Deleted the pod of a succeeded task after its retention", "pod", pod.Name, "retention", r.SucceededPodRetention)
	}
	return 0, nil
}

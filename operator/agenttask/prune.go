package agenttask

import (
	"context"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
)

// A task's pods are pruned as its attempts go by: the pods quota counts
// only pods that run, so without it a task retried ten times (each
// attempt a pod as large as the task) keeps eleven copies of itself for
// as long as it lives. The operator keeps two pods of a task: its latest
// pod (the attempt that runs, or the one that ended the task) and the
// latest failed attempt before it, so that the logs of the last two
// attempts stay readable live when the task ends failed. The others go
// once they have finished, the task's status keeps the end of their logs
// (logs.go) and counts them: the pruning
// is decided in the status (status.pruned names them, with what they
// counted), written before the pods are deleted, so a restart between
// the two deletes the same pods and counts them once. Each failed attempt
// was told by its BackingOff event, with its exit code and the end of its
// termination message.

// maxPruned bounds status.pruned.pods (the CRD's MaxItems): 11 attempts
// and MaxDisruptions+1 disruptions fit well within it.
const maxPruned = 32

// prior is what the pruned pods counted.
type prior struct{ attempts, failed, disrupted int }

func priorOf(p *schedv1.PrunedPods) prior {
	if p == nil {
		return prior{}
	}
	return prior{attempts: int(p.Attempts), failed: int(p.Failed), disrupted: int(p.Disrupted)}
}

// unpruned leaves out of pods those status.pruned names: they are being
// deleted, and count only there.
func unpruned(pods []corev1.Pod, p *schedv1.PrunedPods) []corev1.Pod {
	if p == nil || len(p.Pods) == 0 {
		return pods
	}
	var out []corev1.Pod
	for _, pod := range pods {
		if !slices.Contains(p.Pods, pod.Name) {
			out = append(out, pod)
		}
	}
	return out
}

// prune adds to pruned the pods of sorted (the task's pods not pruned
// yet, oldest first) that may go now: finished, their logs kept (in logs,
// the task's status.logs), and neither the latest pod nor the latest
// failed attempt before it. It returns pruned itself when none may.
func prune(pruned *schedv1.PrunedPods, sorted []corev1.Pod, logs []schedv1.KeptLog) *schedv1.PrunedPods {
	var keep *corev1.Pod
	for i := len(sorted) - 2; i >= 0; i-- {
		if failedAttempt(&sorted[i]) {
			keep = &sorted[i]
			break
		}
	}
	out := pruned
	for i := 0; i < len(sorted)-1; i++ {
		p := &sorted[i]
		if p == keep || !podFinished(p) || !logKept(logs, p) {
			continue
		}
		if out == pruned {
			out = pruned.DeepCopy()
			if out == nil {
				out = &schedv1.PrunedPods{}
			}
		}
		if len(out.Pods) >= maxPruned {
			break
		}
		out.Pods = append(out.Pods, p.Name)
		switch {
		case disruption(p) != nil:
			out.Disrupted++
		case podStarted(p):
			out.Attempts++
			if failedAttempt(p) {
				out.Failed++
			}
		}
	}
	return out
}

// podFinished reports whether the pod ended: it runs nothing any more.
func podFinished(p *corev1.Pod) bool {
	return p.Status.Phase == corev1.PodFailed || p.Status.Phase == corev1.PodSucceeded
}

// deletePruned deletes the pods the task's status names pruned (matched
// to its Job by the caller, by UID), releasing the outputs finalizer
// first. Run after the status naming them is written.
func (r *Reconciler) deletePruned(ctx context.Context, task *schedv1.AgentTask, pods []corev1.Pod) error {
	p := task.Status.Pruned
	if p == nil {
		return nil
	}
	var due []corev1.Pod
	for _, pod := range pods {
		if slices.Contains(p.Pods, pod.Name) && (pod.DeletionTimestamp.IsZero() || slices.Contains(pod.Finalizers, OutputsFinalizer)) {
			due = append(due, pod)
		}
	}
	if err := r.releasePods(ctx, due); err != nil {
		return err
	}
	for i := range due {
		pod := &due[i]
		if !pod.DeletionTimestamp.IsZero() {
			continue
		}
		uid := pod.UID
		if err := r.Delete(ctx, pod, client.Preconditions{UID: &uid}); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("delete pod %s of an earlier attempt: %w", pod.Name, err)
		}
		log.FromContext(ctx).V(1).Info("Deleted the pod of an earlier attempt", "pod", types.NamespacedName{Namespace: pod.Namespace, Name: pod.Name})
	}
	return nil
}

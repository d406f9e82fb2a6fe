package agenttask

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
	"github.com/kubectl-sched/kubectl-sched/operator/cachetrim"
	"github.com/kubectl-sched/kubectl-sched/operator/crashpoint"
	"github.com/kubectl-sched/kubectl-sched/operator/fileoutputs"
	"github.com/kubectl-sched/kubectl-sched/operator/taskjob"
)

// A task's file outputs (spec.outputs.fromDir; the frame and its bounds
// are operator/fileoutputs', the pod's directory and sidecar
// operator/taskjob's). The task's container writes files into an
// emptyDir; a native sidecar of the tools image waits for it to end, then
// writes them to its log and exits. When the task has succeeded, the
// operator reads that log once, in the reconcile that writes the finished
// status, before it lets the pod go (the outputs finalizer holds it): a
// restart before that write reads the same log again, and after it the
// status is finished and never recomputed. Nothing is read twice into a
// status, and nothing is lost while the pod is held.

// readFileOutputs reads the outputs sidecar's log of pod. An error is for
// the workqueue to retry (the pod is held); a *fileoutputs.Error is the
// task's, for its status.
func (r *Reconciler) readFileOutputs(ctx context.Context, pod *corev1.Pod) (map[string]string, *fileoutputs.Error, error) {
	if r.Logs == nil {
		return nil, nil, errors.New("no client to read the outputs sidecar's log")
	}
	maxBytes := taskjob.MaxBytesOf(pod)
	limit := fileoutputs.StreamBytes(maxBytes)
	ctx, cancel := context.WithTimeout(ctx, logReadTimeout)
	defer cancel()
	opts := &corev1.PodLogOptions{Container: taskjob.OutputsContainerName, LimitBytes: ptr.To(int64(limit) + 1)}
	rc, err := r.Logs.Pods(pod.Namespace).GetLogs(pod.Name, opts).Stream(ctx)
	var raw []byte
	if err == nil {
		raw, err = io.ReadAll(io.LimitReader(rc, int64(limit)+1))
		_ = rc.Close()
	}
	switch {
	case err == nil:
	case errors.Is(err, context.DeadlineExceeded) && ctx.Err() != nil && !errors.Is(ctx.Err(), context.DeadlineExceeded):
		return nil, nil, err
	case errors.Is(err, context.DeadlineExceeded), kubeletUnreachable(err), apierrors.IsNotFound(err), apierrors.IsBadRequest(err):
		return nil, &fileoutputs.Error{Reason: schedv1.ReasonOutputsInvalid, Message: fmt.Sprintf(
			"the outputs sidecar's log of pod %s could not be read (its node serves no logs, as simulated nodes do not, or the pod is gone): %v", pod.Name, err)}, nil
	case apierrors.IsForbidden(err):
		if retry := r.mayReadLogs(ctx, pod.Namespace); retry != nil {
			return nil, nil, retry
		}
		return nil, &fileoutputs.Error{Reason: schedv1.ReasonOutputsInvalid, Message: fmt.Sprintf(
			"the operator may not read pods' logs in namespace %s, so not the outputs sidecar's either: its RoleBinding %s there does not bind it to the ClusterRole %s",
			pod.Namespace, schedv1.OperatorPodLogsRole, schedv1.OperatorPodLogsRole)}, nil
	default:
		return nil, nil, fmt.Errorf("read the outputs sidecar's log of pod %s: %w", pod.Name, err)
	}
	if len(raw) > limit {
		return nil, &fileoutputs.Error{Reason: schedv1.ReasonOutputsTruncated, Message: fmt.Sprintf(
			"the outputs sidecar's log is longer than the %d bytes %d bytes of files take: something else wrote to it", limit, maxBytes)}, nil
	}
	outs, ferr := fileoutputs.Read(raw, schedv1.MaxFileOutputs, maxBytes)
	return outs, ferr, nil
}

// withFileOutputs puts a succeeded task's file outputs into its status,
// or fails it saying why they are unusable: all of them or none.
func withFileOutputs(st *schedv1.AgentTaskStatus, outs map[string]string, ferr *fileoutputs.Error, now metav1.Time) {
	if n := len(st.Outputs) + len(outs); ferr == nil && n > MaxOutputs {
		ferr = &fileoutputs.Error{Reason: schedv1.ReasonOutputsInvalid, Message: fmt.Sprintf(
			"the task has %d outputs, its termination message's and its files together; at most %d are allowed", n, MaxOutputs)}
	}
	if ferr == nil {
		for _, k := range slices.Sorted(maps.Keys(outs)) {
			if _, dup := st.Outputs[k]; dup {
				ferr = &fileoutputs.Error{Reason: schedv1.ReasonOutputsInvalid, Message: fmt.Sprintf(
					"output %s is both a file in spec.outputs.fromDir and in the termination message: write it in one place", k)}
				break
			}
		}
	}
	if ferr != nil {
		st.Outputs = nil
		finish(st, schedv1.TaskFailed, ferr.Reason, "the container exited 0 but its file outputs are unusable: "+ferr.Message, now)
		return
	}
	st.FileOutputs = outs
	if n := len(outs); n > 0 {
		size := 0
		for _, v := range outs {
			size += len(v)
		}
		finish(st, st.Phase, st.Reason, st.Message+fmt.Sprintf(" and %d file output(s) of %d bytes", n, size), now)
	}
}

// keepFileOutputs reads the file outputs of a task that has just
// succeeded into its status (computed, not yet written), or fails it
// saying why they are unusable. An error leaves the status unwritten, to
// be computed and read again.
func (r *Reconciler) keepFileOutputs(ctx context.Context, task *schedv1.AgentTask, before *schedv1.AgentTaskStatus, pods []corev1.Pod) error {
	st := &task.Status
	if task.Spec.Outputs == nil || before.Phase.Finished() || st.Phase != schedv1.TaskSucceeded {
		return nil
	}
	now := ptr.Deref(st.CompletionTime, metav1.NewTime(r.Clock.Now()))
	i := slices.IndexFunc(pods, func(p corev1.Pod) bool { return p.Name == st.PodName })
	if i < 0 {
		withFileOutputs(st, nil, &fileoutputs.Error{Reason: schedv1.ReasonOutputsInvalid, Message: fmt.Sprintf(
			"its pod %q was removed before its file outputs could be read", st.PodName)}, now)
		return nil
	}
	outs, ferr, err := r.readFileOutputs(ctx, &pods[i])
	if err != nil {
		return err
	}
	if ferr == nil {
		if ferr, err = r.fitsObject(ctx, task, outs); err != nil {
			return err
		}
	}
	withFileOutputs(st, outs, ferr, now)
	crashpoint.Hit(crashpoint.FileOutputsRead)
	return nil
}

// fitsObject refuses file outputs that the task, with its spec as large as
// it may be, cannot hold within an object's size and room for its status
// to grow: the status write would fail, over and over. Kept logs give way
// to them (logBudget), so they are left out.
func (r *Reconciler) fitsObject(ctx context.Context, task *schedv1.AgentTask, outs map[string]string) (*fileoutputs.Error, error) {
	whole := task.DeepCopy()
	if cachetrim.Trimmed(task) && r.APIReader != nil {
		// The cache dropped the bulk of its spec: weigh the task as stored.
		stored := &schedv1.AgentTask{}
		if err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(task), stored); err != nil {
			return nil, fmt.Errorf("read task %s to weigh its file outputs: %w", task.Name, err)
		}
		whole.Spec, whole.Annotations, whole.Labels = stored.Spec, stored.Annotations, stored.Labels
	}
	whole.Status.Logs, whole.ManagedFields, whole.Status.FileOutputs = nil, nil, outs
	data, err := json.Marshal(whole)
	if err != nil {
		return nil, err
	}
	if room := objectBytes - statusReserve; len(data) > room {
		return &fileoutputs.Error{Reason: schedv1.ReasonOutputsTruncated, Message: fmt.Sprintf(
			"the task with its file outputs would take %d bytes, past the %d an object may hold with room for its status: write smaller outputs, or make the spec smaller", len(data), room)}, nil
	}
	return nil, nil
}

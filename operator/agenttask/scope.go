package agenttask

import (
	"context"
	"errors"
	"fmt"

	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	podplacement "github.com/kubectl-sched/kubectl-sched/api/placement"
	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
	"github.com/kubectl-sched/kubectl-sched/operator/crashpoint"
	"github.com/kubectl-sched/kubectl-sched/operator/expiry"
	"github.com/kubectl-sched/kubectl-sched/operator/phase"
	"github.com/kubectl-sched/kubectl-sched/operator/refusal"
	"github.com/kubectl-sched/kubectl-sched/operator/status"
	"github.com/kubectl-sched/kubectl-sched/operator/taskjob"
)

// scope is what one reconcile of a task read, decided and did, passed
// through its phases (Reconcile) in order.
type scope struct {
	// task is the cache's copy, then the task read whole when logs are
	// kept (keepLogs).
	task *schedv1.AgentTask
	o    observed
	// hold is the Job's suspension for a backoff, and when to wake.
	hold jobHold
	// kept are the ended pods' logs the status written next keeps.
	kept []schedv1.KeptLog
}

// stopIfNamespaceEnds lets a task's pods go when its namespace is being
// deleted. Kubernetes deletes a terminating namespace's pods first and its
// AgentTasks only once the pods are gone (OrderedNamespaceDeletion), and no
// new attempt can start in it. A task with retries left never finishes, so
// its killed pod would keep the outputs finalizer and the namespace would
// stay Terminating for good: its pods go now, and the task with the
// namespace.
func (r *Reconciler) stopIfNamespaceEnds(ctx context.Context, s *scope) (phase.Result, error) {
	terminating, err := r.namespaceTerminating(ctx, s.task.Namespace)
	if err != nil || !terminating {
		return phase.Result{}, err
	}
	return phase.StopFor(0), r.releaseDeleted(ctx, s.task.Namespace, s.task.Name, s.task)
}

// observeTask reads the task's Job, pods and events, and whether it may
// run as its spec asks (taskjob.Starter.Refused).
func (r *Reconciler) observeTask(ctx context.Context, s *scope) (phase.Result, error) {
	o, err := r.observe(ctx, s.task)
	if err != nil {
		return phase.Result{}, err
	}
	s.o = o
	s.o.notAllowedReason, s.o.notAllowed, err = r.Jobs.Refused(ctx, s.task)
	return phase.Result{}, err
}

// deleteRefusedJob deletes the Job of a task that may not run as its spec
// asks: a Job's pod template cannot change, so it goes, and its pods with
// it.
func (r *Reconciler) deleteRefusedJob(ctx context.Context, s *scope) (phase.Result, error) {
	if s.o.notAllowed == "" || s.o.job == nil {
		return phase.Result{}, nil
	}
	if err := r.Delete(ctx, s.o.job, client.PropagationPolicy(metav1.DeletePropagationBackground)); client.IgnoreNotFound(err) != nil {
		return phase.Result{}, fmt.Errorf("delete job %s: %w", s.o.job.Name, err)
	}
	log.FromContext(ctx).Info("Deleted the Job of a task that asks for what it may not have", "job", s.o.job.Name, "reason", s.o.notAllowedReason)
	s.o.job = nil
	return phase.Result{}, nil
}

// ensureJob creates the Job of an unfinished task that has none, unless
// the Workflow controller is creating it. A refusal the status tells of
// is kept in the scope (observed.createErr); a view without the Job's
// create stops the reconcile, as its status would only be undone.
func (r *Reconciler) ensureJob(ctx context.Context, s *scope) (phase.Result, error) {
	task, o := s.task, &s.o
	if o.job != nil {
		r.Jobs.JobSeen(task)
	}
	if o.job != nil || o.foreignJob != nil || task.Status.Phase.Finished() || task.Spec.Cancel || o.notAllowed != "" {
		return phase.Result{}, nil
	}
	if wait := r.Jobs.LeftToWorkflow(task); wait > 0 {
		// The Workflow controller is creating this step's Job, or
		// created it and the cache does not show it yet: the Job's
		// event brings the task back, and this requeue should it
		// have failed. No status from a view without the Job.
		return phase.StopFor(wait), nil
	}
	job, err := r.createJob(ctx, task)
	o.job = job
	var taken *taskjob.NameTakenError
	switch {
	case errors.As(err, &taken):
		o.foreignJob = taken.Job
	case err != nil && refusal.Classify(err) != refusal.Transient:
		// Reported in the status: failed for good, or waiting on quota.
		o.createErr = err
	case err != nil || o.job == nil:
		// A nil Job means our cache is behind one we created: its
		// event brings us back, and a status from this stale view
		// would only be undone.
		return phase.StopFor(0), err
	}
	return phase.Result{}, nil
}

// suspendCancelled stops the Job of a cancelled task.
func (r *Reconciler) suspendCancelled(ctx context.Context, s *scope) (phase.Result, error) {
	task, job := s.task, s.o.job
	if !task.Spec.Cancel || job == nil || task.Status.Phase.Finished() || ptr.Deref(job.Spec.Suspend, false) {
		return phase.Result{}, nil
	}
	return phase.Result{}, r.suspendJob(ctx, job)
}

// holdForBackoff suspends the Job while the task waits to retry, and
// resumes it when the backoff ends (planHold).
func (r *Reconciler) holdForBackoff(ctx context.Context, s *scope) (phase.Result, error) {
	task := s.task
	if task.Status.Phase.Finished() || s.o.notAllowed != "" {
		return phase.Result{}, nil
	}
	s.hold = planHold(&task.Spec, s.o.job, sortedPods(unpruned(s.o.pods, task.Status.Pruned)), priorOf(task.Status.Pruned), r.Clock.Now())
	return phase.Result{}, r.applyHold(ctx, s.o.job, s.hold)
}

// readEndedLogs reads the ended pods' logs that go into the status written
// next, from the task read whole (the cache keeps the logs without their
// text). A finished task's pods, and those of a Job just deleted (which
// this reconcile is the last to see), are read as they are: they are
// being stopped, and released once kept.
func (r *Reconciler) readEndedLogs(ctx context.Context, s *scope) (phase.Result, error) {
	whole, kept, err := r.readLogs(ctx, s.task, s.o.pods, s.task.Status.Phase.Finished() || s.o.job == nil)
	if err != nil {
		return phase.Result{}, err
	}
	if whole != nil {
		s.task = whole
	}
	s.kept = kept
	return phase.Result{}, nil
}

// writeStatus computes the status and writes it, the reconcile's one
// status write (statusPace).
func (r *Reconciler) writeStatus(ctx context.Context, s *scope) (phase.Result, error) {
	task := s.task
	rules, err := expiry.Of(ctx, r.Client, task.Namespace, r.DefaultTTL)
	if err != nil {
		return phase.Result{}, err
	}
	before := task.Status.DeepCopy()
	if len(s.kept) > 0 {
		task.Status.Logs = keepLogs(task.Status.Logs, s.kept, logBudget(task))
	}
	task.Status = computeStatus(task, s.o, metav1.NewTime(r.Clock.Now()))
	// A task that has just succeeded gets its file outputs in this same
	// write, before tidyFinished lets its pod go.
	if err := r.keepFileOutputs(ctx, task, before, s.o.pods); err != nil {
		return phase.Result{}, err
	}
	task.Status.Expiry = expiry.ForTask(task, task.Status.CompletionTime, rules)
	if c, ok := podplacement.PriorityCondition(task.Spec.Placement, r.PriorityClasses); ok {
		status.SetCondition(&task.Status.Conditions, task.Generation, c)
	}
	out, err := r.writeTaskStatus(ctx, task, before, statusPace(task, len(s.kept) > 0))
	if err != nil {
		return phase.Result{}, err
	}
	if out.Wait > 0 {
		// Paced, or the cache is behind the last write: the next
		// reconcile writes it.
		if s.o.createErr != nil {
			return phase.Result{}, s.o.createErr
		}
		return phase.StopFor(out.Wait), nil
	}
	if len(s.kept) > 0 {
		crashpoint.Hit(crashpoint.LogsKept)
	}
	return phase.Result{}, nil
}

// deletePrunedPods deletes the pods the status now counts pruned.
func (r *Reconciler) deletePrunedPods(ctx context.Context, s *scope) (phase.Result, error) {
	return phase.Result{}, r.deletePruned(ctx, s.task, s.o.pods)
}

// retryRefusedCreate returns a create the quota refused, once the status
// tells of it: the workqueue's backoff paces the retries.
func retryRefusedCreate(_ context.Context, s *scope) (phase.Result, error) {
	if s.o.createErr != nil && !s.task.Status.Phase.Finished() {
		return phase.Result{}, s.o.createErr
	}
	return phase.Result{}, nil
}

// stopDisrupted holds for good the Job of a task failed for too many
// disruptions, as a cancel holds it, its pods kept: the Job would replace
// its pod again.
func (r *Reconciler) stopDisrupted(ctx context.Context, s *scope) (phase.Result, error) {
	job := s.o.job
	if s.task.Status.Reason != schedv1.ReasonTooManyDisruptions || job == nil || ptr.Deref(job.Spec.Suspend, false) ||
		jobCondition(job, batchv1.JobComplete) != nil || jobFailed(job) != nil {
		return phase.Result{}, nil
	}
	if err := r.suspendJob(ctx, job); err != nil {
		return phase.Result{}, fmt.Errorf("stop job %s after too many disruptions: %w", job.Name, err)
	}
	return phase.Result{}, nil
}

// tidyFinished, once the status holds a finished task's outputs and the
// logs of the pods that ended, lets those pods go, deletes the succeeded
// pods past their retention and applies the TTL.
func (r *Reconciler) tidyFinished(ctx context.Context, s *scope) (phase.Result, error) {
	task := s.task
	if !task.Status.Phase.Finished() {
		return phase.Result{}, nil
	}
	if err := r.releasePods(ctx, keptPods(task.Status.Logs, s.o.pods)); err != nil {
		return phase.Result{}, err
	}
	podsDue, err := r.deleteSucceededPods(ctx, task, s.o.job, s.o.pods)
	if err != nil {
		return phase.Result{}, err
	}
	res, err := r.applyTTL(ctx, task, s.o.job)
	if podsDue > 0 && (res.RequeueAfter == 0 || podsDue < res.RequeueAfter) {
		res.RequeueAfter = podsDue
	}
	return phase.StopFor(res.RequeueAfter), err
}

// wakeAfterBackoff brings the task back when its backoff ends (or its
// timeout, if sooner): nothing else happens to wake it then.
func (r *Reconciler) wakeAfterBackoff(_ context.Context, s *scope) (phase.Result, error) {
	if s.hold.wake.IsZero() {
		return phase.Result{}, nil
	}
	return phase.Requeue(s.hold.wake.Sub(r.Clock.Now())), nil
}

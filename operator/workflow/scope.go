package workflow

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
	"github.com/kubectl-sched/kubectl-sched/operator/crashpoint"
	"github.com/kubectl-sched/kubectl-sched/operator/expiry"
	"github.com/kubectl-sched/kubectl-sched/operator/phase"
	"github.com/kubectl-sched/kubectl-sched/operator/refusal"
	"github.com/kubectl-sched/kubectl-sched/operator/status"
)

// scope is what one reconcile of a workflow read, decided and did, passed
// through its phases (Reconcile) in order.
type scope struct {
	wf  *schedv1.Workflow
	now metav1.Time
	// rules are the namespace's TTL rules (expiry).
	rules expiry.Rules
	tasks map[int]*schedv1.AgentTask
	items itemTasks
	// p is what decide planned; its status is the one written.
	p plan
	// quotaErr is a create the quota refused, told in the status, then
	// returned for the workqueue's backoff.
	quotaErr error
	// heldForWorkspace: a create waits for a workspace's node.
	heldForWorkspace bool
}

// readRules reads the namespace's TTL rules.
func (r *Reconciler) readRules(ctx context.Context, s *scope) (phase.Result, error) {
	rules, err := expiry.Of(ctx, r.Client, s.wf.Namespace, r.DefaultTTL)
	s.rules = rules
	return phase.Result{}, err
}

// tidyFinished keeps a finished workflow's expiry current (its tier may
// have changed since it finished) and applies its TTL.
func (r *Reconciler) tidyFinished(ctx context.Context, s *scope) (phase.Result, error) {
	wf := s.wf
	if !wf.Status.Phase.Finished() {
		return phase.Result{}, nil
	}
	st := *wf.Status.DeepCopy()
	st.Expiry = expiry.ForWorkflow(wf, st.CompletionTime, s.rules)
	out, err := r.writeWorkflowStatus(ctx, wf, st, status.Now)
	if err != nil || out.Wait > 0 {
		return phase.StopFor(out.Wait), client.IgnoreNotFound(err)
	}
	res, err := r.applyTTL(ctx, wf, s.now)
	return phase.StopFor(res.RequeueAfter), err
}

// decideSteps reads the step tasks (and the run retried) and decides
// (plan.go).
func (r *Reconciler) decideSteps(ctx context.Context, s *scope) (phase.Result, error) {
	wf := s.wf
	tasks, items, err := r.stepTasks(ctx, wf)
	if err != nil {
		return phase.Result{}, err
	}
	prev, err := r.retried(ctx, wf)
	if err != nil {
		return phase.Result{}, err
	}
	s.tasks, s.items = tasks, items
	s.p = decideCached(wf, tasks, items, prev, approvalRules{forbidSelf: r.ForbidSelfApproval}, r.cacheLookupIn(ctx, wf.Namespace), s.now)
	if newCacheHits(wf.Status, s.p.status) {
		crashpoint.Hit(crashpoint.StepCacheHit)
	}
	return phase.Result{}, nil
}

// cancelSteps stops the step tasks decide cancels.
func (r *Reconciler) cancelSteps(ctx context.Context, s *scope) (phase.Result, error) {
	for _, t := range s.p.cancels {
		patch := client.MergeFrom(t.DeepCopy())
		t.Spec.Cancel = true
		if err := r.Patch(ctx, t, patch); client.IgnoreNotFound(err) != nil {
			return phase.Result{}, fmt.Errorf("stop step task %s: %w", t.Name, err)
		}
	}
	return phase.Result{}, nil
}

// readyWorkspaces places the workspaces and makes the claims the creates
// mount, taking back the creates that cannot start yet (workspaces.go).
func (r *Reconciler) readyWorkspaces(ctx context.Context, s *scope) (phase.Result, error) {
	if err := r.placeWorkspaces(ctx, s.wf, s.tasks, s.items, &s.p); err != nil {
		return phase.Result{}, err
	}
	quotaErr, held, err := r.prepareWorkspaces(ctx, s.wf, s.tasks, s.items, &s.p, s.now)
	s.quotaErr, s.heldForWorkspace = quotaErr, held
	return phase.Result{}, err
}

// createSteps creates the step tasks that start now, and folds what
// became of them into the status (foldCreates).
func (r *Reconciler) createSteps(ctx context.Context, s *scope) (phase.Result, error) {
	errs, err := r.createStepTasks(ctx, s.wf, s.p.creates)
	if len(s.p.creates) > 0 {
		crashpoint.Hit(crashpoint.StepTasksCreated)
	}
	if err != nil {
		return phase.Result{}, err
	}
	outcomes, err := r.createOutcomes(ctx, s.wf, s.p.creates, errs)
	if err != nil {
		return phase.Result{}, err
	}
	st, quotaErr := foldCreates(s.wf, s.p.status, outcomes, s.now)
	s.p.status = st
	if quotaErr != nil {
		s.quotaErr = quotaErr
	}
	return phase.Result{}, nil
}

// writeStatus writes the status decide computed, with its outcomes folded
// in, the reconcile's one status write: paced (statusPace), and never
// from a cache behind its own last write. The creates are done; a status that
// waits is written by the next reconcile.
func (r *Reconciler) writeStatus(ctx context.Context, s *scope) (phase.Result, error) {
	wf, p := s.wf, &s.p
	p.status.Expiry = expiry.ForWorkflow(wf, p.status.CompletionTime, s.rules)
	out, err := r.writeWorkflowStatus(ctx, wf, p.status, statusPace(&wf.Status, &p.status, len(p.creates) > 0))
	if err != nil {
		return phase.Result{}, err
	}
	if out.Wait > 0 {
		// Paced, or the cache is behind the last write (a write now
		// would be refused as a Conflict): its event, or this requeue,
		// brings the workflow back.
		if s.quotaErr != nil {
			return phase.Result{}, s.quotaErr
		}
		return phase.StopFor(out.Wait), nil
	}
	// The workqueue's backoff paces the retries until the quota has room.
	return phase.Result{}, s.quotaErr
}

// recheck brings the workflow back for its TTL once finished, for a
// workspace's node, or at its deadline.
func (r *Reconciler) recheck(ctx context.Context, s *scope) (phase.Result, error) {
	if s.wf.Status.Phase.Finished() {
		res, err := r.applyTTL(ctx, s.wf, s.now)
		return phase.StopFor(res.RequeueAfter), err
	}
	at := s.p.requeueAt
	if s.heldForWorkspace && (at.IsZero() || at.Sub(s.now.Time) > workspaceRecheck) {
		return phase.Requeue(workspaceRecheck), nil
	}
	if !at.IsZero() {
		return phase.Requeue(at.Sub(s.now.Time)), nil
	}
	return phase.Result{}, nil
}

// createOutcomes are what became of each create (errs, in order): the
// holder of a name that already exists is read past the cache. A
// transient refusal ends the reconcile: the tasks created so far are
// found by name next time.
func (r *Reconciler) createOutcomes(ctx context.Context, wf *schedv1.Workflow, creates []stepCreate, errs []error) ([]createOutcome, error) {
	outcomes := make([]createOutcome, 0, len(creates))
	for i, c := range creates {
		o := createOutcome{create: c, err: errs[i]}
		switch class := refusal.Classify(o.err); {
		case apierrors.IsAlreadyExists(o.err):
			// Ours, which the cache has not seen yet (its event brings us
			// back), or someone else's, which the step never takes.
			taken, err := r.takenBy(ctx, wf, c.task.Name)
			if err != nil {
				return nil, err
			}
			o.taken = taken
		case o.err == nil && c.loop:
			log.FromContext(ctx).V(1).Info("Created item AgentTask", "task", c.task.Name, "step", c.step, "item", c.item)
		case o.err == nil:
			log.FromContext(ctx).Info("Created step AgentTask", "task", c.task.Name, "step", c.step)
		case class != refusal.Final && class != refusal.Quota:
			return nil, fmt.Errorf("create step task %s: %w", c.task.Name, o.err)
		}
		outcomes = append(outcomes, o)
	}
	return outcomes, nil
}

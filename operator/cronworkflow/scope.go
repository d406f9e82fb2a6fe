package cronworkflow

import (
	"context"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/log"

	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
	"github.com/kubectl-sched/kubectl-sched/operator/crashpoint"
	"github.com/kubectl-sched/kubectl-sched/operator/phase"
	"github.com/kubectl-sched/kubectl-sched/operator/refusal"
	"github.com/kubectl-sched/kubectl-sched/operator/status"
)

// scope is what one reconcile of a CronWorkflow read, decided and did,
// passed through its phases (Reconcile) in order.
type scope struct {
	cw  *schedv1.CronWorkflow
	now time.Time
	// p is what decide planned, with the run's start folded in
	// (foldStart).
	p plan
}

// decideRuns reads the runs and decides (plan.go).
func (r *Reconciler) decideRuns(ctx context.Context, s *scope) (phase.Result, error) {
	runs, err := r.runs(ctx, s.cw)
	if err != nil {
		return phase.Result{}, err
	}
	s.p = decide(s.cw, runs, s.now)
	return phase.Result{}, nil
}

// deleteRuns deletes what Replace and the history limits say, each run
// told in an event once it is deleted.
func (r *Reconciler) deleteRuns(ctx context.Context, s *scope) (phase.Result, error) {
	for _, d := range s.p.deletes {
		err := r.Delete(ctx, d.run, client.PropagationPolicy(metav1.DeletePropagationBackground), client.Preconditions{UID: &d.run.UID})
		if client.IgnoreNotFound(err) != nil && !apierrors.IsConflict(err) {
			return phase.Result{}, fmt.Errorf("delete run %s: %w", d.run.Name, err)
		}
		if err == nil {
			r.record(s.cw, d.ev)
		}
	}
	return phase.Result{}, nil
}

// startRun creates the due run, and folds what became of it into the plan
// (foldStart).
func (r *Reconciler) startRun(ctx context.Context, s *scope) (phase.Result, error) {
	if s.p.create == nil {
		return phase.Result{}, nil
	}
	o, err := r.start(ctx, s.cw, &s.p)
	if err != nil {
		return phase.Result{}, err
	}
	s.p = foldStart(s.cw, s.p, o)
	return phase.Result{}, nil
}

// tellEvents records the plan's events before the status: what was done
// is said even if the write fails.
func (r *Reconciler) tellEvents(_ context.Context, s *scope) (phase.Result, error) {
	for _, e := range s.p.events {
		r.record(s.cw, e)
	}
	return phase.Result{}, nil
}

// writeStatus writes the status, the reconcile's one status write, at
// once (status.Now). The patch is of the metadata and status alone, and
// the API server's answer lands in them, not in the cache's spec (the
// Writer never writes nor replaces it). A cache behind the last write
// waits for it: the runs were started above, by names the next reconcile
// finds again.
func (r *Reconciler) writeStatus(ctx context.Context, s *scope) (phase.Result, error) {
	was := s.cw.Status
	s.cw.Status = s.p.status
	out, err := r.writer.Write(ctx, s.cw, was, status.Now)
	if err != nil || out.Wait > 0 {
		return phase.StopFor(out.Wait), err // a Conflict too: see status.Patch
	}
	return phase.Result{}, nil
}

// nextSchedule brings the CronWorkflow back at its next schedule time.
func nextSchedule(_ context.Context, s *scope) (phase.Result, error) {
	if s.p.requeueAt.IsZero() {
		return phase.Result{}, nil
	}
	return phase.Requeue(s.p.requeueAt.Sub(s.now)), nil
}

// startOutcome is what became of the due run's create: started (created,
// or found the CronWorkflow's own); taken, another owner's Workflow of the
// run's name; or err, a refusal for good or for a full quota.
type startOutcome struct {
	taken *schedv1.Workflow
	err   error
}

// start creates the due run. A refusal no retry can pass, or a name
// taken, is returned as the outcome foldStart folds in; anything else is
// an error, retried with backoff.
func (r *Reconciler) start(ctx context.Context, cw *schedv1.CronWorkflow, p *plan) (startOutcome, error) {
	run := p.create
	if err := controllerutil.SetControllerReference(cw, run, r.Scheme()); err != nil {
		return startOutcome{}, err
	}
	err := r.Create(ctx, run)
	if err == nil {
		crashpoint.Hit(crashpoint.CronRunCreated)
		log.FromContext(ctx).Info("Created CronWorkflow run", "workflow", run.Name, "scheduled", p.scheduled)
		return startOutcome{}, nil
	}
	if apierrors.IsAlreadyExists(err) {
		// Ours, which the cache has not seen yet, or someone else's.
		existing := &schedv1.Workflow{}
		if err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(run), existing); err != nil {
			return startOutcome{}, fmt.Errorf("read run %s after it already existed: %w", run.Name, err)
		}
		if metav1.IsControlledBy(existing, cw) {
			return startOutcome{}, nil
		}
		return startOutcome{taken: existing}, nil
	}
	if class := refusal.Classify(err); class == refusal.Final || class == refusal.Quota {
		return startOutcome{err: err}, nil
	}
	return startOutcome{}, fmt.Errorf("create run %s: %w", run.Name, err)
}

// foldStart is p with what became of its run's create folded in: started,
// it lists the run as active; a name taken, or a refusal for good, gives
// the schedule time up and says why in Ready and an event; a full quota
// waits for room (the quota's change brings the CronWorkflow back). It is
// pure: p's status and events are not changed.
func foldStart(cw *schedv1.CronWorkflow, p plan, o startOutcome) plan {
	p.status = *p.status.DeepCopy()
	p.events = slices.Clone(p.events)
	switch {
	case o.taken != nil:
		p.refused(cw, schedv1.ReasonNameTaken, fmt.Sprintf("the run for %s is named %s, and a Workflow of that name exists that is not a run of this CronWorkflow; that time is skipped. Rename or delete that Workflow", p.format(p.scheduled), p.create.Name), true)
		p.events = append(p.events, event{corev1.EventTypeWarning, schedv1.ReasonNameTaken, "Create", readyMessage(&p), o.taken})
	case o.err != nil && refusal.Classify(o.err) == refusal.Final:
		p.refused(cw, schedv1.ReasonRejected, fmt.Sprintf("the run for %s was refused, and that time is skipped: %s; fix spec.workflowSpec (the next run uses it)", p.format(p.scheduled), refusal.Message(o.err)), true)
		p.events = append(p.events, event{corev1.EventTypeWarning, schedv1.ReasonRejected, "Create", readyMessage(&p), nil})
	case o.err != nil:
		p.refused(cw, schedv1.ReasonQuotaExceeded, fmt.Sprintf("the run for %s waits for room in the namespace's quota: %s", p.format(p.scheduled), refusal.Message(o.err)), false)
	default:
		p.started(cw)
	}
	return p
}

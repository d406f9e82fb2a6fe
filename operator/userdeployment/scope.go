package userdeployment

import (
	"cmp"
	"context"
	"errors"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/kubectl-sched/kubectl-sched/api/tiers"
	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
	"github.com/kubectl-sched/kubectl-sched/operator/phase"
	"github.com/kubectl-sched/kubectl-sched/operator/status"
)

// scope is what one reconcile of an app read, decided and did, passed
// through its phases (Reconcile) in order.
type scope struct {
	syncState
	// before is the status the app was read with.
	before schedv1.UserDeploymentStatus
	// rv are the app's revisions; the plan builds rv.restored when set.
	rv   revisions
	plan plan
	// heldByRoute: another namespace's route serves the app's host.
	heldByRoute bool
	pods        map[string][]corev1.Pod
	// noCPUScheduler explains unschedulable pods (cpuSchedulerCause).
	noCPUScheduler string
	// now is when the pods were observed: deadlines count to it.
	now time.Time
	// rollbackIn is how long until the spec's revision is rolled back.
	rollbackIn time.Duration
}

// readTier reads what the namespace's tier says of the app's objects.
func (r *Reconciler) readTier(ctx context.Context, s *scope) (phase.Result, error) {
	limits, err := tiers.LimitsOf(ctx, r.Client, s.ud.Namespace)
	s.tier = limits
	return phase.Result{}, err
}

// recordRevision records the spec's revision first: a crash after this
// finds it again. It says which revision runs: the spec's, or the one
// rolled back to.
func (r *Reconciler) recordRevision(ctx context.Context, s *scope) (phase.Result, error) {
	rv, err := r.revisionsOf(ctx, &s.syncState)
	s.rv = rv
	return phase.Result{}, err
}

// planApp builds what runs (the spec, or the revision rolled back to
// restored into it) with one view of the optional APIs, and fits it to
// what holds the app's host and which workloads an autoscaler scales.
func (r *Reconciler) planApp(ctx context.Context, s *scope) (phase.Result, error) {
	run := s.ud
	if s.rv.restored != nil {
		run = s.rv.restored
	}
	a := r.apisInUse()
	p, err := r.planFor(ctx, run, a)
	if err != nil {
		return phase.Result{}, err
	}
	if s.tier != nil {
		p.defaultPriorityClass(s.tier.DefaultPriorityClass)
	}
	if s.owned, err = r.observeOwned(ctx, s.ud, a); err != nil {
		return phase.Result{}, err
	}
	if s.heldByRoute, err = r.checkHost(ctx, s.ud, &p, s.owned); err != nil {
		return phase.Result{}, err
	}
	targets, err := r.autoscaled(ctx, s.ud.Namespace, p.objects)
	if err != nil {
		return phase.Result{}, err
	}
	p.leaveReplicasTo(targets)
	s.plan = p
	return phase.Result{}, nil
}

// applyPlan writes the plan's objects. A namespace being deleted takes the
// app with it: nothing more to do.
func (r *Reconciler) applyPlan(ctx context.Context, s *scope) (phase.Result, error) {
	r.applyObjects(ctx, &s.syncState, s.plan)
	return phase.Result{Stop: s.terminating}, nil
}

// deleteAndReport deletes what the plan no longer has, and tells what
// this reconcile changed.
func (r *Reconciler) deleteAndReport(ctx context.Context, s *scope) (phase.Result, error) {
	r.deleteUnwanted(ctx, &s.syncState, s.plan)
	r.recordChanges(ctx, &s.syncState)
	return phase.Result{}, nil
}

// observeRunning reads the app's pods and why they may not schedule.
func (r *Reconciler) observeRunning(ctx context.Context, s *scope) (phase.Result, error) {
	var err error
	if s.pods, err = r.observePods(ctx, s.ud); err != nil {
		return phase.Result{}, err
	}
	s.noCPUScheduler, err = r.cpuSchedulerCause(ctx, s.ud, s.pods)
	s.now = time.Now()
	return phase.Result{}, err
}

// observed is what the status is computed from.
func (s *scope) observed() observed {
	o := observed{deployments: s.deployments, pods: s.pods, problems: s.problems, now: s.now, noCPUScheduler: s.noCPUScheduler,
		runRevision: s.rv.run, rolledBack: s.rv.rolledBack}
	if s.rv.current != nil {
		o.currentRevision, o.currentCreated = s.rv.current.Revision, s.rv.current.CreationTimestamp.Time
	}
	if s.plan.certificate != "" {
		o.certificate, _ = s.owned[objectKey{certificateGVK.Kind, s.plan.certificate}].(*unstructured.Unstructured)
	}
	return o
}

// writeStatus computes the status and writes it, the reconcile's one
// status write, with an event when the phase is reached. A revision that
// does not become Running is rolled back once its deadline passes: the
// status says so first, and the next reconcile builds the app from the
// revision rolled back to.
func (r *Reconciler) writeStatus(ctx context.Context, s *scope) (phase.Result, error) {
	ud := s.ud
	var rollback *note
	ud.Status, rollback, s.rollbackIn = foldRollback(ud, computeStatus(ud, s.plan, s.observed()), s.rv, s.now)
	if rollback != nil {
		log.FromContext(ctx).Info("Rolling back", "from", ud.Status.RolledBack.FromRevision, "to", ud.Status.RolledBack.ToRevision, "why", rollback.message)
	}
	out, err := r.writer.Write(ctx, ud, s.before, status.Now)
	if err != nil {
		return phase.Result{}, err // a Conflict too: see status.Patch
	}
	if out.Wait > 0 {
		// The cache has not seen the last write: the next reconcile
		// decides from one that has.
		return phase.StopFor(out.Wait), nil
	}
	if out.Wrote && s.before.Phase != ud.Status.Phase {
		ready := meta.FindStatusCondition(ud.Status.Conditions, schedv1.ConditionReady)
		log.FromContext(ctx).Info("UserDeployment phase changed", "from", s.before.Phase, "to", ud.Status.Phase, "reason", ready.Reason)
		if n, ok := phaseEvent(s.before.Phase, &ud.Status); ok {
			r.Recorder.Eventf(ud, nil, n.typ, n.reason, n.action, "%s", n.message)
		}
	}
	if rollback != nil {
		r.Recorder.Eventf(ud, nil, rollback.typ, rollback.reason, rollback.action, "%s", rollback.message)
		// The status write wakes nothing up (SetupWithManager).
		return phase.StopFor(time.Millisecond), nil
	}
	return phase.Result{}, nil
}

// tidyUp moves pods off detached nodes, deletes failed pods and trims the
// revisions once the status is written, and retries what failed.
func (r *Reconciler) tidyUp(ctx context.Context, s *scope) (phase.Result, error) {
	s.errs = append(s.errs, r.moveOffDetached(ctx, s.ud, s.pods, s.deployments), r.deleteFailedPods(ctx, s.pods))
	r.trimRevisions(ctx, &s.syncState, s.rv, &s.ud.Status)
	return phase.Result{}, errors.Join(s.errs...)
}

// recheck brings the app back when a progress deadline or a rollback's
// passes, with no event to say so, and after conflictRetry while a name
// or host is held by another.
func recheck(_ context.Context, s *scope) (phase.Result, error) {
	after := recheckAfter(s.ud.Spec.Deadline(), s.ud.Status, s.now)
	if s.rollbackIn > 0 {
		after = min(s.rollbackIn, cmp.Or(after, s.rollbackIn))
	}
	if s.conflict || s.heldByRoute {
		after = min(conflictRetry, cmp.Or(after, conflictRetry))
	}
	return phase.Requeue(after), nil
}

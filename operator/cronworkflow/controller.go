// Package cronworkflow reconciles CronWorkflows: a Workflow started at each
// schedule time, as the CronJob controller starts Jobs. plan.go decides
// from the object, its runs and the clock; controller.go reads and writes.
package cronworkflow

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/recorder"

	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
	"github.com/kubectl-sched/kubectl-sched/operator/cachetrim"
	"github.com/kubectl-sched/kubectl-sched/operator/crashpoint"
	"github.com/kubectl-sched/kubectl-sched/operator/refusal"
	"github.com/kubectl-sched/kubectl-sched/operator/status"
)

// ownerIndex indexes Workflows by the name of the CronWorkflow that
// controls them.
const ownerIndex = "cronworkflow.controller"

// Reconciler reconciles CronWorkflows.
type Reconciler struct {
	client.Client
	// APIReader reads past the cache: a run named in the status that the
	// cache lacks may be new or gone, a name that already exists may be
	// ours or someone else's, and a large spec is not cached whole.
	APIReader client.Reader
	Recorder  recorder.EventRecorder
	// Clock says when it is; tests give a fake one.
	Clock clock.PassiveClock
}

// The runs are Workflows in the CronWorkflow's namespace, made with the
// operator's rights only after the Workflow's admission checks pass.
// +kubebuilder:rbac:groups=sched.kubectl-sched.dev,resources=cronworkflows,verbs=get;list;watch
// +kubebuilder:rbac:groups=sched.kubectl-sched.dev,resources=cronworkflows/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=sched.kubectl-sched.dev,resources=workflows,verbs=get;list;watch;create;delete
// +kubebuilder:rbac:groups="",resources=resourcequotas,verbs=get;list;watch

// Reconcile reads the CronWorkflow and its runs, decides (plan.go), deletes
// what Replace and the history limits say, starts the due run, and writes
// the status once. It comes back at the next schedule time.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	// The spec, which no reconcile changes, stays the cache's, read only
	// (each run copies it); the metadata and status, which a reconcile
	// changes, are copies. One whose spec the cache does not hold whole
	// (TrimCron) is read past the cache.
	cw := &schedv1.CronWorkflow{}
	if err := r.Get(ctx, req.NamespacedName, cw, client.UnsafeDisableDeepCopy); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if cachetrim.Trimmed(cw) {
		*cw = schedv1.CronWorkflow{}
		if err := r.APIReader.Get(ctx, req.NamespacedName, cw); err != nil {
			return ctrl.Result{}, client.IgnoreNotFound(err)
		}
	} else {
		cw.ObjectMeta, cw.Status = *cw.ObjectMeta.DeepCopy(), *cw.Status.DeepCopy()
	}
	if !cw.DeletionTimestamp.IsZero() {
		// Owner references delete the runs.
		return ctrl.Result{}, nil
	}
	now := r.Clock.Now()
	runs, err := r.runs(ctx, cw)
	if err != nil {
		return ctrl.Result{}, err
	}
	p := decide(cw, runs, now)

	for _, d := range p.deletes {
		err := r.Delete(ctx, d.run, client.PropagationPolicy(metav1.DeletePropagationBackground), client.Preconditions{UID: &d.run.UID})
		if client.IgnoreNotFound(err) != nil && !apierrors.IsConflict(err) {
			return ctrl.Result{}, fmt.Errorf("delete run %s: %w", d.run.Name, err)
		}
		if err == nil {
			r.record(cw, d.ev)
		}
	}
	if p.create != nil {
		if err := r.start(ctx, cw, &p); err != nil {
			return ctrl.Result{}, err
		}
	}
	// Before the status: what was done is said even if the write fails.
	for _, e := range p.events {
		r.record(cw, e)
	}
	// The patch is of the metadata and status alone, and the API server's
	// answer lands in an object of its own, not in the cache's spec.
	before := &schedv1.CronWorkflow{ObjectMeta: cw.ObjectMeta, Status: cw.Status}
	after := &schedv1.CronWorkflow{ObjectMeta: *cw.ObjectMeta.DeepCopy(), Status: p.status}
	if _, err := status.Patch(ctx, r.Client, after, before); err != nil {
		return ctrl.Result{}, err // a Conflict too: see status.Patch
	}
	if p.requeueAt.IsZero() {
		return ctrl.Result{}, nil
	}
	return ctrl.Result{RequeueAfter: max(p.requeueAt.Sub(now), 0)}, nil
}

// start creates the due run. A refusal no retry can pass gives its
// schedule time up and says why in Ready; a full quota waits for room
// (the quota's change brings the CronWorkflow back); anything else is
// retried with backoff.
func (r *Reconciler) start(ctx context.Context, cw *schedv1.CronWorkflow, p *plan) error {
	run := p.create
	if err := controllerutil.SetControllerReference(cw, run, r.Scheme()); err != nil {
		return err
	}
	err := r.Create(ctx, run)
	if err == nil {
		crashpoint.Hit(crashpoint.CronRunCreated)
		log.FromContext(ctx).Info("Created CronWorkflow run", "workflow", run.Name, "scheduled", p.scheduled)
		p.started(cw)
		return nil
	}
	if apierrors.IsAlreadyExists(err) {
		// Ours, which the cache has not seen yet, or someone else's.
		existing := &schedv1.Workflow{}
		if err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(run), existing); err != nil {
			return fmt.Errorf("read run %s after it already existed: %w", run.Name, err)
		}
		if metav1.IsControlledBy(existing, cw) {
			p.started(cw)
			return nil
		}
		p.refused(cw, schedv1.ReasonNameTaken, fmt.Sprintf("the run for %s is named %s, and a Workflow of that name exists that is not a run of this CronWorkflow; that time is skipped. Rename or delete that Workflow", p.format(p.scheduled), run.Name), true)
		p.events = append(p.events, event{corev1.EventTypeWarning, schedv1.ReasonNameTaken, "Create", readyMessage(p), existing})
		return nil
	}
	switch refusal.Classify(err) {
	case refusal.Final:
		p.refused(cw, schedv1.ReasonRejected, fmt.Sprintf("the run for %s was refused, and that time is skipped: %s; fix spec.workflowSpec (the next run uses it)", p.format(p.scheduled), refusal.Message(err)), true)
		p.events = append(p.events, event{corev1.EventTypeWarning, schedv1.ReasonRejected, "Create", readyMessage(p), nil})
		return nil
	case refusal.Quota:
		p.refused(cw, schedv1.ReasonQuotaExceeded, fmt.Sprintf("the run for %s waits for room in the namespace's quota: %s", p.format(p.scheduled), refusal.Message(err)), false)
		return nil
	}
	return fmt.Errorf("create run %s: %w", run.Name, err)
}

func (r *Reconciler) record(cw *schedv1.CronWorkflow, e event) {
	r.Recorder.Eventf(cw, e.related, e.typ, e.reason, e.action, "%s", e.note)
}

func readyMessage(p *plan) string {
	if c := readyCondition(&p.status); c != nil {
		return c.Message
	}
	return ""
}

// runs are the Workflows the CronWorkflow controls: from the cache, plus
// those the status lists as running that the cache lacks yet (read past
// it), so a run just made is not forgotten.
func (r *Reconciler) runs(ctx context.Context, cw *schedv1.CronWorkflow) ([]*schedv1.Workflow, error) {
	// Read only (decide reads them, Delete takes them): not copied.
	var list schedv1.WorkflowList
	if err := r.List(ctx, &list, client.InNamespace(cw.Namespace), client.MatchingFields{ownerIndex: cw.Name}, client.UnsafeDisableDeepCopy); err != nil {
		return nil, err
	}
	var runs []*schedv1.Workflow
	seen := map[string]bool{}
	for i := range list.Items {
		if wf := &list.Items[i]; metav1.IsControlledBy(wf, cw) {
			runs = append(runs, wf)
			seen[wf.Name] = true
		}
	}
	for _, a := range cw.Status.Active {
		if seen[a.Name] {
			continue
		}
		wf := &schedv1.Workflow{}
		err := r.APIReader.Get(ctx, client.ObjectKey{Namespace: cw.Namespace, Name: a.Name}, wf)
		switch {
		case err == nil && metav1.IsControlledBy(wf, cw):
			runs = append(runs, wf)
		case err != nil && !apierrors.IsNotFound(err):
			return nil, err
		}
	}
	return runs, nil
}

// controllerName is the CronWorkflow a Workflow's controller reference
// names, for the index.
func controllerName(o client.Object) []string {
	ref := metav1.GetControllerOf(o)
	if ref == nil || ref.Kind != "CronWorkflow" || ref.APIVersion != schedv1.GroupVersion.String() {
		return nil
	}
	return []string{ref.Name}
}

// SetupWithManager watches CronWorkflows, the Workflows they own, and the
// quotas a refused run waits on.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager, opts controller.Options) error {
	if r.Clock == nil {
		r.Clock = clock.RealClock{}
	}
	if err := mgr.GetFieldIndexer().IndexField(context.Background(), &schedv1.Workflow{}, ownerIndex, controllerName); err != nil {
		return err
	}
	if err := refusal.IndexWaiting(context.Background(), mgr.GetFieldIndexer(), &schedv1.CronWorkflow{}, func(o client.Object) bool {
		cw, ok := o.(*schedv1.CronWorkflow)
		if !ok {
			return false
		}
		c := readyCondition(&cw.Status)
		return c != nil && c.Reason == schedv1.ReasonQuotaExceeded
	}); err != nil {
		return err
	}
	return ctrl.NewControllerManagedBy(mgr).
		For(&schedv1.CronWorkflow{}).
		Owns(&schedv1.Workflow{}).
		Watches(&corev1.ResourceQuota{}, refusal.OnQuotaChange(mgr.GetClient(), func() client.ObjectList { return &schedv1.CronWorkflowList{} }),
			builder.WithPredicates(refusal.GivesRoom)).
		WithOptions(opts).
		Named("cronworkflow").
		Complete(r)
}

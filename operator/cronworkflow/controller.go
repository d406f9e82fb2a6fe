// Package cronworkflow reconciles CronWorkflows: a Workflow started at each
// schedule time, as the CronJob controller starts Jobs. plan.go decides
// from the object, its runs and the clock; controller.go reads and writes.
package cronworkflow

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/recorder"

	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
	"github.com/kubectl-sched/kubectl-sched/operator/cachetrim"
	"github.com/kubectl-sched/kubectl-sched/operator/phase"
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

	// writer writes the CronWorkflows' statuses: only what changed, never
	// from a cache behind its own last write.
	writer status.Writer
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
	return phase.Run(ctx, &scope{cw: cw, now: r.Clock.Now()},
		r.decideRuns,
		r.deleteRuns,
		r.startRun,
		r.tellEvents,
		r.writeStatus,
		nextSchedule,
	)
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
	r.writer.Client, r.writer.Clock = r.Client, r.Clock
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

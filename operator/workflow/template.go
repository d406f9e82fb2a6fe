package workflow

import (
	"context"
	"errors"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log"

	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
	"github.com/kubectl-sched/kubectl-sched/api/wftemplate"
	"github.com/kubectl-sched/kubectl-sched/operator/phase"
	"github.com/kubectl-sched/kubectl-sched/operator/status"
)

// templateWait is how often a run whose template does not exist looks
// for it again: one read per run, bounded by the namespace's workflow count.
const templateWait = 30 * time.Second

// The one update the operator makes to a Workflow's spec: copying its
// template in (kubectl-sched-workflow-spec lets it, once). Templates are
// read past the cache, one get when a run starts, so the cache holds none.
// +kubebuilder:rbac:groups=sched.kubectl-sched.dev,resources=workflows,verbs=update
// +kubebuilder:rbac:groups=sched.kubectl-sched.dev,resources=workflowtemplates;clusterworkflowtemplates,verbs=get

// resolveTemplate copies the template wf names into its spec
// (api/wftemplate); the update's event brings wf back to run. A
// template that does not exist keeps wf Pending, looked for again every
// templateWait; a param it does not declare, or a copy the API server
// refuses (its admission policies check the copy as they check any
// workflow written in wf's namespace), fails wf. Either is in the Ready condition and an Event.
func (r *Reconciler) resolveTemplate(ctx context.Context, wf *schedv1.Workflow, now metav1.Time) (ctrl.Result, error) {
	prev, err := r.retried(ctx, wf)
	if err != nil {
		return ctrl.Result{}, err
	}
	spec, err := wftemplate.Resolve(ctx, r.APIReader, wf, prev)
	if err == nil {
		filled := wf.DeepCopy()
		filled.Spec = spec
		err = r.Update(ctx, filled)
		switch {
		case err == nil:
			ref := spec.WorkflowTemplateRef
			log.FromContext(ctx).Info("Copied the workflow's template in", "template", ref.String(), "resourceVersion", ref.ResourceVersion)
			r.Recorder.Eventf(wf, nil, corev1.EventTypeNormal, schedv1.ReasonTemplateResolved, "Resolve", "took the steps of %s (resourceVersion %s)", ref, ref.ResourceVersion)
			return ctrl.Result{}, nil
		case apierrors.IsConflict(err) || apierrors.IsNotFound(err):
			// The cache's copy was behind: the newer one comes back
			// with its event, or after a second.
			return ctrl.Result{RequeueAfter: time.Second}, nil
		case apierrors.IsInvalid(err) || apierrors.IsForbidden(err) || apierrors.IsRequestEntityTooLargeError(err) || apierrors.IsBadRequest(err):
			// Refused by the CRD's rules or an admission policy (those of the
			// run's namespace, such as its tier's placement bounds): final.
			err = &wftemplate.Error{Reason: schedv1.ReasonInvalidSpec, Message: "the run cannot take the steps of " + wf.Spec.WorkflowTemplateRef.String() + ": " + err.Error()}
		}
	}
	var bad *wftemplate.Error
	if !errors.As(err, &bad) {
		return ctrl.Result{}, err
	}
	st := *wf.Status.DeepCopy()
	st.ObservedGeneration = wf.Generation
	if !bad.Wait {
		end(&st, schedv1.WorkflowFailed, bad.Reason, "the workflow cannot run: "+bad.Message, now)
		out, err := r.writeWorkflowStatus(ctx, wf, st, status.Now)
		return ctrl.Result{RequeueAfter: out.Wait}, err
	}
	if wf.Status.Reason != bad.Reason {
		r.Recorder.Eventf(wf, nil, corev1.EventTypeWarning, bad.Reason, "Resolve", "%s", bad.Message)
	}
	st.Phase, st.Reason, st.Message = schedv1.WorkflowPending, bad.Reason, clip(bad.Message)
	status.SetCondition(&st.Conditions, st.ObservedGeneration, metav1.Condition{Type: schedv1.ConditionReady, Status: metav1.ConditionFalse, Reason: bad.Reason, Message: st.Message})
	out, err := r.writeWorkflowStatus(ctx, wf, st, status.Now)
	if err != nil || out.Wait > 0 {
		return ctrl.Result{RequeueAfter: out.Wait}, err
	}
	return ctrl.Result{RequeueAfter: templateWait}, nil
}

// fillFromTemplate copies the template a new run names into its spec, once
// (resolveTemplate), and stops: the update brings the run back.
func (r *Reconciler) fillFromTemplate(ctx context.Context, s *scope) (phase.Result, error) {
	if !wftemplate.Unresolved(s.wf) {
		return phase.Result{}, nil
	}
	res, err := r.resolveTemplate(ctx, s.wf, s.now)
	return phase.StopFor(res.RequeueAfter), err
}

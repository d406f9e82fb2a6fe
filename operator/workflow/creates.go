package workflow

import (
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
	"github.com/kubectl-sched/kubectl-sched/operator/refusal"
)

// createOutcome is what became of one step (or loop item) task's create:
// err is the create's error, the Create call's own; taken, on
// AlreadyExists, the AgentTask of another owner that holds the name (nil:
// the workflow's own, which the cache has not seen yet). A transient
// error never becomes an outcome: the reconcile ends with it, and the
// tasks created so far are found by name next time.
type createOutcome struct {
	create stepCreate
	err    error
	taken  *schedv1.AgentTask
}

// foldCreates is st with the outcomes of a reconcile's creates folded in:
// a name another owner holds, or a refusal for good, fails the step (or
// the item); a full quota keeps it waiting, and is returned as the error
// the workqueue's backoff retries with (the last one, as the creates
// ran). A create that succeeded, or whose task is the workflow's own,
// changes nothing: decide already counted it started. It is pure: st is
// not changed.
func foldCreates(wf *schedv1.Workflow, st schedv1.WorkflowStatus, outcomes []createOutcome, now metav1.Time) (schedv1.WorkflowStatus, error) {
	st = *st.DeepCopy()
	var quotaErr error
	for _, o := range outcomes {
		c := o.create
		switch class := refusal.Classify(o.err); {
		case o.taken != nil && c.loop:
			itemFailed(wf, &st, c, nameTakenMessage(wf, o.taken), now)
		case o.taken != nil:
			nameTaken(wf, &st, c.step, o.taken, now)
		case o.err == nil || apierrors.IsAlreadyExists(o.err):
		case class == refusal.Final && c.loop:
			itemFailed(wf, &st, c, "the API server refused its AgentTask: "+refusal.Message(o.err), now)
		case class == refusal.Final:
			// Substituted outputs can make a task the server refuses;
			// retrying cannot change them, so the step fails.
			refused(wf, &st, c.step, refusal.Message(o.err), now)
		case class == refusal.Quota && c.loop:
			itemWaitingForQuota(wf, &st, c, refusal.Message(o.err))
			quotaErr = o.err
		case class == refusal.Quota:
			waitingForQuota(wf, &st, c.step, refusal.Message(o.err))
			quotaErr = o.err
		}
	}
	return st, quotaErr
}

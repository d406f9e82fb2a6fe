package cronworkflow

import (
	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
	"github.com/kubectl-sched/kubectl-sched/operator/cachetrim"
)

// TrimCron is the cache transform for CronWorkflows: their metadata
// trimmed (cachetrim.TrimMeta), and a workflowSpec larger than
// cachetrim.TrimAbove cut to its steps' names, marked
// cachetrim.AnnotationTrimmed: the controller reads such a CronWorkflow
// whole, past the cache, each time it reconciles it. The status stays.
func TrimCron(obj any) (any, error) {
	cw, ok := obj.(*schedv1.CronWorkflow)
	if !ok {
		return obj, nil
	}
	cachetrim.TrimMeta(&cw.ObjectMeta)
	if cachetrim.SpecBulk(&cw.Spec.WorkflowSpec) > cachetrim.TrimAbove {
		cw.Spec.WorkflowSpec = cachetrim.StepNames(&cw.Spec.WorkflowSpec)
		cachetrim.MarkTrimmed(&cw.ObjectMeta)
	}
	return cw, nil
}

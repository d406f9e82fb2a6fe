package cronworkflow

import (
	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
	"github.com/kubectl-sched/kubectl-sched/operator/agenttask"
	"github.com/kubectl-sched/kubectl-sched/operator/workflow"
)

// TrimCron is the cache transform for CronWorkflows: their metadata
// trimmed (agenttask.TrimMeta), and a workflowSpec larger than
// agenttask.TrimAbove cut to its steps' names, marked
// agenttask.AnnotationTrimmed: the controller reads such a CronWorkflow
// whole, past the cache, each time it reconciles it. The status stays.
func TrimCron(obj any) (any, error) {
	cw, ok := obj.(*schedv1.CronWorkflow)
	if !ok {
		return obj, nil
	}
	agenttask.TrimMeta(&cw.ObjectMeta)
	if workflow.SpecBulk(&cw.Spec.WorkflowSpec) > agenttask.TrimAbove {
		cw.Spec.WorkflowSpec = workflow.StepNames(&cw.Spec.WorkflowSpec)
		agenttask.MarkTrimmed(&cw.ObjectMeta)
	}
	return cw, nil
}

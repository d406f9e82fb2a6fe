package workflow

import (
	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
	"github.com/kubectl-sched/kubectl-sched/operator/cachetrim"
)

// TrimWorkflow is the cache transform for Workflows: their metadata
// trimmed (cachetrim.TrimMeta); and a workflow whose spec and status pass
// cachetrim.TrimAbove (either may near 1.5 MiB: a spec of large steps, a
// status of forEach steps' gathered outputs) is cut to what the other
// controllers read of it (cachetrim.StepNames, the status but its steps' outputs,
// messages and items, and its messages), marked
// cachetrim.AnnotationTrimmed: the Workflow controller reads such a
// workflow whole, past the cache, each time it reconciles it (get).
func TrimWorkflow(obj any) (any, error) {
	wf, ok := obj.(*schedv1.Workflow)
	if !ok {
		return obj, nil
	}
	cachetrim.TrimMeta(&wf.ObjectMeta)
	if cachetrim.SpecBulk(&wf.Spec)+statusBulk(&wf.Status) > cachetrim.TrimAbove {
		wf.Spec = cachetrim.StepNames(&wf.Spec)
		st := &wf.Status
		st.Message, st.Steps, st.Finally = "", stepPhases(st.Steps), stepPhases(st.Finally)
		for i := range st.Conditions {
			st.Conditions[i].Message = ""
		}
		if st.Main != nil {
			st.Main.Message = ""
		}
		cachetrim.MarkTrimmed(&wf.ObjectMeta)
	}
	return wf, nil
}

// statusBulk is the size of the strings of st its steps' tasks and the
// operator's messages make, in bytes.
func statusBulk(st *schedv1.WorkflowStatus) int {
	n := len(st.Message)
	for _, c := range st.Conditions {
		n += len(c.Message)
	}
	if st.Main != nil {
		n += len(st.Main.Message)
	}
	for _, list := range [][]schedv1.StepStatus{st.Steps, st.Finally} {
		for _, s := range list {
			n += len(s.Message)
			for k, v := range s.Outputs {
				n += len(k) + len(v)
			}
			if fe := s.ForEach; fe != nil {
				for _, it := range fe.Items {
					n += len(it.Message) + 64
				}
			}
		}
	}
	return n
}

// stepPhases is steps with their names, tasks, phases and times only.
func stepPhases(steps []schedv1.StepStatus) []schedv1.StepStatus {
	if steps == nil {
		return nil
	}
	out := make([]schedv1.StepStatus, len(steps))
	for i, s := range steps {
		out[i] = schedv1.StepStatus{Name: s.Name, TaskName: s.TaskName, Phase: s.Phase, Reason: s.Reason, StartTime: s.StartTime, CompletionTime: s.CompletionTime}
	}
	return out
}

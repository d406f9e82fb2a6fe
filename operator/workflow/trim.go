package workflow

import (
	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
	"github.com/kubectl-sched/kubectl-sched/operator/agenttask"
)

// TrimWorkflow is the cache transform for Workflows: their metadata
// trimmed (agenttask.TrimMeta); and a workflow whose spec and status pass
// agenttask.TrimAbove (either may near 1.5 MiB: a spec of large steps, a
// status of forEach steps' gathered outputs) is cut to what the other
// controllers read of it (StepNames, the status but its steps' outputs,
// messages and items, and its messages), marked
// agenttask.AnnotationTrimmed: the Workflow controller reads such a
// workflow whole, past the cache, each time it reconciles it (get).
func TrimWorkflow(obj any) (any, error) {
	wf, ok := obj.(*schedv1.Workflow)
	if !ok {
		return obj, nil
	}
	agenttask.TrimMeta(&wf.ObjectMeta)
	if SpecBulk(&wf.Spec)+statusBulk(&wf.Status) > agenttask.TrimAbove {
		wf.Spec = StepNames(&wf.Spec)
		st := &wf.Status
		st.Message, st.Steps, st.Finally = "", stepPhases(st.Steps), stepPhases(st.Finally)
		for i := range st.Conditions {
			st.Conditions[i].Message = ""
		}
		if st.Main != nil {
			st.Main.Message = ""
		}
		agenttask.MarkTrimmed(&wf.ObjectMeta)
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

// SpecBulk is the size of the strings of s a tenant sizes most: its
// steps' tasks (agenttask.TaskBulk), whens, forEach items and approval
// messages, and its params, in bytes.
func SpecBulk(s *schedv1.WorkflowSpec) int {
	n := 0
	for _, list := range [][]schedv1.WorkflowStep{s.Steps, s.Finally} {
		for i := range list {
			st := &list[i]
			n += agenttask.TaskBulk(&st.Task) + len(st.When)
			if fe := st.ForEach; fe != nil {
				n += len(fe.From)
				for _, item := range fe.Items {
					n += len(item)
				}
			}
			if a := st.Approval; a != nil {
				n += len(a.Message)
			}
		}
	}
	for _, p := range s.Params {
		n += len(p.Name) + len(p.Value) + len(p.Description)
	}
	return n
}

// StepNames is s cut to its steps' and finally steps' names and service
// accounts (StepServiceAccount, which the accounts webhook reads from the
// cache): what a trimmed copy keeps.
func StepNames(s *schedv1.WorkflowSpec) schedv1.WorkflowSpec {
	out := schedv1.WorkflowSpec{}
	for _, st := range s.Steps {
		out.Steps = append(out.Steps, namedStep(st))
	}
	for _, st := range s.Finally {
		out.Finally = append(out.Finally, namedStep(st))
	}
	return out
}

func namedStep(st schedv1.WorkflowStep) schedv1.WorkflowStep {
	return schedv1.WorkflowStep{Name: st.Name, Task: schedv1.AgentTaskSpec{ServiceAccountName: st.Task.ServiceAccountName}}
}

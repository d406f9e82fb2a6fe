package workflow

import (
	"fmt"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
)

// FinallyGrace is how long finally steps may still run after spec.timeout
// has passed, counted from the end of the main steps: a timed-out
// workflow's cleanup still runs, and cannot run for ever.
const FinallyGrace = 5 * time.Minute

// decideFinally runs the finally steps once the main steps have ended
// (status.main): side by side, each as soon as the finally steps it
// depends on Succeeded; a failure skips only what depends on it. The
// workflow ends when they all have, in the main steps' phase, Failed when
// that was Succeeded and a finally step did not succeed.
func decideFinally(wf *schedv1.Workflow, tasks map[int]*schedv1.AgentTask, st *schedv1.WorkflowStatus, p *plan, now metav1.Time) {
	if wf.Spec.Timeout != nil {
		deadline := finallyDeadline(wf, st)
		if !now.Time.Before(deadline) {
			msg := fmt.Sprintf("the finally steps ran past spec.timeout %s and the %s after the steps", wf.Spec.Timeout.Duration, FinallyGrace)
			stopFinally(wf, st, tasks, p, schedv1.StepTimeout, "stopped: "+msg, now)
			skipWaitingFinally(st, "the workflow timed out")
			endAfterFinally(wf, st, msg, now)
			return
		}
		p.requeueAt = deadline
	}
	skipBlockedFinally(wf, st)
	for j := range wf.Spec.Finally {
		s := &st.Finally[j]
		moved, reason, err := advance(wf, st, len(wf.Spec.Steps)+j, p, now)
		if !moved {
			continue
		}
		if err != nil {
			s.Phase, s.Reason, s.Message, s.CompletionTime = schedv1.StepFailed, reason, err.Error(), &now
		}
		skipBlockedFinally(wf, st)
	}
	var active []string
	for j, s := range st.Finally {
		if isActive(s.Phase) {
			active = append(active, wf.Spec.Finally[j].Name)
		}
	}
	switch {
	case len(active) > 0:
		msg := fmt.Sprintf("the steps ended %s; finally steps run: %s", st.Main.Phase, strings.Join(active, ", "))
		if wf.Spec.Suspend {
			msg += "; suspended: no other finally step starts until it is resumed (kubectl sched workflow resume " + wf.Name + ")"
		}
		runningAs(st, schedv1.ReasonRunningFinally, msg)
	case wf.Spec.Suspend && anyWaiting(st.Finally):
		suspended(wf, st)
	default:
		endAfterFinally(wf, st, "", now)
	}
}

// finallyDeadline is when the finally steps are stopped: spec.timeout
// after the start, but never before FinallyGrace after the main steps ended.
func finallyDeadline(wf *schedv1.Workflow, st *schedv1.WorkflowStatus) time.Time {
	deadline := st.StartTime.Add(wf.Spec.Timeout.Duration)
	if grace := st.Main.Time.Add(FinallyGrace); grace.After(deadline) {
		return grace
	}
	return deadline
}

func finallyDependenciesSucceeded(wf *schedv1.Workflow, st *schedv1.WorkflowStatus, j int) bool {
	return allSucceeded(st.Finally, wf.Spec.FinallyDependencies(j))
}

// skipBlockedFinally skips the waiting finally steps that depend on a
// finally step that ended without succeeding.
func skipBlockedFinally(wf *schedv1.Workflow, st *schedv1.WorkflowStatus) {
	skipBlockedIn(st.Finally, wf.Spec.Finally, wf.Spec.FinallyDependencies)
}

// stopFinally ends the running finally steps in phase and cancels their tasks.
func stopFinally(wf *schedv1.Workflow, st *schedv1.WorkflowStatus, tasks map[int]*schedv1.AgentTask, p *plan, phase schedv1.StepPhase, msg string, now metav1.Time) {
	for j := range st.Finally {
		s := &st.Finally[j]
		if !isActive(s.Phase) {
			continue
		}
		s.Phase, s.Message, s.CompletionTime = phase, msg, &now
		if t := tasks[len(wf.Spec.Steps)+j]; t != nil && !t.Spec.Cancel {
			p.cancels = append(p.cancels, t)
		}
	}
}

func skipWaitingFinally(st *schedv1.WorkflowStatus, why string) {
	for j := range st.Finally {
		if st.Finally[j].Phase == schedv1.StepWaiting {
			st.Finally[j].Phase, st.Finally[j].Message = schedv1.StepSkipped, "skipped: "+why
		}
	}
}

// endAfterFinally ends the workflow once its finally steps have: in the
// main steps' phase, with their reason and message, and what a failed
// finally step adds; a Succeeded workflow whose finally step did not
// succeed is Failed (FinallyFailed), or Timeout when timeout says the
// finally steps ran out of time.
func endAfterFinally(wf *schedv1.Workflow, st *schedv1.WorkflowStatus, timeout string, now metav1.Time) {
	m := st.Main
	phase, reason, msg := m.Phase, m.Reason, m.Message
	if m.Phase == schedv1.WorkflowSucceeded && timeout != "" {
		end(st, schedv1.WorkflowTimeout, schedv1.ReasonDeadlineExceeded, timeout, now)
		return
	}
	failed := -1
	for j, s := range st.Finally {
		if s.Phase == schedv1.StepFailed || s.Phase == schedv1.StepTimeout || s.Phase == schedv1.StepCancelled {
			failed = j
			break
		}
	}
	if failed >= 0 {
		s := st.Finally[failed]
		what := fmt.Sprintf("finally step %d (%s) %s: %s", failed, s.Name, strings.ToLower(string(s.Phase)), s.Message)
		if s.Phase == schedv1.StepTimeout {
			what = fmt.Sprintf("finally step %d (%s) timed out: %s", failed, s.Name, s.Message)
		}
		if m.Phase == schedv1.WorkflowSucceeded {
			phase, reason, msg = schedv1.WorkflowFailed, schedv1.ReasonFinallyFailed, what
		} else {
			msg += "; " + what
		}
	}
	end(st, phase, reason, msg, now)
}

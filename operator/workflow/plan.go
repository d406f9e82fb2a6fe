package workflow

import (
	"errors"
	"fmt"
	"strconv"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-sched/kubectl-sched/api/names"
	"github.com/kubectl-sched/kubectl-sched/api/substitution"
	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
)

// plan is what one reconcile decides: the new status and at most one
// action. It is computed by a pure function from the workflow and its step
// tasks, so it can be tested without a server.
type plan struct {
	status schedv1.WorkflowStatus
	// create is the next step's AgentTask, resolved and ready to create,
	// for step createStep.
	create     *schedv1.AgentTask
	createStep int
	// cancel is a running step's AgentTask to stop (workflow timeout or
	// spec.cancel).
	cancel *schedv1.AgentTask
	// requeueAt is the workflow deadline while it runs.
	requeueAt time.Time
}

// decide walks the steps in order. tasks holds the step AgentTasks found,
// by step index. Steps run strictly one after another: step i's task is
// created only once step i-1 Succeeded, and never twice, because its name is
// derived from the workflow, the index and the step name.
func decide(wf *schedv1.Workflow, tasks map[int]*schedv1.AgentTask, now metav1.Time) plan {
	p := plan{status: *wf.Status.DeepCopy()}
	st := &p.status
	st.ObservedGeneration = wf.Generation
	if st.Phase.Finished() {
		return p
	}
	syncSteps(wf, st, tasks)

	if errs := substitution.ValidateWorkflow(&wf.Spec); len(errs) > 0 {
		end(st, schedv1.WorkflowFailed, schedv1.ReasonInvalidSpec, "the workflow cannot run: "+errs.ToAggregate().Error(), now)
		skipFrom(st, 0, "the workflow is invalid")
		return p
	}

	if st.StartTime == nil {
		st.StartTime = &now
	}
	if wf.Spec.Cancel {
		stopRunning(st, tasks, &p, schedv1.StepCancelled, "stopped: the workflow was cancelled (spec.cancel)", now)
		end(st, schedv1.WorkflowCancelled, schedv1.ReasonCancelled, "cancelled (spec.cancel)", now)
		skipWaiting(st, "the workflow was cancelled")
		return p
	}
	if wf.Spec.Timeout != nil {
		deadline := st.StartTime.Add(wf.Spec.Timeout.Duration)
		if !now.Time.Before(deadline) {
			msg := fmt.Sprintf("ran past spec.timeout %s", wf.Spec.Timeout.Duration)
			stopRunning(st, tasks, &p, schedv1.StepTimeout, "stopped: the workflow "+msg, now)
			end(st, schedv1.WorkflowTimeout, schedv1.ReasonDeadlineExceeded, msg, now)
			skipWaiting(st, "the workflow timed out")
			return p
		}
		p.requeueAt = deadline
	}

	for i, step := range wf.Spec.Steps {
		s := &st.Steps[i]
		st.CurrentStep = int32(i)
		switch s.Phase {
		case schedv1.StepSucceeded:
			continue
		case schedv1.StepCancelled:
			// Its task was cancelled on its own: the workflow cannot go on.
			end(st, schedv1.WorkflowCancelled, schedv1.ReasonCancelled, fmt.Sprintf("step %d (%s) was cancelled: %s", i, step.Name, s.Message), now)
			skipFrom(st, i+1, fmt.Sprintf("step %s was cancelled", step.Name))
			return p
		case schedv1.StepFailed, schedv1.StepTimeout:
			end(st, schedv1.WorkflowFailed, schedv1.ReasonStepFailed, fmt.Sprintf("step %d (%s) %s: %s", i, step.Name, phaseWord(s.Phase), s.Message), now)
			skipFrom(st, i+1, fmt.Sprintf("step %s did not succeed", step.Name))
			return p
		case schedv1.StepPending, schedv1.StepRunning:
			running(st, fmt.Sprintf("step %d (%s) is %s", i, step.Name, lower(s.Phase)))
			return p
		}
		// Waiting: every earlier step succeeded, so this one starts now.
		task, err := newStepTask(wf, i, st)
		if err != nil {
			reason := schedv1.ReasonInvalidSpec
			var missing *substitution.MissingOutputError
			if errors.As(err, &missing) {
				reason = schedv1.ReasonMissingOutput
			}
			s.Phase, s.Message, s.CompletionTime = schedv1.StepFailed, err.Error(), &now
			end(st, schedv1.WorkflowFailed, reason, fmt.Sprintf("step %d (%s) cannot start: %v", i, step.Name, err), now)
			skipFrom(st, i+1, fmt.Sprintf("step %s did not start", step.Name))
			return p
		}
		if i > 0 {
			task.Annotations = map[string]string{schedv1.AnnotationPreviousStepFinished: now.Format(time.RFC3339Nano)}
		}
		p.create, p.createStep = task, i
		s.TaskName, s.Phase, s.StartTime = task.Name, schedv1.StepPending, &now
		running(st, fmt.Sprintf("step %d (%s) is starting", i, step.Name))
		return p
	}
	end(st, schedv1.WorkflowSucceeded, schedv1.ReasonSucceeded, fmt.Sprintf("all %d steps succeeded", len(wf.Spec.Steps)), now)
	return p
}

// syncSteps makes status.steps mirror spec.steps and copies what each
// step's task reports. Outputs already recorded are kept when a task is gone.
func syncSteps(wf *schedv1.Workflow, st *schedv1.WorkflowStatus, tasks map[int]*schedv1.AgentTask) {
	old := map[string]schedv1.StepStatus{}
	for _, s := range st.Steps {
		old[s.Name] = s
	}
	steps := make([]schedv1.StepStatus, len(wf.Spec.Steps))
	for i, step := range wf.Spec.Steps {
		s, ok := old[step.Name]
		if !ok {
			s = schedv1.StepStatus{Name: step.Name, Phase: schedv1.StepWaiting}
		}
		if t := tasks[i]; t != nil {
			s.TaskName = t.Name
			if s.StartTime == nil {
				ts := t.CreationTimestamp
				s.StartTime = &ts
			}
			if !s.Phase.Finished() {
				s.Phase, s.Message = stepPhase(t), t.Status.Message
				s.Outputs = t.Status.Outputs
				s.CompletionTime = t.Status.CompletionTime
			}
		} else if s.TaskName != "" && !s.Phase.Finished() {
			// Started, and its task is gone without finishing: never run it
			// again, since a step must not run twice.
			s.Phase, s.Message = schedv1.StepFailed, fmt.Sprintf("its AgentTask %s was deleted before it finished", s.TaskName)
		}
		steps[i] = s
	}
	st.Steps = steps
}

// newStepTask builds step i's AgentTask with its references resolved from the
// params and the recorded outputs of earlier steps.
func newStepTask(wf *schedv1.Workflow, i int, st *schedv1.WorkflowStatus) (*schedv1.AgentTask, error) {
	v := substitution.Values{Params: map[string]string{}}
	for _, p := range wf.Spec.Params {
		v.Params[p.Name] = p.Value
	}
	for j, s := range wf.Spec.Steps {
		v.StepNames = append(v.StepNames, s.Name)
		v.Outputs = append(v.Outputs, st.Steps[j].Outputs)
	}
	spec, err := substitution.ResolveTask(i, wf.Spec.Steps[i].Task, v)
	if err != nil {
		return nil, err
	}
	// The workflow owns the step's life: its TTL deletes everything, and a
	// step task deleting itself could lose its outputs.
	spec.TTLAfterFinished, spec.Cleanup = nil, ""
	return &schedv1.AgentTask{
		ObjectMeta: metav1.ObjectMeta{
			Name:      names.StepTask(wf.Name, i, wf.Spec.Steps[i].Name),
			Namespace: wf.Namespace,
			Labels: map[string]string{
				schedv1.LabelManagedBy:    schedv1.ManagedByValue,
				schedv1.LabelWorkflow:     names.Join(wf.Name),
				schedv1.LabelWorkflowStep: strconv.Itoa(i),
			},
		},
		Spec: spec,
	}, nil
}

func stepPhase(t *schedv1.AgentTask) schedv1.StepPhase {
	switch t.Status.Phase {
	case schedv1.TaskRunning:
		return schedv1.StepRunning
	case schedv1.TaskSucceeded:
		return schedv1.StepSucceeded
	case schedv1.TaskFailed:
		return schedv1.StepFailed
	case schedv1.TaskTimeout:
		return schedv1.StepTimeout
	case schedv1.TaskCancelled:
		return schedv1.StepCancelled
	default:
		return schedv1.StepPending
	}
}

// refused records that the API server refused step i's task for good: the
// step fails with the server's message, and the workflow with it.
func refused(st *schedv1.WorkflowStatus, i int, name, msg string, now metav1.Time) {
	s := &st.Steps[i]
	s.Phase, s.TaskName, s.CompletionTime = schedv1.StepFailed, "", &now
	s.Message = "the API server refused its AgentTask: " + msg
	end(st, schedv1.WorkflowFailed, schedv1.ReasonRejected, fmt.Sprintf("step %d (%s) cannot start: %s", i, name, s.Message), now)
	skipFrom(st, i+1, fmt.Sprintf("step %s did not start", name))
}

// waitingForQuota puts step i back to Waiting, since its task does not
// exist, and says which quota holds it.
func waitingForQuota(st *schedv1.WorkflowStatus, i int, name, msg string) {
	s := &st.Steps[i]
	s.Phase, s.TaskName, s.StartTime = schedv1.StepWaiting, "", nil
	s.Message = "waiting for quota: " + msg
	running(st, fmt.Sprintf("step %d (%s) is waiting for quota: %s", i, name, msg))
	st.Reason = schedv1.ReasonQuotaExceeded
	setCond(st, schedv1.ConditionReady, metav1.ConditionTrue, schedv1.ReasonQuotaExceeded, st.Message)
}

func running(st *schedv1.WorkflowStatus, msg string) {
	st.Phase, st.Reason, st.Message = schedv1.WorkflowRunning, schedv1.ReasonRunning, msg
	setProgress(st)
	setCond(st, schedv1.ConditionReady, metav1.ConditionTrue, schedv1.ReasonRunning, msg)
	setCond(st, schedv1.ConditionSucceeded, metav1.ConditionUnknown, schedv1.ReasonRunning, "the workflow has not finished")
}

func end(st *schedv1.WorkflowStatus, phase schedv1.WorkflowPhase, reason, msg string, now metav1.Time) {
	st.Phase, st.Reason, st.Message = phase, reason, msg
	st.CompletionTime = &now
	setProgress(st)
	status := metav1.ConditionFalse
	if phase == schedv1.WorkflowSucceeded {
		status = metav1.ConditionTrue
	}
	setCond(st, schedv1.ConditionReady, status, reason, msg)
	setCond(st, schedv1.ConditionSucceeded, status, reason, msg)
}

func skipFrom(st *schedv1.WorkflowStatus, from int, why string) {
	for i := from; i < len(st.Steps); i++ {
		if !st.Steps[i].Phase.Finished() {
			st.Steps[i].Phase, st.Steps[i].Message = schedv1.StepSkipped, "skipped: "+why
		}
	}
}

// stopRunning ends the started steps in phase, and has their task (one at
// most, steps run one at a time) cancelled, which stops its pod.
func stopRunning(st *schedv1.WorkflowStatus, tasks map[int]*schedv1.AgentTask, p *plan, phase schedv1.StepPhase, msg string, now metav1.Time) {
	for i := range st.Steps {
		s := &st.Steps[i]
		if s.Phase == schedv1.StepPending || s.Phase == schedv1.StepRunning {
			s.Phase, s.Message = phase, msg
			s.CompletionTime = &now
			if t := tasks[i]; t != nil && !t.Spec.Cancel {
				p.cancel = t
			}
		}
	}
}

func skipWaiting(st *schedv1.WorkflowStatus, why string) {
	for i := range st.Steps {
		if st.Steps[i].Phase == schedv1.StepWaiting {
			st.Steps[i].Phase, st.Steps[i].Message = schedv1.StepSkipped, "skipped: "+why
		}
	}
}

func setProgress(st *schedv1.WorkflowStatus) {
	done := 0
	for _, s := range st.Steps {
		if s.Phase == schedv1.StepSucceeded {
			done++
		}
	}
	st.Progress = fmt.Sprintf("%d/%d", done, len(st.Steps))
}

func setCond(st *schedv1.WorkflowStatus, typ string, status metav1.ConditionStatus, reason, msg string) {
	meta.SetStatusCondition(&st.Conditions, metav1.Condition{
		Type: typ, Status: status, Reason: reason, Message: msg, ObservedGeneration: st.ObservedGeneration,
	})
}

func phaseWord(p schedv1.StepPhase) string {
	if p == schedv1.StepTimeout {
		return "timed out"
	}
	return "failed"
}

func lower(p schedv1.StepPhase) string {
	if p == schedv1.StepRunning {
		return "running"
	}
	return "pending"
}

package workflow

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-sched/kubectl-sched/api/names"
	"github.com/kubectl-sched/kubectl-sched/api/substitution"
	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
	"github.com/kubectl-sched/kubectl-sched/operator/status"
)

// plan is what one reconcile decides: the new status and the actions. It
// is computed by a pure function from the workflow and its step tasks, so
// it can be tested without a server.
type plan struct {
	status schedv1.WorkflowStatus
	// creates are the AgentTasks of the steps that start now, resolved and
	// ready to create: one at most when steps run one after another, every
	// step whose dependencies all Succeeded when they run side by side.
	creates []stepCreate
	// cancels are running steps' AgentTasks to stop (workflow timeout,
	// spec.cancel, or a failure with spec.failFast).
	cancels []*schedv1.AgentTask
	// requeueAt is the workflow deadline while it runs.
	requeueAt time.Time
}

// stepCreate is a step's AgentTask to create.
type stepCreate struct {
	step int
	task *schedv1.AgentTask
}

// decide walks the steps. tasks holds the step AgentTasks found, by step
// index. A step's task is created only once every step it depends on (the
// one before it, unless steps set dependsOn) Succeeded, and never twice,
// because its name is derived from the workflow, the index and the step
// name.
//
// prev is the workflow that spec.retryOf names, nil when there is none or
// it is gone.
func decide(wf *schedv1.Workflow, tasks map[int]*schedv1.AgentTask, prev *schedv1.Workflow, now metav1.Time) plan {
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
	if msg := reuseSteps(wf, prev, st); msg != "" {
		end(st, schedv1.WorkflowFailed, schedv1.ReasonInvalidSpec, msg, now)
		skipWaiting(st, "the workflow cannot run")
		return p
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
	// Side by side, one failure stops everything only when asked to; one
	// after another, nothing else is running anyway.
	stopAtFailure := !wf.Spec.IsDAG() || wf.Spec.FailFast

	for i, step := range wf.Spec.Steps {
		if s := st.Steps[i]; s.Phase == schedv1.StepCancelled {
			// Its task was cancelled on its own: the workflow cannot go on.
			stopRunning(st, tasks, &p, schedv1.StepCancelled, fmt.Sprintf("stopped: step %s was cancelled", step.Name), now)
			end(st, schedv1.WorkflowCancelled, schedv1.ReasonCancelled, fmt.Sprintf("step %d (%s) was cancelled: %s", i, step.Name, s.Message), now)
			skipWaiting(st, fmt.Sprintf("step %s was cancelled", step.Name))
			return p
		}
	}
	if i := firstFailed(st); i >= 0 && stopAtFailure {
		failWorkflow(st, tasks, &p, wf, i, schedv1.ReasonStepFailed, now)
		return p
	}
	skipBlocked(wf, st)

	// Start every step whose dependencies all Succeeded.
	for i := range wf.Spec.Steps {
		s := &st.Steps[i]
		if s.Phase != schedv1.StepWaiting || !dependenciesSucceeded(wf, st, i) {
			continue
		}
		task, err := newStepTask(wf, i, st)
		if err != nil {
			reason := schedv1.ReasonInvalidSpec
			var (
				missing  *substitution.MissingOutputError
				tooLarge *substitution.TooLargeError
			)
			switch {
			case errors.As(err, &missing):
				reason = schedv1.ReasonMissingOutput
			case errors.As(err, &tooLarge):
				reason = schedv1.ReasonTooLarge
			}
			s.Phase, s.Message, s.CompletionTime = schedv1.StepFailed, err.Error(), &now
			if stopAtFailure {
				// Nothing starts after all.
				for _, c := range p.creates {
					st.Steps[c.step].Phase, st.Steps[c.step].TaskName, st.Steps[c.step].StartTime = schedv1.StepWaiting, "", nil
				}
				p.creates = nil
				failWorkflow(st, tasks, &p, wf, i, reason, now)
				return p
			}
			st.Reason = reason
			skipBlocked(wf, st)
			continue
		}
		if len(wf.Spec.Dependencies(i)) > 0 {
			task.Annotations = map[string]string{schedv1.AnnotationPreviousStepFinished: now.Format(time.RFC3339Nano)}
		}
		p.creates = append(p.creates, stepCreate{step: i, task: task})
		s.TaskName, s.Phase, s.StartTime = task.Name, schedv1.StepPending, &now
	}

	var active []int
	for i, s := range st.Steps {
		if s.Phase == schedv1.StepPending || s.Phase == schedv1.StepRunning {
			active = append(active, i)
		}
	}
	setCurrentStep(st, active)
	switch {
	case len(active) > 0:
		running(st, activeMessage(wf, st, active, p.creates))
	case firstFailed(st) >= 0:
		// Nothing runs or can start: the independent branches are done.
		reason := schedv1.ReasonStepFailed
		if st.Reason == schedv1.ReasonMissingOutput || st.Reason == schedv1.ReasonInvalidSpec || st.Reason == schedv1.ReasonTooLarge {
			reason = st.Reason
		}
		failWorkflow(st, tasks, &p, wf, firstFailed(st), reason, now)
	default:
		end(st, schedv1.WorkflowSucceeded, schedv1.ReasonSucceeded, fmt.Sprintf("all %d steps succeeded", len(wf.Spec.Steps)), now)
	}
	return p
}

// reuseSteps gives a retry the outputs of every step that Succeeded in the
// earlier attempt, except spec.retryOf's fromStep and the steps that depend
// on it, directly or through others: those do not run again. In a DAG a
// branch that succeeded keeps its outputs wherever it is listed; in a
// sequence every step after fromStep depends on it. Steps that did not
// succeed run again. It returns why the retry cannot run, or "".
func reuseSteps(wf *schedv1.Workflow, prev *schedv1.Workflow, st *schedv1.WorkflowStatus) string {
	r := wf.Spec.RetryOf
	if r == nil {
		return ""
	}
	from := -1
	for i := range wf.Spec.Steps {
		if wf.Spec.Steps[i].Name == r.FromStep {
			from = i
		}
	}
	if from < 0 {
		return fmt.Sprintf("spec.retryOf.fromStep %q is not a step of this workflow", r.FromStep)
	}
	// Steps depend only on earlier ones, so one pass in order finds every
	// step downstream of fromStep.
	rerun := make([]bool, len(wf.Spec.Steps))
	rerun[from] = true
	for i := from + 1; i < len(wf.Spec.Steps); i++ {
		for _, d := range wf.Spec.Dependencies(i) {
			rerun[i] = rerun[i] || rerun[d]
		}
	}
	needed := false
	for i := range st.Steps {
		needed = needed || (!rerun[i] && st.Steps[i].Phase == schedv1.StepWaiting)
	}
	if !needed {
		return ""
	}
	if prev == nil {
		return fmt.Sprintf("workflow %s, which this one retries, is gone (deleted, or by its ttlAfterFinished), so its outputs cannot be reused; run the workflow anew", r.Workflow)
	}
	old := map[string]schedv1.StepStatus{}
	for _, s := range prev.Status.Steps {
		old[s.Name] = s
	}
	for i := range st.Steps {
		s := &st.Steps[i]
		o, ok := old[s.Name]
		if rerun[i] || s.Phase != schedv1.StepWaiting || !ok || o.Phase != schedv1.StepSucceeded {
			continue
		}
		s.Phase, s.Outputs, s.StartTime, s.CompletionTime = schedv1.StepSucceeded, o.Outputs, o.StartTime, o.CompletionTime
		s.Message = "reused from workflow " + r.Workflow
	}
	return ""
}

// firstFailed is the first step that failed or timed out, or -1.
func firstFailed(st *schedv1.WorkflowStatus) int {
	for i, s := range st.Steps {
		if s.Phase == schedv1.StepFailed || s.Phase == schedv1.StepTimeout {
			return i
		}
	}
	return -1
}

// failWorkflow ends the workflow Failed because of step i: the steps still
// running are cancelled and those not started skipped.
func failWorkflow(st *schedv1.WorkflowStatus, tasks map[int]*schedv1.AgentTask, p *plan, wf *schedv1.Workflow, i int, reason string, now metav1.Time) {
	name := wf.Spec.Steps[i].Name
	s := st.Steps[i]
	stopRunning(st, tasks, p, schedv1.StepCancelled, fmt.Sprintf("stopped: step %s did not succeed (spec.failFast)", name), now)
	what := phaseWord(s.Phase)
	if s.TaskName == "" {
		what = "cannot start" // its task was never created
	}
	msg := fmt.Sprintf("step %d (%s) %s: %s", i, name, what, s.Message)
	if n := countFailed(st); n > 1 {
		msg += fmt.Sprintf(" (and %d more failed)", n-1)
	}
	st.CurrentStep = int32(i)
	end(st, schedv1.WorkflowFailed, reason, msg, now)
	skipWaiting(st, fmt.Sprintf("step %s did not succeed", name))
}

func countFailed(st *schedv1.WorkflowStatus) int {
	n := 0
	for _, s := range st.Steps {
		if s.Phase == schedv1.StepFailed || s.Phase == schedv1.StepTimeout {
			n++
		}
	}
	return n
}

// dependenciesSucceeded reports whether every step i waits for Succeeded.
func dependenciesSucceeded(wf *schedv1.Workflow, st *schedv1.WorkflowStatus, i int) bool {
	for _, d := range wf.Spec.Dependencies(i) {
		if st.Steps[d].Phase != schedv1.StepSucceeded {
			return false
		}
	}
	return true
}

// skipBlocked skips the waiting steps that depend on a step that ended
// without succeeding; in index order, so skipping passes down the graph.
func skipBlocked(wf *schedv1.Workflow, st *schedv1.WorkflowStatus) {
	for i := range st.Steps {
		s := &st.Steps[i]
		if s.Phase != schedv1.StepWaiting {
			continue
		}
		for _, d := range wf.Spec.Dependencies(i) {
			if dp := st.Steps[d].Phase; dp.Finished() && dp != schedv1.StepSucceeded {
				s.Phase, s.Message = schedv1.StepSkipped, fmt.Sprintf("skipped: step %s did not succeed", wf.Spec.Steps[d].Name)
				break
			}
		}
	}
}

// setCurrentStep points at the first running step, else the first that has
// not succeeded, else the last.
func setCurrentStep(st *schedv1.WorkflowStatus, active []int) {
	if len(active) > 0 {
		st.CurrentStep = int32(active[0])
		return
	}
	for i, s := range st.Steps {
		if s.Phase != schedv1.StepSucceeded {
			st.CurrentStep = int32(i)
			return
		}
	}
	st.CurrentStep = int32(max(len(st.Steps)-1, 0))
}

// activeMessage says which steps run: one as before, several by name.
func activeMessage(wf *schedv1.Workflow, st *schedv1.WorkflowStatus, active []int, creates []stepCreate) string {
	if len(active) == 1 {
		i := active[0]
		if len(creates) == 1 && creates[0].step == i {
			return fmt.Sprintf("step %d (%s) is starting", i, wf.Spec.Steps[i].Name)
		}
		return fmt.Sprintf("step %d (%s) is %s", i, wf.Spec.Steps[i].Name, lower(st.Steps[i].Phase))
	}
	names := make([]string, len(active))
	for j, i := range active {
		names[j] = wf.Spec.Steps[i].Name
	}
	return fmt.Sprintf("%d steps run side by side: %s", len(active), strings.Join(names, ", "))
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
// step fails with the server's message. One after another (or with
// spec.failFast) the workflow fails with it; side by side, the steps that
// depend on it are skipped and the next reconcile ends the workflow once
// the other branches are done.
func refused(wf *schedv1.Workflow, st *schedv1.WorkflowStatus, i int, msg string, now metav1.Time) {
	cannotStart(wf, st, i, schedv1.ReasonRejected, "the API server refused its AgentTask: "+msg, now)
}

// nameTaken records that step i's AgentTask name is held by an AgentTask
// this workflow does not control (by UID): it is never taken as the
// step's, so the step fails as a refused one does.
func nameTaken(wf *schedv1.Workflow, st *schedv1.WorkflowStatus, i int, taken *schedv1.AgentTask, now metav1.Time) {
	owner := "it has no controller"
	if ref := metav1.GetControllerOf(taken); ref != nil {
		owner = fmt.Sprintf("its controller is %s %s", ref.Kind, ref.Name)
	}
	cannotStart(wf, st, i, schedv1.ReasonNameTaken, fmt.Sprintf(
		"AgentTask %s already exists and is not this workflow's (%s); the operator never takes it over: run the workflow again under another name (kubectl sched workflow retry %s), or delete that AgentTask (kubectl delete agenttask %s -n %s) and create the workflow again",
		taken.Name, owner, wf.Name, taken.Name, taken.Namespace), now)
}

func cannotStart(wf *schedv1.Workflow, st *schedv1.WorkflowStatus, i int, reason, msg string, now metav1.Time) {
	s := &st.Steps[i]
	s.Phase, s.TaskName, s.CompletionTime = schedv1.StepFailed, "", &now
	s.Message = msg
	if !wf.Spec.IsDAG() || wf.Spec.FailFast {
		name := wf.Spec.Steps[i].Name
		end(st, schedv1.WorkflowFailed, reason, fmt.Sprintf("step %d (%s) cannot start: %s", i, name, s.Message), now)
		skipWaiting(st, fmt.Sprintf("step %s did not start", name))
		return
	}
	st.Reason = reason
	skipBlocked(wf, st)
}

// waitingForQuota puts step i back to Waiting, since its task does not
// exist, and says which quota holds it.
func waitingForQuota(st *schedv1.WorkflowStatus, i int, name, msg string) {
	s := &st.Steps[i]
	s.Phase, s.TaskName, s.StartTime = schedv1.StepWaiting, "", nil
	s.Message = "waiting for quota: " + msg
	running(st, fmt.Sprintf("step %d (%s) is waiting for quota: %s", i, name, msg))
	st.Reason = schedv1.ReasonQuotaExceeded
	status.SetCondition(&st.Conditions, st.ObservedGeneration, metav1.Condition{Type: schedv1.ConditionReady, Status: metav1.ConditionTrue, Reason: schedv1.ReasonQuotaExceeded, Message: st.Message})
}

func running(st *schedv1.WorkflowStatus, msg string) {
	st.Phase, st.Reason, st.Message = schedv1.WorkflowRunning, schedv1.ReasonRunning, msg
	setProgress(st)
	status.SetCondition(&st.Conditions, st.ObservedGeneration, metav1.Condition{Type: schedv1.ConditionReady, Status: metav1.ConditionTrue, Reason: schedv1.ReasonRunning, Message: msg})
	status.SetCondition(&st.Conditions, st.ObservedGeneration, metav1.Condition{Type: schedv1.ConditionSucceeded, Status: metav1.ConditionUnknown, Reason: schedv1.ReasonRunning, Message: "the workflow has not finished"})
}

func end(st *schedv1.WorkflowStatus, phase schedv1.WorkflowPhase, reason, msg string, now metav1.Time) {
	st.Phase, st.Reason, st.Message = phase, reason, msg
	st.CompletionTime = &now
	setProgress(st)
	cs := metav1.ConditionFalse
	if phase == schedv1.WorkflowSucceeded {
		cs = metav1.ConditionTrue
	}
	status.SetCondition(&st.Conditions, st.ObservedGeneration, metav1.Condition{Type: schedv1.ConditionReady, Status: cs, Reason: reason, Message: msg})
	status.SetCondition(&st.Conditions, st.ObservedGeneration, metav1.Condition{Type: schedv1.ConditionSucceeded, Status: cs, Reason: reason, Message: msg})
}

func skipFrom(st *schedv1.WorkflowStatus, from int, why string) {
	for i := from; i < len(st.Steps); i++ {
		if !st.Steps[i].Phase.Finished() {
			st.Steps[i].Phase, st.Steps[i].Message = schedv1.StepSkipped, "skipped: "+why
		}
	}
}

// stopRunning ends the started steps in phase, and has their tasks
// cancelled, which stops their pods.
func stopRunning(st *schedv1.WorkflowStatus, tasks map[int]*schedv1.AgentTask, p *plan, phase schedv1.StepPhase, msg string, now metav1.Time) {
	for i := range st.Steps {
		s := &st.Steps[i]
		if s.Phase == schedv1.StepPending || s.Phase == schedv1.StepRunning {
			s.Phase, s.Message = phase, msg
			s.CompletionTime = &now
			if t := tasks[i]; t != nil && !t.Spec.Cancel {
				p.cancels = append(p.cancels, t)
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

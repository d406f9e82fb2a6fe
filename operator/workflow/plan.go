package workflow

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-sched/kubectl-sched/api/celexpr"
	"github.com/kubectl-sched/kubectl-sched/api/names"
	"github.com/kubectl-sched/kubectl-sched/api/substitution"
	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
	"github.com/kubectl-sched/kubectl-sched/operator/cachetrim"
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
	// approvals are the cluster's rules on approvals it applies.
	approvals approvalRules
	// cache finds the step tasks of the namespace by cache key
	// (stepcache.go); nil looks up nothing.
	cache cacheLookup
	// held are the sizes of the steps' file outputs too big to pass on,
	// by step and key (heldOutputs).
	held map[int]map[string]int
}

// stepCreate is a step's AgentTask to create, or one item's of a loop.
type stepCreate struct {
	step int
	// loop: the task runs item item of the step.
	loop bool
	item int
	task *schedv1.AgentTask
}

// decide walks the steps. tasks holds the step AgentTasks found, by step
// index: spec.steps from 0, then spec.finally (index len(spec.steps)+j);
// items the loops' item tasks (loop.go). A
// step's task is created only once every step it depends on (the one before
// it, unless steps set dependsOn) Succeeded, and never twice, because its
// name is derived from the workflow, the index and the step name.
//
// The main steps run first (decideMain); once they have all ended, their
// outcome is recorded in status.main and the finally steps run
// (decideFinally). Each phase of a step's start is a small function:
// suspend holds it, its when may skip or fail it (gates.go), an approval
// step waits for a decision instead of a task.
//
// prev is the workflow that spec.retryOf names, nil when there is none or
// it is gone; rules are the cluster's rules on approvals.
func decide(wf *schedv1.Workflow, tasks map[int]*schedv1.AgentTask, items itemTasks, prev *schedv1.Workflow, rules approvalRules, now metav1.Time) plan {
	return decideCached(wf, tasks, items, prev, rules, nil, now)
}

// decideCached is decide with the lookup of cached step results
// (stepcache.go): a step with a cache key that finds one takes its
// outputs instead of starting a task.
func decideCached(wf *schedv1.Workflow, tasks map[int]*schedv1.AgentTask, items itemTasks, prev *schedv1.Workflow, rules approvalRules, cache cacheLookup, now metav1.Time) plan {
	p := plan{status: *wf.Status.DeepCopy(), approvals: rules, cache: cache, held: heldOutputs(tasks)}
	st := &p.status
	st.ObservedGeneration = wf.Generation
	if st.Phase.Finished() {
		return p
	}
	syncSteps(wf, st, tasks)
	syncLoops(wf, st, items, now)

	if msg := invalid(wf, st); msg != "" {
		end(st, schedv1.WorkflowFailed, schedv1.ReasonInvalidSpec, "the workflow cannot run: "+msg, now)
		skipFrom(st, 0, "the workflow is invalid")
		return p
	}

	if st.StartTime == nil {
		st.StartTime = &now
	}
	setSuspended(wf, st)
	if st.Main == nil {
		decideMain(wf, tasks, prev, st, &p, now)
	}
	if st.Main != nil {
		decideFinally(wf, tasks, st, &p, now)
	}
	sweepLoops(wf, st, items, &p, now)
	return p
}

// invalid says why the workflow cannot run, or "": its references
// (api/substitution) and, before it starts, its when expressions
// (api/celexpr; compiled again when each step's is evaluated).
func invalid(wf *schedv1.Workflow, st *schedv1.WorkflowStatus) string {
	errs := substitution.ValidateWorkflow(&wf.Spec)
	if st.StartTime == nil {
		errs = append(errs, celexpr.ValidateWorkflow(&wf.Spec)...)
	}
	if len(errs) == 0 {
		return ""
	}
	return errs.ToAggregate().Error()
}

// decideMain runs the steps of spec.steps. When they have all ended it
// records how (mainEnded), which ends a workflow without finally steps.
func decideMain(wf *schedv1.Workflow, tasks map[int]*schedv1.AgentTask, prev *schedv1.Workflow, st *schedv1.WorkflowStatus, p *plan, now metav1.Time) {
	if msg := reuseSteps(wf, prev, st, p.approvals); msg != "" {
		mainEnded(wf, st, schedv1.WorkflowFailed, schedv1.ReasonInvalidSpec, msg, now)
		skipWaiting(st, "the workflow cannot run")
		return
	}
	if wf.Spec.Cancel {
		stopRunning(st, tasks, p, schedv1.StepCancelled, "stopped: the workflow was cancelled (spec.cancel)", now)
		mainEnded(wf, st, schedv1.WorkflowCancelled, schedv1.ReasonCancelled, "cancelled (spec.cancel)", now)
		skipWaiting(st, "the workflow was cancelled")
		return
	}
	if wf.Spec.Timeout != nil {
		deadline := st.StartTime.Add(wf.Spec.Timeout.Duration)
		if !now.Time.Before(deadline) {
			msg := fmt.Sprintf("ran past spec.timeout %s", wf.Spec.Timeout.Duration)
			stopRunning(st, tasks, p, schedv1.StepTimeout, "stopped: the workflow "+msg, now)
			mainEnded(wf, st, schedv1.WorkflowTimeout, schedv1.ReasonDeadlineExceeded, msg, now)
			skipWaiting(st, "the workflow timed out")
			return
		}
		p.requeueAt = deadline
	}
	decideApprovals(wf, st, p.approvals, now)
	// Side by side, one failure stops everything only when asked to; one
	// after another, nothing else is running anyway.
	stopAtFailure := !wf.Spec.IsDAG() || wf.Spec.FailFast

	for i, step := range wf.Spec.Steps {
		if s := st.Steps[i]; s.Phase == schedv1.StepCancelled {
			// Its task was cancelled on its own: the workflow cannot go on.
			stopRunning(st, tasks, p, schedv1.StepCancelled, fmt.Sprintf("stopped: step %s was cancelled", step.Name), now)
			mainEnded(wf, st, schedv1.WorkflowCancelled, schedv1.ReasonCancelled, fmt.Sprintf("step %d (%s) was cancelled: %s", i, step.Name, s.Message), now)
			skipWaiting(st, fmt.Sprintf("step %s was cancelled", step.Name))
			return
		}
	}
	if i := firstFailed(st); i >= 0 && stopAtFailure {
		failWorkflow(st, tasks, p, wf, i, schedv1.ReasonStepFailed, now)
		return
	}
	skipBlocked(wf, st)

	// Start every step whose dependencies all Succeeded, and the next
	// items of the loops that run.
	for i := range wf.Spec.Steps {
		s := &st.Steps[i]
		moved, reason, err := advance(wf, st, i, p, now)
		if !moved {
			continue
		}
		if err == nil && (!isLoop(wf, i) || s.Phase != schedv1.StepFailed) {
			continue
		}
		if err != nil {
			s.Phase, s.Reason, s.Message, s.CompletionTime = schedv1.StepFailed, reason, err.Error(), &now
		}
		if stopAtFailure {
			// Nothing starts after all.
			dropCreates(wf, st, p)
			failWorkflow(st, tasks, p, wf, i, cmp.Or(reason, schedv1.ReasonStepFailed), now)
			return
		}
		if reason != "" {
			st.Reason = reason
		}
		skipBlocked(wf, st)
	}

	var active []int
	for i, s := range st.Steps {
		if isActive(s.Phase) {
			active = append(active, i)
		}
	}
	setCurrentStep(st, active)
	switch {
	case len(active) > 0:
		runningMain(wf, st, active, p.creates)
	case wf.Spec.Suspend && anyWaiting(st.Steps):
		suspended(wf, st)
	case firstFailed(st) >= 0:
		// Nothing runs or can start: the independent branches are done.
		reason := schedv1.ReasonStepFailed
		if st.Reason == schedv1.ReasonMissingOutput || st.Reason == schedv1.ReasonInvalidSpec || st.Reason == schedv1.ReasonTooLarge {
			reason = st.Reason
		}
		failWorkflow(st, tasks, p, wf, firstFailed(st), reason, now)
	default:
		mainEnded(wf, st, schedv1.WorkflowSucceeded, schedv1.ReasonSucceeded, succeededMessage(st.Steps), now)
	}
}

// advance starts the next items of step i, counted as stepStatus counts
// (spec.steps, then spec.finally), when it is a loop that runs, or starts
// the step once it waits and its dependencies all Succeeded. moved is
// false when there was nothing to do: the workflow is suspended, or the
// step waits for others or has ended. An error fails the step with the
// reason returned.
func advance(wf *schedv1.Workflow, st *schedv1.WorkflowStatus, i int, p *plan, now metav1.Time) (moved bool, reason string, err error) {
	s := stepStatus(wf, st, i)
	ready := func() bool {
		if n := len(wf.Spec.Steps); i >= n {
			return finallyDependenciesSucceeded(wf, st, i-n)
		}
		return dependenciesSucceeded(wf, st, i)
	}
	switch {
	case wf.Spec.Suspend:
		return false, "", nil
	case startedLoop(wf, s, i):
		reason, err = advanceLoop(wf, st, i, p, now)
	case s.Phase != schedv1.StepWaiting || !ready():
		return false, "", nil
	default:
		reason, err = start(wf, st, i, p, now)
	}
	return true, reason, err
}

// start starts step i, counted as stepStatus counts (spec.steps, then
// spec.finally), whose dependencies all Succeeded: unless its when skips it
// (no error) or fails it, a loop starts its items, an approval step starts
// waiting (a finally step cannot be one), a step with a cache key that
// finds a result Succeeds with it (fromCache) and any other gets its task,
// added to p.creates. An error fails the step with the reason returned.
func start(wf *schedv1.Workflow, st *schedv1.WorkflowStatus, i int, p *plan, now metav1.Time) (string, error) {
	s, step := stepStatus(wf, st, i), specStep(wf, i)
	main := i < len(wf.Spec.Steps)
	skipBlockedOf := skipBlocked
	if !main {
		skipBlockedOf = skipBlockedFinally
	}
	switch g := when(wf, st, i); g.verdict {
	case gateSkip:
		s.Phase, s.Reason, s.Message = schedv1.StepSkipped, schedv1.ReasonWhenFalse, g.message
		skipBlockedOf(wf, st)
		return "", nil
	case gateFail:
		return schedv1.ReasonWhenError, errors.New(g.message)
	}
	if step.ForEach != nil {
		return startLoop(wf, st, i, p, now)
	}
	if step.Approval != nil {
		waitForApproval(wf, s, i, now)
		applyDecision(wf, s, p.approvals, now)
		if s.Phase == schedv1.StepFailed {
			skipBlockedOf(wf, st)
		}
		return "", nil
	}
	key, hit, reason, err := fromCache(wf, st, i, p.cache, now)
	if err != nil {
		return reason, err
	}
	if hit {
		return "", nil
	}
	task, err := newStepTask(wf, i, st)
	if err != nil {
		err = explainHeld(err, p.held)
		return taskErrorReason(err), err
	}
	if main && len(wf.Spec.Dependencies(i)) > 0 {
		task.Annotations = map[string]string{schedv1.AnnotationPreviousStepFinished: now.Format(time.RFC3339Nano)}
	}
	markCacheKey(task, key)
	p.creates = append(p.creates, stepCreate{step: i, task: task})
	s.TaskName, s.Phase, s.StartTime = task.Name, schedv1.StepPending, &now
	return "", nil
}

// taskErrorReason is the reason a step whose task cannot be built fails with.
func taskErrorReason(err error) string {
	var (
		missing  *substitution.MissingOutputError
		tooLarge *substitution.TooLargeError
		longKey  *substitution.CacheKeyTooLongError
	)
	var held *heldOutputError
	switch {
	case errors.As(err, &held):
		return schedv1.ReasonTooLarge
	case errors.As(err, &missing):
		return schedv1.ReasonMissingOutput
	case errors.As(err, &tooLarge), errors.As(err, &longKey):
		return schedv1.ReasonTooLarge
	case isItemsError(err):
		return schedv1.ReasonInvalidItems
	}
	return schedv1.ReasonInvalidSpec
}

// mainEnded records how the main steps ended: the workflow's end when it
// has no finally steps, else status.main, after which they run.
func mainEnded(wf *schedv1.Workflow, st *schedv1.WorkflowStatus, phase schedv1.WorkflowPhase, reason, msg string, now metav1.Time) {
	if len(wf.Spec.Finally) == 0 {
		end(st, phase, reason, msg, now)
		return
	}
	st.Main = &schedv1.WorkflowOutcome{Phase: phase, Reason: reason, Message: clip(msg), Time: now}
}

// succeededMessage says that every step succeeded, and how many were
// skipped by their when.
func succeededMessage(steps []schedv1.StepStatus) string {
	skipped := 0
	for _, s := range steps {
		if s.Phase == schedv1.StepSkipped {
			skipped++
		}
	}
	if skipped == 0 {
		return fmt.Sprintf("all %d steps succeeded", len(steps))
	}
	return fmt.Sprintf("%d of %d steps succeeded, %d skipped by their when", len(steps)-skipped, len(steps), skipped)
}

// reuseSteps gives a retry the outputs of every step that Succeeded in the
// earlier attempt, except spec.retryOf's fromStep and the steps that depend
// on it, directly or through others: those do not run again. In a DAG a
// branch that succeeded keeps its outputs wherever it is listed; in a
// sequence every step after fromStep depends on it. Steps that did not
// succeed run again, and so does an approval step whose approval does not
// carry over (notReused), with the steps that depend on it: it asks
// again. It decides once, as the retry starts (its status has no start
// time yet), so the earlier attempt may go afterwards. It returns why the
// retry cannot run, or "".
func reuseSteps(wf *schedv1.Workflow, prev *schedv1.Workflow, st *schedv1.WorkflowStatus, rules approvalRules) string {
	r := wf.Spec.RetryOf
	if r == nil || wf.Status.StartTime != nil {
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
	old := map[string]schedv1.StepStatus{}
	if prev != nil {
		for _, s := range prev.Status.Steps {
			old[s.Name] = s
		}
	}
	// Steps depend only on earlier ones, so one pass in order finds every
	// step downstream of fromStep, or of an approval that asks again.
	rerun := make([]bool, len(wf.Spec.Steps))
	asksAgain := map[int]string{}
	for i := range wf.Spec.Steps {
		rerun[i] = i == from || slices.ContainsFunc(wf.Spec.Dependencies(i), func(d int) bool { return rerun[d] })
		if o, ok := old[wf.Spec.Steps[i].Name]; ok && !rerun[i] && wf.Spec.Steps[i].Approval != nil && o.Phase == schedv1.StepSucceeded {
			if why := notReused(wf, prev, i, o, rules); why != "" {
				rerun[i], asksAgain[i] = true, why
			}
		}
	}
	rerunWriters(wf, rerun)
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
	for i := range st.Steps {
		s := &st.Steps[i]
		if why, ok := asksAgain[i]; ok && s.Phase == schedv1.StepWaiting {
			s.Reason, s.Message = schedv1.ReasonApprovalNotReused, why
			continue
		}
		o, ok := old[s.Name]
		if rerun[i] || s.Phase != schedv1.StepWaiting || !ok || o.Phase != schedv1.StepSucceeded {
			continue
		}
		s.Phase, s.Outputs, s.StartTime, s.CompletionTime = schedv1.StepSucceeded, o.Outputs, o.StartTime, o.CompletionTime
		// A loop's gathered outputs, and how many items it ran: one
		// that ran none reads [] for every output.
		s.ForEach = o.ForEach.DeepCopy()
		s.Message = "reused from workflow " + r.Workflow
		if wf.Spec.Steps[i].Approval != nil {
			s.Reason, s.Message = o.Reason, s.Message+": "+o.Message
		}
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
	switch {
	case s.Reason == schedv1.ReasonDenied:
		what = "was denied"
	case s.Reason == schedv1.ReasonSelfApproved:
		what = "cannot go on"
	case isLoop(wf, i) && s.ForEach == nil:
		what = "cannot start" // its list could not be read
	case s.TaskName == "" && wf.Spec.Steps[i].RunsTask() && !isLoop(wf, i):
		what = "cannot start" // its task was never created
	}
	switch s.Reason {
	case schedv1.ReasonDenied, schedv1.ReasonSelfApproved, schedv1.ReasonWhenError, schedv1.ReasonInvalidItems, schedv1.ReasonTooLarge, schedv1.ReasonMissingOutput:
		// More telling than StepFailed, and the step says it.
		reason = s.Reason
	}
	msg := fmt.Sprintf("step %d (%s) %s: %s", i, name, what, s.Message)
	if n := countFailed(st); n > 1 {
		msg += fmt.Sprintf(" (and %d more failed)", n-1)
	}
	st.CurrentStep = int32(i)
	skipWaiting(st, fmt.Sprintf("step %s did not succeed", name))
	mainEnded(wf, st, schedv1.WorkflowFailed, reason, msg, now)
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
	return allSucceeded(st.Steps, wf.Spec.Dependencies(i))
}

// allSucceeded reports whether every step of steps listed in deps Succeeded.
func allSucceeded(steps []schedv1.StepStatus, deps []int) bool {
	for _, d := range deps {
		if steps[d].Phase != schedv1.StepSucceeded {
			return false
		}
	}
	return true
}

// skipBlocked skips the waiting steps that depend on a step that ended
// without succeeding; in index order, so skipping passes down the graph.
func skipBlocked(wf *schedv1.Workflow, st *schedv1.WorkflowStatus) {
	skipBlockedIn(st.Steps, wf.Spec.Steps, wf.Spec.Dependencies)
}

// skipBlockedIn is skipBlocked over one list of steps (spec.steps or
// spec.finally), their statuses and what each depends on within it.
func skipBlockedIn(statuses []schedv1.StepStatus, steps []schedv1.WorkflowStep, deps func(int) []int) {
	for i := range statuses {
		s := &statuses[i]
		if s.Phase != schedv1.StepWaiting {
			continue
		}
		for _, d := range deps(i) {
			if dp := statuses[d].Phase; dp.Finished() && dp != schedv1.StepSucceeded {
				s.Phase, s.Message = schedv1.StepSkipped, skippedBecause(steps[d].Name, dp)
				break
			}
		}
	}
}

// skippedBecause is the message of a step skipped because step dep, which
// it depends on, ended in phase without succeeding.
func skippedBecause(dep string, phase schedv1.StepPhase) string {
	if phase == schedv1.StepSkipped {
		return fmt.Sprintf("skipped: step %s was skipped", dep)
	}
	return fmt.Sprintf("skipped: step %s did not succeed", dep)
}

// setCurrentStep points at the first running step, else the first that has
// neither succeeded nor been skipped, else the last that was not skipped.
func setCurrentStep(st *schedv1.WorkflowStatus, active []int) {
	if len(active) > 0 {
		st.CurrentStep = int32(active[0])
		return
	}
	last := 0
	for i, s := range st.Steps {
		switch s.Phase {
		case schedv1.StepSucceeded:
			last = i
		case schedv1.StepSkipped:
		default:
			st.CurrentStep = int32(i)
			return
		}
	}
	st.CurrentStep = int32(last)
}

// runningMain reports the main steps that run: one as before, several by
// name, and those that wait for an approval with the command to give it.
func runningMain(wf *schedv1.Workflow, st *schedv1.WorkflowStatus, active []int, creates []stepCreate) {
	var run []int
	var approvals []string
	for _, i := range active {
		if st.Steps[i].Phase == schedv1.StepWaitingForApproval {
			approvals = append(approvals, wf.Spec.Steps[i].Name)
		} else {
			run = append(run, i)
		}
	}
	var msg string
	switch {
	case len(run) == 1:
		i := run[0]
		switch {
		case st.Steps[i].ForEach != nil:
			msg = fmt.Sprintf("step %d (%s) runs its items: %s", i, wf.Spec.Steps[i].Name, st.Steps[i].Message)
		case len(creates) == 1 && creates[0].step == i:
			msg = fmt.Sprintf("step %d (%s) is starting", i, wf.Spec.Steps[i].Name)
		default:
			msg = fmt.Sprintf("step %d (%s) is %s", i, wf.Spec.Steps[i].Name, lower(st.Steps[i].Phase))
		}
	case len(run) > 1:
		names := make([]string, len(run))
		for j, i := range run {
			names[j] = wf.Spec.Steps[i].Name
		}
		msg = fmt.Sprintf("%d steps run side by side: %s", len(run), strings.Join(names, ", "))
	}
	reason := schedv1.ReasonRunning
	if len(approvals) > 0 {
		wait := approvalMessage(wf, approvals)
		if msg == "" {
			msg, reason = wait, schedv1.ReasonWaitingForApproval
		} else {
			msg += "; " + wait
		}
	}
	if wf.Spec.Suspend {
		msg += "; suspended: no other step starts until it is resumed (kubectl sched workflow resume " + wf.Name + ")"
	}
	runningAs(st, reason, msg)
}

// approvalMessage says which steps wait for approval and how to give it.
func approvalMessage(wf *schedv1.Workflow, steps []string) string {
	if len(steps) == 1 {
		var a *schedv1.StepApproval
		if i := slices.IndexFunc(wf.Spec.Steps, func(s schedv1.WorkflowStep) bool { return s.Name == steps[0] }); i >= 0 {
			a = wf.Spec.Steps[i].Approval
		}
		return fmt.Sprintf("step %s is waiting for approval%s: kubectl sched workflow approve %s %s", steps[0], byApprovers(a), wf.Name, steps[0])
	}
	return fmt.Sprintf("steps %s are waiting for approval: kubectl sched workflow approve %s STEP", strings.Join(steps, ", "), wf.Name)
}

// isActive: the step has started and not ended.
func isActive(p schedv1.StepPhase) bool {
	return p == schedv1.StepPending || p == schedv1.StepRunning || p == schedv1.StepWaitingForApproval
}

func anyWaiting(steps []schedv1.StepStatus) bool {
	return slices.ContainsFunc(steps, func(s schedv1.StepStatus) bool { return s.Phase == schedv1.StepWaiting })
}

// syncSteps makes status.steps and status.finally mirror spec.steps and
// spec.finally, and copies what each step's task reports. Outputs already
// recorded are kept when a task is gone.
func syncSteps(wf *schedv1.Workflow, st *schedv1.WorkflowStatus, tasks map[int]*schedv1.AgentTask) {
	st.Steps = syncList(wf.Spec.Steps, st.Steps, tasks, 0)
	if len(wf.Spec.Finally) > 0 {
		st.Finally = syncList(wf.Spec.Finally, st.Finally, tasks, len(wf.Spec.Steps))
	}
}

// syncList is syncSteps for one list; offset is its first index in tasks.
func syncList(spec []schedv1.WorkflowStep, status []schedv1.StepStatus, tasks map[int]*schedv1.AgentTask, offset int) []schedv1.StepStatus {
	old := map[string]schedv1.StepStatus{}
	for _, s := range status {
		old[s.Name] = s
	}
	steps := make([]schedv1.StepStatus, len(spec))
	for i, step := range spec {
		s, ok := old[step.Name]
		if !ok {
			s = schedv1.StepStatus{Name: step.Name, Phase: schedv1.StepWaiting}
		}
		if t := tasks[offset+i]; t != nil {
			s.TaskName = t.Name
			if s.StartTime == nil {
				ts := t.CreationTimestamp
				s.StartTime = &ts
			}
			if !s.Phase.Finished() {
				s.Phase, s.Message = stepPhase(t), t.Status.Message
				// A task waiting to retry a failed attempt: the step
				// runs, backing off (its message says until when).
				s.Reason = ""
				if t.Status.Reason == schedv1.ReasonBackingOff {
					s.Reason = schedv1.ReasonBackingOff
				}
				s.Outputs = schedv1.StepOutputs(&t.Status)
				s.CompletionTime = t.Status.CompletionTime
			}
		} else if s.TaskName != "" && !s.Phase.Finished() {
			// Started, and its task is gone without finishing: never run it
			// again, since a step must not run twice.
			s.Phase, s.Message = schedv1.StepFailed, fmt.Sprintf("its AgentTask %s was deleted before it finished", s.TaskName)
		}
		steps[i] = s
	}
	return steps
}

// newStepTask builds the AgentTask of step i (of spec.steps, or
// spec.finally from len(spec.steps) on) with its references resolved from
// the params, the recorded outputs of the steps and, for a finally step,
// the phase of the main steps.
func newStepTask(wf *schedv1.Workflow, i int, st *schedv1.WorkflowStatus) (*schedv1.AgentTask, error) {
	name := names.StepTask(wf.Name, i, specStep(wf, i).Name)
	if n := len(wf.Spec.Steps); i >= n {
		name = names.FinallyTask(wf.Name, i-n, wf.Spec.Finally[i-n].Name)
	}
	t, err := buildTask(wf, i, stepValues(wf, i, st), name)
	if err != nil {
		return nil, err
	}
	bindWorkspaces(wf, st, t)
	return t, nil
}

// stepValues are what the references of step i resolve to: the params,
// the recorded outputs of the steps, the loops that ran no items and, for
// a finally step, the phase of the main steps.
func stepValues(wf *schedv1.Workflow, i int, st *schedv1.WorkflowStatus) substitution.Values {
	n := len(wf.Spec.Steps)
	v := substitution.Values{Params: map[string]string{}, MainSteps: n, NoItems: noItems(st)}
	for _, p := range wf.Spec.Params {
		v.Params[p.Name] = p.Value
	}
	for j, s := range wf.Spec.Steps {
		v.StepNames = append(v.StepNames, s.Name)
		v.Outputs = append(v.Outputs, st.Steps[j].Outputs)
	}
	for j, s := range wf.Spec.Finally {
		v.StepNames = append(v.StepNames, s.Name)
		var outs map[string]string
		if j < len(st.Finally) {
			outs = st.Finally[j].Outputs
		}
		v.Outputs = append(v.Outputs, outs)
	}
	if i >= n && st.Main != nil {
		v.Phase = string(st.Main.Phase)
	}
	return v
}

// buildTask builds the AgentTask named name that runs step i's task with
// the references resolved from v.
func buildTask(wf *schedv1.Workflow, i int, v substitution.Values, name string) (*schedv1.AgentTask, error) {
	label := strconv.Itoa(i)
	if n := len(wf.Spec.Steps); i >= n {
		label = names.FinallyStep(i - n)
	}
	spec, err := substitution.ResolveTask(i, specStep(wf, i).Task, v)
	if err != nil {
		return nil, err
	}
	// The workflow owns the step's life: its TTL deletes everything, and a
	// step task deleting itself could lose its outputs.
	spec.TTLAfterFinished, spec.Cleanup = nil, ""
	return &schedv1.AgentTask{
		ObjectMeta: metav1.ObjectMeta{
			Name:      name,
			Namespace: wf.Namespace,
			Labels: map[string]string{
				schedv1.LabelManagedBy:    schedv1.ManagedByValue,
				schedv1.LabelWorkflow:     names.Join(wf.Name),
				schedv1.LabelWorkflowStep: label,
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
	cannotStart(wf, st, i, schedv1.ReasonNameTaken, nameTakenMessage(wf, taken), now)
}

// nameTakenMessage says that taken holds the name of a task of wf.
func nameTakenMessage(wf *schedv1.Workflow, taken *schedv1.AgentTask) string {
	owner := "it has no controller"
	if ref := metav1.GetControllerOf(taken); ref != nil {
		owner = fmt.Sprintf("its controller is %s %s", ref.Kind, ref.Name)
	}
	return fmt.Sprintf(
		"AgentTask %s already exists and is not this workflow's (%s); the operator never takes it over: run the workflow again under another name (kubectl sched workflow retry %s), or delete that AgentTask (kubectl delete agenttask %s -n %s) and create the workflow again",
		taken.Name, owner, wf.Name, taken.Name, taken.Namespace)
}

func cannotStart(wf *schedv1.Workflow, st *schedv1.WorkflowStatus, i int, reason, msg string, now metav1.Time) {
	s := stepStatus(wf, st, i)
	s.Phase, s.TaskName, s.CompletionTime = schedv1.StepFailed, "", &now
	s.Message = msg
	if i >= len(wf.Spec.Steps) {
		// A finally step: the others go on; the next reconcile ends the
		// workflow once they are done.
		skipBlockedFinally(wf, st)
		return
	}
	if !wf.Spec.IsDAG() || wf.Spec.FailFast {
		name := wf.Spec.Steps[i].Name
		skipWaiting(st, fmt.Sprintf("step %s did not start", name))
		mainEnded(wf, st, schedv1.WorkflowFailed, reason, fmt.Sprintf("step %d (%s) cannot start: %s", i, name, s.Message), now)
		return
	}
	st.Reason = reason
	skipBlocked(wf, st)
}

// stepStatus is the status of step i: of spec.steps, or of spec.finally
// from len(spec.steps) on.
func stepStatus(wf *schedv1.Workflow, st *schedv1.WorkflowStatus, i int) *schedv1.StepStatus {
	if n := len(wf.Spec.Steps); i >= n {
		return &st.Finally[i-n]
	}
	return &st.Steps[i]
}

// stepName is the name of step i, counted as stepStatus counts.
func stepName(wf *schedv1.Workflow, i int) string {
	if n := len(wf.Spec.Steps); i >= n {
		return wf.Spec.Finally[i-n].Name
	}
	return wf.Spec.Steps[i].Name
}

// waitingForQuota puts step i back to Waiting, since its task does not
// exist, and says which quota holds it.
func waitingForQuota(wf *schedv1.Workflow, st *schedv1.WorkflowStatus, i int, msg string) {
	s := stepStatus(wf, st, i)
	s.Phase, s.TaskName, s.StartTime = schedv1.StepWaiting, "", nil
	s.Message = "waiting for quota: " + msg
	what := fmt.Sprintf("step %d (%s)", i, stepName(wf, i))
	if i >= len(wf.Spec.Steps) {
		what = fmt.Sprintf("finally step %d (%s)", i-len(wf.Spec.Steps), stepName(wf, i))
	}
	running(st, fmt.Sprintf("%s is waiting for quota: %s", what, msg))
	st.Reason = schedv1.ReasonQuotaExceeded
	status.SetCondition(&st.Conditions, st.ObservedGeneration, metav1.Condition{Type: schedv1.ConditionReady, Status: metav1.ConditionTrue, Reason: schedv1.ReasonQuotaExceeded, Message: st.Message})
}

func running(st *schedv1.WorkflowStatus, msg string) { runningAs(st, schedv1.ReasonRunning, msg) }

// runningAs is running with another reason: WaitingForApproval,
// Suspended, RunningFinally.
func runningAs(st *schedv1.WorkflowStatus, reason, msg string) {
	msg = clip(msg)
	st.Phase, st.Reason, st.Message = schedv1.WorkflowRunning, reason, msg
	setProgress(st)
	status.SetCondition(&st.Conditions, st.ObservedGeneration, metav1.Condition{Type: schedv1.ConditionReady, Status: metav1.ConditionTrue, Reason: reason, Message: msg})
	status.SetCondition(&st.Conditions, st.ObservedGeneration, metav1.Condition{Type: schedv1.ConditionSucceeded, Status: metav1.ConditionUnknown, Reason: schedv1.ReasonRunning, Message: "the workflow has not finished"})
}

func end(st *schedv1.WorkflowStatus, phase schedv1.WorkflowPhase, reason, msg string, now metav1.Time) {
	msg = clip(msg)
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

// skipFrom skips every unfinished step from index from on, and every
// unfinished finally step.
func skipFrom(st *schedv1.WorkflowStatus, from int, why string) {
	for i := from; i < len(st.Steps); i++ {
		if !st.Steps[i].Phase.Finished() {
			st.Steps[i].Phase, st.Steps[i].Message = schedv1.StepSkipped, "skipped: "+why
		}
	}
	for i := range st.Finally {
		if !st.Finally[i].Phase.Finished() {
			st.Finally[i].Phase, st.Finally[i].Message = schedv1.StepSkipped, "skipped: "+why
		}
	}
}

// maxMessage is the CRD's bound on status messages.
const maxMessage = 32768

// clip cuts a message to maxMessage bytes, on a rune boundary: a status
// over the CRD's bound would be refused.
func clip(msg string) string { return clipTo(msg, maxMessage) }

// stopRunning ends the started main steps in phase, and has their tasks
// cancelled, which stops their pods; a step waiting for approval just ends.
func stopRunning(st *schedv1.WorkflowStatus, tasks map[int]*schedv1.AgentTask, p *plan, phase schedv1.StepPhase, msg string, now metav1.Time) {
	for i := range st.Steps {
		s := &st.Steps[i]
		if isActive(s.Phase) {
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

// phaseWord says how a step or item that did not succeed ended.
func phaseWord(p schedv1.StepPhase) string {
	switch p {
	case schedv1.StepTimeout:
		return "timed out"
	case schedv1.StepCancelled:
		return "was cancelled"
	}
	return "failed"
}

func lower(p schedv1.StepPhase) string {
	switch p {
	case schedv1.StepRunning:
		return "running"
	case schedv1.StepWaitingForApproval:
		return "waiting for approval"
	}
	return "pending"
}

// heldOutputs are the sizes of the file outputs of the steps' tasks that
// the cache dropped as too big to pass on (cachetrim.HeldOutputs), by step
// and key.
func heldOutputs(tasks map[int]*schedv1.AgentTask) map[int]map[string]int {
	var held map[int]map[string]int
	for i, t := range tasks {
		if h := cachetrim.HeldOutputs(t); h != nil {
			if held == nil {
				held = map[int]map[string]int{}
			}
			held[i] = h
		}
	}
	return held
}

// heldOutputError is a reference to a step's file output that is too big
// for the workflow to pass on: it exists, in the step's task, but later
// steps cannot read it. Its reason is TooLarge, not MissingOutput.
type heldOutputError struct {
	*substitution.MissingOutputError
	// Bytes is the output's size.
	Bytes int
}

func (e *heldOutputError) Error() string {
	m := e.MissingOutputError
	return fmt.Sprintf("%s uses %s, but file output %q of step %s holds %d bytes, and a workflow passes a step's file outputs on only when they hold at most %d bytes in all; "+
		"the output is in its task's status.fileOutputs: write what later steps need to a smaller file, or to the termination message",
		m.Field, m.Raw, m.Key, m.Step, e.Bytes, schedv1.MaxPassedFileOutputBytes)
}

// explainHeld turns a reference to an output that is missing because it
// is too big to pass on (held) into a *heldOutputError that says so.
func explainHeld(err error, held map[int]map[string]int) error {
	var missing *substitution.MissingOutputError
	if !errors.As(err, &missing) {
		return err
	}
	if n, ok := held[missing.StepIndex][missing.Key]; ok {
		return &heldOutputError{MissingOutputError: missing, Bytes: n}
	}
	return err
}

package workflow

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-sched/kubectl-sched/api/celexpr"
	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
	"github.com/kubectl-sched/kubectl-sched/operator/status"
)

// What holds a step at its start, besides its dependencies: spec.suspend,
// its when, an approval. Each is a small pure function of the spec and the
// status, so decide reads as the order in which they apply.

// gateVerdict is what a step's when decides.
type gateVerdict int

const (
	gateRun gateVerdict = iota
	// gateSkip: when was false.
	gateSkip
	// gateFail: when could not be evaluated.
	gateFail
)

type gate struct {
	verdict gateVerdict
	message string
}

// when evaluates the when of step i, counted as stepStatus counts
// (spec.steps, then spec.finally), with the steps' phases and outputs,
// the params and, for a finally step, the main steps' phase.
func when(wf *schedv1.Workflow, st *schedv1.WorkflowStatus, i int) gate {
	step, scope := specStep(wf, i), celexpr.Main
	if n := len(wf.Spec.Steps); i >= n {
		i, scope = i-n, celexpr.Finally
	}
	if step.When == "" {
		return gate{verdict: gateRun}
	}
	x, err := celexpr.CompileStep(&wf.Spec, i, scope)
	if err != nil {
		// Checked before the workflow started; a spec cannot change since.
		return gate{verdict: gateFail, message: fmt.Sprintf("when %q is invalid: %v", step.When, err)}
	}
	ok, err := x.Eval(whenInput(wf, st))
	switch {
	case err != nil:
		return gate{verdict: gateFail, message: fmt.Sprintf("when %q failed: %v", step.When, err)}
	case !ok:
		return gate{verdict: gateSkip, message: fmt.Sprintf("skipped: when %q was false", step.When)}
	}
	return gate{verdict: gateRun}
}

// whenInput is what a when expression sees: every step by name, with its
// phase and outputs (empty when it has none), the params and the main
// steps' phase once they have ended.
func whenInput(wf *schedv1.Workflow, st *schedv1.WorkflowStatus) celexpr.Input {
	in := celexpr.Input{Steps: map[string]celexpr.Step{}, Params: map[string]string{}}
	add := func(s schedv1.StepStatus) {
		outs := s.Outputs
		if outs == nil {
			outs = map[string]string{}
		}
		in.Steps[s.Name] = celexpr.Step{Phase: string(s.Phase), Outputs: outs}
	}
	for _, s := range st.Steps {
		add(s)
	}
	for _, s := range st.Finally {
		add(s)
	}
	for _, p := range wf.Spec.Params {
		in.Params[p.Name] = p.Value
	}
	if st.Main != nil {
		in.Phase = string(st.Main.Phase)
	}
	return in
}

// waitForApproval starts approval step i: it runs no task and waits for a
// decision in spec.approvals (decideApprovals). A retry's step that asks
// again keeps the note that says why.
func waitForApproval(wf *schedv1.Workflow, s *schedv1.StepStatus, i int, now metav1.Time) {
	note := ""
	if s.Reason == schedv1.ReasonApprovalNotReused {
		note = s.Message
	}
	step := wf.Spec.Steps[i]
	s.Phase, s.Reason, s.StartTime = schedv1.StepWaitingForApproval, schedv1.ReasonWaitingForApproval, &now
	s.Message = fmt.Sprintf("waiting for approval%s: kubectl sched workflow approve %s %s (or deny)", byApprovers(step.Approval), wf.Name, step.Name)
	if m := step.Approval.Message; m != "" {
		s.Message = m + " (" + s.Message + ")"
	}
	if note != "" {
		s.Message = clip(s.Message + "; " + note)
	}
}

// byApprovers is " by <who may decide>", or "" when anyone may.
func byApprovers(a *schedv1.StepApproval) string {
	if a == nil || a.Approvers == nil {
		return ""
	}
	return " by " + a.Approvers.Describe()
}

// decideApprovals ends each step waiting for approval that spec.approvals
// decides (applyDecision).
func decideApprovals(wf *schedv1.Workflow, st *schedv1.WorkflowStatus, rules approvalRules, now metav1.Time) {
	for i := range st.Steps {
		applyDecision(wf, &st.Steps[i], rules, now)
	}
}

// applyDecision ends step s, if it waits for approval and spec.approvals
// decides it: Approved, it Succeeds with the approver as output
// approvedBy; Denied, it Fails with reason Denied. An approval the
// cluster's rules do not count (one's own run, where that is forbidden)
// fails it with reason SelfApproved: a step has one decision, so it could
// never be decided otherwise. A decision recorded before the step waited
// counts as soon as it does.
func applyDecision(wf *schedv1.Workflow, s *schedv1.StepStatus, rules approvalRules, now metav1.Time) {
	if s.Phase != schedv1.StepWaitingForApproval {
		return
	}
	d := decisionOn(wf, s.Name)
	if d == nil {
		return
	}
	by := "by " + d.User
	if d.Reason != "" {
		by += ": " + d.Reason
	}
	s.CompletionTime = &now
	switch why := rules.refusal(wf, d.User); {
	case d.Decision == schedv1.Approved && why != "":
		s.Phase, s.Reason = schedv1.StepFailed, schedv1.ReasonSelfApproved
		s.Message = fmt.Sprintf("the approval %s does not count: %s", by, why)
	case d.Decision == schedv1.Approved:
		s.Phase, s.Reason, s.Message = schedv1.StepSucceeded, schedv1.ReasonApproved, "approved "+by
		s.Outputs = map[string]string{OutputApprovedBy: d.User}
	default:
		s.Phase, s.Reason, s.Message = schedv1.StepFailed, schedv1.ReasonDenied, "denied "+by
	}
}

// OutputApprovedBy is the output of an approved step: who approved it.
const OutputApprovedBy = "approvedBy"

func decisionOn(wf *schedv1.Workflow, step string) *schedv1.StepDecision {
	for i := range wf.Spec.Approvals {
		if wf.Spec.Approvals[i].Step == step {
			return &wf.Spec.Approvals[i]
		}
	}
	return nil
}

// setSuspended keeps the Suspended condition: True while spec.suspend is,
// False once it was and is no longer, absent on a workflow never suspended.
func setSuspended(wf *schedv1.Workflow, st *schedv1.WorkflowStatus) {
	c := metav1.Condition{Type: schedv1.ConditionSuspended, Status: metav1.ConditionTrue, Reason: schedv1.ReasonSuspended,
		Message: fmt.Sprintf("no new step starts until it is resumed: kubectl sched workflow resume %s", wf.Name)}
	if !wf.Spec.Suspend {
		if !hasCondition(st, schedv1.ConditionSuspended) {
			return
		}
		c.Status, c.Reason, c.Message = metav1.ConditionFalse, schedv1.ReasonResumed, "resumed: steps start again"
	}
	status.SetCondition(&st.Conditions, st.ObservedGeneration, c)
}

func hasCondition(st *schedv1.WorkflowStatus, t string) bool {
	for _, c := range st.Conditions {
		if c.Type == t {
			return true
		}
	}
	return false
}

// suspended reports a workflow that runs nothing because spec.suspend
// holds the steps that would start.
func suspended(wf *schedv1.Workflow, st *schedv1.WorkflowStatus) {
	runningAs(st, schedv1.ReasonSuspended, fmt.Sprintf("suspended: no step runs, and none starts until it is resumed (kubectl sched workflow resume %s)", wf.Name))
}

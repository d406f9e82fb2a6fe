package v1alpha1

import (
	"slices"
	"strings"
)

// MaxApprovers bounds approval.approvers.users, and groups: the admission
// policy checks each decision against both.
const MaxApprovers = 16

// HasApproval reports whether any step of spec.steps waits for approval.
func (s *WorkflowSpec) HasApproval() bool {
	return slices.ContainsFunc(s.Steps, func(st WorkflowStep) bool { return st.Approval != nil })
}

// MayDecide reports whether a user, member of groups, may decide on a step
// with this approval: anyone when it names no approvers. The admission
// policy kubectl-sched-workflow-approvals applies the same rule.
func (a *StepApproval) MayDecide(user string, groups []string) bool {
	if a == nil || a.Approvers == nil {
		return true
	}
	return slices.Contains(a.Approvers.Users, user) ||
		slices.ContainsFunc(a.Approvers.Groups, func(g string) bool { return slices.Contains(groups, g) })
}

// Describe names the approvers for a person: "alice, bob or a member of
// group release".
func (a *Approvers) Describe() string {
	if a == nil {
		return ""
	}
	var parts []string
	if len(a.Users) > 0 {
		parts = append(parts, strings.Join(a.Users, ", "))
	}
	switch len(a.Groups) {
	case 0:
	case 1:
		parts = append(parts, "a member of group "+a.Groups[0])
	default:
		parts = append(parts, "a member of groups "+strings.Join(a.Groups, ", "))
	}
	return strings.Join(parts, " or ")
}

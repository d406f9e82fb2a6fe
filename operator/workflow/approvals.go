package workflow

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/equality"

	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
)

// approvalRules are the cluster's rules on approvals that the operator
// applies to what it reads, besides the admission policies.
type approvalRules struct {
	// forbidSelf: an approval by the user who asked for the run
	// (spec.requestedBy) does not count (forbid-self-approval).
	forbidSelf bool
}

// refusal says why an approval by user does not count in wf, "" when it
// does: where approving one's own run is forbidden, user asked for it, or
// wf does not say who did.
func (r approvalRules) refusal(wf *schedv1.Workflow, user string) string {
	switch {
	case !r.forbidSelf:
		return ""
	case wf.Spec.RequestedBy == "":
		return "the workflow does not say who asked for it (spec.requestedBy), and this cluster forbids approving one's own run"
	case wf.Spec.RequestedBy == user:
		return fmt.Sprintf("%s asked for this run (spec.requestedBy), and this cluster forbids approving one's own run", user)
	}
	return ""
}

// notReused says why the retry wf does not reuse the approval that step i,
// an approval step, had in the earlier attempt prev (o, which Succeeded
// there), "" when it does. An approval lets run what depends on its step;
// it carries over only to the same: approvedScope unchanged, and an
// approver the rules still count.
func notReused(wf, prev *schedv1.Workflow, i int, o schedv1.StepStatus, rules approvalRules) string {
	name := wf.Spec.Steps[i].Name
	by := o.Outputs[OutputApprovedBy]
	pi := slices.IndexFunc(prev.Spec.Steps, func(s schedv1.WorkflowStep) bool { return s.Name == name })
	if pi < 0 || prev.Spec.Steps[pi].Approval == nil || by == "" {
		return fmt.Sprintf("step %s was not approved in workflow %s; it waits for a decision", name, prev.Name)
	}
	if changed := scopeChanges(&prev.Spec, pi, &wf.Spec, i); len(changed) > 0 {
		return fmt.Sprintf("the approval by %s in workflow %s is not reused: %s changed since (an approval covers the steps that depend on its step, the steps those read from and the params)",
			by, prev.Name, strings.Join(changed, ", "))
	}
	if why := rules.refusal(wf, by); why != "" {
		return fmt.Sprintf("the approval by %s in workflow %s is not reused: %s", by, prev.Name, why)
	}
	return ""
}

// approvedScope is what an approval of step i lets run, by step name: the
// step, every step that depends on it (directly or through others), and
// every step those depend on, whose outputs and phases they read. Each
// step with the names of the steps it waits for, which in a sequence its
// place decides.
func approvedScope(spec *schedv1.WorkflowSpec, i int) map[string]scopedStep {
	down := map[int]bool{i: true}
	for j := i + 1; j < len(spec.Steps); j++ {
		if slices.ContainsFunc(spec.Dependencies(j), func(d int) bool { return down[d] }) {
			down[j] = true
		}
	}
	in := maps.Clone(down)
	for j := range down {
		maps.Copy(in, spec.Ancestors(j))
	}
	scope := map[string]scopedStep{}
	for j := range in {
		var deps []string
		for _, d := range spec.Dependencies(j) {
			deps = append(deps, spec.Steps[d].Name)
		}
		scope[spec.Steps[j].Name] = scopedStep{step: spec.Steps[j], after: deps}
	}
	return scope
}

type scopedStep struct {
	step  schedv1.WorkflowStep
	after []string
}

// scopeChanges names what differs between the scope of step pi of was and
// that of step i of now, and their params: "step deploy", "params".
func scopeChanges(was *schedv1.WorkflowSpec, pi int, now *schedv1.WorkflowSpec, i int) []string {
	before, after := approvedScope(was, pi), approvedScope(now, i)
	var changed []string
	for _, name := range slices.Sorted(maps.Keys(mergeKeys(before, after))) {
		b, inBefore := before[name]
		a, inAfter := after[name]
		if !inBefore || !inAfter || !equality.Semantic.DeepEqual(b.step, a.step) || !slices.Equal(b.after, a.after) {
			changed = append(changed, "step "+name)
		}
	}
	if !equality.Semantic.DeepEqual(paramValues(was), paramValues(now)) {
		changed = append(changed, "the params")
	}
	return changed
}

func mergeKeys(a, b map[string]scopedStep) map[string]bool {
	keys := map[string]bool{}
	for k := range a {
		keys[k] = true
	}
	for k := range b {
		keys[k] = true
	}
	return keys
}

func paramValues(spec *schedv1.WorkflowSpec) map[string]string {
	v := map[string]string{}
	for _, p := range spec.Params {
		v[p.Name] = p.Value
	}
	return v
}

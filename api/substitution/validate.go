package substitution

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
)

// ValidateWorkflow checks the references in every string substitution reaches
// (each step's image, command, args and env values): their syntax, that each
// step reference names an earlier step, and that each param is declared.
// Errors are on paths like spec.steps[2].task.args[0]. It also refuses a
// step that renders past MaxRenderedStepBytes with its params alone
// (outputs, not known yet, count as empty; ResolveTask checks them when the
// step starts).
//
// The API server's CEL rules check the same, more loosely; this is what the
// plugin runs before submitting, and it explains each problem fully.
func ValidateWorkflow(spec *v1alpha1.WorkflowSpec) field.ErrorList {
	if spec == nil {
		return nil
	}
	v := workflowValidator{spec: spec, params: map[string]bool{}}
	for _, p := range spec.Params {
		v.params[p.Name] = true
	}
	steps := field.NewPath("spec", "steps")
	values := Values{Params: map[string]string{}}
	for _, p := range spec.Params {
		values.Params[p.Name] = p.Value
	}
	for i := range spec.Steps {
		values.StepNames = append(values.StepNames, spec.Steps[i].Name)
	}
	for i := range spec.Steps {
		for j, d := range spec.Steps[i].DependsOn {
			path := steps.Index(i).Child("dependsOn").Index(j)
			switch at := stepByName(spec.Steps, d); {
			case at < 0:
				v.errs = append(v.errs, notFound(path, fmt.Sprintf("%s depends on %q, but no step is named so%s", stepLabel(i, spec.Steps[i].Name), d, listEarlier(spec.Steps, i))))
			case at >= i:
				v.errs = append(v.errs, field.Invalid(path, d, fmt.Sprintf("%s may only depend on steps listed before it (which rules out cycles); move %q above it", stepLabel(i, spec.Steps[i].Name), d)))
			}
		}
		task := &spec.Steps[i].Task
		p := steps.Index(i).Child("task")
		v.check(i, p.Child("image"), task.Image)
		for j, s := range task.Command {
			v.check(i, p.Child("command").Index(j), s)
		}
		for j, s := range task.Args {
			v.check(i, p.Child("args").Index(j), s)
		}
		for j, e := range task.Env {
			v.check(i, p.Child("env").Index(j).Child("value"), e.Value)
		}
		if err := checkSize(i, task, values, true); err != nil {
			v.errs = append(v.errs, field.Invalid(p, field.OmitValueType{}, err.Error()))
		}
	}
	return v.errs
}

type workflowValidator struct {
	spec   *v1alpha1.WorkflowSpec
	params map[string]bool
	errs   field.ErrorList
}

// check validates the references in s, a string of step i.
func (v *workflowValidator) check(i int, path *field.Path, s string) {
	self := stepLabel(i, v.spec.Steps[i].Name)
	refs, err := Parse(s)
	if err != nil {
		v.errs = append(v.errs, field.Invalid(path, field.OmitValueType{}, self+": "+err.Error()))
		return
	}
	seen := map[string]bool{}
	for _, r := range refs {
		if seen[r.Raw] {
			continue // one error per reference and string is enough
		}
		seen[r.Raw] = true
		if e := v.checkRef(i, self, path, r); e != nil {
			v.errs = append(v.errs, e)
		}
	}
}

func (v *workflowValidator) checkRef(i int, self string, path *field.Path, r Ref) *field.Error {
	steps := v.spec.Steps
	uses := fmt.Sprintf("%s uses %s", self, r.Raw)
	if r.Kind == Param {
		if v.params[r.Key] {
			return nil
		}
		return notFound(path, fmt.Sprintf("%s, but spec.params has no param %q%s", uses, r.Key, listParams(v.spec.Params)))
	}
	target := r.StepIndex
	if target < 0 {
		target = stepByName(steps, r.Step)
		if target < 0 {
			return notFound(path, fmt.Sprintf("%s, but no step is named %q%s", uses, r.Step, listEarlier(steps, i)))
		}
	} else if target >= len(steps) {
		return notFound(path, fmt.Sprintf("%s, but there is no step %d: the workflow has %d steps, 0 to %d", uses, target, len(steps), len(steps)-1))
	}
	const rule = "a step can only use outputs of earlier steps"
	switch {
	case target == i:
		return field.Invalid(path, field.OmitValueType{}, fmt.Sprintf("%s, its own output; %s", uses, rule))
	case target > i:
		who := fmt.Sprintf("step %q", steps[target].Name)
		if r.StepIndex >= 0 {
			who = stepLabelIndexed(target, steps[target].Name)
		}
		return field.Invalid(path, field.OmitValueType{}, fmt.Sprintf("%s, but %s runs after it; %s", uses, who, rule))
	case !v.spec.Ancestors(i)[target]:
		// Steps that run side by side: only what the step waits for is
		// certain to be there when it starts.
		return field.Invalid(path, field.OmitValueType{}, fmt.Sprintf("%s, but it does not depend on step %q, directly or through other steps; add %q to its dependsOn", uses, steps[target].Name, steps[target].Name))
	}
	return nil
}

func notFound(path *field.Path, detail string) *field.Error {
	return &field.Error{Type: field.ErrorTypeNotFound, Field: path.String(), BadValue: field.OmitValueType{}, Detail: detail}
}

// stepByName returns the index of the first step named name, or -1.
func stepByName(steps []v1alpha1.WorkflowStep, name string) int {
	for i := range steps {
		if steps[i].Name == name {
			return i
		}
	}
	return -1
}

func listParams(params []v1alpha1.WorkflowParam) string {
	if len(params) == 0 {
		return "; spec.params is empty"
	}
	names := make([]string, len(params))
	for i, p := range params {
		names[i] = p.Name
	}
	return "; params are: " + strings.Join(names, ", ")
}

func listEarlier(steps []v1alpha1.WorkflowStep, i int) string {
	if i == 0 {
		return "; it is the first step, so it can use no outputs"
	}
	names := make([]string, i)
	for j := range i {
		names[j] = steps[j].Name
		if names[j] == "" {
			names[j] = fmt.Sprintf("step %d", j)
		}
	}
	return "; the steps before it are: " + strings.Join(names, ", ")
}

// stepLabel names a step the way users wrote it: by name, or by index when
// it has none yet (the plugin validates before the API server does).
func stepLabel(i int, name string) string {
	if name == "" {
		return fmt.Sprintf("step %d", i)
	}
	return fmt.Sprintf("step %q", name)
}

// stepLabelIndexed names a step by index and name, for when both help.
func stepLabelIndexed(i int, name string) string {
	if name == "" {
		return fmt.Sprintf("step %d", i)
	}
	return fmt.Sprintf("step %d (%q)", i, name)
}

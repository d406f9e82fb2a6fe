package celexpr

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
)

// ValidateWorkflow compiles and type-checks the when of every step and
// finally step, and checks the steps and params each names: a main step
// only the steps it depends on, directly or through others; a finally step
// any main step and the finally steps it depends on; params declared in
// spec.params. Errors are on spec.steps[i].when and spec.finally[j].when
// and name the step.
func ValidateWorkflow(spec *v1alpha1.WorkflowSpec) field.ErrorList {
	if spec == nil {
		return nil
	}
	var errs field.ErrorList
	for i := range spec.Steps {
		if spec.Steps[i].When == "" {
			continue
		}
		path := field.NewPath("spec", "steps").Index(i).Child("when")
		errs = append(errs, check(spec, path, i, Main)...)
	}
	for j := range spec.Finally {
		if spec.Finally[j].When == "" {
			continue
		}
		path := field.NewPath("spec", "finally").Index(j).Child("when")
		errs = append(errs, check(spec, path, j, Finally)...)
	}
	return errs
}

// CompileStep compiles the when of step i of spec.steps (Main) or of
// spec.finally (Finally), checked as ValidateWorkflow checks it. It is
// nil when the step has none.
func CompileStep(spec *v1alpha1.WorkflowSpec, i int, scope Scope) (*Expression, error) {
	step := stepOf(spec, i, scope)
	if step.When == "" {
		return nil, nil
	}
	x, err := compile(step.When, scope, sizesIn(spec), EstimatedCostLimit)
	if err != nil {
		return nil, err
	}
	if probs := names(spec, x, i, scope); len(probs) > 0 {
		return nil, fmt.Errorf("%s", strings.Join(probs, "; "))
	}
	return x, nil
}

func stepOf(spec *v1alpha1.WorkflowSpec, i int, scope Scope) *v1alpha1.WorkflowStep {
	if scope == Finally {
		return &spec.Finally[i]
	}
	return &spec.Steps[i]
}

func check(spec *v1alpha1.WorkflowSpec, path *field.Path, i int, scope Scope) field.ErrorList {
	step := stepOf(spec, i, scope)
	label := fmt.Sprintf("step %q", step.Name)
	if scope == Finally {
		label = fmt.Sprintf("finally step %q", step.Name)
	}
	x, err := compile(step.When, scope, sizesIn(spec), EstimatedCostLimit)
	if cost := (costError{}); errors.As(err, &cost) {
		return field.ErrorList{field.Invalid(path, step.When, fmt.Sprintf("%s: when could cost too much to evaluate: %v", label, err))}
	}
	if err != nil {
		return field.ErrorList{field.Invalid(path, step.When, fmt.Sprintf("%s: when is not a valid CEL expression: %v", label, err))}
	}
	var errs field.ErrorList
	for _, p := range names(spec, x, i, scope) {
		errs = append(errs, field.Invalid(path, step.When, label+": "+p))
	}
	return errs
}

// sizesIn is what the steps of spec an expression reads may hold at
// most: the outputs of a forEach step are longer than a task's.
func sizesIn(spec *v1alpha1.WorkflowSpec) func(steps []string) sizes {
	return func(steps []string) sizes {
		s := sizes{output: MaxOutputBytes, param: MaxParamBytes}
		for _, name := range steps {
			for _, list := range [][]v1alpha1.WorkflowStep{spec.Steps, spec.Finally} {
				for k := range list {
					if list[k].Name == name && list[k].ForEach != nil {
						s.output = MaxForEachOutputBytes
					}
				}
			}
		}
		return s
	}
}

// names checks the steps and params x reads, for step i of scope.
func names(spec *v1alpha1.WorkflowSpec, x *Expression, i int, scope Scope) []string {
	var probs []string
	for _, name := range x.Steps {
		if p := stepProblem(spec, name, i, scope); p != "" {
			probs = append(probs, p)
		}
	}
	declared := make([]string, len(spec.Params))
	for k, p := range spec.Params {
		declared[k] = p.Name
	}
	for _, name := range x.Params {
		if slices.Contains(declared, name) {
			continue
		}
		have := "spec.params is empty"
		if len(declared) > 0 {
			have = "params are: " + strings.Join(declared, ", ")
		}
		probs = append(probs, fmt.Sprintf("it reads params.%s, but spec.params has no param %q; %s", name, name, have))
	}
	return probs
}

// stepProblem says why step i of scope may not read step name, or "".
func stepProblem(spec *v1alpha1.WorkflowSpec, name string, i int, scope Scope) string {
	main := slices.IndexFunc(spec.Steps, func(s v1alpha1.WorkflowStep) bool { return s.Name == name })
	fin := slices.IndexFunc(spec.Finally, func(s v1alpha1.WorkflowStep) bool { return s.Name == name })
	reads := fmt.Sprintf("it reads steps[%q]", name)
	if scope == Finally {
		switch {
		case main >= 0:
			return "" // the main steps have all finished
		case fin == i:
			return reads + ", itself: when is decided before the step runs"
		case fin >= 0 && spec.FinallyAncestors(i)[fin]:
			return ""
		case fin >= 0:
			return fmt.Sprintf("%s, but it does not depend on finally step %q, which may not have finished (finally steps run side by side); add %q to its dependsOn", reads, name, name)
		}
		return fmt.Sprintf("%s, but there is no step %q: %s", reads, name, stepList(spec))
	}
	switch {
	case main == i:
		return reads + ", itself: when is decided before the step runs"
	case main > i:
		return fmt.Sprintf("%s, but step %q runs after it; a step can only look at the steps it depends on", reads, name)
	case main >= 0 && spec.Ancestors(i)[main]:
		return ""
	case main >= 0:
		return fmt.Sprintf("%s, but it does not depend on step %q, directly or through other steps, so that step may not have finished; add %q to its dependsOn", reads, name, name)
	case fin >= 0:
		return fmt.Sprintf("%s, a finally step, which runs after every step of spec.steps", reads)
	}
	return fmt.Sprintf("%s, but there is no step %q: %s", reads, name, stepList(spec))
}

func stepList(spec *v1alpha1.WorkflowSpec) string {
	var names []string
	for _, s := range spec.Steps {
		names = append(names, s.Name)
	}
	for _, s := range spec.Finally {
		names = append(names, s.Name+" (finally)")
	}
	return "the steps are " + strings.Join(names, ", ")
}

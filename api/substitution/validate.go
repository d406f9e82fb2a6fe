package substitution

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
)

// ValidateWorkflow checks the references in every string substitution reaches
// (each step's and finally step's image, command, args and env values):
// their syntax, that each step reference names a step whose outputs the
// step may use, that each param is declared and that only finally steps
// use ${workflow.phase} and only forEach steps ${item}; each dependsOn;
// each forEach: one of items and from within their bounds, not on an
// approval, from one reference to an output or param the step may use;
// and each cache: not on a forEach or approval step, its key's references
// as the task's, its length with params alone. Errors are on paths like
// spec.steps[2].task.args[0]. It also refuses a step that renders past
// MaxRenderedStepBytes with its params alone (outputs, not known yet,
// count as empty; ResolveTask checks them when the step starts).
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
	values := Values{Params: map[string]string{}, MainSteps: len(spec.Steps)}
	for _, p := range spec.Params {
		values.Params[p.Name] = p.Value
	}
	for i := range spec.Steps {
		values.StepNames = append(values.StepNames, spec.Steps[i].Name)
	}
	for j := range spec.Finally {
		values.StepNames = append(values.StepNames, spec.Finally[j].Name)
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
		self := ownerStep{index: i, name: spec.Steps[i].Name, loop: spec.Steps[i].ForEach != nil}
		v.checkForEach(self, steps.Index(i), &spec.Steps[i])
		v.checkTask(self, steps.Index(i).Child("task"), &spec.Steps[i].Task, withItem(values, spec.Steps[i].ForEach), i)
		v.checkCache(self, steps.Index(i), &spec.Steps[i], values, i)
	}
	fin := field.NewPath("spec", "finally")
	// The longest phase ${workflow.phase} may be, for the size check.
	values.Phase = string(v1alpha1.WorkflowSucceeded)
	for j := range spec.Finally {
		self := ownerStep{index: j, name: spec.Finally[j].Name, finally: true, loop: spec.Finally[j].ForEach != nil}
		for k, d := range spec.Finally[j].DependsOn {
			path := fin.Index(j).Child("dependsOn").Index(k)
			switch at := stepByName(spec.Finally, d); {
			case at < 0 && stepByName(spec.Steps, d) >= 0:
				v.errs = append(v.errs, field.Invalid(path, d, fmt.Sprintf("%s depends on %q, a step of spec.steps; a finally step may only depend on finally steps listed before it (it runs after every step of spec.steps anyway)", self.label(), d)))
			case at < 0:
				v.errs = append(v.errs, notFound(path, fmt.Sprintf("%s depends on %q, but no finally step is named so%s", self.label(), d, listEarlierFinally(spec.Finally, j))))
			case at >= j:
				v.errs = append(v.errs, field.Invalid(path, d, fmt.Sprintf("%s may only depend on finally steps listed before it (which rules out cycles); move %q above it", self.label(), d)))
			}
		}
		v.checkForEach(self, fin.Index(j), &spec.Finally[j])
		v.checkTask(self, fin.Index(j).Child("task"), &spec.Finally[j].Task, withItem(values, spec.Finally[j].ForEach), values.FinallyIndex(j))
		v.checkCache(self, fin.Index(j), &spec.Finally[j], values, values.FinallyIndex(j))
	}
	return v.errs
}

// ownerStep is the step a string belongs to: of spec.steps or spec.finally.
type ownerStep struct {
	index   int
	name    string
	finally bool
	// loop: a forEach step, whose task may use ${item}.
	loop bool
}

func (s ownerStep) label() string {
	if s.finally {
		if s.name == "" {
			return fmt.Sprintf("finally step %d", s.index)
		}
		return fmt.Sprintf("finally step %q", s.name)
	}
	return stepLabel(s.index, s.name)
}

// checkTask checks the strings of a step's task and its size with its
// params; at is the step's index in values.
func (v *workflowValidator) checkTask(self ownerStep, p *field.Path, task *v1alpha1.AgentTaskSpec, values Values, at int) {
	v.check(self, p.Child("image"), task.Image)
	for j, s := range task.Command {
		v.check(self, p.Child("command").Index(j), s)
	}
	for j, s := range task.Args {
		v.check(self, p.Child("args").Index(j), s)
	}
	for j, e := range task.Env {
		v.check(self, p.Child("env").Index(j).Child("value"), e.Value)
	}
	if err := checkSize(at, task, values, true); err != nil {
		if tl, ok := err.(*TooLargeError); ok && self.finally {
			// Name it as the user does: its index counts spec.finally.
			tl.StepIndex, tl.Finally = self.index, true
		}
		v.errs = append(v.errs, field.Invalid(p, field.OmitValueType{}, err.Error()))
	}
}

type workflowValidator struct {
	spec   *v1alpha1.WorkflowSpec
	params map[string]bool
	errs   field.ErrorList
}

// check validates the references in s, a string of step self.
func (v *workflowValidator) check(self ownerStep, path *field.Path, s string) {
	refs, err := Parse(s)
	if err != nil {
		v.errs = append(v.errs, field.Invalid(path, field.OmitValueType{}, self.label()+": "+err.Error()))
		return
	}
	seen := map[string]bool{}
	for _, r := range refs {
		if seen[r.Raw] {
			continue // one error per reference and string is enough
		}
		seen[r.Raw] = true
		if e := v.checkRef(self, path, r); e != nil {
			v.errs = append(v.errs, e)
		}
	}
}

func (v *workflowValidator) checkRef(self ownerStep, path *field.Path, r Ref) *field.Error {
	steps := v.spec.Steps
	uses := fmt.Sprintf("%s uses %s", self.label(), r.Raw)
	switch r.Kind {
	case Item:
		if self.loop {
			return nil
		}
		return field.Invalid(path, field.OmitValueType{}, uses+", which only the task of a forEach step may use (the item it runs for); add forEach to the step, or write $${item} for the text")
	case Param:
		if v.params[r.Key] {
			return nil
		}
		return notFound(path, fmt.Sprintf("%s, but spec.params has no param %q%s", uses, r.Key, listParams(v.spec.Params)))
	case WorkflowPhase:
		if self.finally {
			return nil
		}
		return field.Invalid(path, field.OmitValueType{}, uses+", which only finally steps may use: a step of spec.steps runs before the workflow has a phase")
	}
	if self.finally {
		return v.checkFinallyRef(self, path, r, uses)
	}
	i := self.index
	target := r.StepIndex
	if target < 0 {
		target = stepByName(steps, r.Step)
		if target < 0 && stepByName(v.spec.Finally, r.Step) >= 0 {
			return field.Invalid(path, field.OmitValueType{}, fmt.Sprintf("%s, but %q is a finally step, which runs after every step of spec.steps", uses, r.Step))
		}
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

// checkFinallyRef checks a step reference of a finally step: any step of
// spec.steps (by index or name), and by name the finally steps it depends
// on, directly or through others.
func (v *workflowValidator) checkFinallyRef(self ownerStep, path *field.Path, r Ref, uses string) *field.Error {
	steps, fin := v.spec.Steps, v.spec.Finally
	if r.StepIndex >= 0 {
		if r.StepIndex < len(steps) {
			return nil
		}
		return notFound(path, fmt.Sprintf("%s, but there is no step %d: spec.steps has %d steps, 0 to %d (an index counts spec.steps only; name a finally step)", uses, r.StepIndex, len(steps), len(steps)-1))
	}
	if stepByName(steps, r.Step) >= 0 {
		return nil
	}
	const rule = "a finally step can only use outputs of the steps of spec.steps and of the finally steps it depends on"
	switch target := stepByName(fin, r.Step); {
	case target < 0:
		return notFound(path, fmt.Sprintf("%s, but no step or finally step is named %q", uses, r.Step))
	case target == self.index:
		return field.Invalid(path, field.OmitValueType{}, fmt.Sprintf("%s, its own output; %s", uses, rule))
	case target > self.index:
		return field.Invalid(path, field.OmitValueType{}, fmt.Sprintf("%s, but finally step %q is listed after it; %s", uses, r.Step, rule))
	case !v.spec.FinallyAncestors(self.index)[target]:
		return field.Invalid(path, field.OmitValueType{}, fmt.Sprintf("%s, but it does not depend on finally step %q, directly or through others (finally steps run side by side); add %q to its dependsOn", uses, r.Step, r.Step))
	}
	return nil
}

// withItem is values for the size check of a step's task with params
// alone: ${item} counts as the longest item written out (those from
// forEach.from are not known yet).
func withItem(values Values, fe *v1alpha1.ForEach) Values {
	if fe == nil {
		return values
	}
	values.Loop = true
	for _, it := range fe.Items {
		if len(it) > len(values.Item) {
			values.Item = it
		}
	}
	return values
}

// checkForEach checks a step's forEach: not with an approval, one of
// items and from, within the bounds, and from one reference to an output
// or param that the step may use.
func (v *workflowValidator) checkForEach(self ownerStep, p *field.Path, step *v1alpha1.WorkflowStep) {
	fe := step.ForEach
	if fe == nil {
		return
	}
	p = p.Child("forEach")
	label := self.label()
	if step.Approval != nil {
		v.errs = append(v.errs, field.Invalid(p, field.OmitValueType{}, label+": a forEach step runs its task once per item; it cannot be an approval: put the approval in a step of its own before it"))
	}
	switch {
	case len(fe.Items) > 0 && fe.From != "":
		v.errs = append(v.errs, field.Invalid(p, field.OmitValueType{}, label+": forEach has both items and from; set one: items written out, or from, a reference to an output or param holding a JSON array of strings"))
	case len(fe.Items) == 0 && fe.From == "":
		v.errs = append(v.errs, field.Required(p, label+": forEach needs a list: items written out (1 to 100), or from, a reference to an output or param holding a JSON array of strings"))
	}
	if len(fe.Items) > v1alpha1.MaxItems {
		v.errs = append(v.errs, field.TooMany(p.Child("items"), len(fe.Items), v1alpha1.MaxItems))
	}
	for k, it := range fe.Items {
		if len(it) > v1alpha1.MaxItemLength {
			v.errs = append(v.errs, field.TooLong(p.Child("items").Index(k), field.OmitValueType{}, v1alpha1.MaxItemLength))
		}
	}
	if fe.MaxParallel < 0 || fe.MaxParallel > v1alpha1.MaxItems {
		v.errs = append(v.errs, field.Invalid(p.Child("maxParallel"), fe.MaxParallel, fmt.Sprintf("%s: maxParallel must be between 1 and %d (unset: every item at once)", label, v1alpha1.MaxItems)))
	}
	if fe.From == "" {
		return
	}
	fp := p.Child("from")
	refs, err := Parse(fe.From)
	if err != nil {
		v.errs = append(v.errs, field.Invalid(fp, fe.From, label+": "+err.Error()))
		return
	}
	if len(refs) != 1 || refs[0].Raw != fe.From || (refs[0].Kind != StepOutput && refs[0].Kind != Param) {
		v.errs = append(v.errs, field.Invalid(fp, fe.From, label+": forEach.from must be one reference and nothing else, to an output (${steps.NAME.output.KEY}) or a param (${params.NAME}) holding a JSON array of strings; for items written out, use forEach.items"))
		return
	}
	if e := v.checkRef(self, fp, refs[0]); e != nil {
		v.errs = append(v.errs, e)
	}
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

func listEarlierFinally(steps []v1alpha1.WorkflowStep, j int) string {
	if j == 0 {
		return "; it is the first finally step"
	}
	names := make([]string, j)
	for k := range j {
		names[k] = steps[k].Name
	}
	return "; the finally steps before it are: " + strings.Join(names, ", ")
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

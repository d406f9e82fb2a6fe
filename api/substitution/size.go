package substitution

import (
	"fmt"

	"github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
)

// The AgentTask bounds of the strings substitution fills in (their
// +kubebuilder markers in api/v1alpha1; TestCapMatchesTheAgentTaskBounds
// checks them against the generated CRD).
const (
	maxImage      = 512
	maxString     = 4096 // each command, args and env value string
	maxCommand    = 32
	maxArgs       = 64
	maxEnv        = 64
	renderedBound = maxImage + (maxCommand+maxArgs+maxEnv)*maxString
)

// MaxRenderedStepBytes is the most a workflow step's image, command, args
// and env values may hold once their references are substituted: 655,872
// bytes (640.5 KiB), what those fields of an AgentTask hold at their
// bounds. A step over it could never be a valid AgentTask, so it fails
// before its task is built; and however many references a step repeats,
// the operator never builds more than an AgentTask a tenant could have
// written directly.
const MaxRenderedStepBytes = renderedBound

// TooLargeError is a step that renders past MaxRenderedStepBytes. The
// operator reports it with reason TooLarge.
type TooLargeError struct {
	// Step is the step's name; StepIndex its index.
	Step      string
	StepIndex int
	// Size is what the step renders to, in bytes.
	Size int
	// Largest is the field that renders largest ("args[3]"), LargestSize its size.
	Largest     string
	LargestSize int
	// ParamsOnly: the size counts params alone, outputs as empty (the
	// plugin's check before the workflow runs).
	ParamsOnly bool
	// Finally: a finally step, StepIndex counting spec.finally.
	Finally bool
}

func (e *TooLargeError) Error() string {
	label, when := sizedStep(e.StepIndex, e.Step, e.Finally, e.ParamsOnly)
	return fmt.Sprintf("%s renders to %s %s, more than the %s a step may render to (what an AgentTask's image, command, args and env values hold); %s alone renders to %s: use shorter params or outputs, or fewer references to them",
		label, bytesText(e.Size), when, bytesText(MaxRenderedStepBytes), e.Largest, bytesText(e.LargestSize))
}

// sizedStep names the step a size error is about, and when its size was
// counted: with params alone (the plugin, before the run) or with outputs.
func sizedStep(index int, name string, finally, paramsOnly bool) (label, when string) {
	label = stepLabelIndexed(index, name)
	if finally {
		label = "finally " + label
	}
	when = "once its references are substituted"
	if paramsOnly {
		when = "with its params alone, before any output is known"
	}
	return label, when
}

// bytesText is n in bytes with a readable unit beside it.
func bytesText(n int) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB (%d bytes)", float64(n)/(1<<20), n)
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB (%d bytes)", float64(n)/(1<<10), n)
	}
	return fmt.Sprintf("%d bytes", n)
}

// checkSize fails with a *TooLargeError when step stepIndex's task renders
// past MaxRenderedStepBytes with v's values. It counts lengths and builds
// nothing, so a step that would render to gigabytes costs no memory. A
// reference without a value counts as empty and a string with a syntax
// error as written: resolving reports those.
func checkSize(stepIndex int, task *v1alpha1.AgentTaskSpec, v Values, paramsOnly bool) error {
	e := &TooLargeError{StepIndex: stepIndex, Step: v.stepName(stepIndex), ParamsOnly: paramsOnly}
	add := func(field, s string) {
		n := renderedLen(s, func(r Ref) int { return len(v.value(stepIndex, r)) })
		e.Size += n
		if n > e.LargestSize {
			e.Largest, e.LargestSize = field, n
		}
	}
	add("image", task.Image)
	for i, s := range task.Command {
		add(fmt.Sprintf("command[%d]", i), s)
	}
	for i, s := range task.Args {
		add(fmt.Sprintf("args[%d]", i), s)
	}
	for i, env := range task.Env {
		add(fmt.Sprintf("env[%d].value", i), env.Value)
	}
	if e.Size > MaxRenderedStepBytes {
		return e
	}
	return nil
}

// renderedLen is the length of s with each reference replaced by a value
// of size(ref) bytes and each "$${" by "${".
func renderedLen(s string, size func(Ref) int) int {
	n := 0
	err := scan(s, func(lit string) { n += len(lit) }, func(r Ref) error {
		n += size(r)
		return nil
	})
	if err != nil {
		return len(s)
	}
	return n
}

// value is what r resolves to for step self, "" when it resolves to
// nothing (yet) or names a step that does not run before self.
func (v Values) value(self int, r Ref) string {
	switch r.Kind {
	case Param:
		return v.Params[r.Key]
	case WorkflowPhase:
		return v.Phase
	case Item:
		return v.Item
	}
	target := r.StepIndex
	if target < 0 {
		target = stepIndex(v.StepNames, r.Step)
	}
	if target < 0 || target >= self || target >= len(v.Outputs) {
		return ""
	}
	if _, ok := v.Outputs[target][r.Key]; !ok && v.NoItems[target] {
		return "[]"
	}
	return v.Outputs[target][r.Key]
}

func stepIndex(names []string, name string) int {
	for i, n := range names {
		if n == name {
			return i
		}
	}
	return -1
}

package substitution

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
)

// Values are what references resolve to when a step starts.
type Values struct {
	// Params by name.
	Params map[string]string
	// StepNames of every step, by index.
	StepNames []string
	// Outputs of the finished steps, by index. A step missing here, or with
	// a nil map, has no outputs.
	Outputs []map[string]string
	// MainSteps is how many of StepNames are spec.steps, which are
	// followed by spec.finally; a step index N counts only those. Zero
	// means all are.
	MainSteps int
	// Phase is ${workflow.phase}: set for a finally step only.
	Phase string
	// Loop: the step is a forEach step, and Item is the item its task
	// runs for, ${item}.
	Loop bool
	Item string
	// NoItems are the forEach steps, by index, that ran no items (their
	// list was empty): every output of theirs reads as [].
	NoItems map[int]bool
}

// FinallyIndex is the index finally step j has in Values: after the main
// steps.
func (v Values) FinallyIndex(j int) int { return v.MainSteps + j }

// MissingOutputError is a reference to an output the earlier step did not
// write. The operator reports it with reason MissingOutput.
type MissingOutputError struct {
	// Field is where the reference is, like "args[0]".
	Field string
	// Raw is the reference as written.
	Raw string
	// Step is the referenced step's name; StepIndex its index.
	Step      string
	StepIndex int
	// Key is the output that is missing.
	Key string
	// Have are the keys the step did output, sorted.
	Have []string
}

func (e *MissingOutputError) Error() string {
	have := "it has no outputs"
	if len(e.Have) > 0 {
		have = "its outputs are: " + strings.Join(e.Have, ", ")
	}
	return fmt.Sprintf("%s uses %s, but %s did not output %q; %s",
		e.Field, e.Raw, stepLabelIndexed(e.StepIndex, e.Step), e.Key, have)
}

// ResolveTask returns a copy of task, step stepIndex's, with the references
// in its image, command, args and env values resolved from v.
//
// A step that would render past MaxRenderedStepBytes fails with a
// *TooLargeError before anything is built. A reference to an output the
// step did not write fails with a *MissingOutputError, returned as is.
// Other errors name the field.
func ResolveTask(stepIndex int, task v1alpha1.AgentTaskSpec, v Values) (v1alpha1.AgentTaskSpec, error) {
	if err := checkSize(stepIndex, &task, v, false); err != nil {
		return v1alpha1.AgentTaskSpec{}, err
	}
	out := *task.DeepCopy()
	var err error
	expand := func(dst *string, fieldName string) {
		if err != nil {
			return
		}
		var res string
		res, err = Expand(*dst, func(r Ref) (string, error) { return v.lookup(stepIndex, fieldName, r) })
		var se *SyntaxError
		if errors.As(err, &se) {
			err = fmt.Errorf("%s: %w", fieldName, err)
		}
		if err == nil {
			*dst = res
		}
	}
	expand(&out.Image, "image")
	for i := range out.Command {
		expand(&out.Command[i], fmt.Sprintf("command[%d]", i))
	}
	for i := range out.Args {
		expand(&out.Args[i], fmt.Sprintf("args[%d]", i))
	}
	for i := range out.Env {
		expand(&out.Env[i].Value, fmt.Sprintf("env[%d].value", i))
	}
	if err != nil {
		return v1alpha1.AgentTaskSpec{}, err
	}
	return out, nil
}

func (v Values) stepName(i int) string {
	if i >= 0 && i < len(v.StepNames) {
		return v.StepNames[i]
	}
	return ""
}

func (v Values) lookup(self int, fieldName string, r Ref) (string, error) {
	uses := fmt.Sprintf("%s uses %s", fieldName, r.Raw)
	if r.Kind == Item {
		if !v.Loop {
			return "", fmt.Errorf("%s, which only a forEach step's task may use", uses)
		}
		return v.Item, nil
	}
	if r.Kind == WorkflowPhase {
		if v.Phase == "" {
			return "", fmt.Errorf("%s, which only finally steps may use", uses)
		}
		return v.Phase, nil
	}
	if r.Kind == Param {
		val, ok := v.Params[r.Key]
		if !ok {
			return "", fmt.Errorf("%s, but the workflow has no param %q", uses, r.Key)
		}
		return val, nil
	}
	target := r.StepIndex
	if target < 0 {
		target = slices.Index(v.StepNames, r.Step)
		if target < 0 {
			return "", fmt.Errorf("%s, but the workflow has no step %q", uses, r.Step)
		}
	} else if v.MainSteps > 0 && target >= v.MainSteps {
		return "", fmt.Errorf("%s, but the workflow has %d steps; an index counts the steps of spec.steps only", uses, v.MainSteps)
	}
	// Admission normally rejects these; checked again because the operator
	// must never read a step's outputs before that step has run.
	if target >= self {
		return "", fmt.Errorf("%s, but %s does not run before %s; a step can only use outputs of earlier steps",
			uses, stepLabelIndexed(target, v.stepName(target)), stepLabelIndexed(self, v.stepName(self)))
	}
	var outs map[string]string
	if target < len(v.Outputs) {
		outs = v.Outputs[target]
	}
	val, ok := outs[r.Key]
	if !ok && v.NoItems[target] {
		return "[]", nil
	}
	if !ok {
		return "", &MissingOutputError{
			Field: fieldName, Raw: r.Raw,
			Step: v.stepName(target), StepIndex: target,
			Key: r.Key, Have: slices.Sorted(maps.Keys(outs)),
		}
	}
	return val, nil
}

// ItemsError is a forEach step's forEach.from whose value is not a list
// it can run over. The operator reports it with reason InvalidItems.
type ItemsError struct {
	// Step is the forEach step's name.
	Step string
	// From is the reference as written.
	From string
	// Problem says what is wrong with the value.
	Problem string
}

func (e *ItemsError) Error() string {
	return fmt.Sprintf("step %s: forEach.from %s %s", e.Step, e.From, e.Problem)
}

// ResolveItems reads the list forEach step self runs over from from, its
// forEach.from: one reference whose value must be a JSON array of at most
// v1alpha1.MaxItems strings. A reference that does not resolve fails as
// ResolveTask's do (a *MissingOutputError for an output the step did not
// write); a value that is not such a list with an *ItemsError. An empty
// array is a list of no items.
func ResolveItems(self int, from string, v Values) ([]string, error) {
	refs, err := Parse(from)
	if err != nil {
		return nil, fmt.Errorf("forEach.from: %w", err)
	}
	if len(refs) != 1 || refs[0].Raw != from || (refs[0].Kind != StepOutput && refs[0].Kind != Param) {
		return nil, &ItemsError{Step: v.stepName(self), From: strconv.Quote(from), Problem: "is not one reference to an output or a param"}
	}
	val, err := v.lookup(self, "forEach.from", refs[0])
	if err != nil {
		return nil, err
	}
	items, problem := parseItems(val)
	if problem != "" {
		return nil, &ItemsError{Step: v.stepName(self), From: from, Problem: problem}
	}
	return items, nil
}

// parseItems reads a JSON array of strings, or says why val is not one.
func parseItems(val string) ([]string, string) {
	notList := func(why string) string {
		return fmt.Sprintf("is not a JSON array of strings: %s; its value is %s", why, quoteStart(val))
	}
	var raw []json.RawMessage
	if t := strings.TrimSpace(val); !strings.HasPrefix(t, "[") {
		return nil, notList("it does not start with [")
	}
	if err := json.Unmarshal([]byte(val), &raw); err != nil {
		return nil, notList(err.Error())
	}
	if len(raw) > v1alpha1.MaxItems {
		return nil, fmt.Sprintf("holds %d items, more than the %d a forEach step may run over", len(raw), v1alpha1.MaxItems)
	}
	items := make([]string, len(raw))
	for i, r := range raw {
		if len(r) == 0 || r[0] != '"' {
			return nil, notList(fmt.Sprintf("item %d is %s, not a string", i, quoteStart(string(r))))
		}
		if err := json.Unmarshal(r, &items[i]); err != nil {
			return nil, notList(fmt.Sprintf("item %d: %v", i, err))
		}
	}
	return items, ""
}

// quoteStart quotes the start of s, at most 64 bytes of it, for a message.
func quoteStart(s string) string {
	if len(s) <= maxErrorText {
		return strconv.Quote(s)
	}
	cut := maxErrorText
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return strconv.Quote(s[:cut]) + fmt.Sprintf(" (%d bytes in all)", len(s))
}

package substitution

import (
	"fmt"
	"strconv"
	"strings"
)

// RefKind says what a reference names.
type RefKind string

const (
	// StepOutput is ${steps.N.output.KEY} or ${steps.NAME.output.KEY}.
	StepOutput RefKind = "StepOutput"
	// Param is ${params.NAME}.
	Param RefKind = "Param"
	// WorkflowPhase is ${workflow.phase}, which only finally steps may use.
	WorkflowPhase RefKind = "WorkflowPhase"
	// Item is ${item}, the item a forEach step's task runs for, which only
	// the task strings of a forEach step may use.
	Item RefKind = "Item"
)

// Ref is one reference in a string.
type Ref struct {
	Kind RefKind
	// Step is the step as written, a name or an index; empty for a Param.
	Step string
	// StepIndex is the step's index when written as one, else -1.
	StepIndex int
	// Key is the output key, the param name, "phase", or "" for ${item}.
	Key string
	// Raw is the reference as written, "${" to "}".
	Raw string
	// Offset is the byte offset of Raw in the string.
	Offset int
}

// SyntaxError is a "${" that does not start a valid reference.
type SyntaxError struct {
	// Offset is the byte offset of the "${".
	Offset int
	// Text is the reference as written, cut short when long.
	Text string
	// Problem says what is wrong with it.
	Problem string
}

// SyntaxHint lists the accepted forms; every syntax error ends with it so users
// never have to look the syntax up.
const SyntaxHint = "references are ${steps.N.output.KEY}, ${steps.NAME.output.KEY}, ${params.NAME}, in forEach steps ${item} and, in finally steps, ${workflow.phase}; write $${ for a literal ${"

func (e *SyntaxError) Error() string {
	return fmt.Sprintf("%q at byte %d %s; %s", e.Text, e.Offset, e.Problem, SyntaxHint)
}

// maxErrorText bounds the text an error quotes: an unterminated reference
// may run to the end of a 4 KiB string.
const maxErrorText = 64

func syntaxError(s string, offset, end int, problem string) *SyntaxError {
	if end-offset > maxErrorText {
		end = offset + maxErrorText
		// Do not cut a UTF-8 sequence in two.
		for end > offset && end < len(s) && s[end]&0xC0 == 0x80 {
			end--
		}
		return &SyntaxError{Offset: offset, Text: s[offset:end] + "...", Problem: problem}
	}
	return &SyntaxError{Offset: offset, Text: s[offset:end], Problem: problem}
}

// Parse returns the references in s, in order. It fails with a *SyntaxError
// on the first "${" that does not start a valid reference.
func Parse(s string) ([]Ref, error) {
	var refs []Ref
	err := scan(s, func(string) {}, func(r Ref) error {
		refs = append(refs, r)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return refs, nil
}

// Expand replaces every reference in s by lookup's value for it and every
// "$${" by "${". Values are inserted as they are, never expanded again.
// Syntax errors (*SyntaxError) are found before lookup is called; an error
// from lookup is returned unchanged.
func Expand(s string, lookup func(Ref) (string, error)) (string, error) {
	if !strings.Contains(s, "$") {
		return s, nil
	}
	if _, err := Parse(s); err != nil {
		return "", err
	}
	var b strings.Builder
	b.Grow(len(s))
	err := scan(s, func(lit string) { b.WriteString(lit) }, func(r Ref) error {
		v, err := lookup(r)
		if err != nil {
			return err
		}
		b.WriteString(v)
		return nil
	})
	if err != nil {
		return "", err
	}
	return b.String(), nil
}

// Escape quotes s so that Expand returns it unchanged: every "${" becomes
// "$${".
func Escape(s string) string {
	return strings.ReplaceAll(s, "${", "$${")
}

// scan walks s once, calling lit with literal text (escapes already undone)
// and ref with each reference. Being the only parser keeps Parse and Expand
// in agreement.
func scan(s string, lit func(string), ref func(Ref) error) error {
	start := 0 // start of the literal text not yet passed to lit
	for i := 0; i < len(s); {
		j := strings.IndexByte(s[i:], '$')
		if j < 0 {
			break
		}
		i += j
		switch {
		case strings.HasPrefix(s[i:], "$${"):
			lit(s[start:i])
			lit("${")
			i += 3
			start = i
		case strings.HasPrefix(s[i:], "${"):
			body := s[i+2:]
			end := strings.IndexByte(body, '}')
			if next := strings.Index(body, "${"); next >= 0 && (end < 0 || next < end) {
				return syntaxError(s, i, i+2+next, `has no closing "}" before the next "${"`)
			}
			if end < 0 {
				return syntaxError(s, i, len(s), `has no closing "}"`)
			}
			raw := s[i : i+2+end+1]
			r, problem := parseBody(body[:end])
			if problem != "" {
				return syntaxError(s, i, i+len(raw), problem)
			}
			r.Raw, r.Offset = raw, i
			lit(s[start:i])
			if err := ref(r); err != nil {
				return err
			}
			i += len(raw)
			start = i
		default:
			i++ // a '$' not starting "${" or "$${" is literal
		}
	}
	lit(s[start:])
	return nil
}

// parseBody parses what is between "${" and "}", returning a problem
// description instead of an error so the caller can add the position.
func parseBody(body string) (Ref, string) {
	if body == "" {
		return Ref{}, "is empty"
	}
	root, rest, dotted := strings.Cut(body, ".")
	switch root {
	case "item":
		if dotted {
			return Ref{}, "names a part of the item; an item is a string, written ${item}"
		}
		return Ref{Kind: Item, StepIndex: -1}, ""
	case "steps":
		step, after, _ := strings.Cut(rest, ".")
		if step == "" {
			return Ref{}, "names no step"
		}
		word, key, _ := strings.Cut(after, ".")
		switch {
		case word == "outputs":
			return Ref{}, `says "outputs" where it should say "output"`
		case word != "output":
			return Ref{}, `needs ".output.KEY" after the step`
		case key == "":
			return Ref{}, "names no output key"
		}
		r := Ref{Kind: StepOutput, Step: step, StepIndex: -1, Key: key}
		if allDigits(step) {
			if len(step) > 1 && step[0] == '0' {
				fixed := strings.TrimLeft(step, "0")
				if fixed == "" {
					fixed = "0"
				}
				return Ref{}, fmt.Sprintf("has step index %q with a leading zero; write %q", step, fixed)
			}
			n, err := strconv.Atoi(step)
			if err != nil {
				return Ref{}, fmt.Sprintf("has step index %q, which is too large", step)
			}
			r.StepIndex = n
		} else if !validStepName(step) {
			return Ref{}, fmt.Sprintf("has step %q, which is neither an index (0, 1, ...) nor a step name (lowercase letters, digits and '-', starting with a letter)", step)
		}
		if err := ValidKey(key); err != nil {
			return Ref{}, "has a bad output key: " + err.Error()
		}
		return r, ""
	case "params":
		if rest == "" {
			return Ref{}, "names no param"
		}
		if !validParamName(rest) {
			return Ref{}, fmt.Sprintf("has param name %q, which is invalid: a param name starts with a letter or '_' and holds only letters, digits, '_' and '-'", rest)
		}
		return Ref{Kind: Param, StepIndex: -1, Key: rest}, ""
	case "workflow":
		if rest != "phase" {
			return Ref{}, `names something of the workflow other than its phase; the only one is ${workflow.phase}`
		}
		return Ref{Kind: WorkflowPhase, StepIndex: -1, Key: rest}, ""
	default:
		return Ref{}, fmt.Sprintf(`starts with %q; a reference starts with "steps.", "params." or "workflow.", or is ${item}`, root)
	}
}

func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if !isDigit(s[i]) {
			return false
		}
	}
	return s != ""
}

// validStepName matches WorkflowStep.Name's pattern, a DNS label.
func validStepName(s string) bool {
	if s == "" || len(s) > 63 || !isLower(s[0]) || s[len(s)-1] == '-' {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !isLower(c) && !isDigit(c) && c != '-' {
			return false
		}
	}
	return true
}

// validParamName matches WorkflowParam.Name's pattern.
func validParamName(s string) bool {
	if s == "" || len(s) > 63 || !isLetter(s[0]) && s[0] != '_' {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !isLetter(c) && !isDigit(c) && c != '_' && c != '-' {
			return false
		}
	}
	return true
}

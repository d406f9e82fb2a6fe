package agenttask

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/kubectl-sched/kubectl-sched/api/substitution"
	"github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
)

// MaxTerminationMessageBytes is Kubernetes' per-container limit on a
// termination message (kubelet's MaxContainerTerminationMessageLength).
const MaxTerminationMessageBytes = 4096

// MaxOutputs is the most outputs one task may write.
const MaxOutputs = 64

// OutputsError says why a termination message gave no outputs. Reason is
// v1alpha1.ReasonOutputsInvalid or v1alpha1.ReasonOutputsTruncated; Message
// is for the user and says how to fix the message.
//
// It is deliberately not an error: ParseOutputs returns it as a pointer, and
// a nil *OutputsError stored in an error variable would not compare equal to
// nil.
type OutputsError struct {
	Reason  string
	Message string
}

// ParseOutputs reads a task's outputs from its container's termination
// message (the file at terminationMessagePath, /dev/termination-log by
// default). The rules, which are the contract with the task's author:
//
//   - An empty or whitespace-only message means no outputs.
//   - A message whose first non-space character is '{' is one JSON object
//     whose values are all strings: {"digest": "sha256:...", "notes": "a\nb"}.
//     Use it for values with newlines. A key may appear once.
//   - Any other message is KEY=VALUE lines. Lines end in "\n" or "\r\n".
//     Blank lines and lines starting with '#' are ignored. VALUE is the rest
//     of the line after the first '=', verbatim: it may hold '=', quotes,
//     '$', "${" and any Unicode. A key may appear once.
//   - A KEY is a letter or '_', then letters, digits, '_', '.' and '-', at most
//     63 characters (substitution.ValidKey), so every output can be used as
//     ${steps.N.output.KEY}.
//   - At most MaxOutputs outputs; the message must be valid UTF-8.
//   - A message of MaxTerminationMessageBytes or more is refused with reason
//     OutputsTruncated.
//
// Why refuse instead of keeping what parses: the kubelet keeps only the last
// 4096 bytes of the file, cutting the start. The cut may leave the tail of a
// line that still parses ("ge_digest=..." from "image_digest=..."), so
// outputs could be silently wrong, not just missing. A message of exactly
// 4096 bytes is refused too, because that is the size a cut message has: the
// limit for a message that is surely whole is 4095 bytes. Refusing is
// visible and loses nothing that could be trusted.
//
// Values are stored as written; substitution inserts them literally, so a
// value holding "${...}" is never expanded in a later step.
func ParseOutputs(msg string) (map[string]string, *OutputsError) {
	if len(msg) >= MaxTerminationMessageBytes {
		return nil, &OutputsError{Reason: v1alpha1.ReasonOutputsTruncated, Message: fmt.Sprintf(
			"termination message is %d bytes; Kubernetes keeps at most %d per container, so outputs may be cut: write fewer or shorter outputs",
			len(msg), MaxTerminationMessageBytes)}
	}
	if !utf8.ValidString(msg) {
		return nil, invalid("termination message is not valid UTF-8 (first bad byte at offset %d); outputs must be text", firstInvalidUTF8(msg))
	}
	trimmed := strings.TrimSpace(msg)
	if trimmed == "" {
		return nil, nil
	}
	parse := parseLineOutputs
	if trimmed[0] == '{' {
		parse = parseJSONOutputs
	}
	outs, oerr := parse(msg)
	if len(outs) == 0 {
		outs = nil // "{}" and comments only mean no outputs, like an empty message
	}
	return outs, oerr
}

func invalid(format string, args ...any) *OutputsError {
	return &OutputsError{Reason: v1alpha1.ReasonOutputsInvalid, Message: fmt.Sprintf(format, args...)}
}

func firstInvalidUTF8(s string) int {
	for i, r := range s {
		if r == utf8.RuneError {
			if _, size := utf8.DecodeRuneInString(s[i:]); size == 1 {
				return i
			}
		}
	}
	return len(s)
}

const notJSON = "termination message starts with \"{\" but is not one JSON object of strings: %v"

// parseJSONOutputs walks the object token by token, rather than decoding
// into a map, to catch duplicate keys and to name the first bad value in
// the order the user wrote them.
func parseJSONOutputs(msg string) (map[string]string, *OutputsError) {
	dec := json.NewDecoder(strings.NewReader(msg))
	if _, err := dec.Token(); err != nil { // the '{', known to be there
		return nil, invalid(notJSON, err)
	}
	outs := map[string]string{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, invalid(notJSON, err)
		}
		key, ok := tok.(string)
		if !ok {
			return nil, invalid(notJSON, fmt.Sprintf("expected a key, found %v", tok))
		}
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, invalid(notJSON, err)
		}
		if err := substitution.ValidKey(key); err != nil {
			return nil, invalid("output %v", err)
		}
		if _, dup := outs[key]; dup {
			return nil, invalid("output %q appears twice in the JSON object", key)
		}
		// Check the kind first: Unmarshal would turn null into "" silently.
		if raw[0] != '"' {
			kind, fix := jsonKind(raw)
			return nil, invalid("output %q is %s; outputs are strings: %s", key, kind, fix)
		}
		var value string
		if err := json.Unmarshal(raw, &value); err != nil {
			return nil, invalid(notJSON, err)
		}
		if len(outs) == MaxOutputs {
			return nil, invalid("termination message has more than %d outputs; write at most %d", MaxOutputs, MaxOutputs)
		}
		outs[key] = value
	}
	if _, err := dec.Token(); err != nil { // the '}'
		return nil, invalid(notJSON, err)
	}
	if tok, err := dec.Token(); !errors.Is(err, io.EOF) {
		if err == nil {
			err = fmt.Errorf("found %v after the object", tok)
		}
		return nil, invalid(notJSON, err)
	}
	return outs, nil
}

// jsonKind describes a JSON value that is not a string, with a fix.
func jsonKind(raw json.RawMessage) (string, string) {
	switch raw[0] {
	case '{':
		return "an object", "encode it into a string"
	case '[':
		return "an array", "encode it into a string"
	case 't', 'f':
		return "a boolean", "quote it"
	case 'n':
		return "null", `write "" for an empty value`
	default:
		return "a number", "quote it"
	}
}

const noEquals = `line %d (%q) has no "=": write KEY=VALUE lines or one JSON object; use JSON for values with newlines`

func parseLineOutputs(msg string) (map[string]string, *OutputsError) {
	outs := map[string]string{}
	lineOf := map[string]int{}
	for i, line := range strings.Split(msg, "\n") {
		n := i + 1
		line = strings.TrimSuffix(line, "\r")
		if strings.TrimSpace(line) == "" || strings.HasPrefix(line, "#") {
			continue
		}
		key, value, ok := strings.Cut(line, "=")
		if !ok {
			return nil, invalid(noEquals, n, excerpt(line))
		}
		if err := substitution.ValidKey(key); err != nil {
			return nil, invalid("line %d: output %v", n, err)
		}
		if prev, dup := lineOf[key]; dup {
			return nil, invalid("output %q is set twice, on lines %d and %d", key, prev, n)
		}
		if len(outs) == MaxOutputs {
			return nil, invalid("termination message has more than %d outputs; write at most %d", MaxOutputs, MaxOutputs)
		}
		outs[key] = value
		lineOf[key] = n
	}
	return outs, nil
}

// excerpt shortens a line for an error message, keeping runes whole.
func excerpt(s string) string {
	const max = 40
	if len(s) <= max {
		return s
	}
	end := max
	for end > 0 && !utf8.RuneStart(s[end]) {
		end--
	}
	return s[:end] + "..."
}

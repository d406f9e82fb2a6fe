package tour

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"
)

// Result is what one step printed.
type Result struct {
	Step Step
	// Output is stdout and stderr as the command wrote them, in order.
	Output string
	Code   int
}

// Check reports how a step's result differs from what the tour expects.
func (r Result) Check() error {
	var problems []string
	if r.Code != r.Step.WantExit {
		problems = append(problems, fmt.Sprintf("exit code %d, want %d", r.Code, r.Step.WantExit))
	}
	rest := r.Output
	for _, w := range r.Step.Want {
		switch i := strings.Index(rest, w); {
		case i >= 0 && r.Step.InOrder:
			rest = rest[i+len(w):]
		case i >= 0:
		case r.Step.InOrder && strings.Contains(r.Output, w):
			problems = append(problems, fmt.Sprintf("output has %q out of order", w))
		default:
			problems = append(problems, fmt.Sprintf("output lacks %q", w))
		}
	}
	if len(problems) == 0 {
		return nil
	}
	return fmt.Errorf("kubectl %s: %s\n%s", strings.Join(r.Step.Args, " "), strings.Join(problems, "; "), r.Output)
}

// RunStep runs one step through the real kubectl, narrating to w (nil for
// silence): the title, the explanation, the command and its output.
func (e *Env) RunStep(ctx context.Context, s Step, w io.Writer) (Result, error) {
	if w == nil {
		w = io.Discard
	}
	fmt.Fprintf(w, "\n## %s\n", s.Title)
	if s.Say != "" {
		fmt.Fprintf(w, "%s\n", s.Say)
	}
	fmt.Fprintf(w, "\n$ kubectl %s\n", quoteArgs(s.Args))
	deadline := time.Now().Add(s.Retry)
	var r Result
	for {
		out, code, err := e.KubectlCombined(ctx, s.Args...)
		if err != nil {
			return Result{}, err
		}
		r = Result{Step: s, Output: out, Code: code}
		if r.Check() == nil || !time.Now().Before(deadline) {
			break
		}
		select {
		case <-ctx.Done():
			return Result{}, ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
	fmt.Fprint(w, indent(r.Output))
	if r.Code != 0 {
		fmt.Fprintf(w, "(exit code %d)\n", r.Code)
	}
	return r, nil
}

func quoteArgs(args []string) string {
	q := make([]string, len(args))
	for i, a := range args {
		if strings.ContainsAny(a, " \"'${}") {
			a = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		}
		q[i] = a
	}
	return strings.Join(q, " ")
}

func indent(s string) string {
	if s == "" {
		return ""
	}
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return "  " + strings.Join(lines, "\n  ") + "\n"
}

package tour

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestCheck(t *testing.T) {
	cases := map[string]struct {
		step   Step
		output string
		want   string // "" for no problem, else a part of the error
	}{
		"all there": {
			step:   Step{Want: []string{"b", "a"}},
			output: "a b",
		},
		"one missing": {
			step:   Step{Want: []string{"a", "c"}},
			output: "a b",
			want:   `output lacks "c"`,
		},
		"in order": {
			step:   Step{Want: []string{"Running", "log", "Succeeded"}, InOrder: true},
			output: "Running\nlog\nSucceeded\n",
		},
		"out of order": {
			step:   Step{Want: []string{"Running", "log", "Succeeded"}, InOrder: true},
			output: "log\nRunning\nSucceeded\n",
			want:   `output has "log" out of order`,
		},
		"in order and missing": {
			step:   Step{Want: []string{"Running", "Succeeded"}, InOrder: true},
			output: "Running\n",
			want:   `output lacks "Succeeded"`,
		},
		"exit code": {
			step:   Step{WantExit: 10},
			output: "",
			want:   "exit code 0, want 10",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			err := Result{Step: tc.step, Output: tc.output}.Check()
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("Check: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("Check: %v, want an error with %q", err, tc.want)
			}
		})
	}
}

// TestKubectlKeepsTheOrder: what a command writes to stdout and stderr in
// turn reads back in that order, each stream also on its own. A shell
// stands in for kubectl; the pauses let each line arrive before the next
// is written, as a follow's lines do.
func TestKubectlKeepsTheOrder(t *testing.T) {
	e := &Env{Kubectl: "/bin/sh", Root: t.TempDir()}
	out, code, err := e.kubectl(context.Background(), "-c",
		"echo 'agenttask/t Running' >&2; sleep 0.3; echo log; sleep 0.3; echo 'agenttask/t Succeeded' >&2; sleep 0.3; echo k=v; exit 3")
	if err != nil {
		t.Fatal(err)
	}
	want := Output{
		Stdout:   "log\nk=v\n",
		Stderr:   "agenttask/t Running\nagenttask/t Succeeded\n",
		Combined: "agenttask/t Running\nlog\nagenttask/t Succeeded\nk=v\n",
	}
	if diff := cmp.Diff(want, out); diff != "" || code != 3 {
		t.Errorf("exit %d, want 3; output (-want +got):\n%s", code, diff)
	}
}

package tour

import (
	"context"
	"fmt"
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
// turn reads back in that order, however fast it comes; KubectlRun keeps
// the streams apart. A shell stands in for kubectl.
func TestKubectlKeepsTheOrder(t *testing.T) {
	e := &Env{Kubectl: "/bin/sh", Root: t.TempDir()}
	script := []string{"-c", "for i in 1 2 3 4 5 6 7 8 9 10; do echo \"agenttask/t $i\" >&2; echo \"log $i\"; done; exit 3"}
	var want, wantOut, wantErr strings.Builder
	for i := 1; i <= 10; i++ {
		fmt.Fprintf(&want, "agenttask/t %d\nlog %d\n", i, i)
		fmt.Fprintf(&wantOut, "log %d\n", i)
		fmt.Fprintf(&wantErr, "agenttask/t %d\n", i)
	}
	for range 20 {
		got, code, err := e.KubectlCombined(context.Background(), script...)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want.String(), got); diff != "" || code != 3 {
			t.Fatalf("KubectlCombined: exit %d, want 3; output (-want +got):\n%s", code, diff)
		}
	}
	stdout, stderr, code, err := e.KubectlRun(context.Background(), script...)
	if err != nil {
		t.Fatal(err)
	}
	if stdout != wantOut.String() || stderr != wantErr.String() || code != 3 {
		t.Errorf("KubectlRun: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
}

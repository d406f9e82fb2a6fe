package plugintest

import (
	"strings"
	"testing"
)

// ErrorCase is one row of a command's error table.
type ErrorCase struct {
	Args []string
	// NoKubeconfig runs without the test kubeconfig: the case's own flags
	// (--kubeconfig, --server) say where to go.
	NoKubeconfig bool
	// As runs as the user of this kubeconfig (UserKubeconfig's).
	As   string
	Code int
	// Stderr are substrings stderr must hold: the error and its hint.
	Stderr []string
}

// RunErrorCases runs each case as a subtest and checks its exit code and
// stderr; check, when not nil, adds the command's own checks.
func (e *Env) RunErrorCases(t *testing.T, cases map[string]ErrorCase, check func(t *testing.T, r Result)) {
	t.Helper()
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var r Result
			switch {
			case tc.As != "":
				r = RunWithInput("", append(tc.Args, "--kubeconfig", tc.As)...)
			case tc.NoKubeconfig:
				r = RunWithInput("", tc.Args...)
			default:
				r = e.Run(tc.Args...)
			}
			if r.Code != tc.Code {
				t.Errorf("exit %d, want %d\nstderr: %s", r.Code, tc.Code, r.Stderr)
			}
			for _, want := range tc.Stderr {
				if !strings.Contains(r.Stderr, want) {
					t.Errorf("stderr lacks %q:\n%s", want, r.Stderr)
				}
			}
			if check != nil {
				check(t, r)
			}
		})
	}
}

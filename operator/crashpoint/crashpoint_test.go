package crashpoint

import (
	"errors"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
)

func TestParse(t *testing.T) {
	for in, want := range map[string]struct {
		name string
		n    int64
	}{
		"":                      {"", 1},
		JobCreated:              {JobCreated, 1},
		JobCreated + ":3":       {JobCreated, 3},
		JobCreated + ":0":       {JobCreated, 1},
		JobCreated + ":x":       {JobCreated, 1},
		StepTasksCreated + ":2": {StepTasksCreated, 2},
	} {
		name, n := parse(in)
		if name != want.name || n != want.n {
			t.Errorf("parse(%q) = %q, %d; want %q, %d", in, name, n, want.name, want.n)
		}
	}
}

// helperEnv makes the test binary, run again, reach a crash point.
const helperEnv = "CRASHPOINT_TEST_HELPER"

func TestMain(m *testing.M) {
	if os.Getenv(helperEnv) != "" {
		Hit(JobCreated)
		os.Stdout.WriteString("still alive\n")
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// TestEnvVarArmsOnlyTheTaggedBuild runs this package's test binary again
// with the crash point set in its environment, as an attacker or a stray
// setting could set it on the release operator, and reaches the point.
// The default build must live on; only a -tags crashpoint build is killed.
func TestEnvVarArmsOnlyTheTaggedBuild(t *testing.T) {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"=1", EnvVar+"="+JobCreated)
	out, err := cmd.Output()
	var ee *exec.ExitError
	killed := errors.As(err, &ee) && ee.Sys().(syscall.WaitStatus).Signaled() && ee.Sys().(syscall.WaitStatus).Signal() == syscall.SIGKILL
	switch {
	case Armed && !killed:
		t.Errorf("a -tags %s build reached %s=%s and lived (%v, %q)", Tag, EnvVar, JobCreated, err, out)
	case !Armed && (killed || err != nil || !strings.Contains(string(out), "still alive")):
		t.Errorf("the default build obeyed %s=%s: %v, output %q; crash points must exist only with -tags %s", EnvVar, JobCreated, err, out, Tag)
	}
}

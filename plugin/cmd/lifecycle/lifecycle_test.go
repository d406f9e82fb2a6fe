package lifecycle_test

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
	"github.com/kubectl-sched/kubectl-sched/hack/testenv/plugintest"
	"github.com/kubectl-sched/kubectl-sched/plugin/internal/cmdutil"
)

var env *plugintest.Env

func TestMain(m *testing.M) { plugintest.Main(m, &env) }

// setStatus reports phase for app shop's current generation, as the
// operator would.
func setStatus(t *testing.T, ns string, phase schedv1.UserDeploymentPhase, ready string) {
	t.Helper()
	st := schedv1.UserDeploymentStatus{Phase: phase, Ready: ready}
	if phase == schedv1.UserDeploymentDegraded {
		st.Conditions = []metav1.Condition{{Type: schedv1.ConditionReady, Status: metav1.ConditionFalse, Reason: schedv1.ReasonCrashLoop, Message: "service api: crash-looping", LastTransitionTime: metav1.Now()}}
	}
	env.SetAppStatus(t, ns, "shop", st)
}

func TestStopAndStart(t *testing.T) {
	const ns = "lifecycle-stop"
	env.Shop(t, ns)

	res := env.Run("stop", "shop", "-n", ns, "--dry-run=server")
	if res.Code != 0 || res.Stdout != "userdeployment.sched.kubectl-sched.dev/shop stopped (server dry run)\n" || env.App(t, ns, "shop").Spec.State != schedv1.StateRunning {
		t.Fatalf("dry run: exit %d, stdout %q, stderr %q, state %s", res.Code, res.Stdout, res.Stderr, env.App(t, ns, "shop").Spec.State)
	}
	res = env.Run("stop", "shop", "-n", ns)
	plugintest.Golden(t, "stop", res.Stdout)
	if res.Code != 0 || env.App(t, ns, "shop").Spec.State != schedv1.StateStopped {
		t.Fatalf("stop: exit %d, stderr %q, state %s", res.Code, res.Stderr, env.App(t, ns, "shop").Spec.State)
	}
	res = env.Run("stop", "shop", "-n", ns)
	if res.Code != 0 || res.Stdout != "userdeployment.sched.kubectl-sched.dev/shop is already stopped: nothing to do\n" {
		t.Errorf("stop again: exit %d, stdout %q", res.Code, res.Stdout)
	}
	res = env.Run("start", "shop", "-n", ns)
	if res.Code != 0 || res.Stdout != "userdeployment.sched.kubectl-sched.dev/shop started\n" || env.App(t, ns, "shop").Spec.State != schedv1.StateRunning {
		t.Errorf("start: exit %d, stdout %q, state %s", res.Code, res.Stdout, env.App(t, ns, "shop").Spec.State)
	}
}

func TestRestart(t *testing.T) {
	const ns = "lifecycle-restart"
	env.Shop(t, ns)
	before := time.Now().UTC().Truncate(time.Second)

	res := env.Run("restart", "shop", "api", "-n", ns)
	if res.Code != 0 || res.Stdout != "userdeployment.sched.kubectl-sched.dev/shop service api restarted\n" {
		t.Fatalf("restart api: exit %d, stdout %q, stderr %q", res.Code, res.Stdout, res.Stderr)
	}
	got := env.App(t, ns, "shop").Spec.RestartedAt
	at, err := time.Parse(time.RFC3339, got["api"])
	if len(got) != 1 || err != nil || at.Before(before) {
		t.Fatalf("restartedAt %v (%v), want only api at a time from now on", got, err)
	}

	time.Sleep(1100 * time.Millisecond) // a new second, so a new value
	res = env.Run("restart", "shop", "-n", ns)
	if res.Code != 0 || res.Stdout != "userdeployment.sched.kubectl-sched.dev/shop restarted\n" {
		t.Fatalf("restart: exit %d, stdout %q, stderr %q", res.Code, res.Stdout, res.Stderr)
	}
	all := env.App(t, ns, "shop").Spec.RestartedAt
	if len(all) != 2 || all["web"] != all["api"] || all["api"] == got["api"] {
		t.Errorf("restartedAt %v, want both services at one new time (api was %s)", all, got["api"])
	}

	res = env.Run("restart", "shop", "db", "-n", ns)
	if res.Code != cmdutil.ExitNotFound || !strings.Contains(res.Stderr, `userdeployment "shop" has no service "db"`) || !strings.Contains(res.Stderr, "Its services: web, api.") {
		t.Errorf("unknown service: exit %d, stderr %q", res.Code, res.Stderr)
	}
}

func TestWait(t *testing.T) {
	const ns = "lifecycle-wait"
	env.Shop(t, ns)
	setStatus(t, ns, schedv1.UserDeploymentRunning, "2/2")
	res := env.Run("start", "shop", "-n", ns, "--wait", "--timeout", "10s")
	want := `userdeployment.sched.kubectl-sched.dev/shop is already running: nothing to do
Waiting for userdeployment "shop" to be Running...
userdeployment "shop": Running (2/2 services ready)
Next: kubectl sched describe ud shop -n lifecycle-wait
`
	if res.Code != 0 || res.Stdout != want {
		t.Errorf("start --wait: exit %d, stderr %q, stdout (-want +got):\n%s", res.Code, res.Stderr, cmp.Diff(want, res.Stdout))
	}

	// The stop bumps the generation: the Running status is stale, so the
	// wait runs out.
	res = env.Run("stop", "shop", "-n", ns, "--wait", "--timeout", "2s")
	if res.Code != cmdutil.ExitWatchTimeout || !strings.Contains(res.Stderr, `waiting for userdeployment "shop" to be Stopped`) {
		t.Errorf("stop --wait on a stale status: exit %d, stderr %q", res.Code, res.Stderr)
	}
	if res := env.Run("start", "shop", "-n", ns); res.Code != 0 {
		t.Fatalf("start: exit %d, stderr %q", res.Code, res.Stderr)
	}
	setStatus(t, ns, schedv1.UserDeploymentDegraded, "0/2")
	res = env.Run("start", "shop", "-n", ns, "--wait", "--timeout", "10s")
	if res.Code != cmdutil.ExitFailed || !strings.Contains(res.Stderr, `userdeployment "shop" is Degraded: service api: crash-looping`) {
		t.Errorf("start --wait on a Degraded app: exit %d, stderr %q", res.Code, res.Stderr)
	}
}

func TestErrors(t *testing.T) {
	const ns = "lifecycle-errors"
	env.Shop(t, ns)
	nobody, err := env.UserKubeconfig("nobody")
	if err != nil {
		t.Fatal(err)
	}
	cases := map[string]plugintest.ErrorCase{
		"no name":           {Args: []string{"stop"}, Code: cmdutil.ExitUsage, Stderr: []string{"takes one userdeployment name, got 0 arguments"}},
		"too many":          {Args: []string{"restart", "shop", "api", "web"}, Code: cmdutil.ExitUsage, Stderr: []string{"takes NAME [SERVICE], got 3 arguments"}},
		"not found":         {Args: []string{"stop", "nope", "-n", ns}, Code: cmdutil.ExitNotFound, Stderr: []string{`userdeployments.sched.kubectl-sched.dev "nope" not found`}},
		"bad dry run":       {Args: []string{"stop", "shop", "-n", ns, "--dry-run=maybe"}, Code: cmdutil.ExitUsage, Stderr: []string{`--dry-run must be client, server or none, got "maybe"`}},
		"wait with dry run": {Args: []string{"start", "shop", "-n", ns, "--dry-run", "--wait"}, Code: cmdutil.ExitUsage, Stderr: []string{"--wait cannot follow a --dry-run"}},
		"forbidden":         {Args: []string{"stop", "shop", "-n", ns, "--kubeconfig", nobody}, NoKubeconfig: true, Code: cmdutil.ExitForbidden, Stderr: []string{"forbidden"}},
		"no cluster":        {Args: []string{"stop", "shop", "--server", "https://127.0.0.1:1", "--insecure-skip-tls-verify"}, NoKubeconfig: true, Code: cmdutil.ExitUnreachable, Stderr: []string{"cannot reach the cluster"}},
	}
	env.RunErrorCases(t, cases, nil)
	if env.App(t, ns, "shop").Spec.State != schedv1.StateRunning {
		t.Errorf("a failed command changed the app")
	}
}

package realnode

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
	"github.com/kubectl-sched/kubectl-sched/hack/cluster"
)

// The container writes its outputs itself, as the restricted default's
// non-root user; the characters that break naive quoting or substitution
// are produced at run time, so the spec holds none of them.
func TestTaskOutputsFromARealContainer(t *testing.T) {
	e := need(t)
	e.operator(t)
	lines := shTask("outputs-lines", `d='$'
printf 'quote=say "hi" and '"'"'bye'"'"'\nunicode=größe ✓ 日本\ndollar=%sHOME and %s{steps.0.output.x}\n' "$d" "$d" > /dev/termination-log
echo "running as uid $(id -u)"`)
	jsonOut := shTask("outputs-json", `d='$'
printf '{"notes": "line 1\\nline 2 \\"quoted\\" %s{x} ünï", "sha": "abc123"}' "$d" > /dev/termination-log`)
	e.create(t, lines)
	e.create(t, jsonOut)

	lines = eventually(t, e, lines, 2*time.Minute, finished)
	if lines.Status.Phase != schedv1.TaskSucceeded {
		t.Fatalf("phase %s: %s", lines.Status.Phase, lines.Status.Message)
	}
	want := map[string]string{
		"quote":   `say "hi" and 'bye'`,
		"unicode": "größe ✓ 日本",
		"dollar":  "$HOME and ${steps.0.output.x}",
	}
	if diff := cmp.Diff(want, lines.Status.Outputs); diff != "" {
		t.Errorf("outputs (-want +got):\n%s", diff)
	}
	if node := e.podNode(t, lines.Status.PodName); node != cluster.RealNodeName {
		t.Errorf("the pod ran on %s, want the real node", node)
	}

	jsonOut = eventually(t, e, jsonOut, 2*time.Minute, finished)
	want = map[string]string{"notes": "line 1\nline 2 \"quoted\" ${x} ünï", "sha": "abc123"}
	if diff := cmp.Diff(want, jsonOut.Status.Outputs); diff != "" {
		t.Errorf("JSON outputs (-want +got):\n%s", diff)
	}

	// The logs come from the real kubelet, and show the non-root user.
	out, errOut, code := e.kubectlRun(t, time.Minute, "sched", "task", "logs", lines.Name)
	if code != 0 || !strings.Contains(out, "running as uid 65532") {
		t.Errorf("task logs: exit %d, stdout %q, stderr %q; want the container's line with uid 65532", code, out, errOut)
	}
}

func TestTaskLogs(t *testing.T) {
	e := need(t)
	e.operator(t)

	t.Run("follow a running container", func(t *testing.T) {
		task := shTask("ticks", `for i in 1 2 3; do echo "tick $i"; sleep 1; done`)
		e.create(t, task)
		out, errOut, code := e.kubectlRun(t, 2*time.Minute, "sched", "task", "logs", task.Name, "-f")
		if code != 0 || !strings.Contains(out, "tick 1\ntick 2\ntick 3\n") {
			t.Errorf("task logs -f: exit %d, stdout %q, stderr %q", code, out, errOut)
		}
	})

	t.Run("a simulated pod says it has no logs", func(t *testing.T) {
		task := shTask("simulated", "echo never runs")
		task.Spec.Placement = nil // a kwok node
		e.create(t, task)
		task = eventually(t, e, task, time.Minute, finished)
		_, errOut, code := e.kubectlRun(t, time.Minute, "sched", "task", "logs", task.Name)
		// 8: the exit code for a node that serves no logs (docs/reference/exit-codes.md).
		if code != 8 || !strings.Contains(errOut, "simulated pods have no logs") {
			t.Errorf("exit %d, want 8; stderr %q", code, errOut)
		}
	})
}

// Phases, exit codes and messages as the real kubelet reports them.
func TestTaskFailuresFromTheKubelet(t *testing.T) {
	e := need(t)
	e.operator(t)

	failing := shTask("exits-3", `echo "database connection refused" > /dev/termination-log; exit 3`)
	slow := shTask("too-slow", `sleep 300`)
	slow.Spec.Timeout = &metav1.Duration{Duration: 3 * time.Second}
	cancelled := shTask("cancelled", `echo started; sleep 300`)
	retried := shTask("retried", `echo "flaky backend" > /dev/termination-log; exit 4`)
	retried.Spec.Retries = ptr.To[int32](1)
	for _, task := range []*schedv1.AgentTask{failing, slow, cancelled, retried} {
		e.create(t, task)
	}

	failing = eventually(t, e, failing, 2*time.Minute, finished)
	if failing.Status.Phase != schedv1.TaskFailed || ptr.Deref(failing.Status.ExitCode, -1) != 3 ||
		!strings.Contains(failing.Status.Message, "database connection refused") {
		t.Errorf("exit 3: phase %s, exit code %v, message %q", failing.Status.Phase, ptr.Deref(failing.Status.ExitCode, -1), failing.Status.Message)
	}

	slow = eventually(t, e, slow, 2*time.Minute, finished)
	if slow.Status.Phase != schedv1.TaskTimeout {
		t.Errorf("timeout: phase %s (%s), want Timeout", slow.Status.Phase, slow.Status.Message)
	}

	// Cancel once the container really runs: its log line is there.
	eventually(t, e, cancelled, 2*time.Minute, func(t *schedv1.AgentTask) bool { return t.Status.Phase == schedv1.TaskRunning })
	deadline := time.Now().Add(time.Minute)
	for {
		out, _, _ := e.kubectlRun(t, 30*time.Second, "sched", "task", "logs", cancelled.Name)
		if strings.Contains(out, "started") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the container of %s never logged", cancelled.Name)
		}
		time.Sleep(500 * time.Millisecond)
	}
	if _, errOut, code := e.kubectlRun(t, time.Minute, "sched", "task", "cancel", cancelled.Name); code != 0 {
		t.Fatalf("task cancel: exit %d: %s", code, errOut)
	}
	cancelled = eventually(t, e, cancelled, time.Minute, finished)
	if cancelled.Status.Phase != schedv1.TaskCancelled {
		t.Errorf("cancel: phase %s (%s), want Cancelled", cancelled.Status.Phase, cancelled.Status.Message)
	}

	retried = eventually(t, e, retried, 3*time.Minute, finished)
	if retried.Status.Phase != schedv1.TaskFailed || retried.Status.Attempts != 2 || ptr.Deref(retried.Status.ExitCode, -1) != 4 ||
		!strings.Contains(retried.Status.Message, "flaky backend") {
		t.Errorf("retries: phase %s, attempts %d, exit code %v, message %q; want Failed after 2 attempts with exit code 4",
			retried.Status.Phase, retried.Status.Attempts, ptr.Deref(retried.Status.ExitCode, -1), retried.Status.Message)
	}
}

// No image can be pulled here, so a missing image fails for real.
func TestMissingImage(t *testing.T) {
	e := need(t)
	e.operator(t)
	const image = "registry.invalid/kubectl-sched/nothing:1"
	task := shTask("no-image", "true")
	task.Spec.Image = image
	e.create(t, task)
	app := &schedv1.UserDeployment{
		ObjectMeta: metav1.ObjectMeta{Name: "no-image", Namespace: ns},
		Spec: schedv1.UserDeploymentSpec{
			Services:  []schedv1.ServiceSpec{{Name: "web", Image: image, Ports: []schedv1.ServicePort{{Port: 8080}}}},
			Placement: onRealNode(),
		},
	}
	e.create(t, app)

	task = eventually(t, e, task, time.Minute, func(t *schedv1.AgentTask) bool { return hasReason(t.Status.Conditions, schedv1.ReasonImagePull) })
	if task.Status.Phase != schedv1.TaskPending {
		t.Errorf("task phase %s, want Pending while the image cannot be pulled", task.Status.Phase)
	}
	eventually(t, e, app, time.Minute, func(a *schedv1.UserDeployment) bool { return hasReason(a.Status.Conditions, schedv1.ReasonImagePull) })
}

package cmd_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubectl-sched/kubectl-sched/api/builders"
	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
	"github.com/kubectl-sched/kubectl-sched/hack/testenv/watchtest"
	"github.com/kubectl-sched/kubectl-sched/plugin/internal/cmdutil"
)

// hostile is what a tenant's container can write into its termination
// message, and so into a task's or step's message and outputs: an OSC 52
// clipboard write, a screen clear, a carriage return that overwrites the
// line with a forged one, backspace, DEL, NUL, CSI as a C1 control, a
// right-to-left override and a newline.
const hostile = "x\x1b]52;c;cHduZWQ=\x07\x1b[2J\rFAKE Succeeded\x08\x7f\x00\u009b31m\u202eevil\nsecond line"

// escaped is how the start of hostile must show: printed, not obeyed.
const escaped = "x^[]52;c;cHduZWQ=^G^[[2J"

// terminalSafe fails if out holds a character a terminal would obey rather
// than show; newlines and tabs are the only controls allowed.
func terminalSafe(t *testing.T, what, out string) {
	t.Helper()
	for i, r := range out {
		bad := r < 0x20 && r != '\n' && r != '\t' || r == 0x7f || r >= 0x80 && r <= 0x9f ||
			r >= 0x202a && r <= 0x202e || r >= 0x2066 && r <= 0x2069 || r == '\ufffd'
		if bad {
			t.Errorf("%s: control %U at byte %d reaches the terminal:\n%q", what, r, i, out)
			return
		}
	}
}

// shows fails unless out shows the hostile text escaped: the data is
// printed, made safe, not dropped.
func shows(t *testing.T, what, out string) {
	t.Helper()
	if !strings.Contains(out, escaped) {
		t.Errorf("%s: want the message shown escaped (%q):\n%s", what, escaped, out)
	}
}

func sched(args ...string) (stdout, stderr string, code int) {
	return run(watchtest.WithKubeconfig(kubeconfig, args...)...)
}

func namespace(t *testing.T, name string) {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if err := env.Client.Create(context.Background(), ns); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
}

// writeStatus writes obj's status as the operator would: the fixture, not
// the attack (the container's output is what puts the text there).
func writeStatus(t *testing.T, obj client.Object, set func()) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(obj), obj); err != nil {
			return err
		}
		set()
		return env.Client.Status().Update(context.Background(), obj)
	})
	if err != nil {
		t.Fatal(err)
	}
}

func create(t *testing.T, obj client.Object) {
	t.Helper()
	if err := env.Client.Create(context.Background(), obj); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), obj) })
}

// TestClusterDataReachesTheTerminalEscaped runs every command that prints
// what a task's container or the cluster wrote against objects whose status
// carries control sequences, and checks nothing reaches the terminal raw.
func TestClusterDataReachesTheTerminalEscaped(t *testing.T) {
	const ns = "terminal"
	namespace(t, ns)
	ctx := context.Background()
	now := metav1.Now()
	cond := metav1.Condition{Type: schedv1.ConditionReady, Status: metav1.ConditionFalse, Reason: schedv1.ReasonNonZeroExit, Message: hostile, LastTransitionTime: now}

	t.Run("task run --wait", func(t *testing.T) {
		for name, tc := range map[string]struct {
			end      func(*schedv1.AgentTaskStatus)
			wantCode int
		}{
			"succeeded": {func(s *schedv1.AgentTaskStatus) {
				s.Phase, s.Reason, s.Outputs, s.ExitCode = schedv1.TaskSucceeded, schedv1.ReasonSucceeded, map[string]string{"note": hostile}, ptr.To[int32](0)
			}, 0},
			"failed": {func(s *schedv1.AgentTaskStatus) {
				s.Phase, s.Reason, s.Message, s.ExitCode = schedv1.TaskFailed, "Non\x1b[2JZero", hostile, ptr.To[int32](3)
			}, cmdutil.ExitFailed},
		} {
			t.Run(name, func(t *testing.T) {
				task := &schedv1.AgentTask{ObjectMeta: metav1.ObjectMeta{Name: "wait-" + name, Namespace: ns}}
				t.Cleanup(func() { _ = env.Client.Delete(ctx, task) })
				r := watchtest.Start(kubeconfig, "task", "run", task.Name, "-n", ns, "--image", "busybox", "--wait")
				watchtest.Eventually(t, "the watch to start", func() bool { return strings.Contains(r.Stderr(), "agenttask/"+task.Name+" ") || r.Exited() })
				writeStatus(t, task, func() {
					task.Status.Phase, task.Status.Reason, task.Status.Message = schedv1.TaskPending, schedv1.ReasonPending, hostile
				})
				watchtest.Eventually(t, "the Pending line", func() bool { return strings.Count(r.Stderr(), "agenttask/"+task.Name+" ") >= 2 || r.Exited() })
				writeStatus(t, task, func() { tc.end(&task.Status) })
				if code := r.Wait(t); code != tc.wantCode {
					t.Errorf("exit %d, want %d\nstderr:\n%s", code, tc.wantCode, r.Stderr())
				}
				terminalSafe(t, "stdout", r.Stdout())
				terminalSafe(t, "stderr", r.Stderr())
				shows(t, "stdout and stderr", r.Stdout()+r.Stderr())
			})
		}
	})

	task := builders.MakeAgentTask("shown", ns).Image("busybox").Obj()
	task.Annotations = map[string]string{"example.com/note": hostile}
	create(t, task)
	writeStatus(t, task, func() {
		task.Status = schedv1.AgentTaskStatus{Phase: schedv1.TaskFailed, Reason: "Bad\x1b[2J\u009b\x07", Message: hostile, ExitCode: ptr.To[int32](3),
			Outputs: map[string]string{"partial": hostile}, Conditions: []metav1.Condition{cond}}
	})
	create(t, &corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{Name: "shown.hostile", Namespace: ns},
		InvolvedObject: corev1.ObjectReference{APIVersion: schedv1.GroupVersion.String(), Kind: "AgentTask", Name: task.Name, Namespace: ns, UID: task.UID},
		Type:           corev1.EventTypeWarning, Reason: "NonZeroExit", Message: hostile, Source: corev1.EventSource{Component: "agenttask-controller"},
		FirstTimestamp: now, LastTimestamp: now, Count: 1,
	})

	wf := builders.MakeWorkflow("shown", ns).Step("build", "busybox").Step("ship", "busybox").Obj()
	create(t, wf)
	writeStatus(t, wf, func() {
		wf.Status = schedv1.WorkflowStatus{Phase: schedv1.WorkflowFailed, Reason: "StepFailed", Message: hostile, Progress: "1/2", StartTime: &now, CompletionTime: &now,
			Steps: []schedv1.StepStatus{
				{Name: "build", TaskName: "shown-0-build", Phase: schedv1.StepSucceeded, StartTime: &now, CompletionTime: &now, Outputs: map[string]string{"image": hostile}, Message: hostile},
				{Name: "ship", TaskName: "shown-1-ship", Phase: schedv1.StepFailed, StartTime: &now, CompletionTime: &now, Message: hostile},
			}}
	})

	scx := builders.MakeSchedExt("shown-scx").Scheduler("scx_lavd").NodeSelector("node.kubectl-sched.dev/pool", "general").Obj()
	create(t, scx)
	writeStatus(t, scx, func() {
		scx.Status.Conditions = []metav1.Condition{{Type: schedv1.ConditionReady, Status: metav1.ConditionFalse, Reason: "Progressing", Message: hostile, LastTransitionTime: now}}
		scx.Status.UnsupportedNodes = []string{"node-a"}
	})

	ud := builders.MakeUserDeployment("shown", ns).Service("web", "nginx:1", 80, schedv1.ExposurePublic).State(schedv1.StateRunning).Obj()
	create(t, ud)
	writeStatus(t, ud, func() {
		ud.Status = schedv1.UserDeploymentStatus{ObservedGeneration: ud.Generation, Phase: schedv1.UserDeploymentDegraded, Ready: "0/1\x1b[2J",
			URLs: []string{"http://shown.terminal.example/\x1b]52;c;eA==\x07"}, Conditions: []metav1.Condition{cond}}
	})

	cases := map[string]struct {
		args     []string
		wantCode int
		// plain: the hostile text appears only in a form kubectl's own
		// escaping already covers (a table cut at the first line).
		plain bool
	}{
		"workflow watch":            {args: []string{"workflow", "watch", "shown", "-n", ns}, wantCode: cmdutil.ExitFailed},
		"describe agenttask":        {args: []string{"describe", "agenttask", "shown", "-n", ns}},
		"describe workflow":         {args: []string{"describe", "workflow", "shown", "-n", ns}},
		"describe schedext":         {args: []string{"describe", "schedext", "shown-scx"}},
		"describe userdeployment":   {args: []string{"describe", "ud", "shown", "-n", ns}},
		"get workflows -o wide":     {args: []string{"get", "wf", "-n", ns, "-o", "wide"}},
		"get agenttasks":            {args: []string{"get", "at", "shown", "-n", ns}, plain: true},
		"get -o jsonpath":           {args: []string{"get", "at", "shown", "-n", ns, "-o", "jsonpath={.status.message}"}},
		"get -o go-template":        {args: []string{"get", "wf", "shown", "-n", ns, "-o", "go-template={{.status.message}}"}},
		"schedext status -o wide":   {args: []string{"schedext", "status", "shown-scx", "-o", "wide"}},
		"schedext status -o json":   {args: []string{"schedext", "status", "shown-scx", "-o", "json"}, plain: true},
		"start --wait (Degraded)":   {args: []string{"start", "shown", "-n", ns, "--wait", "--timeout", "10s"}, wantCode: cmdutil.ExitFailed},
		"task logs (no pod, ended)": {args: []string{"task", "logs", "shown", "-n", ns}, wantCode: cmdutil.ExitError},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			stdout, stderr, code := sched(tc.args...)
			if code != tc.wantCode {
				t.Errorf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tc.wantCode, stdout, stderr)
			}
			terminalSafe(t, "stdout", stdout)
			terminalSafe(t, "stderr", stderr)
			if !tc.plain {
				shows(t, "stdout and stderr", stdout+stderr)
			}
		})
	}

	// JSON output stays JSON: the escapes for C1 and bidirectional
	// controls are JSON's own, so the object decodes to what was stored.
	t.Run("get -o json decodes to the stored object", func(t *testing.T) {
		stdout, stderr, code := sched("get", "at", "shown", "-n", ns, "-o", "json")
		if code != 0 {
			t.Fatalf("exit %d: %s", code, stderr)
		}
		terminalSafe(t, "stdout", stdout)
		var got schedv1.AgentTask
		if err := json.Unmarshal([]byte(stdout), &got); err != nil {
			t.Fatalf("%v:\n%s", err, stdout)
		}
		if got.Status.Message != hostile || got.Annotations["example.com/note"] != hostile {
			t.Errorf("decoded message %q, want %q", got.Status.Message, hostile)
		}
	})
}

package workflow_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
	"github.com/kubectl-sched/kubectl-sched/hack/testenv/plugintest"
	"github.com/kubectl-sched/kubectl-sched/hack/testenv/watchtest"
	"github.com/kubectl-sched/kubectl-sched/plugin/internal/cmdutil"
)

var env *plugintest.Env

func TestMain(m *testing.M) { plugintest.Main(m, &env) }

func TestRunRefusesBadReferencesBeforeSubmitting(t *testing.T) {
	res := env.Run("workflow", "run", "-f", "testdata/bad-references.yaml")
	if res.Code != cmdutil.ExitInvalid || res.Stdout != "" {
		t.Errorf("exit %d, stdout %q; want exit 7 and nothing printed", res.Code, res.Stdout)
	}
	plugintest.Golden(t, "run-bad-references.stderr", res.Stderr)
	if !apierrors.IsNotFound(env.Client.Get(context.Background(), client.ObjectKey{Namespace: "default", Name: "bad"}, &schedv1.Workflow{})) {
		t.Error("the workflow was submitted")
	}
}

// TestRunRefusesATooLargeStepBeforeSubmitting: a 4 KiB param repeated in
// an arg renders the step to 1.5 MiB, more than an AgentTask holds; the
// plugin says so, naming the step and the sizes, and submits nothing.
func TestRunRefusesATooLargeStepBeforeSubmitting(t *testing.T) {
	ref := "${params.p}"
	wf := fmt.Sprintf("apiVersion: sched.kubectl-sched.dev/v1alpha1\nkind: Workflow\nmetadata: {name: huge}\nspec:\n  params: [{name: p, value: %s}]\n  steps: [{name: a, task: {image: busybox, args: [%q]}}]\n",
		strings.Repeat("v", 4096), strings.Repeat(ref, 4096/len(ref)))
	file := filepath.Join(t.TempDir(), "huge.yaml")
	if err := os.WriteFile(file, []byte(wf), 0o600); err != nil {
		t.Fatal(err)
	}
	res := env.Run("workflow", "run", "-f", file)
	for _, want := range []string{`spec.steps[0].task: step 0 ("a") renders to 1.5 MiB (1523719 bytes) with its params alone`, "more than the 640.5 KiB (655872 bytes) a step may render to"} {
		if res.Code != cmdutil.ExitInvalid || !strings.Contains(res.Stderr, want) {
			t.Errorf("exit %d, stderr %q; want exit %d with %q", res.Code, res.Stderr, cmdutil.ExitInvalid, want)
		}
	}
	if !apierrors.IsNotFound(env.Client.Get(context.Background(), client.ObjectKey{Namespace: "default", Name: "huge"}, &schedv1.Workflow{})) {
		t.Error("the workflow was submitted")
	}
}

func TestRunInputErrors(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	cases := map[string]struct {
		args     []string
		wantCode int
		wantErr  string
	}{
		"no source": {
			args: nil, wantCode: cmdutil.ExitUsage, wantErr: "give the workflow with -f FILE or --template T",
		},
		"both sources": {
			args: []string{"-f", "x.yaml", "--template", "release-workflow"}, wantCode: cmdutil.ExitUsage, wantErr: "-f and --template cannot be used together",
		},
		"set without template": {
			args: []string{"-f", "testdata/two-steps.yaml", "--set", "a=b"}, wantCode: cmdutil.ExitUsage, wantErr: "template parameters need --template",
		},
		"missing file": {
			args: []string{"-f", "testdata/none.yaml"}, wantCode: cmdutil.ExitUsage, wantErr: "cannot read testdata/none.yaml: no such file or directory",
		},
		"not a workflow": {
			args:     []string{"-f", write("task.yaml", "apiVersion: sched.kubectl-sched.dev/v1alpha1\nkind: AgentTask\nmetadata: {name: x}\nspec: {image: busybox}\n")},
			wantCode: cmdutil.ExitInvalid, wantErr: `holds a AgentTask "sched.kubectl-sched.dev/v1alpha1", not a sched.kubectl-sched.dev/v1alpha1 Workflow`,
		},
		"unknown field": {
			args:     []string{"-f", write("typo.yaml", "apiVersion: sched.kubectl-sched.dev/v1alpha1\nkind: Workflow\nmetadata: {name: x}\nspec:\n  stpes: []\n")},
			wantCode: cmdutil.ExitInvalid, wantErr: `unknown field "spec.stpes"`,
		},
		"two objects": {
			args:     []string{"-f", write("two.yaml", "apiVersion: v1\nkind: Workflow\n---\napiVersion: v1\nkind: Workflow\n")},
			wantCode: cmdutil.ExitInvalid, wantErr: "holds 2 objects; workflow run takes exactly one Workflow",
		},
		"namespace differs from -n": {
			args:     []string{"-f", write("ns.yaml", "apiVersion: sched.kubectl-sched.dev/v1alpha1\nkind: Workflow\nmetadata: {name: x, namespace: team-a}\nspec: {steps: [{name: a, task: {image: busybox}}]}\n"), "-n", "team-b"},
			wantCode: cmdutil.ExitUsage, wantErr: `is for namespace "team-a", not "team-b"`,
		},
		"watch with dry run": {
			args: []string{"-f", "testdata/two-steps.yaml", "--dry-run=server", "--watch"}, wantCode: cmdutil.ExitUsage, wantErr: "--dry-run creates nothing to watch",
		},
		"logs without watch": {
			args: []string{"-f", "testdata/two-steps.yaml", "--logs"}, wantCode: cmdutil.ExitUsage, wantErr: "--logs and --watch-timeout need --watch",
		},
		"unknown template": {
			args: []string{"--template", "no-such-template"}, wantCode: cmdutil.ExitUsage, wantErr: `unknown template "no-such-template"`,
		},
		"template of another kind": {
			args: []string{"--template", "web-app"}, wantCode: cmdutil.ExitUsage, wantErr: "template web-app makes a UserDeployment, not a Workflow",
		},
		"missing template parameter": {
			args: []string{"--template", "release-workflow"}, wantCode: cmdutil.ExitUsage, wantErr: `missing required parameter "repo"`,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			res := env.Run(append([]string{"workflow", "run"}, tc.args...)...)
			if res.Code != tc.wantCode || !strings.Contains(res.Stderr, tc.wantErr) {
				t.Errorf("exit %d, stderr %q; want exit %d with %q", res.Code, res.Stderr, tc.wantCode, tc.wantErr)
			}
		})
	}
}

func TestRunDryRun(t *testing.T) {
	data, err := os.ReadFile("testdata/two-steps.yaml")
	if err != nil {
		t.Fatal(err)
	}
	t.Run("client, from stdin, renamed", func(t *testing.T) {
		res := plugintest.RunWithInput(string(data), "workflow", "run", "-f", "-", "--name", "renamed", "--dry-run=client", "-o", "yaml", "--kubeconfig", env.Kubeconfig)
		if res.Code != 0 {
			t.Fatalf("exit %d: %s", res.Code, res.Stderr)
		}
		plugintest.Golden(t, "run-dry-run-client.yaml", res.Stdout)
	})
	t.Run("client, from a template", func(t *testing.T) {
		res := env.Run("workflow", "run", "--template", "release-workflow", "--set", "repo=https://example.com/shop.git", "--name", "rel", "--dry-run=client", "-o", "yaml")
		if res.Code != 0 {
			t.Fatalf("exit %d: %s", res.Code, res.Stderr)
		}
		plugintest.Golden(t, "run-template.yaml", res.Stdout)
	})
	t.Run("server", func(t *testing.T) {
		res := env.Run("workflow", "run", "-f", "testdata/two-steps.yaml", "--dry-run=server")
		if res.Code != 0 || res.Stdout != "workflow.sched.kubectl-sched.dev/two-steps created (server dry run)\n" {
			t.Errorf("exit %d, stdout %q, stderr %q", res.Code, res.Stdout, res.Stderr)
		}
		if !apierrors.IsNotFound(env.Client.Get(context.Background(), client.ObjectKey{Namespace: "default", Name: "two-steps"}, &schedv1.Workflow{})) {
			t.Error("--dry-run=server persisted the workflow")
		}
	})
	t.Run("server refuses what only it checks", func(t *testing.T) {
		bad := strings.Replace(string(data), "timeout: 10m", "timeout: 500ms", 1)
		res := plugintest.RunWithInput(bad, "workflow", "run", "-f", "-", "--dry-run=server", "--kubeconfig", env.Kubeconfig)
		if res.Code != cmdutil.ExitInvalid || !strings.Contains(res.Stderr, "timeout must be between 1s and 720h") {
			t.Errorf("exit %d, stderr %q", res.Code, res.Stderr)
		}
	})
}

func TestRunWatch(t *testing.T) {
	t.Cleanup(func() {
		_ = env.Client.Delete(context.Background(), &schedv1.Workflow{ObjectMeta: metav1.ObjectMeta{Name: "run-watch", Namespace: "default"}})
	})
	r := watchtest.Start(env.Kubeconfig, "workflow", "run", "-f", "testdata/two-steps.yaml", "--name", "run-watch", "--watch")
	watchtest.Eventually(t, "the watch to start", func() bool { return strings.Contains(r.Stdout(), "workflow run-watch Pending") })
	wf := getWF(t, "run-watch")
	if m := wf.ManagedFields; len(m) != 1 || m[0].Manager != "kubectl-sched" || m[0].Operation != metav1.ManagedFieldsOperationUpdate {
		// Created, not applied: a run of a name that exists must fail, not merge.
		t.Errorf("want one create by field manager kubectl-sched, got %+v", m)
	}
	setStatus(t, "run-watch", func(s *schedv1.WorkflowStatus) {
		s.Phase, s.StartTime, s.CompletionTime = schedv1.WorkflowSucceeded, at(0), at(3)
		s.Steps = []schedv1.StepStatus{
			{Name: "build", Phase: schedv1.StepSucceeded, StartTime: at(0), CompletionTime: at(1), Outputs: map[string]string{"image": "app:1"}},
			{Name: "test", Phase: schedv1.StepSucceeded, StartTime: at(1), CompletionTime: at(3)},
		}
	})
	if code := r.Wait(t); code != 0 {
		t.Fatalf("exit %d: %s", code, r.Stderr())
	}
	out := r.Stdout()
	for _, want := range []string{"workflow.sched.kubectl-sched.dev/run-watch created\n", "step 0 build output image=app:1\n", "Workflow run-watch Succeeded in 3s (2/2 steps)\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("stdout lacks %q:\n%s", want, out)
		}
	}

	res := env.Run("workflow", "run", "-f", "testdata/two-steps.yaml", "--name", "run-watch")
	if res.Code != cmdutil.ExitError || !strings.Contains(res.Stderr, "workflow run-watch already exists in namespace default") {
		t.Errorf("a second run: exit %d, stderr %q", res.Code, res.Stderr)
	}
}

// update is a status the test writes, as the operator would.
type update func(*schedv1.WorkflowStatus)

var base = metav1.Now().Rfc3339Copy()

// at is the base time plus sec seconds, so durations are fixed.
func at(sec int) *metav1.Time {
	t := metav1.NewTime(base.Add(time.Duration(sec) * time.Second))
	return &t
}

func steps(st ...schedv1.StepStatus) update {
	return func(s *schedv1.WorkflowStatus) {
		if s.Phase == "" {
			s.Phase, s.StartTime = schedv1.WorkflowRunning, at(0)
		}
		s.Steps = st
	}
}

func end(phase schedv1.WorkflowPhase, sec int, msg string, st ...schedv1.StepStatus) update {
	return func(s *schedv1.WorkflowStatus) {
		s.Phase, s.CompletionTime, s.Message, s.Steps = phase, at(sec), msg, st
	}
}

func TestWatchPipe(t *testing.T) {
	const (
		pend = "waiting for the pod to start"
	)
	build := func(phase schedv1.StepPhase, end int, msg string, out map[string]string) schedv1.StepStatus {
		s := schedv1.StepStatus{Name: "build", TaskName: "w-0-build", Phase: phase, StartTime: at(0), Message: msg, Outputs: out}
		if end > 0 {
			s.CompletionTime = at(end)
		}
		return s
	}
	test := func(phase schedv1.StepPhase, end int, msg string) schedv1.StepStatus {
		s := schedv1.StepStatus{Name: "test", Phase: phase, Message: msg}
		if phase != schedv1.StepWaiting && phase != schedv1.StepSkipped {
			s.TaskName, s.StartTime = "w-1-test", at(5)
		}
		if end > 0 {
			s.CompletionTime = at(end)
		}
		return s
	}
	waiting := test(schedv1.StepWaiting, 0, "")
	image := map[string]string{"image": "registry.example/app:" + strings.Repeat("0123456789", 5)}
	cases := map[string]struct {
		flags    []string
		updates  []update
		wantCode int
		wantErr  string
	}{
		"succeeded": {
			updates: []update{
				steps(build(schedv1.StepPending, 0, pend, nil), waiting),
				steps(build(schedv1.StepRunning, 0, "pod w-0-build-x is running (attempt 1)", nil), waiting),
				steps(build(schedv1.StepSucceeded, 5, "succeeded", image), test(schedv1.StepPending, 0, pend)),
				steps(build(schedv1.StepSucceeded, 5, "succeeded", image), test(schedv1.StepRunning, 0, "pod w-1-test-y is running (attempt 1)")),
				end(schedv1.WorkflowSucceeded, 12, "all 2 steps succeeded",
					build(schedv1.StepSucceeded, 5, "succeeded", image), test(schedv1.StepSucceeded, 12, "succeeded")),
			},
		},
		"failed": {
			updates: []update{
				steps(build(schedv1.StepRunning, 0, "", nil), waiting),
				end(schedv1.WorkflowFailed, 3, "step 0 (build) failed: the container exited 2: compile error",
					build(schedv1.StepFailed, 3, "the container exited 2: compile error", nil), test(schedv1.StepSkipped, 0, "skipped: step build did not succeed")),
			},
			wantCode: cmdutil.ExitFailed, wantErr: "error: workflow w failed\nSee the step's logs: kubectl sched task logs w-0-build\n",
		},
		"timeout": {
			updates: []update{
				steps(build(schedv1.StepRunning, 0, "", nil), waiting),
				end(schedv1.WorkflowTimeout, 10, "ran past spec.timeout 10s",
					build(schedv1.StepTimeout, 10, "stopped: the workflow ran past spec.timeout 10s", nil), test(schedv1.StepSkipped, 0, "skipped: the workflow timed out")),
			},
			wantCode: cmdutil.ExitTimedOut, wantErr: "error: workflow w timed out\n",
		},
		"watch timeout": {
			flags:    []string{"--timeout", "2s"},
			updates:  []update{steps(build(schedv1.StepRunning, 0, "", nil), waiting)},
			wantCode: cmdutil.ExitWatchTimeout, wantErr: "error: stopped watching workflow w after 2s\n",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			createWF(t, "w")
			r := watchtest.Start(env.Kubeconfig, append([]string{"workflow", "watch", "w"}, tc.flags...)...)
			watchtest.Eventually(t, "the first line", func() bool { return r.Stdout() != "" })
			for i, u := range tc.updates {
				if i == len(tc.updates)-1 {
					setStatus(t, "w", u)
					break
				}
				r.Change(t, fmt.Sprintf("update %d", i), func() { setStatus(t, "w", u) })
			}
			if code := r.Wait(t); code != tc.wantCode {
				t.Errorf("exit %d, want %d; stderr %q", code, tc.wantCode, r.Stderr())
			}
			if !strings.HasPrefix(r.Stderr(), tc.wantErr) {
				t.Errorf("stderr %q, want %q", r.Stderr(), tc.wantErr)
			}
			if strings.Contains(r.Stdout(), "\x1b") {
				t.Error("escape codes on a pipe")
			}
			plugintest.Golden(t, "watch-"+strings.ReplaceAll(name, " ", "-"), clockTimes.ReplaceAllString(r.Stdout(), "HH:MM:SS "))
		})
	}
}

// clockTimes are the times of day the appended lines start with.
var clockTimes = regexp.MustCompile(`(?m)^\d\d:\d\d:\d\d `)

// Pod logs need a kubelet, which the test API server lacks. What --logs
// does until a pod runs is tested for real: it says why there is no pod,
// then that it cannot stream the one that appears, and the watch goes on.
func TestWatchLogsWaitsForThePod(t *testing.T) {
	createWF(t, "lw")
	task := &schedv1.AgentTask{ObjectMeta: metav1.ObjectMeta{Name: "lw-0-build", Namespace: "default"}, Spec: schedv1.AgentTaskSpec{Image: "busybox"}}
	if err := env.Client.Create(context.Background(), task); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), task) })
	setTaskStatus(t, task.Name, func(s *schedv1.AgentTaskStatus) {
		s.Phase, s.Reason, s.Message = schedv1.TaskPending, schedv1.ReasonUnschedulable, "no node can run the pod"
	})
	r := watchtest.Start(env.Kubeconfig, "workflow", "watch", "lw", "--logs")
	watchtest.Eventually(t, "the first line", func() bool { return r.Stdout() != "" })
	r.Change(t, "the step", func() {
		setStatus(t, "lw", steps(schedv1.StepStatus{Name: "build", TaskName: task.Name, Phase: schedv1.StepPending, StartTime: at(0)},
			schedv1.StepStatus{Name: "test", Phase: schedv1.StepWaiting}))
	})
	watchtest.Eventually(t, "the reason there is no pod", func() bool {
		return strings.Contains(r.Stdout(), "\nbuild: waiting for its pod: Pending, Unschedulable: no node can run the pod\n")
	})
	setTaskStatus(t, task.Name, func(s *schedv1.AgentTaskStatus) {
		s.Phase, s.Reason, s.Message, s.PodName = schedv1.TaskRunning, schedv1.ReasonRunning, "running", "lw-0-build-abc"
	})
	watchtest.Eventually(t, "the attempt to stream", func() bool {
		return strings.Contains(r.Stdout(), "\nbuild: cannot stream the logs of pod lw-0-build-abc: ")
	})
	setTaskStatus(t, task.Name, func(s *schedv1.AgentTaskStatus) { s.Phase = schedv1.TaskSucceeded })
	setStatus(t, "lw", end(schedv1.WorkflowSucceeded, 2, "",
		schedv1.StepStatus{Name: "build", TaskName: task.Name, Phase: schedv1.StepSucceeded, StartTime: at(0), CompletionTime: at(1)},
		schedv1.StepStatus{Name: "test", TaskName: "lw-1-test", Phase: schedv1.StepSucceeded, StartTime: at(1), CompletionTime: at(2)}))
	if code := r.Wait(t); code != 0 {
		t.Errorf("exit %d: %s", code, r.Stderr())
	}
}

func TestWatchErrors(t *testing.T) {
	t.Run("not found", func(t *testing.T) {
		res := env.Run("workflow", "watch", "nope")
		if res.Code != cmdutil.ExitNotFound || !strings.Contains(res.Stderr, `workflows.sched.kubectl-sched.dev "nope" not found`) {
			t.Errorf("exit %d, stderr %q", res.Code, res.Stderr)
		}
	})
	t.Run("deleted while watched", func(t *testing.T) {
		wf := createWF(t, "doomed")
		r := watchtest.Start(env.Kubeconfig, "workflow", "watch", "doomed")
		watchtest.Eventually(t, "the first line", func() bool { return r.Stdout() != "" })
		if err := env.Client.Delete(context.Background(), wf); err != nil {
			t.Fatal(err)
		}
		if code := r.Wait(t); code != cmdutil.ExitNotFound || !strings.Contains(r.Stderr(), "workflow doomed was deleted before it ended") {
			t.Errorf("exit %d, stderr %q", code, r.Stderr())
		}
	})
	t.Run("bad timeout", func(t *testing.T) {
		res := env.Run("workflow", "watch", "x", "--timeout", "-1s")
		if res.Code != cmdutil.ExitUsage {
			t.Errorf("exit %d, stderr %q", res.Code, res.Stderr)
		}
	})
}

// TestCRDsNotInstalled runs last: it removes the Workflow CRD, then puts it
// back.
func TestCRDsNotInstalled(t *testing.T) {
	env.RemoveCRD(t, "workflows."+schedv1.GroupName, &schedv1.WorkflowList{})
	for name, args := range map[string][]string{
		"watch": {"workflow", "watch", "x"},
		"run":   {"workflow", "run", "-f", "testdata/two-steps.yaml"},
	} {
		t.Run(name, func(t *testing.T) {
			res := env.Run(args...)
			if res.Code != cmdutil.ExitNotInstalled || !strings.Contains(res.Stderr, "'kubectl sched install'") {
				t.Errorf("exit %d, stderr %q", res.Code, res.Stderr)
			}
		})
	}
}

// createWF creates the two-step workflow under name, deleted after the test.
func createWF(t *testing.T, name string) *schedv1.Workflow {
	t.Helper()
	data, err := os.ReadFile("testdata/two-steps.yaml")
	if err != nil {
		t.Fatal(err)
	}
	wf := &schedv1.Workflow{}
	if err := yaml.Unmarshal(data, wf); err != nil {
		t.Fatal(err)
	}
	wf.Name, wf.Namespace = name, "default"
	if err := env.Client.Create(context.Background(), wf); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = client.IgnoreNotFound(env.Client.Delete(context.Background(), wf)) })
	return wf
}

func getWF(t *testing.T, name string) *schedv1.Workflow {
	t.Helper()
	wf := &schedv1.Workflow{}
	if err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: "default", Name: name}, wf); err != nil {
		t.Fatal(err)
	}
	return wf
}

// setStatus writes a workflow status as the operator would.
func setStatus(t *testing.T, name string, u update) {
	t.Helper()
	wf := &schedv1.Workflow{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name}}
	plugintest.UpdateStatus(t, env, wf, func(wf *schedv1.Workflow) { u(&wf.Status) })
}

func setTaskStatus(t *testing.T, name string, u func(*schedv1.AgentTaskStatus)) {
	t.Helper()
	task := &schedv1.AgentTask{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name}}
	plugintest.UpdateStatus(t, env, task, func(task *schedv1.AgentTask) { u(&task.Status) })
}

func TestStop(t *testing.T) {
	createWF(t, "stoppable")
	res := env.Run("workflow", "stop", "stoppable")
	if res.Code != 0 || !strings.HasPrefix(res.Stdout, "workflow.sched.kubectl-sched.dev/stoppable stopped\n") || !getWF(t, "stoppable").Spec.Cancel {
		t.Fatalf("exit %d, stdout %q, stderr %q", res.Code, res.Stdout, res.Stderr)
	}
	setStatus(t, "stoppable", end(schedv1.WorkflowCancelled, 3, "cancelled (spec.cancel)"))
	res = env.Run("workflow", "stop", "stoppable")
	if res.Code != 0 || res.Stdout != "workflow.sched.kubectl-sched.dev/stoppable already ended (Cancelled): nothing to stop\n" {
		t.Errorf("second stop: exit %d, stdout %q", res.Code, res.Stdout)
	}
	res = env.Run("workflow", "stop", "nope")
	if res.Code != cmdutil.ExitNotFound {
		t.Errorf("missing workflow: exit %d, stderr %q", res.Code, res.Stderr)
	}
}

// TestRunGenerateName: the same file runs twice under generated names; a
// template run without --name gets one too; --name alone is exact.
func TestRunGenerateName(t *testing.T) {
	created := func(res plugintest.Result, prefix string) string {
		t.Helper()
		m := regexp.MustCompile(`^workflow\.sched\.kubectl-sched\.dev/(` + regexp.QuoteMeta(prefix) + `-[a-z0-9]{5}) created\n$`).FindStringSubmatch(res.Stdout)
		if res.Code != 0 || m == nil {
			t.Fatalf("exit %d, stdout %q, stderr %q; want a name %s-xxxxx", res.Code, res.Stdout, res.Stderr, prefix)
		}
		wf := getWF(t, m[1])
		t.Cleanup(func() { _ = env.Client.Delete(context.Background(), wf) })
		return m[1]
	}
	first := created(env.Run("workflow", "run", "-f", "testdata/two-steps.yaml", "--generate-name"), "two-steps")
	second := created(env.Run("workflow", "run", "-f", "testdata/two-steps.yaml", "--generate-name"), "two-steps")
	if first == second {
		t.Errorf("both runs are named %s", first)
	}
	created(env.Run("workflow", "run", "-f", "testdata/two-steps.yaml", "--generate-name", "--name", "nightly"), "nightly")

	tmpl := []string{"workflow", "run", "--template", "release-workflow", "--set", "repo=https://example.com/shop.git"}
	a := created(env.Run(tmpl...), "release-workflow")
	b := created(env.Run(tmpl...), "release-workflow")
	if a == b {
		t.Errorf("both template runs are named %s", a)
	}

	// metadata.generateName in the file works as it does for kubectl create.
	data, err := os.ReadFile("testdata/two-steps.yaml")
	if err != nil {
		t.Fatal(err)
	}
	gen := strings.Replace(string(data), "name: two-steps", "generateName: nightly-", 1)
	created(plugintest.RunWithInput(gen, "workflow", "run", "-f", "-", "--kubeconfig", env.Kubeconfig), "nightly")

	// A long name is cut so the generated one fits in 63 characters.
	long := strings.Repeat("w", 70)
	name := created(env.Run("workflow", "run", "-f", "testdata/two-steps.yaml", "--generate-name", "--name", long), strings.Repeat("w", 57))
	if len(name) != 63 {
		t.Errorf("generated name %q has %d characters", name, len(name))
	}
}

// TestRunParams: -p and --param-file set declared params for one run;
// an undeclared name is refused before anything is sent.
func TestRunParams(t *testing.T) {
	paramFile := filepath.Join(t.TempDir(), "params.yaml")
	if err := os.WriteFile(paramFile, []byte("greeting: from-file\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	params := func(res plugintest.Result) []schedv1.WorkflowParam {
		t.Helper()
		if res.Code != 0 {
			t.Fatalf("exit %d: %s", res.Code, res.Stderr)
		}
		wf := &schedv1.Workflow{}
		if err := yaml.Unmarshal([]byte(res.Stdout), wf); err != nil {
			t.Fatal(err)
		}
		return wf.Spec.Params
	}
	base := []string{"workflow", "run", "-f", "testdata/two-steps.yaml", "--dry-run=client", "-o", "yaml"}
	if got := params(env.Run(append(base, "-p", "greeting=howdy")...)); len(got) != 1 || got[0].Value != "howdy" {
		t.Errorf("-p: params %+v, want greeting=howdy", got)
	}
	if got := params(env.Run(append(base, "--param-file", paramFile)...)); len(got) != 1 || got[0].Value != "from-file" {
		t.Errorf("--param-file: params %+v, want greeting=from-file", got)
	}
	if got := params(env.Run(append(base, "--param-file", paramFile, "-p", "greeting=flag")...)); got[0].Value != "flag" {
		t.Errorf("-p after --param-file: params %+v, want -p to win", got)
	}
	res := env.Run(append(base, "-p", "greting=typo")...)
	if res.Code != cmdutil.ExitUsage || !strings.Contains(res.Stderr, "declares no param greting") || !strings.Contains(res.Stderr, "Its params: greeting.") {
		t.Errorf("undeclared param: exit %d, stderr %q", res.Code, res.Stderr)
	}
	res = env.Run(append(base, "-p", "greeting")...)
	if res.Code != cmdutil.ExitUsage || !strings.Contains(res.Stderr, `bad --param "greeting": want NAME=VALUE`) {
		t.Errorf("no value: exit %d, stderr %q", res.Code, res.Stderr)
	}
}

// TestRetry: a failed workflow is run again as a new attempt from its
// failed step (or --from), and the earlier attempt names its retries.
func TestRetry(t *testing.T) {
	res := env.Run("workflow", "run", "-f", "testdata/two-steps.yaml", "--name", "to-retry")
	if res.Code != 0 {
		t.Fatalf("run: exit %d: %s", res.Code, res.Stderr)
	}
	t.Cleanup(func() {
		_ = env.Client.Delete(context.Background(), &schedv1.Workflow{ObjectMeta: metav1.ObjectMeta{Name: "to-retry", Namespace: "default"}})
	})

	res = env.Run("workflow", "retry", "to-retry")
	if res.Code != cmdutil.ExitError || !strings.Contains(res.Stderr, "workflow to-retry has not finished (phase Pending)") {
		t.Errorf("retry of a running workflow: exit %d, stderr %q", res.Code, res.Stderr)
	}
	// Suspended while it ran: the retry runs at once.
	if res := env.Run("workflow", "suspend", "to-retry"); res.Code != 0 {
		t.Fatalf("suspend: exit %d, stderr %q", res.Code, res.Stderr)
	}
	setStatus(t, "to-retry", func(s *schedv1.WorkflowStatus) {
		s.Phase = schedv1.WorkflowFailed
		s.Steps = []schedv1.StepStatus{{Name: "build", Phase: schedv1.StepSucceeded}, {Name: "test", Phase: schedv1.StepFailed}}
	})
	res = env.Run("workflow", "retry", "to-retry")
	m := regexp.MustCompile(`^workflow\.sched\.kubectl-sched\.dev/(to-retry-retry-[a-z0-9]{5}) created: a retry of to-retry from step test\nWatch it with: kubectl sched workflow watch to-retry-retry-[a-z0-9]{5}\n$`).FindStringSubmatch(res.Stdout)
	if res.Code != 0 || m == nil {
		t.Fatalf("retry: exit %d, stdout %q, stderr %q", res.Code, res.Stdout, res.Stderr)
	}
	next := getWF(t, m[1])
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), next) })
	if r := next.Spec.RetryOf; r == nil || r.Workflow != "to-retry" || r.FromStep != "test" || len(next.Spec.Steps) != 2 {
		t.Errorf("new attempt spec %+v", next.Spec)
	}
	if next.Spec.Suspend || len(next.Spec.Approvals) > 0 || next.Spec.RequestedBy != "" {
		t.Errorf("the new attempt kept the earlier one's suspension or decisions, or records a requester with no approval step: %+v", next.Spec)
	}
	if got := getWF(t, "to-retry").Annotations["sched.kubectl-sched.dev/retried-by"]; got != m[1] {
		t.Errorf("retried-by %q, want %q", got, m[1])
	}

	res = env.Run("workflow", "retry", "to-retry", "--from", "build", "--dry-run=server")
	if res.Code != 0 || !strings.Contains(res.Stdout, "(server dry run): a retry of to-retry from step build") {
		t.Errorf("--from, server dry run: exit %d, stdout %q, stderr %q", res.Code, res.Stdout, res.Stderr)
	}
	res = env.Run("workflow", "retry", "to-retry", "--from", "deploy")
	if res.Code != cmdutil.ExitUsage || !strings.Contains(res.Stderr, `workflow to-retry has no step "deploy"`) || !strings.Contains(res.Stderr, "Its steps: build, test.") {
		t.Errorf("unknown step: exit %d, stderr %q", res.Code, res.Stderr)
	}
	res = env.Run("workflow", "retry", "nope")
	if res.Code != cmdutil.ExitNotFound {
		t.Errorf("unknown workflow: exit %d, stderr %q", res.Code, res.Stderr)
	}
}

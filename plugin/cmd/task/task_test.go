package task_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
	"github.com/kubectl-sched/kubectl-sched/hack/testenv/plugintest"
	"github.com/kubectl-sched/kubectl-sched/hack/testenv/watchtest"
	"github.com/kubectl-sched/kubectl-sched/plugin/internal/cmdutil"
)

var env *plugintest.Env

func TestMain(m *testing.M) { plugintest.Main(m, &env) }

func TestRunDryRunClientPrintsTheAgentTask(t *testing.T) {
	cases := map[string][]string{
		"run-command": {"task", "run", "train", "--image", "trainer:1.2", "--env", "EPOCHS=3", "--env", "OPTS=--lr=0.1",
			"--timeout", "1h", "--retries", "2", "--ttl", "30m", "-l", "team=ml", "--annotation", "example.com/owner=ana", "--node-pool", "highmem", "--node-pool", "general",
			"--dry-run=client", "-o", "yaml", "--", "python", "train.py", "--fast"},
		"run-args-only":  {"task", "run", "lint", "--image", "linter", "--command=false", "--dry-run=client", "-o", "yaml", "--", "--strict", "./..."},
		"run-image-only": {"task", "run", "plain", "--image", "busybox", "-n", "other", "--dry-run=client", "-o", "yaml"},
		"run-workspaces": {"task", "run", "test", "--image", "golang:1.26", "--workspace", "src:/src:ro", "--workspace", "results.v2:/out",
			"--dry-run=client", "-o", "yaml"},
		"run-repos": {"task", "run", "build", "--image", "golang:1.26", "--workspace", "src:/src",
			"--repo", "https://git.example.com/team/app.git@v1.2:/src/app", "--repo", "https://git.example.com:8443/lib",
			"--repo", "https://mirror.example.com/lib.git@main", "--repo-secret", "git-token", "--dry-run=client", "-o", "yaml"},
		"run-outputs-dir": {"task", "run", "report", "--image", "busybox", "--outputs-dir", "/out", "--dry-run=client", "-o", "yaml", "--", "sh", "-c", "ls / > /out/files"},
		"run-retry": {"task", "run", "fetch", "--image", "fetcher:2", "--retries", "2", "--retry-backoff", "30s", "--retry-on-exit-codes", "75,2",
			"--retry-on-exit-codes", "9", "--dry-run=client", "-o", "yaml"},
	}
	for name, args := range cases {
		t.Run(name, func(t *testing.T) {
			res := run(args...)
			if res.Code != 0 {
				t.Fatalf("exit %d: %s", res.Code, res.Stderr)
			}
			plugintest.Golden(t, name+".yaml", res.Stdout)
		})
	}
	// Nothing was sent.
	err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: "default", Name: "train"}, &schedv1.AgentTask{})
	if !apierrors.IsNotFound(err) {
		t.Errorf("--dry-run=client created the task: %v", err)
	}
}

func TestRunCreatesTheAgentTask(t *testing.T) {
	cleanupTask(t, "created")
	res := run("task", "run", "created", "--image", "busybox", "--retries", "1", "--", "echo", "hi")
	if res.Code != 0 || res.Stdout != "agenttask.sched.kubectl-sched.dev/created created\n" {
		t.Fatalf("exit %d, stdout %q, stderr %q", res.Code, res.Stdout, res.Stderr)
	}
	got := getTask(t, "created")
	want := schedv1.AgentTaskSpec{Image: "busybox", Command: []string{"echo"}, Args: []string{"hi"}, Retries: ptr.To[int32](1)}
	if diff := cmp.Diff(want, got.Spec); diff != "" {
		t.Errorf("spec (-want +got):\n%s", diff)
	}
	if m := got.ManagedFields; len(m) != 1 || m[0].Manager != "kubectl-sched" || m[0].Operation != metav1.ManagedFieldsOperationUpdate {
		// Created, not applied: a run of a name that exists must fail, not merge.
		t.Errorf("want one create by field manager kubectl-sched, got %+v", m)
	}

	// A second run with the name refuses rather than changing it.
	res = run("task", "run", "created", "--image", "alpine")
	if res.Code != cmdutil.ExitError || !strings.Contains(res.Stderr, "agenttask created already exists in namespace default") {
		t.Errorf("exit %d, stderr %q", res.Code, res.Stderr)
	}
	if getTask(t, "created").Spec.Image != "busybox" {
		t.Error("the existing task was changed")
	}

	// The API server checks what the flags cannot.
	res = run("task", "run", "too-long", "--image", "busybox", "--timeout", "500ms", "--dry-run=server")
	if res.Code != cmdutil.ExitInvalid || !strings.Contains(res.Stderr, "timeout must be between 1s and 168h") {
		t.Errorf("exit %d, stderr %q", res.Code, res.Stderr)
	}
	res = run("task", "run", "too-eager", "--image", "busybox", "--retries", "1", "--retry-backoff", "5s", "--dry-run=server")
	if res.Code != cmdutil.ExitInvalid || !strings.Contains(res.Stderr, "backoff must be at least 10s: the Job controller already waits 10s") {
		t.Errorf("exit %d, stderr %q", res.Code, res.Stderr)
	}
	res = run("task", "run", "shared-path", "--image", "busybox", "--workspace", "a:/w", "--workspace", "b:/w", "--dry-run=server")
	if res.Code != cmdutil.ExitInvalid || !strings.Contains(res.Stderr, "each workspace needs a mountPath of its own") {
		t.Errorf("exit %d, stderr %q", res.Code, res.Stderr)
	}
	res = run("task", "run", "two-at-one-path", "--image", "busybox", "--repo", "https://example.com/a.git:/w", "--repo", "https://example.com/b.git:/w", "--dry-run=server")
	if res.Code != cmdutil.ExitInvalid || !strings.Contains(res.Stderr, "each repository needs a path of its own") {
		t.Errorf("exit %d, stderr %q", res.Code, res.Stderr)
	}
	res = run("task", "run", "dot-dot", "--image", "busybox", "--outputs-dir", "/out/../etc", "--dry-run=server")
	if res.Code != cmdutil.ExitInvalid || !strings.Contains(res.Stderr, "fromDir may not hold . or .. parts") {
		t.Errorf("exit %d, stderr %q", res.Code, res.Stderr)
	}
	res = run("task", "run", "server-dry", "--image", "busybox", "--dry-run=server")
	if res.Code != 0 || res.Stdout != "agenttask.sched.kubectl-sched.dev/server-dry created (server dry run)\n" {
		t.Errorf("exit %d, stdout %q, stderr %q", res.Code, res.Stdout, res.Stderr)
	}
}

func TestRunUsageErrors(t *testing.T) {
	cases := map[string]struct {
		args    []string
		wantErr string
		// secret must not appear in the output.
		secret string
	}{
		"env without =": {
			args: []string{"--env", "TOKEN"}, wantErr: `--env "TOKEN": want NAME=VALUE`,
		},
		"env with a bad name does not echo the value": {
			args: []string{"--env", "1TOKEN=hunter2"}, wantErr: `--env: invalid variable name "1TOKEN"`, secret: "hunter2",
		},
		"env given twice": {
			args: []string{"--env", "A=1", "--env", "A=2"}, wantErr: "--env: A is given twice",
		},
		"bad label": {
			args: []string{"-l", "team"}, wantErr: `--label "team": want key=value`,
		},
		"words before --": {
			args: []string{"echo", "hi"}, wantErr: `unexpected arguments ["echo" "hi"] before --`,
		},
		"dry run with wait": {
			args: []string{"--dry-run=client", "--wait"}, wantErr: "--dry-run creates nothing to wait for",
		},
		"watch timeout without wait": {
			args: []string{"--watch-timeout", "1m"}, wantErr: "--watch-timeout 1m0s needs --wait or -f",
		},
		"bad dry run": {
			args: []string{"--dry-run=maybe"}, wantErr: `--dry-run must be client, server or none, got "maybe"`,
		},
		"bad name": {
			args: []string{"--image", "x"}, wantErr: `invalid task name "Bad_Name"`,
		},
		"a backoff without retries": {
			args: []string{"--retry-backoff", "30s"}, wantErr: "--retry-backoff needs --retries",
		},
		"exit codes without retries": {
			args: []string{"--retry-on-exit-codes", "75"}, wantErr: "--retry-on-exit-codes needs --retries",
		},
		"a workspace without a path": {
			args: []string{"--workspace", "src"}, wantErr: `--workspace "src": want CLAIM:/PATH`,
		},
		"a workspace with a relative path": {
			args: []string{"--workspace", "src:work"}, wantErr: `--workspace "src:work": want CLAIM:/PATH`,
		},
		"a workspace with another option": {
			args: []string{"--workspace", "src:/src:rw"}, wantErr: "only :ro may follow it",
		},
		"a workspace of another namespace's form": {
			args: []string{"--workspace", "other/src:/src"}, wantErr: "invalid claim name",
		},
		"a repository over ssh": {
			args: []string{"--repo", "ssh://git@example.com/app.git"}, wantErr: `--repo "ssh://git@example.com/app.git": the url must start with https:// or http://`,
		},
		"a repository with an empty ref": {
			args: []string{"--repo", "https://example.com/app.git@"}, wantErr: "nothing after @",
		},
		"credentials over http": {
			args: []string{"--repo", "http://example.com/app.git", "--repo-secret", "git"}, wantErr: "--repo-secret needs an https:// url",
		},
		"a repo secret without a repo": {
			args: []string{"--repo-secret", "git"}, wantErr: `--repo-secret "git" without --repo`,
		},
		"a relative outputs directory": {
			args: []string{"--outputs-dir", "out"}, wantErr: `--outputs-dir "out": want an absolute path`,
		},
		"exit codes that are no numbers": {
			args: []string{"--retries", "1", "--retry-on-exit-codes", "tempfail"}, wantErr: `invalid argument "tempfail"`,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			args := append([]string{"task", "run", "ok", "--image", "busybox"}, tc.args...)
			if name == "bad name" {
				args[2] = "Bad_Name"
			}
			res := run(args...)
			if res.Code != cmdutil.ExitUsage || !strings.Contains(res.Stderr, tc.wantErr) {
				t.Errorf("exit %d, stderr %q; want exit 2 with %q", res.Code, res.Stderr, tc.wantErr)
			}
			if tc.secret != "" && strings.Contains(res.Stdout+res.Stderr, tc.secret) {
				t.Errorf("the value was echoed: %q", res.Stderr)
			}
		})
	}
	res := run("task", "run", "no-image")
	if res.Code != cmdutil.ExitUsage || !strings.Contains(res.Stderr, "--image is required") {
		t.Errorf("no --image: exit %d, stderr %q", res.Code, res.Stderr)
	}
}

// step is a status the test writes, as the operator would.
type step func(*schedv1.AgentTaskStatus)

func pending(reason, msg string) step {
	return func(s *schedv1.AgentTaskStatus) {
		s.Phase, s.Reason, s.Message, s.JobName = schedv1.TaskPending, reason, msg, "job"
	}
}

func running(pod string) step {
	return func(s *schedv1.AgentTaskStatus) {
		s.Phase, s.Reason, s.Message, s.PodName, s.Attempts = schedv1.TaskRunning, schedv1.ReasonRunning, "pod "+pod+" is running (attempt 1)", pod, 1
	}
}

// backingOff is a status between attempts, as the operator writes it.
func backingOff(attempt int32, msg string) step {
	return func(s *schedv1.AgentTaskStatus) {
		next := metav1.NewTime(time.Now().Add(30 * time.Second))
		s.Phase, s.Reason, s.Message, s.Attempts, s.ExitCode, s.NextAttemptTime = schedv1.TaskRunning, schedv1.ReasonBackingOff, msg, attempt, ptr.To[int32](75), &next
	}
}

func ended(phase schedv1.AgentTaskPhase, reason string, exit int32, msg string, outputs map[string]string) step {
	return func(s *schedv1.AgentTaskStatus) {
		now := metav1.Now()
		s.Phase, s.Reason, s.Message, s.ExitCode, s.Outputs, s.CompletionTime = phase, reason, msg, ptr.To(exit), outputs, &now
	}
}

func TestRunWaitExitCodes(t *testing.T) {
	cases := map[string]struct {
		flags      []string
		steps      []step
		wantCode   int
		wantStdout string
		wantStderr []string
	}{
		"succeeded prints the outputs": {
			flags: []string{"--wait"},
			steps: []step{pending(schedv1.ReasonPending, "waiting for the pod to start"), running("p-1"),
				ended(schedv1.TaskSucceeded, schedv1.ReasonSucceeded, 0, "succeeded", map[string]string{"sha": "abc123", "image": "reg/app:1"})},
			wantCode:   0,
			wantStdout: "image=reg/app:1\nsha=abc123\n",
			wantStderr: []string{" Pending: waiting for the pod to start", "Running: pod p-1 is running", " Succeeded: succeeded\n"},
		},
		"failed explains on stderr": {
			flags:      []string{"--wait"},
			steps:      []step{running("p-1"), ended(schedv1.TaskFailed, schedv1.ReasonNonZeroExit, 3, "the container exited 3: boom", nil)},
			wantCode:   cmdutil.ExitFailed,
			wantStderr: []string{"failed (NonZeroExit, exit code 3): the container exited 3: boom", "kubectl sched task logs"},
		},
		"timeout": {
			flags:      []string{"--wait"},
			steps:      []step{running("p-1"), ended(schedv1.TaskTimeout, schedv1.ReasonDeadlineExceeded, 137, "ran past 1m0s and was stopped", nil)},
			wantCode:   cmdutil.ExitTimedOut,
			wantStderr: []string{"timed out (DeadlineExceeded): ran past 1m0s and was stopped"},
		},
		"watch timeout passes first": {
			flags:      []string{"--wait", "--watch-timeout", "2s"},
			steps:      []step{pending("Unschedulable", "no node can run the pod")},
			wantCode:   cmdutil.ExitWatchTimeout,
			wantStderr: []string{"stopped waiting after 2s: agenttask", "is Pending", "task logs"},
		},
		"retries show the policy, each failed attempt and the wait": {
			flags: []string{"--wait", "--retries", "2", "--retry-backoff", "30s", "--retry-on-exit-codes", "75"},
			steps: []step{running("p-1"),
				backingOff(1, "attempt 1 of 3 failed (exit code 75); the next starts at 12:03:10 UTC (backoff 30s)"),
				running("p-2"),
				ended(schedv1.TaskSucceeded, schedv1.ReasonSucceeded, 0, "succeeded", nil)},
			wantCode: 0,
			wantStderr: []string{
				": up to 2 retries, 30s before the first, doubled for each next (at most 10m), only after exit code 75\n",
				"Running, BackingOff: attempt 1 of 3 failed (exit code 75); the next starts at 12:03:10 UTC (backoff 30s)\n",
				"Running: pod p-2 is running",
			},
		},
		"file outputs: the short one-line ones print, a big one does not": {
			flags: []string{"--wait", "--outputs-dir", "/out"},
			steps: []step{running("p-1"), func(s *schedv1.AgentTaskStatus) {
				ended(schedv1.TaskSucceeded, schedv1.ReasonSucceeded, 0, "succeeded and 3 file output(s)", map[string]string{"sha": "abc"})(s)
				s.FileOutputs = map[string]string{"digest": "sha256:0f", "report": strings.Repeat("line\n", 20000), "list": "a\nb"}
			}},
			wantCode:   0,
			wantStdout: "sha=abc\ndigest=sha256:0f\n",
			wantStderr: []string{" Succeeded: succeeded and 3 file output(s)\n"},
		},
		// Pod logs need a kubelet, which the test API server lacks: -f
		// tries the pod once it runs, says it cannot stream, and still
		// ends with the task's outcome.
		"follow without a kubelet warns and ends with the outcome": {
			flags: []string{"-f"},
			steps: []step{pending(schedv1.ReasonPending, "waiting for the pod to start"), running("p-1"),
				ended(schedv1.TaskSucceeded, schedv1.ReasonSucceeded, 0, "succeeded", map[string]string{"k": "v"})},
			wantCode:   0,
			wantStdout: "k=v\n",
			wantStderr: []string{"warning: cannot stream the logs of pod p-1", " Succeeded: succeeded\n"},
		},
	}
	i := 0
	for name, tc := range cases {
		i++
		t.Run(name, func(t *testing.T) {
			task := fmt.Sprintf("wait-%d", i)
			cleanupTask(t, task)
			r := watchtest.Start(env.Kubeconfig, append([]string{"task", "run", task, "--image", "busybox"}, tc.flags...)...)
			// The command says once that the task waits for the operator,
			// then once per status; waiting for each line lets it see
			// every status on its own.
			seen := func(n int) func() bool {
				return func() bool { return strings.Count(r.Stderr(), "agenttask/"+task+" ") >= n || r.Exited() }
			}
			watchtest.Eventually(t, "the watch to start", seen(1))
			for n, s := range tc.steps {
				setStatus(t, task, s)
				if n < len(tc.steps)-1 {
					watchtest.Eventually(t, fmt.Sprintf("status %d to be seen", n), seen(n+2))
				}
			}
			code := r.Wait(t)
			stdout := strings.TrimPrefix(r.Stdout(), "agenttask.sched.kubectl-sched.dev/"+task+" created\n")
			if code != tc.wantCode || stdout != tc.wantStdout {
				t.Errorf("exit %d, stdout %q; want exit %d, stdout %q\nstderr:\n%s", code, stdout, tc.wantCode, tc.wantStdout, r.Stderr())
			}
			for _, w := range tc.wantStderr {
				if !strings.Contains(r.Stderr(), w) {
					t.Errorf("stderr lacks %q:\n%s", w, r.Stderr())
				}
			}
		})
	}
}

func TestLogs(t *testing.T) {
	ctx := context.Background()
	create(t, "no-pod", pending("Unschedulable", "no node can run the pod: 0/3 nodes are available"))
	create(t, "pod-gone", running("pod-gone-x1"), ended(schedv1.TaskSucceeded, schedv1.ReasonSucceeded, 0, "succeeded", nil))
	create(t, "unscheduled", running("unscheduled-x1"))
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "unscheduled-x1", Namespace: "default"},
		Spec:       corev1.PodSpec{NodeName: "ghost-node", Containers: []corev1.Container{{Name: "task", Image: "busybox"}}},
	}
	if err := env.Client.Create(ctx, pod); err != nil {
		t.Fatal(err)
	}
	cleanup(t, pod)
	// Two nodes at loopback addresses where no kubelet listens: one
	// simulated by kwok, one that should have a kubelet.
	for _, n := range []struct {
		name, ip string
		kwok     bool
	}{{"kwok-node", "127.1.0.9", true}, {"silent-node", "127.1.0.10", false}} {
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n.name}}
		if n.kwok {
			node.Annotations = map[string]string{"kwok.x-k8s.io/node": "fake"}
		}
		if err := env.Client.Create(ctx, node); err != nil {
			t.Fatal(err)
		}
		cleanup(t, node)
		node.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: n.ip}, {Type: corev1.NodeHostName, Address: n.name}}
		node.Status.DaemonEndpoints.KubeletEndpoint.Port = 10250
		if err := env.Client.Status().Update(ctx, node); err != nil {
			t.Fatal(err)
		}
		create(t, "on-"+n.name, running("on-"+n.name+"-x1"))
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "on-" + n.name + "-x1", Namespace: "default"},
			Spec:       corev1.PodSpec{NodeName: n.name, Containers: []corev1.Container{{Name: "task", Image: "busybox"}}},
		}
		if err := env.Client.Create(ctx, pod); err != nil {
			t.Fatal(err)
		}
		cleanup(t, pod)
	}

	cases := map[string]struct {
		args     []string
		wantCode int
		wantErr  []string
	}{
		"no pod yet says why": {
			args: []string{"no-pod"}, wantCode: cmdutil.ExitError,
			wantErr: []string{"agenttask no-pod has no pod yet: Pending, Unschedulable: no node can run the pod: 0/3 nodes are available",
				"'kubectl sched task logs no-pod -f' waits for the pod"},
		},
		"the pod is gone": {
			args: []string{"pod-gone"}, wantCode: cmdutil.ExitError,
			wantErr: []string{"pod pod-gone-x1 of agenttask pod-gone is gone", "kubectl sched describe agenttask pod-gone"},
		},
		// The API server asks the pod's kubelet for logs; its node does
		// not exist (a pod that exists is not "gone").
		"the API server cannot give the logs": {
			args: []string{"unscheduled", "--tail", "5"}, wantCode: cmdutil.ExitError,
			wantErr: []string{"cannot read the logs of pod unscheduled-x1 of agenttask unscheduled", "ghost-node"},
		},
		"a simulated node has no logs": {
			args: []string{"on-kwok-node"}, wantCode: cmdutil.ExitNoLogs,
			wantErr: []string{"pod on-kwok-node-x1 runs on simulated node kwok-node (kwok): simulated pods have no logs",
				"kubectl sched describe agenttask on-kwok-node"},
		},
		"a kubelet the API server cannot reach": {
			args: []string{"on-silent-node"}, wantCode: cmdutil.ExitNoLogs,
			wantErr: []string{"the API server cannot reach the kubelet of silent-node to read the logs of pod on-silent-node-x1",
				"kubectl get node silent-node -o wide"},
		},
		"not found": {
			args: []string{"nope"}, wantCode: cmdutil.ExitNotFound,
			wantErr: []string{`agenttasks.sched.kubectl-sched.dev "nope" not found`, "Check the name and the namespace"},
		},
		"bad tail": {
			args: []string{"no-pod", "--tail", "-2"}, wantCode: cmdutil.ExitUsage, wantErr: []string{"--tail must be -1 or more"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			res := run(append([]string{"task", "logs"}, tc.args...)...)
			if res.Code != tc.wantCode {
				t.Errorf("exit %d, want %d; stderr %q", res.Code, tc.wantCode, res.Stderr)
			}
			for _, w := range tc.wantErr {
				if !strings.Contains(res.Stderr, w) {
					t.Errorf("stderr lacks %q:\n%s", w, res.Stderr)
				}
			}
		})
	}
}

func TestLogsCompletesTaskNames(t *testing.T) {
	create(t, "complete-me")
	// The word to complete comes last, so --kubeconfig goes first.
	res := plugintest.RunWithInput("", "__complete", "--kubeconfig", env.Kubeconfig, "task", "logs", "complete-")
	if res.Code != 0 || !strings.HasPrefix(res.Stdout, "complete-me\n") {
		t.Errorf("exit %d, stdout %q, stderr %q", res.Code, res.Stdout, res.Stderr)
	}
}

func TestLogsFollowWaitsForThePod(t *testing.T) {
	create(t, "later", pending("Unschedulable", "no node can run the pod"))
	r := watchtest.Start(env.Kubeconfig, "task", "logs", "later", "-f")
	watchtest.Eventually(t, "the reason there is no pod", func() bool {
		return strings.Contains(r.Stderr(), "agenttask/later has no pod yet: Pending, Unschedulable: no node can run the pod")
	})
	setStatus(t, "later", pending(schedv1.ReasonImagePull, "cannot pull image busybox"))
	watchtest.Eventually(t, "the new reason", func() bool { return strings.Contains(r.Stderr(), "ImagePullFailed: cannot pull image busybox") })
	if r.Exited() {
		t.Fatalf("ended before the task: %s", r.Stderr())
	}
	setStatus(t, "later", ended(schedv1.TaskFailed, schedv1.ReasonCancelled, 0, "cancelled before it started (spec.cancel)", nil))
	if code := r.Wait(t); code != 0 {
		t.Errorf("exit %d: %s", code, r.Stderr())
	}
}

// TestCRDsNotInstalled runs last: it removes the AgentTask CRD, then puts
// it back.
func TestCRDsNotInstalled(t *testing.T) {
	env.RemoveCRD(t, "agenttasks."+schedv1.GroupName, &schedv1.AgentTaskList{})
	for name, args := range map[string][]string{
		"run":  {"task", "run", "x", "--image", "busybox"},
		"logs": {"task", "logs", "x"},
	} {
		t.Run(name, func(t *testing.T) {
			res := run(args...)
			if res.Code != cmdutil.ExitNotInstalled || !strings.Contains(res.Stderr, "the kubectl-sched resources are not installed") && strings.Contains(res.Stderr, "'kubectl sched install'") {
				t.Errorf("exit %d, stderr %q", res.Code, res.Stderr)
			}
		})
	}
}

// run runs kubectl sched against the test API server.
func run(args ...string) plugintest.Result {
	return plugintest.RunWithInput("", watchtest.WithKubeconfig(env.Kubeconfig, args...)...)
}

func exists(name string) bool {
	return env.Client.Get(context.Background(), client.ObjectKey{Namespace: "default", Name: name}, &schedv1.AgentTask{}) == nil
}

func getTask(t *testing.T, name string) *schedv1.AgentTask {
	t.Helper()
	task := &schedv1.AgentTask{}
	if err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: "default", Name: name}, task); err != nil {
		t.Fatal(err)
	}
	return task
}

// create makes a task with the given statuses written in turn.
func create(t *testing.T, name string, steps ...step) {
	t.Helper()
	task := &schedv1.AgentTask{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"}, Spec: schedv1.AgentTaskSpec{Image: "busybox"}}
	if err := env.Client.Create(context.Background(), task); err != nil {
		t.Fatal(err)
	}
	cleanup(t, task)
	for _, s := range steps {
		setStatus(t, name, s)
	}
}

// cleanup deletes obj after the test.
func cleanup(t *testing.T, obj client.Object) {
	t.Cleanup(func() {
		_ = client.IgnoreNotFound(env.Client.Delete(context.Background(), obj, client.GracePeriodSeconds(0)))
	})
}

// cleanupTask deletes the task a command creates after the test.
func cleanupTask(t *testing.T, name string) {
	cleanup(t, &schedv1.AgentTask{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"}})
}

// setStatus writes the status as the operator would.
func setStatus(t *testing.T, name string, s step) {
	t.Helper()
	task := &schedv1.AgentTask{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name}}
	plugintest.UpdateStatus(t, env, task, func(task *schedv1.AgentTask) { s(&task.Status) })
}

func TestCancel(t *testing.T) {
	create(t, "stoppable", running("stoppable-x"))
	res := run("task", "cancel", "stoppable", "--dry-run=server")
	if res.Code != 0 || res.Stdout != "agenttask.sched.kubectl-sched.dev/stoppable cancelled (server dry run)\n" || getTask(t, "stoppable").Spec.Cancel {
		t.Fatalf("dry run: exit %d, stdout %q, stderr %q", res.Code, res.Stdout, res.Stderr)
	}
	res = run("task", "cancel", "stoppable")
	plugintest.Golden(t, "cancel", res.Stdout)
	if res.Code != 0 || !getTask(t, "stoppable").Spec.Cancel {
		t.Fatalf("exit %d, stderr %q; spec.cancel %v", res.Code, res.Stderr, getTask(t, "stoppable").Spec.Cancel)
	}
	if !exists("stoppable") {
		t.Error("cancel deleted the task")
	}

	create(t, "done", ended(schedv1.TaskSucceeded, schedv1.ReasonSucceeded, 0, "", nil))
	res = run("task", "cancel", "done")
	if res.Code != 0 || res.Stdout != "agenttask.sched.kubectl-sched.dev/done already ended (Succeeded): nothing to cancel\n" || getTask(t, "done").Spec.Cancel {
		t.Errorf("finished task: exit %d, stdout %q", res.Code, res.Stdout)
	}

	res = run("task", "cancel", "nope")
	if res.Code != cmdutil.ExitNotFound || !strings.Contains(res.Stderr, `agenttasks.sched.kubectl-sched.dev "nope" not found`) {
		t.Errorf("missing task: exit %d, stderr %q", res.Code, res.Stderr)
	}
	res = run("task", "cancel")
	if res.Code != cmdutil.ExitUsage {
		t.Errorf("no name: exit %d, stderr %q", res.Code, res.Stderr)
	}
}

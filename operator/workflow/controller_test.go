package workflow_test

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	authorizationv1 "k8s.io/api/authorization/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"sigs.k8s.io/controller-runtime/pkg/client"

	. "github.com/kubectl-sched/kubectl-sched/api/builders"
	"github.com/kubectl-sched/kubectl-sched/api/names"
	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
	"github.com/kubectl-sched/kubectl-sched/hack/cluster"
	"github.com/kubectl-sched/kubectl-sched/hack/testenv"
	plugincmd "github.com/kubectl-sched/kubectl-sched/plugin/cmd"
)

var (
	sim *testenv.Sim
	// operator is stopped and started again by TestOperatorRestartMidWorkflow.
	operator *testenv.Operator
)

func TestMain(m *testing.M) {
	testenv.Main(m, testenv.MainOptions{Sim: &sim, Controllers: []string{"agenttask", "workflow"}, Operator: &operator})
}

func namespace(t *testing.T) string { return testenv.Namespace(t, sim.Client) }

// step is a step whose simulated pod prints msg as its termination message
// and exits with code after runSeconds.
func step(image string, code int, msg string, runSeconds int, args ...string) schedv1.AgentTaskSpec {
	return schedv1.AgentTaskSpec{
		Image: image, Args: args,
		PodMetadata: &schedv1.PodMetadata{Annotations: map[string]string{
			cluster.AnnotationExitCode:           fmt.Sprint(code),
			cluster.AnnotationTerminationMessage: msg,
			cluster.AnnotationRunSeconds:         fmt.Sprint(runSeconds),
		}},
	}
}

func waitWorkflow(t *testing.T, ns, name, what string, cond func(*schedv1.Workflow) bool) *schedv1.Workflow {
	t.Helper()
	wf := &schedv1.Workflow{}
	err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, testenv.LongTimeout, true, func(ctx context.Context) (bool, error) {
		if err := sim.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, wf); err != nil {
			return false, client.IgnoreNotFound(err)
		}
		return cond(wf), nil
	})
	if err != nil {
		t.Fatalf("waiting for workflow %s to be %s: %v; last status: %+v", name, what, err, wf.Status)
	}
	return wf
}

func finished(wf *schedv1.Workflow) bool { return wf.Status.Phase.Finished() }

func getTask(t *testing.T, ns, name string) *schedv1.AgentTask {
	t.Helper()
	at := &schedv1.AgentTask{}
	if err := sim.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: name}, at); err != nil {
		t.Fatal(err)
	}
	return at
}

// TestOutputsFlowThroughThreeSteps passes awkward outputs by index and by
// name, and checks they arrive byte for byte.
func TestOutputsFlowThroughThreeSteps(t *testing.T) {
	t.Parallel()
	ns := namespace(t)
	tricky := `say "hi"` + "\nline two — ünïcödé ✓ costs $5 and keeps ${literal} and $${x}"
	fetchOut := fmt.Sprintf(`{"sha":"abc123","note":%q}`, tricky)
	wf := MakeWorkflow("rel", ns).Param("repo", "https://example.com/x.git").
		StepTask("fetch", step("git:1", 0, fetchOut, 0, "clone", "${params.repo}")).
		StepTask("build", step("builder:1", 0, "image=reg/app:abc123", 0, "--sha=${steps.0.output.sha}", "--note=${steps.fetch.output.note}")).
		StepTask("report", func() schedv1.AgentTaskSpec {
			s := step("busybox", 0, "", 0)
			s.Env = []schedv1.EnvVar{{Name: "IMAGE", Value: "${steps.build.output.image}"}, {Name: "LITERAL", Value: "$${steps.0.output.sha}"}}
			return s
		}()).Obj()
	if err := sim.Client.Create(t.Context(), wf); err != nil {
		t.Fatal(err)
	}
	got := waitWorkflow(t, ns, "rel", "finished", finished)
	if got.Status.Phase != schedv1.WorkflowSucceeded || got.Status.Progress != "3/3" {
		t.Fatalf("status %+v, want Succeeded 3/3", got.Status)
	}
	build := getTask(t, ns, names.StepTask("rel", 1, "build"))
	if diff := cmp.Diff([]string{"--sha=abc123", "--note=" + tricky}, build.Spec.Args); diff != "" {
		t.Errorf("build args (-want +got):\n%s", diff)
	}
	report := getTask(t, ns, names.StepTask("rel", 2, "report"))
	wantEnv := []schedv1.EnvVar{{Name: "IMAGE", Value: "reg/app:abc123"}, {Name: "LITERAL", Value: "${steps.0.output.sha}"}}
	if diff := cmp.Diff(wantEnv, report.Spec.Env); diff != "" {
		t.Errorf("report env (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]string{"sha": "abc123", "note": tricky}, got.Status.Steps[0].Outputs); diff != "" {
		t.Errorf("fetch outputs in the workflow status (-want +got):\n%s", diff)
	}
	for i, s := range got.Status.Steps {
		if s.Phase != schedv1.StepSucceeded || s.TaskName == "" || s.StartTime == nil || s.CompletionTime == nil {
			t.Errorf("step %d status %+v: want Succeeded with task and times", i, s)
		}
	}
	// A step's end and the workflow's are events a user can see; the
	// workflow's start, and Pending and Running, which every step passes
	// through, are in the status only. The step tasks send none of their
	// own: the workflow's event tells each step's end. Events are sent
	// after the status write that tells the same.
	seen, ofTasks := map[string]int{}, map[string]int{}
	testenv.Poll(t, testenv.LongTimeout, "the workflow's events", func(ctx context.Context) (bool, error) {
		var evs corev1.EventList
		if err := sim.Client.List(ctx, &evs, client.InNamespace(ns)); err != nil {
			return false, err
		}
		seen, ofTasks = map[string]int{}, map[string]int{}
		for _, e := range evs.Items {
			switch e.InvolvedObject.Kind {
			case "Workflow":
				seen[e.Reason]++
			case "AgentTask":
				ofTasks[e.Reason]++
			}
		}
		return seen["StepSucceeded"] >= 3 && seen[schedv1.ReasonSucceeded] >= 1, nil
	})
	if seen["StepSucceeded"] != 3 || seen[schedv1.ReasonSucceeded] != 1 || len(seen) != 2 {
		t.Errorf("workflow events by reason: %v; want 3 StepSucceeded, 1 Succeeded and nothing else", seen)
	}
	if len(ofTasks) != 0 {
		t.Errorf("step task events by reason: %v; want none (the workflow's tell each step's end)", ofTasks)
	}
}

func TestWorkflowFailures(t *testing.T) {
	t.Parallel()
	cases := map[string]struct {
		wf         func(ns string) *schedv1.Workflow
		wantPhase  schedv1.WorkflowPhase
		wantReason string
		wantSteps  []schedv1.StepPhase
		wantMsg    string
	}{
		"a failing step skips the rest": {
			wf: func(ns string) *schedv1.Workflow {
				return MakeWorkflow("fail", ns).StepTask("a", step("x", 0, "k=v", 0)).StepTask("b", step("x", 2, "boom", 0)).StepTask("c", step("x", 0, "", 0)).Obj()
			},
			wantPhase: schedv1.WorkflowFailed, wantReason: schedv1.ReasonStepFailed,
			wantSteps: []schedv1.StepPhase{schedv1.StepSucceeded, schedv1.StepFailed, schedv1.StepSkipped},
			wantMsg:   "step 1 (b) failed: exited with code 2 after 1 attempt(s): boom",
		},
		"a missing output names the step and key": {
			wf: func(ns string) *schedv1.Workflow {
				return MakeWorkflow("missing", ns).StepTask("a", step("x", 0, "have=1", 0)).StepTask("b", step("x", 0, "", 0, "${steps.a.output.want}")).Obj()
			},
			wantPhase: schedv1.WorkflowFailed, wantReason: schedv1.ReasonMissingOutput,
			wantSteps: []schedv1.StepPhase{schedv1.StepSucceeded, schedv1.StepFailed},
			wantMsg:   `step 1 (b) cannot start: args[0] uses ${steps.a.output.want}, but step 0 ("a") did not output "want"; its outputs are: have`,
		},
		"the workflow timeout stops the running step": {
			wf: func(ns string) *schedv1.Workflow {
				return MakeWorkflow("slow", ns).StepTask("a", step("x", 0, "", 300)).StepTask("b", step("x", 0, "", 0)).Timeout(3 * time.Second).Obj()
			},
			wantPhase: schedv1.WorkflowTimeout, wantReason: schedv1.ReasonDeadlineExceeded,
			wantSteps: []schedv1.StepPhase{schedv1.StepTimeout, schedv1.StepSkipped},
			wantMsg:   "ran past spec.timeout 3s",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ns := namespace(t)
			wf := tc.wf(ns)
			if err := sim.Client.Create(t.Context(), wf); err != nil {
				t.Fatal(err)
			}
			got := waitWorkflow(t, ns, wf.Name, "finished", finished)
			var steps []schedv1.StepPhase
			for _, s := range got.Status.Steps {
				steps = append(steps, s.Phase)
			}
			if got.Status.Phase != tc.wantPhase || got.Status.Reason != tc.wantReason || got.Status.Message != tc.wantMsg {
				t.Errorf("phase %s reason %s message %q; want %s %s %q", got.Status.Phase, got.Status.Reason, got.Status.Message, tc.wantPhase, tc.wantReason, tc.wantMsg)
			}
			if diff := cmp.Diff(tc.wantSteps, steps); diff != "" {
				t.Errorf("step phases (-want +got):\n%s", diff)
			}
		})
	}
	t.Run("a task the server refuses after substitution fails the step", func(t *testing.T) {
		t.Parallel()
		ns := namespace(t)
		// Each arg may hold 4096 bytes: two copies of this output do not fit.
		big := strings.Repeat("x", 2100)
		wf := MakeWorkflow("toolong", ns).StepTask("a", step("x", 0, "big="+big, 0)).
			StepTask("b", step("x", 0, "", 0, "${steps.a.output.big}${steps.a.output.big}")).
			StepTask("c", step("x", 0, "", 0)).Obj()
		if err := sim.Client.Create(t.Context(), wf); err != nil {
			t.Fatal(err)
		}
		got := waitWorkflow(t, ns, "toolong", "finished", finished)
		if got.Status.Phase != schedv1.WorkflowFailed || got.Status.Reason != schedv1.ReasonRejected {
			t.Fatalf("phase %s reason %s, want Failed Rejected; message %q", got.Status.Phase, got.Status.Reason, got.Status.Message)
		}
		for _, want := range []string{"step 1 (b) cannot start", "the API server refused its AgentTask", "spec.args[0]", "4096"} {
			if !strings.Contains(got.Status.Message, want) {
				t.Errorf("message %q lacks %q", got.Status.Message, want)
			}
		}
		if b, c := got.Status.Steps[1], got.Status.Steps[2]; b.Phase != schedv1.StepFailed || b.TaskName != "" || c.Phase != schedv1.StepSkipped {
			t.Errorf("steps b %+v c %+v: want b Failed without a task, c Skipped", b, c)
		}
	})
	t.Run("the timed-out step's task is cancelled", func(t *testing.T) {
		t.Parallel()
		ns := namespace(t)
		wf := MakeWorkflow("slow2", ns).StepTask("a", step("x", 0, "", 300)).Timeout(2 * time.Second).Obj()
		if err := sim.Client.Create(t.Context(), wf); err != nil {
			t.Fatal(err)
		}
		waitWorkflow(t, ns, "slow2", "finished", finished)
		name := names.StepTask("slow2", 0, "a")
		testenv.Poll(t, testenv.LongTimeout, "the step task cancelled", func(ctx context.Context) (bool, error) {
			at := &schedv1.AgentTask{}
			err := sim.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, at)
			return err == nil && at.Spec.Cancel && at.Status.Reason == schedv1.ReasonCancelled, err
		})
	})
}

// TestDeletingARunningWorkflowStopsItsStep: owner references take the step
// task, its Job and its pod with the workflow.
func TestDeletingARunningWorkflowStopsItsStep(t *testing.T) {
	t.Parallel()
	ns := namespace(t)
	wf := MakeWorkflow("doomed", ns).StepTask("a", step("x", 0, "", 300)).Obj()
	if err := sim.Client.Create(t.Context(), wf); err != nil {
		t.Fatal(err)
	}
	waitWorkflow(t, ns, "doomed", "running its step", func(w *schedv1.Workflow) bool {
		return len(w.Status.Steps) == 1 && w.Status.Steps[0].Phase == schedv1.StepRunning
	})
	if err := sim.Client.Delete(t.Context(), wf); err != nil {
		t.Fatal(err)
	}
	testenv.Poll(t, testenv.LongTimeout, "step task, Job and pod gone", func(ctx context.Context) (bool, error) {
		var tasks schedv1.AgentTaskList
		var jobs batchv1.JobList
		var pods corev1.PodList
		for _, l := range []client.ObjectList{&tasks, &jobs, &pods} {
			if err := sim.Client.List(ctx, l, client.InNamespace(ns)); err != nil {
				return false, err
			}
		}
		return len(tasks.Items)+len(jobs.Items)+len(pods.Items) == 0, nil
	})
}

// TestOperatorRestartMidWorkflow stops the operator while a step runs and
// starts a new one: every step's AgentTask and Job is created exactly once,
// and the outputs of the step that finished while no operator ran arrive.
// Not parallel: it replaces the package's operator.
func TestOperatorRestartMidWorkflow(t *testing.T) {
	ns := namespace(t)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	added := countAdds(t, ctx, ns)

	wf := MakeWorkflow("restart", ns).
		StepTask("one", step("x", 0, "a=1", 1)).
		StepTask("two", step("x", 0, "b=${not-expanded}", 4, "${steps.one.output.a}")).
		StepTask("three", step("x", 0, "", 1, "${steps.1.output.b}")).Obj()
	if err := sim.Client.Create(t.Context(), wf); err != nil {
		t.Fatal(err)
	}
	waitWorkflow(t, ns, "restart", "running step two", func(w *schedv1.Workflow) bool {
		return len(w.Status.Steps) == 3 && w.Status.Steps[1].Phase == schedv1.StepRunning
	})
	if err := operator.Stop(); err != nil {
		t.Fatal(err)
	}
	// Step two finishes while no operator runs.
	testenv.Poll(t, testenv.LongTimeout, "step two's pod to finish", func(ctx context.Context) (bool, error) {
		var pods corev1.PodList
		if err := sim.Client.List(ctx, &pods, client.InNamespace(ns), client.MatchingLabels{schedv1.LabelAgentTask: names.StepTask("restart", 1, "two")}); err != nil {
			return false, err
		}
		return len(pods.Items) == 1 && pods.Items[0].Status.Phase == corev1.PodSucceeded, nil
	})
	if err := operator.Start(nil); err != nil {
		t.Fatal(err)
	}
	got := waitWorkflow(t, ns, "restart", "finished", finished)
	if got.Status.Phase != schedv1.WorkflowSucceeded {
		t.Fatalf("status %+v", got.Status)
	}
	three := getTask(t, ns, names.StepTask("restart", 2, "three"))
	if diff := cmp.Diff([]string{"${not-expanded}"}, three.Spec.Args); diff != "" {
		t.Errorf("step three args (-want +got):\n%s", diff)
	}
	cancel()
	counts := added()
	for _, n := range []string{"restart-0-one", "restart-1-two", "restart-2-three"} {
		if counts["AgentTask/"+n] != 1 || counts["Job/"+n] != 1 {
			t.Errorf("%s: created %d AgentTask(s) and %d Job(s), want 1 each (all: %v)", n, counts["AgentTask/"+n], counts["Job/"+n], counts)
		}
	}
}

// countAdds watches AgentTasks and Jobs in ns and counts ADDED events per
// object; the returned func stops and reports.
func countAdds(t *testing.T, ctx context.Context, ns string) func() map[string]int {
	t.Helper()
	var mu sync.Mutex
	counts := map[string]int{}
	wait, err := testenv.WatchEach(ctx, sim.Config, ns, []client.ObjectList{&schedv1.AgentTaskList{}, &batchv1.JobList{}}, func(ev watch.Event) {
		if ev.Type != watch.Added {
			return
		}
		var kind string
		switch ev.Object.(type) {
		case *schedv1.AgentTask:
			kind = "AgentTask"
		case *batchv1.Job:
			kind = "Job"
		}
		mu.Lock()
		defer mu.Unlock()
		counts[kind+"/"+ev.Object.(client.Object).GetName()]++
	})
	if err != nil {
		t.Fatal(err)
	}
	return func() map[string]int {
		wait()
		mu.Lock()
		defer mu.Unlock()
		return counts
	}
}

// sched runs the plugin, as a user would, against the simulated cluster.
func sched(t *testing.T, args ...string) string {
	t.Helper()
	var out bytes.Buffer
	streams := genericiooptions.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &out}
	root := plugincmd.NewRootCommand(streams)
	root.SetArgs(append(args, "--kubeconfig", sim.Kubeconfig))
	if code := plugincmd.Execute(root, streams); code != 0 {
		t.Fatalf("kubectl sched %s: exit %d\n%s", strings.Join(args, " "), code, out.String())
	}
	return out.String()
}

// TestStopKeepsTheRecord: `workflow stop` ends a running workflow in phase
// Cancelled without deleting it: the running step's task is cancelled and
// its pod stopped, later steps are skipped, finished steps keep their outputs.
func TestStopKeepsTheRecord(t *testing.T) {
	t.Parallel()
	ns := namespace(t)
	wf := MakeWorkflow("stoppable", ns).
		StepTask("a", step("x", 0, "sha=abc", 0)).
		StepTask("b", step("x", 0, "", 300)).
		StepTask("c", step("x", 0, "", 0)).Obj()
	if err := sim.Client.Create(t.Context(), wf); err != nil {
		t.Fatal(err)
	}
	waitWorkflow(t, ns, "stoppable", "running step b", func(w *schedv1.Workflow) bool {
		return len(w.Status.Steps) == 3 && w.Status.Steps[1].Phase == schedv1.StepRunning
	})
	out := sched(t, "workflow", "stop", "stoppable", "-n", ns)
	if !strings.HasPrefix(out, "workflow.sched.kubectl-sched.dev/stoppable stopped\n") {
		t.Errorf("stop printed:\n%s", out)
	}
	got := waitWorkflow(t, ns, "stoppable", "finished", finished)
	var phases []string
	for _, s := range got.Status.Steps {
		phases = append(phases, s.Name+"="+string(s.Phase))
	}
	if got.Status.Phase != schedv1.WorkflowCancelled || got.Status.Reason != schedv1.ReasonCancelled ||
		!cmp.Equal(phases, []string{"a=Succeeded", "b=Cancelled", "c=Skipped"}) || got.Status.Steps[0].Outputs["sha"] != "abc" {
		t.Errorf("phase %s (%s), steps %v, outputs of a %v", got.Status.Phase, got.Status.Reason, phases, got.Status.Steps[0].Outputs)
	}
	b := names.StepTask("stoppable", 1, "b")
	testenv.Poll(t, testenv.LongTimeout, "step b's task Cancelled and its pod gone", func(ctx context.Context) (bool, error) {
		at := &schedv1.AgentTask{}
		if err := sim.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: b}, at); err != nil {
			return false, err
		}
		var pods corev1.PodList
		if err := sim.Client.List(ctx, &pods, client.InNamespace(ns), client.MatchingLabels{schedv1.LabelAgentTask: b}); err != nil {
			return false, err
		}
		return at.Status.Phase == schedv1.TaskCancelled && len(pods.Items) == 0, nil
	})
	// The record stays: the workflow and its step tasks.
	getTask(t, ns, names.StepTask("stoppable", 0, "a"))
	if out := sched(t, "workflow", "stop", "stoppable", "-n", ns); !strings.Contains(out, "already ended (Cancelled): nothing to stop") {
		t.Errorf("a second stop printed:\n%s", out)
	}
}

// TestTTLDeletesTheFinishedWorkflow: spec.ttlAfterFinished deletes a
// finished workflow, and the garbage collector its step tasks.
func TestTTLDeletesTheFinishedWorkflow(t *testing.T) {
	t.Parallel()
	ns := namespace(t)
	wf := MakeWorkflow("brief", ns).StepTask("a", step("x", 0, "", 0)).Obj()
	wf.Spec.TTLAfterFinished = &metav1.Duration{Duration: 2 * time.Second}
	if err := sim.Client.Create(t.Context(), wf); err != nil {
		t.Fatal(err)
	}
	done := waitWorkflow(t, ns, "brief", "Succeeded", func(w *schedv1.Workflow) bool { return w.Status.Phase == schedv1.WorkflowSucceeded })
	testenv.Poll(t, testenv.LongTimeout, "the workflow deleted after its TTL", func(ctx context.Context) (bool, error) {
		err := sim.Client.Get(ctx, client.ObjectKeyFromObject(wf), &schedv1.Workflow{})
		return apierrors.IsNotFound(err), client.IgnoreNotFound(err)
	})
	if gone := time.Since(done.Status.CompletionTime.Time); gone < 2*time.Second {
		t.Errorf("deleted %s after it finished, before its TTL of 2s", gone)
	}
	testenv.Poll(t, testenv.LongTimeout, "its step task deleted with it", func(ctx context.Context) (bool, error) {
		var tasks schedv1.AgentTaskList
		err := sim.Client.List(ctx, &tasks, client.InNamespace(ns))
		return err == nil && len(tasks.Items) == 0, err
	})
}

// TestFullQuotaHoldsTheNextStep: a quota on AgentTasks holds the next step
// Waiting, naming the quota, and the workflow goes on once it has room.
func TestFullQuotaHoldsTheNextStep(t *testing.T) {
	t.Parallel()
	ns := namespace(t)
	quota := &corev1.ResourceQuota{
		ObjectMeta: metav1.ObjectMeta{Name: "one-task", Namespace: ns},
		Spec:       corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{"count/agenttasks.sched.kubectl-sched.dev": resource.MustParse("1")}},
	}
	if err := sim.Client.Create(t.Context(), quota); err != nil {
		t.Fatal(err)
	}
	// Admission counts only once the quota controller has, and it learns
	// of new CRDs every 30 s without recounting existing quotas: nudge the
	// quota until it is counted.
	testenv.Poll(t, testenv.LongTimeout, "the quota to be counted", func(ctx context.Context) (bool, error) {
		if err := sim.Client.Get(ctx, client.ObjectKeyFromObject(quota), quota); err != nil {
			return false, err
		}
		if _, counted := quota.Status.Used["count/agenttasks.sched.kubectl-sched.dev"]; counted {
			return true, nil
		}
		// A change to spec.hard makes the controller recount.
		if _, ok := quota.Spec.Hard["count/secrets"]; ok {
			delete(quota.Spec.Hard, "count/secrets")
		} else {
			quota.Spec.Hard["count/secrets"] = resource.MustParse("100")
		}
		_ = sim.Client.Update(ctx, quota)
		return false, nil
	})
	wf := MakeWorkflow("held", ns).StepTask("a", step("x", 0, "k=v", 0)).StepTask("b", step("x", 0, "", 0, "${steps.a.output.k}")).Obj()
	if err := sim.Client.Create(t.Context(), wf); err != nil {
		t.Fatal(err)
	}
	got := waitWorkflow(t, ns, "held", "held by the quota", func(wf *schedv1.Workflow) bool {
		return wf.Status.Reason == schedv1.ReasonQuotaExceeded
	})
	if got.Status.Phase != schedv1.WorkflowRunning || !strings.Contains(got.Status.Message, "one-task") || got.Status.Steps[1].Phase != schedv1.StepWaiting {
		t.Errorf("status %+v: want Running, step b Waiting, message naming quota one-task", got.Status)
	}

	if err := sim.Client.Get(t.Context(), client.ObjectKeyFromObject(quota), quota); err != nil {
		t.Fatal(err)
	}
	quota.Spec.Hard["count/agenttasks.sched.kubectl-sched.dev"] = resource.MustParse("2")
	if err := sim.Client.Update(t.Context(), quota); err != nil {
		t.Fatal(err)
	}
	got = waitWorkflow(t, ns, "held", "finished", finished)
	if got.Status.Phase != schedv1.WorkflowSucceeded {
		t.Errorf("after the quota grew: %+v, want Succeeded", got.Status)
	}
}

// TestBranchesRunSideBySide: a diamond (fetch, then lint and test side by
// side, then ship) on the simulated cluster. Both branches run at once,
// each gets fetch's output, and the join gets both branches' outputs; then
// a failed branch skips the join while the other branch finishes.
func TestBranchesRunSideBySide(t *testing.T) {
	t.Parallel()
	ns := namespace(t)
	wf := MakeWorkflow("dia", ns).
		StepTask("fetch", step("git:1", 0, `{"sha":"abc123"}`, 0)).
		StepTask("lint", step("lint:1", 0, `{"lint":"clean"}`, 2, "${steps.fetch.output.sha}")).DependsOn("fetch").
		StepTask("test", step("test:1", 0, `{"tests":"42 passed"}`, 2, "${steps.fetch.output.sha}")).DependsOn("fetch").
		StepTask("ship", step("ship:1", 0, `{"shipped":"yes"}`, 0, "${steps.lint.output.lint}", "${steps.test.output.tests}", "${steps.fetch.output.sha}")).DependsOn("lint", "test").
		Obj()
	if err := sim.Client.Create(t.Context(), wf); err != nil {
		t.Fatal(err)
	}
	got := waitWorkflow(t, ns, "dia", "finished", finished)
	if got.Status.Phase != schedv1.WorkflowSucceeded || got.Status.Progress != "4/4" {
		t.Fatalf("phase %s progress %s: %s", got.Status.Phase, got.Status.Progress, got.Status.Message)
	}
	lint, test := getTask(t, ns, "dia-1-lint"), getTask(t, ns, "dia-2-test")
	for _, at := range []*schedv1.AgentTask{lint, test} {
		if diff := cmp.Diff([]string{"abc123"}, at.Spec.Args); diff != "" {
			t.Errorf("%s args (-want +got):\n%s", at.Name, diff)
		}
	}
	// Side by side: each branch was created before the other finished.
	if !lint.CreationTimestamp.Before(test.Status.CompletionTime) || !test.CreationTimestamp.Before(lint.Status.CompletionTime) {
		t.Errorf("branches ran one after the other: lint %v–%v, test %v–%v",
			lint.CreationTimestamp, lint.Status.CompletionTime, test.CreationTimestamp, test.Status.CompletionTime)
	}
	if diff := cmp.Diff([]string{"clean", "42 passed", "abc123"}, getTask(t, ns, "dia-3-ship").Spec.Args); diff != "" {
		t.Errorf("join args (-want +got):\n%s", diff)
	}

	failing := MakeWorkflow("dia-fail", ns).
		StepTask("fetch", step("git:1", 0, `{"sha":"abc123"}`, 0)).
		StepTask("lint", step("lint:1", 1, "lint failed", 0)).DependsOn("fetch").
		StepTask("test", step("test:1", 0, `{"tests":"ok"}`, 2)).DependsOn("fetch").
		StepTask("ship", step("ship:1", 0, "", 0)).DependsOn("lint", "test").
		Obj()
	if err := sim.Client.Create(t.Context(), failing); err != nil {
		t.Fatal(err)
	}
	got = waitWorkflow(t, ns, "dia-fail", "finished", finished)
	var phases []string
	for _, s := range got.Status.Steps {
		phases = append(phases, s.Name+"="+string(s.Phase))
	}
	if diff := cmp.Diff([]string{"fetch=Succeeded", "lint=Failed", "test=Succeeded", "ship=Skipped"}, phases); diff != "" {
		t.Errorf("steps (-want +got):\n%s", diff)
	}
	if got.Status.Phase != schedv1.WorkflowFailed || !strings.Contains(got.Status.Message, "step 1 (lint) failed") {
		t.Errorf("phase %s message %q, want Failed naming lint", got.Status.Phase, got.Status.Message)
	}
}

// TestRetryReusesEarlierOutputs: a retry (spec.retryOf) does not run the
// steps before its fromStep again; the steps after get their outputs.
func TestRetryReusesEarlierOutputs(t *testing.T) {
	t.Parallel()
	ns := namespace(t)
	first := MakeWorkflow("first", ns).
		StepTask("fetch", step("git:1", 0, `{"sha":"abc123"}`, 0)).
		StepTask("build", step("build:1", 1, "flaky", 0, "${steps.fetch.output.sha}")).Obj()
	if err := sim.Client.Create(t.Context(), first); err != nil {
		t.Fatal(err)
	}
	waitWorkflow(t, ns, "first", "Failed", func(wf *schedv1.Workflow) bool { return wf.Status.Phase == schedv1.WorkflowFailed })

	// The plugin copies the spec; here the flaky step now passes.
	again := MakeWorkflow("again", ns).
		StepTask("fetch", step("git:1", 0, `{"sha":"other"}`, 0)).
		StepTask("build", step("build:1", 0, `{"image":"app:abc123"}`, 0, "${steps.fetch.output.sha}")).Obj()
	again.Spec.RetryOf = &schedv1.WorkflowRetry{Workflow: "first", FromStep: "build"}
	if err := sim.Client.Create(t.Context(), again); err != nil {
		t.Fatal(err)
	}
	got := waitWorkflow(t, ns, "again", "finished", finished)
	if got.Status.Phase != schedv1.WorkflowSucceeded {
		t.Fatalf("retry %s: %s", got.Status.Phase, got.Status.Message)
	}
	if s := got.Status.Steps[0]; s.Outputs["sha"] != "abc123" || s.TaskName != "" || s.Message != "reused from workflow first" {
		t.Errorf("fetch step %+v, want the first attempt's output, reused without a task", s)
	}
	var tasks schedv1.AgentTaskList
	if err := sim.Client.List(t.Context(), &tasks, client.InNamespace(ns), client.MatchingLabels{schedv1.LabelWorkflow: "again"}); err != nil {
		t.Fatal(err)
	}
	if len(tasks.Items) != 1 || tasks.Items[0].Spec.Args[0] != "abc123" {
		t.Errorf("the retry ran %d tasks (%v), want only build, given the reused sha", len(tasks.Items), tasks.Items)
	}
}

// TestTenantCannotMultiplyAStep: a namespace user's 4 KiB output, repeated
// 195 times in each of 32 args, would render one step to 25 MiB. The
// operator counts before it builds: the step fails with reason TooLarge,
// naming the step, its size and the cap, and no task is created. (At 64
// such args, 12,480 references, the admission policy's CEL cost budget
// refuses the workflow before the operator sees it.)
func TestTenantCannotMultiplyAStep(t *testing.T) {
	t.Parallel()
	ns := namespace(t)
	mallory, err := testenv.BindUser(t.Context(), sim.Client, sim.Config, ns, "mallory", "kubectl-sched-edit",
		authorizationv1.ResourceAttributes{Verb: "create", Group: schedv1.GroupVersion.Group, Resource: "workflows"})
	if err != nil {
		t.Fatal(err)
	}
	ref := "${steps.a.output.big}"
	arg := strings.Repeat(ref, 4096/len(ref))
	big := step("x", 0, "", 0)
	for range 32 {
		big.Args = append(big.Args, arg)
	}
	wf := MakeWorkflow("multiply", ns).StepTask("a", step("x", 0, "big="+strings.Repeat("x", 4000), 0)).StepTask("b", big).Obj()
	if err := mallory.Create(t.Context(), wf); err != nil {
		t.Fatal(err)
	}
	got := waitWorkflow(t, ns, "multiply", "finished", finished)
	if got.Status.Phase != schedv1.WorkflowFailed || got.Status.Reason != schedv1.ReasonTooLarge {
		t.Fatalf("phase %s reason %s, want Failed TooLarge; message %q", got.Status.Phase, got.Status.Reason, got.Status.Message)
	}
	b := got.Status.Steps[1]
	for _, want := range []string{`step 1 ("b") renders to`, "once its references are substituted", "more than the 640.5 KiB (655872 bytes)"} {
		if !strings.Contains(b.Message, want) {
			t.Errorf("step message %q lacks %q", b.Message, want)
		}
	}
	if b.Phase != schedv1.StepFailed || b.TaskName != "" {
		t.Errorf("step b %+v: want Failed without a task", b)
	}
	var tasks schedv1.AgentTaskList
	if err := sim.Client.List(t.Context(), &tasks, client.InNamespace(ns)); err != nil || len(tasks.Items) != 1 {
		t.Errorf("tasks in the namespace: %d (%v), want only step a's", len(tasks.Items), err)
	}
}

// TestStepBacksOffThenFails: a step whose task has retry {limit: 1,
// backoff: 10s, onExitCodes: [3]} is Running with reason BackingOff
// between its attempts, with its task's message; after the retry fails too
// the step fails and the next is skipped.
func TestStepBacksOffThenFails(t *testing.T) {
	t.Parallel()
	ns := namespace(t)
	flaky := step("fetcher:2", 3, "mirror busy", 0)
	flaky.Retry = &schedv1.RetryPolicy{Limit: 1, Backoff: &metav1.Duration{Duration: 10 * time.Second}, OnExitCodes: []int32{3}}
	wf := MakeWorkflow("mirror", ns).StepTask("fetch", flaky).StepTask("build", step("builder:1", 0, "", 0)).Obj()
	if err := sim.Client.Create(t.Context(), wf); err != nil {
		t.Fatal(err)
	}
	waiting := waitWorkflow(t, ns, "mirror", "backing off", func(wf *schedv1.Workflow) bool {
		return len(wf.Status.Steps) > 0 && wf.Status.Steps[0].Reason == schedv1.ReasonBackingOff
	})
	if s := waiting.Status.Steps[0]; s.Phase != schedv1.StepRunning || s.Message == "" || waiting.Status.Phase != schedv1.WorkflowRunning {
		t.Errorf("backing off: workflow %s, step %+v; want both Running, with the task's message", waiting.Status.Phase, s)
	}
	got := waitWorkflow(t, ns, "mirror", "finished", finished)
	fetch, build := got.Status.Steps[0], got.Status.Steps[1]
	if got.Status.Phase != schedv1.WorkflowFailed || fetch.Phase != schedv1.StepFailed || fetch.Reason != "" || build.Phase != schedv1.StepSkipped ||
		fetch.Message != "exited with code 3 after 2 attempt(s): mirror busy" {
		t.Errorf("workflow %s, steps %+v", got.Status.Phase, got.Status.Steps)
	}
	if task := getTask(t, ns, names.StepTask("mirror", 0, "fetch")); task.Status.Attempts != 2 || task.Spec.Retry == nil {
		t.Errorf("the step's task: attempts %d, retry %+v; want 2 attempts by the step's retry", task.Status.Attempts, task.Spec.Retry)
	}
}

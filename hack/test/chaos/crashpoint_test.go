package chaos

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	. "github.com/kubectl-sched/kubectl-sched/api/builders"
	"github.com/kubectl-sched/kubectl-sched/api/names"
	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
	"github.com/kubectl-sched/kubectl-sched/hack/cluster"
	"github.com/kubectl-sched/kubectl-sched/hack/tour"
	"github.com/kubectl-sched/kubectl-sched/operator/crashpoint"
)

// TestKillsBetweenWrites kills the operator exactly where a random SIGKILL
// lands only by luck: after it created a Job and before the task's status
// records it, after it created a step's AgentTask and before that task's
// Job, and after it created a step's AgentTask and before the Workflow's
// status records it. The operator sends itself SIGKILL there
// (operator/crashpoint); the next one must neither create a second Job or
// step task nor lose an output.
func TestKillsBetweenWrites(t *testing.T) {
	const workflows, steps, tasks = 2, 8, 6
	s := startSim(t)
	e := s.env(t, "op", []string{"--leader-elect=false"})
	t.Cleanup(func() { _ = e.StopOperator() })
	cl, ctx := s.client, context.Background()
	const ns = "default"
	createLoad(t, cl, ns, workflows, steps, tasks)

	// Each point twice: on its first hit, and on a later one while other
	// objects are half done. Enough steps remain for each: 16 step tasks
	// and 22 Jobs, created a few at a time. Since the Workflow controller
	// creates a step's Job with its task, each kill at a step task also
	// moves its Jobs along: with 5 steps a workflow, both had ended before
	// the last point (agenttask-job-created:2) was reached.
	for _, point := range []string{crashpoint.JobCreated + ":1", crashpoint.StepTasksCreated + ":1", crashpoint.StepTaskCreated + ":1",
		crashpoint.StepTasksCreated + ":2", crashpoint.StepTaskCreated + ":2", crashpoint.JobCreated + ":2"} {
		e.OperatorEnv = []string{crashpoint.EnvVar + "=" + point}
		if err := e.StartOperator(ctx, false); err != nil {
			t.Fatalf("start with crash point %s: %v", point, err)
		}
		st, err := e.WaitOperatorExit(2 * time.Minute)
		if err != nil {
			t.Fatalf("crash point %s was not reached: %v", point, err)
		}
		ws, ok := st.Sys().(syscall.WaitStatus)
		if !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
			t.Fatalf("crash point %s: the operator ended with %v, want SIGKILL", point, st)
		}
		t.Logf("killed at %s", point)
	}
	e.OperatorEnv = nil
	if err := e.StartOperator(ctx, false); err != nil {
		t.Fatal(err)
	}
	checkRanOnce(t, cl, ns, workflows, steps, tasks)
	t.Logf("6 aimed kills: %d workflows of %d steps and %d tasks finished, each step and task once", workflows, steps, tasks)
}

// TestKillWhileAForEachFansOut kills the operator three times while a
// forEach step fans out over 30 items, 10 at a time: each time right
// after it created a batch of item tasks and before the Workflow's status
// records them (crash point workflow-step-tasks-created). The operator that
// follows must take the items it finds for started: no item runs twice
// (one AgentTask, one Job and one pod each, one attempt), none is left
// out, and every item's output reaches the gathered array, in item order,
// and the step after the loop.
func TestKillWhileAForEachFansOut(t *testing.T) {
	const n = 30
	s := startSim(t)
	e := s.env(t, "op", []string{"--leader-elect=false"})
	t.Cleanup(func() { _ = e.StopOperator() })
	cl, ctx := s.client, context.Background()
	const ns = "default"
	items := make([]string, n)
	want := make([]string, n)
	for k := range items {
		items[k] = fmt.Sprintf("i%02d", k)
		want[k] = fmt.Sprintf("out-%s ✓", items[k])
	}
	wf := MakeWorkflow("fan", ns).
		StepTask("fan", schedv1.AgentTaskSpec{Image: "x", Args: []string{"${item}"},
			Env:         []schedv1.EnvVar{{Name: cluster.EnvTerminationMessage, Value: "v=out-${item} ✓"}},
			PodMetadata: &schedv1.PodMetadata{Annotations: sim("", 1)}}).ForEach(items, "", 10).
		StepTask("join", schedv1.AgentTaskSpec{Image: "x", Args: []string{"${steps.fan.output.v}"},
			PodMetadata: &schedv1.PodMetadata{Annotations: sim("", 0)}}).Obj()
	if err := cl.Create(ctx, wf); err != nil {
		t.Fatal(err)
	}
	// The first create of each operator: the first batch, then in each
	// of the next two the first batch it makes after it took over the
	// items it found.
	for _, point := range []string{crashpoint.StepTasksCreated + ":1", crashpoint.StepTasksCreated + ":1", crashpoint.StepTasksCreated + ":1"} {
		killAt(t, e, point)
		var tasks schedv1.AgentTaskList
		if err := cl.List(ctx, &tasks, client.InNamespace(ns), client.HasLabels{schedv1.LabelWorkflowItem}); err != nil {
			t.Fatal(err)
		}
		t.Logf("killed at %s with %d item tasks created", point, len(tasks.Items))
	}
	if err := e.StartOperator(ctx, false); err != nil {
		t.Fatal(err)
	}
	got := &schedv1.Workflow{}
	err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, 4*time.Minute, true, func(ctx context.Context) (bool, error) {
		if err := cl.Get(ctx, client.ObjectKeyFromObject(wf), got); err != nil {
			return false, nil
		}
		return got.Status.Phase.Finished(), nil
	})
	if err != nil || got.Status.Phase != schedv1.WorkflowSucceeded {
		t.Fatalf("workflow %s (%v): %s", got.Status.Phase, err, got.Status.Message)
	}

	var tasks schedv1.AgentTaskList
	var jobs batchv1.JobList
	var pods corev1.PodList
	for _, l := range []client.ObjectList{&tasks, &jobs, &pods} {
		if err := cl.List(ctx, l, client.InNamespace(ns), client.MatchingLabels{schedv1.LabelWorkflow: "fan", schedv1.LabelWorkflowStep: "0"}); err != nil {
			t.Fatal(err)
		}
	}
	tasksOf, jobsOf, podsOf := map[string]int{}, map[string]int{}, map[string]int{}
	for _, at := range tasks.Items {
		tasksOf[at.Labels[schedv1.LabelWorkflowItem]]++
		if at.Status.Attempts != 1 || at.Status.Phase != schedv1.TaskSucceeded {
			t.Errorf("item task %s: %s after %d attempts", at.Name, at.Status.Phase, at.Status.Attempts)
		}
	}
	for _, j := range jobs.Items {
		jobsOf[j.Labels[schedv1.LabelWorkflowItem]]++
	}
	for _, p := range pods.Items {
		podsOf[p.Labels[schedv1.LabelWorkflowItem]]++
	}
	for k := range n {
		if l := strconv.Itoa(k); tasksOf[l] != 1 || jobsOf[l] != 1 || podsOf[l] != 1 {
			t.Errorf("item %d ran %d AgentTasks, %d Jobs and %d pods, want one of each", k, tasksOf[l], jobsOf[l], podsOf[l])
		}
	}
	if len(tasks.Items) != n {
		t.Errorf("%d item tasks, want %d", len(tasks.Items), n)
	}
	gathered, _ := json.Marshal(want)
	if v := got.Status.Steps[0].Outputs["v"]; v != string(gathered) {
		t.Errorf("gathered output %s, want %s", v, gathered)
	}
	join := &schedv1.AgentTask{}
	if err := cl.Get(ctx, client.ObjectKey{Namespace: ns, Name: names.StepTask("fan", 1, "join")}, join); err != nil {
		t.Fatal(err)
	}
	if len(join.Spec.Args) != 1 || join.Spec.Args[0] != string(gathered) {
		t.Errorf("join's args %q, want the gathered array", join.Spec.Args)
	}
	t.Logf("3 aimed kills while %d items fanned out: each ran once, every output gathered", n)
}

// TestKillAfterACronRunIsCreated kills the operator right after the
// CronWorkflow controller created a run and before the CronWorkflow's
// status records it (crash point cronworkflow-run-created), with a run due
// every minute. The next operator must find that run, record it and make no
// second one for the same minute; the runs go on each minute after. Up to
// two minutes of waiting for schedule times: make test-faults runs it.
func TestKillAfterACronRunIsCreated(t *testing.T) {
	longFault(t)
	s := startSim(t)
	e := s.env(t, "op", []string{"--leader-elect=false"})
	t.Cleanup(func() { _ = e.StopOperator() })
	cl, ctx := s.client, context.Background()
	cw := MakeCronWorkflow("minutely", "default", "* * * * *").Step("a", "busybox").Obj()
	if err := cl.Create(ctx, cw); err != nil {
		t.Fatal(err)
	}

	e.OperatorEnv = []string{crashpoint.EnvVar + "=" + crashpoint.CronRunCreated}
	if err := e.StartOperator(ctx, false); err != nil {
		t.Fatal(err)
	}
	st, err := e.WaitOperatorExit(2 * time.Minute)
	if err != nil {
		t.Fatalf("the crash point was not reached: %v", err)
	}
	if ws, ok := st.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("the operator ended with %v, want SIGKILL", st)
	}
	runs := func() []schedv1.Workflow {
		var list schedv1.WorkflowList
		if err := cl.List(ctx, &list, client.InNamespace("default")); err != nil {
			t.Fatal(err)
		}
		return list.Items
	}
	first := runs()
	if len(first) != 1 || !strings.HasPrefix(first[0].Name, "minutely-") {
		t.Fatalf("runs when killed: %v, want one", first)
	}
	if err := cl.Get(ctx, client.ObjectKeyFromObject(cw), cw); err != nil || cw.Status.LastScheduleTime != nil {
		t.Fatalf("the status recorded the run before the kill (%v): %+v", err, cw.Status)
	}

	e.OperatorEnv = nil
	if err := e.StartOperator(ctx, false); err != nil {
		t.Fatal(err)
	}
	// Recorded, and the next minute's run made too.
	err = wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		if err := cl.Get(ctx, client.ObjectKeyFromObject(cw), cw); err != nil {
			return false, nil
		}
		return cw.Status.LastScheduleTime != nil && len(runs()) >= 2, nil
	})
	if err != nil {
		t.Fatalf("after the restart: %v; status %+v, runs %d", err, cw.Status, len(runs()))
	}
	seen := map[string]bool{}
	for _, r := range runs() {
		at := r.Annotations[schedv1.AnnotationScheduledTime]
		if seen[at] {
			t.Errorf("two runs for %s", at)
		}
		seen[at] = true
		if r.Name == first[0].Name && r.UID != first[0].UID {
			t.Errorf("the run made before the kill, %s, was made again", r.Name)
		}
	}
	t.Logf("killed after creating %s; the next operator recorded it and made %v", first[0].Name, seen)
}

// TestRevisionKilledBetweenWrites kills the operator after it recorded an
// app's revision (its ControllerRevision created) and before the app's
// status says so, on the app's first revision and on a new image's: the
// operator that follows adopts the revision it finds instead of making a
// second one.
func TestRevisionKilledBetweenWrites(t *testing.T) {
	s := startSim(t)
	e := s.env(t, "op", []string{"--leader-elect=false"})
	t.Cleanup(func() { _ = e.StopOperator() })
	cl, ctx := s.client, context.Background()
	const ns = "default"
	if err := cl.Create(ctx, MakeUserDeployment("shop", ns).Service("web", "nginx:1.25", 80, schedv1.ExposureInternal).Obj()); err != nil {
		t.Fatal(err)
	}
	for i, image := range []string{"", "nginx:1.27"} {
		n := int64(i + 1)
		if image != "" {
			patch := client.RawPatch(types.JSONPatchType, []byte(`[{"op":"replace","path":"/spec/services/0/image","value":"`+image+`"}]`))
			if err := cl.Patch(ctx, &schedv1.UserDeployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "shop"}}, patch); err != nil {
				t.Fatal(err)
			}
		}
		killAt(t, e, crashpoint.RevisionCreated+":1")
		if err := e.StartOperator(ctx, false); err != nil {
			t.Fatal(err)
		}
		var last string
		err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
			ud := &schedv1.UserDeployment{}
			var revs appsv1.ControllerRevisionList
			if err := cl.Get(ctx, types.NamespacedName{Namespace: ns, Name: "shop"}, ud); err != nil {
				return false, err
			}
			if err := cl.List(ctx, &revs, client.InNamespace(ns), client.HasLabels{schedv1.LabelRevisionHash}); err != nil {
				return false, err
			}
			var names []string
			for _, r := range revs.Items {
				names = append(names, r.Name)
			}
			slices.Sort(names)
			last = fmt.Sprintf("phase %s, current revision %d, revisions %v", ud.Status.Phase, ud.Status.CurrentRevision, names)
			want := []string{"shop.v1", "shop.v2"}[:n]
			return ud.Status.Phase == schedv1.UserDeploymentRunning && ud.Status.CurrentRevision == n && slices.Equal(names, want), nil
		})
		if err != nil {
			t.Fatalf("after the kill at revision %d: %s", n, last)
		}
		if err := e.StopOperator(); err != nil {
			t.Fatal(err)
		}
		t.Logf("killed after recording revision %d; the next operator adopted it: %s", n, last)
	}
}

// killAt starts the operator to be killed at point, and waits for it.
func killAt(t *testing.T, e *tour.Env, point string) {
	t.Helper()
	e.OperatorEnv = []string{crashpoint.EnvVar + "=" + point}
	defer func() { e.OperatorEnv = nil }()
	// The point may be reached before the operator is ready: WaitOperatorExit
	// then says how it ended.
	if err := e.StartOperator(context.Background(), false); err != nil && !errors.Is(err, tour.ErrOperatorExited) {
		t.Fatalf("start with crash point %s: %v", point, err)
	}
	st, err := e.WaitOperatorExit(2 * time.Minute)
	if err != nil {
		t.Fatalf("crash point %s was not reached: %v", point, err)
	}
	if ws, ok := st.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("crash point %s: the operator ended with %v, want SIGKILL", point, st)
	}
}

// TestKilledAroundABackoff kills the operator right after it held a task's
// Job for a backoff (crash point agenttask-job-held) and right after it
// resumed it (agenttask-job-resumed), each time before the task's status
// says so. The operators that follow find the same wait in the failed
// pod, resume the Job once, no sooner than the backoff says, and run each
// attempt once.
func TestKilledAroundABackoff(t *testing.T) {
	s := startSim(t)
	e := s.env(t, "op", []string{"--leader-elect=false"})
	t.Cleanup(func() { _ = e.StopOperator() })
	cl, ctx := s.client, context.Background()
	const ns, name, backoff = "default", "flaky", 10 * time.Second
	task := MakeAgentTask(name, ns).Image("busybox:1.36").Args("run").Retry(1, backoff, 3).
		PodAnnotation(cluster.AnnotationExitCode, "3").PodAnnotation(cluster.AnnotationTerminationMessage, "flaky").Obj()
	if err := cl.Create(ctx, task); err != nil {
		t.Fatal(err)
	}
	key := types.NamespacedName{Namespace: ns, Name: name}
	job := &batchv1.Job{}

	killAt(t, e, crashpoint.JobHeld+":1")
	if err := cl.Get(ctx, key, job); err != nil || !ptr.Deref(job.Spec.Suspend, false) {
		t.Fatalf("killed after the hold, the Job is not held (%v): suspend %v", err, job.Spec.Suspend)
	}
	if err := cl.Get(ctx, key, task); err != nil || task.Status.Reason == schedv1.ReasonBackingOff {
		t.Fatalf("the status recorded the backoff before the kill (%v): %+v", err, task.Status)
	}

	killAt(t, e, crashpoint.JobResumed+":1")
	if err := cl.Get(ctx, key, job); err != nil || ptr.Deref(job.Spec.Suspend, false) {
		t.Fatalf("killed after the resume, the Job is still held (%v)", err)
	}

	if err := e.StartOperator(ctx, false); err != nil {
		t.Fatal(err)
	}
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		err := cl.Get(ctx, key, task)
		return err == nil && task.Status.Phase.Finished(), nil
	})
	if err != nil || task.Status.Phase != schedv1.TaskFailed || task.Status.Attempts != 2 || ptr.Deref(task.Status.ExitCode, -1) != 3 {
		t.Fatalf("after the kills (%v): %+v, want Failed after 2 attempts with exit code 3", err, task.Status)
	}
	var pods corev1.PodList
	if err := cl.List(ctx, &pods, client.InNamespace(ns), client.MatchingLabels{schedv1.LabelAgentTask: name}); err != nil {
		t.Fatal(err)
	}
	if len(pods.Items) != 2 {
		t.Fatalf("%d pods, want one per attempt", len(pods.Items))
	}
	slices.SortFunc(pods.Items, func(a, b corev1.Pod) int { return a.CreationTimestamp.Compare(b.CreationTimestamp.Time) })
	ended := pods.Items[0].Status.ContainerStatuses[0].State.Terminated.FinishedAt.Add(backoff)
	if started := pods.Items[1].CreationTimestamp.Time; started.Before(ended) {
		t.Errorf("the second attempt's pod was created %s, before the first's end plus %s, %s", started, backoff, ended)
	}
	var evs corev1.EventList
	if err := cl.List(ctx, &evs, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	counts := map[string]int32{}
	for _, ev := range evs.Items {
		if ev.InvolvedObject.Kind == "Job" && ev.InvolvedObject.Name == name {
			counts[ev.Reason] += max(ev.Count, 1)
		}
	}
	if counts["Suspended"] != 1 || counts["Resumed"] != 1 {
		t.Errorf("the Job controller saw the Job suspended %d and resumed %d times, want once each", counts["Suspended"], counts["Resumed"])
	}
	t.Logf("killed after the hold and after the resume: 2 attempts, the second's pod created %s, %s after the first ended",
		pods.Items[1].CreationTimestamp.Format(time.TimeOnly), pods.Items[1].CreationTimestamp.Sub(ended.Add(-backoff)))
}

// TestKilledAfterLogsKept kills the operator right after the status write
// that keeps a pod's log (crash point agenttask-logs-kept), before the pod
// is released. The pod is still held, the record is there; the operator
// that follows releases the pod and leaves the record as it was: the log
// was read before the pod could go, and is not read again.
func TestKilledAfterLogsKept(t *testing.T) {
	s := startSim(t)
	e := s.env(t, "op", []string{"--leader-elect=false"})
	t.Cleanup(func() { _ = e.StopOperator() })
	cl, ctx := s.client, context.Background()
	const ns, name = "default", "kept-log"
	task := MakeAgentTask(name, ns).Image("busybox:1.36").Args("run").
		PodAnnotation(cluster.AnnotationExitCode, "4").Obj()
	if err := cl.Create(ctx, task); err != nil {
		t.Fatal(err)
	}
	key := types.NamespacedName{Namespace: ns, Name: name}

	killAt(t, e, crashpoint.LogsKept+":1")
	if err := cl.Get(ctx, key, task); err != nil || len(task.Status.Logs) != 1 || !task.Status.Phase.Finished() {
		t.Fatalf("killed after the write, the status does not keep one pod's log (%v): %+v", err, task.Status)
	}
	kept := task.Status.Logs[0]
	pod := &corev1.Pod{}
	if err := cl.Get(ctx, types.NamespacedName{Namespace: ns, Name: kept.Pod}, pod); err != nil || !slices.Contains(pod.Finalizers, schedv1.FinalizerOutputs) {
		t.Fatalf("killed before the release, pod %s is not held (%v): %v", kept.Pod, err, pod.Finalizers)
	}

	if err := e.StartOperator(ctx, false); err != nil {
		t.Fatal(err)
	}
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		err := cl.Get(ctx, types.NamespacedName{Namespace: ns, Name: kept.Pod}, pod)
		return err == nil && !slices.Contains(pod.Finalizers, schedv1.FinalizerOutputs), client.IgnoreNotFound(err)
	})
	if err != nil {
		t.Fatalf("the next operator did not release pod %s: %v", kept.Pod, err)
	}
	if err := cl.Get(ctx, key, task); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]schedv1.KeptLog{kept}, task.Status.Logs); diff != "" {
		t.Errorf("the record changed after the restart (-before +after):\n%s", diff)
	}
	t.Logf("killed after the write: pod %s released by the next operator, its record %s (%s)", kept.Pod, kept.Reason, kept.Message)
}

// TestKilledAfterFileOutputsRead kills the operator after it read a
// succeeded task's file outputs and before the status that holds them
// (crash point agenttask-file-outputs-read). Nothing was written and the
// pod is still held; the operator that follows reads the sidecar's log
// again and writes the task's end once. A simulated node serves no logs,
// so that end is the failure that says so: what is checked is that the
// restart loses nothing and the read lands in one status write.
func TestKilledAfterFileOutputsRead(t *testing.T) {
	s := startSim(t)
	e := s.env(t, "op", []string{"--leader-elect=false", "--tools-image=busybox:1.36"})
	t.Cleanup(func() { _ = e.StopOperator() })
	cl, ctx := s.client, context.Background()
	const ns, name = "default", "file-outputs"
	task := MakeAgentTask(name, ns).Image("busybox:1.36").Args("run").Obj()
	task.Spec.Outputs = &schedv1.TaskOutputs{FromDir: "/out"}
	if err := cl.Create(ctx, task); err != nil {
		t.Fatal(err)
	}
	key := types.NamespacedName{Namespace: ns, Name: name}

	killAt(t, e, crashpoint.FileOutputsRead+":1")
	if err := cl.Get(ctx, key, task); err != nil || task.Status.Phase.Finished() {
		t.Fatalf("killed before the write, the task has finished (%v): %+v", err, task.Status)
	}
	pods := &corev1.PodList{}
	if err := cl.List(ctx, pods, client.InNamespace(ns), client.MatchingLabels{schedv1.LabelAgentTask: name}); err != nil || len(pods.Items) != 1 {
		t.Fatalf("pods of the task: %v, %d", err, len(pods.Items))
	}
	pod := pods.Items[0]
	if !slices.Contains(pod.Finalizers, schedv1.FinalizerOutputs) {
		t.Fatalf("killed before the write, pod %s is not held: %v", pod.Name, pod.Finalizers)
	}
	if i := slices.IndexFunc(pod.Spec.InitContainers, func(c corev1.Container) bool { return c.Name == "outputs" }); i < 0 || pod.Spec.InitContainers[i].Image != "busybox:1.36" {
		t.Fatalf("pod %s has no outputs sidecar of the tools image: %+v", pod.Name, pod.Spec.InitContainers)
	}

	if err := e.StartOperator(ctx, false); err != nil {
		t.Fatal(err)
	}
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		if err := cl.Get(ctx, key, task); err != nil {
			return false, err
		}
		return task.Status.Phase.Finished(), nil
	})
	if err != nil {
		t.Fatalf("the next operator did not finish the task: %v: %+v", err, task.Status)
	}
	if task.Status.Phase != schedv1.TaskFailed || task.Status.Reason != schedv1.ReasonOutputsInvalid ||
		!strings.Contains(task.Status.Message, "outputs sidecar's log of pod "+pod.Name+" could not be read") {
		t.Errorf("status %s %s %q; want the failure that names the unreadable sidecar log", task.Status.Phase, task.Status.Reason, task.Status.Message)
	}
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		err := cl.Get(ctx, types.NamespacedName{Namespace: ns, Name: pod.Name}, &pod)
		return err == nil && !slices.Contains(pod.Finalizers, schedv1.FinalizerOutputs), client.IgnoreNotFound(err)
	})
	if err != nil {
		t.Fatalf("the next operator did not release pod %s: %v", pod.Name, err)
	}
	t.Logf("killed after the read: the next operator read again and finished the task once: %s", task.Status.Message)
}

package agenttask_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	. "github.com/kubectl-sched/kubectl-sched/api/builders"
	"github.com/kubectl-sched/kubectl-sched/api/names"
	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
	"github.com/kubectl-sched/kubectl-sched/hack/cluster"
	"github.com/kubectl-sched/kubectl-sched/hack/testenv"
)

// TestRetryBacksOffThenSucceeds: a task with retry {limit: 2, backoff: 10s,
// onExitCodes: [3, 75]} whose first two attempts exit 3 and whose third
// succeeds. Each attempt's pod waits (as for a missing Secret) until the
// test says how it ends. Between attempts the task is Running, BackingOff,
// and the operator holds the Job: the next pod is created no sooner than
// the end of the failed one plus 10s, then 20s (recorded times compared,
// not the test's clock).
func TestRetryBacksOffThenSucceeds(t *testing.T) {
	t.Parallel()
	ns := namespace(t)
	create(t, MakeAgentTask("flaky", ns).Image("registry.example/agent:1").Args("run").
		Retry(2, 10*time.Second, 3, 75).PodAnnotation(cluster.AnnotationConfigError, "held by the test").Obj())

	ends := []struct{ code, msg string }{{"3", "try again"}, {"3", "try again"}, {"0", "k=v"}}
	var waits []*metav1.Time
	// Each attempt's pod as it ended: the first goes once the second
	// has failed (the task keeps its latest pod and the latest failed
	// attempt before it).
	var pods []corev1.Pod
	for i, end := range ends {
		pod := nthPod(t, ns, "flaky", i+1)
		release(t, pod, end.code, end.msg)
		if end.code == "0" {
			pods = append(pods, pod)
			break
		}
		got := waitTask(t, ns, "flaky", fmt.Sprintf("backing off after attempt %d", i+1), func(a *schedv1.AgentTask) bool {
			return a.Status.Reason == schedv1.ReasonBackingOff && a.Status.Attempts == int32(i+1)
		})
		if got.Status.Phase != schedv1.TaskRunning || got.Status.NextAttemptTime == nil || ptr.Deref(got.Status.ExitCode, -1) != 3 ||
			!strings.HasPrefix(got.Status.Message, fmt.Sprintf("attempt %d of 3 failed (exit code 3); the next starts at ", i+1)) {
			t.Errorf("backing off after attempt %d: %+v", i+1, got.Status)
		}
		waitHeld(t, ns, "flaky")
		waits = append(waits, got.Status.NextAttemptTime)
		if err := sim.Client.Get(t.Context(), client.ObjectKeyFromObject(&pod), &pod); err != nil {
			t.Fatal(err)
		}
		pods = append(pods, pod)
	}

	got := waitTask(t, ns, "flaky", "finished", finished)
	if got.Status.Phase != schedv1.TaskSucceeded || ptr.Deref(got.Status.ExitCode, -1) != 0 || got.Status.Attempts != 3 ||
		got.Status.Outputs["k"] != "v" || got.Status.NextAttemptTime != nil {
		t.Errorf("status %+v, want Succeeded on attempt 3 with k=v", got.Status)
	}
	// The first attempt's pod went; the second (the latest failure) and
	// the third stay.
	if p := got.Status.Pruned; p == nil || !slices.Equal(p.Pods, []string{pods[0].Name}) || p.Attempts != 1 || p.Failed != 1 {
		t.Errorf("pruned %+v, want the first attempt's pod %s", got.Status.Pruned, pods[0].Name)
	}
	waitPods(t, ns, "flaky", "the first attempt's gone", func(left []corev1.Pod) bool {
		return len(left) == 2 && left[0].Name != pods[0].Name && left[1].Name != pods[0].Name
	})
	for k := 1; k < len(pods); k++ {
		ended := finishedAt(pods[k-1])
		backoff := 10 * time.Second << (k - 1)
		if !waits[k-1].Time.Equal(ended.Add(backoff)) {
			t.Errorf("attempt %d ended %s: next attempt announced for %s, want %s later", k, ended, waits[k-1], backoff)
		}
		if started := pods[k].CreationTimestamp.Time; started.Before(ended.Add(backoff)) {
			t.Errorf("attempt %d's pod created %s, before attempt %d's end %s plus %s", k+1, started, k, ended, backoff)
		}
		t.Logf("attempt %d ended %s, attempt %d's pod created %s (backoff %s)", k, ended.Format(time.TimeOnly), k+1, pods[k].CreationTimestamp.Format(time.TimeOnly), backoff)
	}
	// One event per retry from the task; the Job was held and resumed once
	// for each.
	if n := eventCount(t, ns, "AgentTask", "flaky", schedv1.ReasonBackingOff); n != 2 {
		t.Errorf("%d BackingOff events, want 2", n)
	}
	for _, reason := range []string{"Suspended", "Resumed"} {
		if n := eventCount(t, ns, "Job", names.Job("flaky"), reason); n != 2 {
			t.Errorf("the Job controller reported %d %s events, want 2", n, reason)
		}
	}
}

// TestTimeoutCountsTheBackoff: spec.timeout runs from the task's start
// through its waits. Resuming a Job restarts its activeDeadlineSeconds, so
// the operator resumes it with what is left of the timeout: the Job
// controller's deadline (its startTime, reset by the resume, plus
// activeDeadlineSeconds) is the task's, not a new one. And a timeout that
// runs out during a wait ends the task, by the operator, since the Job
// controller does not count a suspended Job's time.
func TestTimeoutCountsTheBackoff(t *testing.T) {
	t.Parallel()
	ns := namespace(t)
	const timeout, backoff = 10 * time.Minute, 10 * time.Second
	create(t, MakeAgentTask("resumed", ns).Image("registry.example/agent:1").Args("run").Timeout(timeout).
		Retry(1, backoff).PodAnnotation(cluster.AnnotationConfigError, "held by the test").Obj())
	create(t, task("expires", ns, 3, "flaky").Timeout(20*time.Second).Retry(1, time.Minute).Obj())

	release(t, nthPod(t, ns, "resumed", 1), "3", "")
	nthPod(t, ns, "resumed", 2) // made by the Job controller once resumed
	job := &batchv1.Job{}
	if err := sim.Client.Get(t.Context(), types.NamespacedName{Namespace: ns, Name: names.Job("resumed")}, job); err != nil {
		t.Fatal(err)
	}
	ads, start := ptr.Deref(job.Spec.ActiveDeadlineSeconds, 0), job.Status.StartTime
	end := job.CreationTimestamp.Add(timeout)
	switch {
	case ads > int64((timeout - backoff).Seconds()):
		t.Errorf("activeDeadlineSeconds %d after the resume: the %s before it were not taken from the %s timeout", ads, backoff, timeout)
	case start == nil || start.Add(time.Duration(ads)*time.Second).Before(end.Add(-time.Second)):
		t.Errorf("resumed at %v with activeDeadlineSeconds %d: the Job would stop before the task's timeout runs out at %s", start, ads, end)
	default:
		t.Logf("job created %s, resumed %s with %ds left of %s", job.CreationTimestamp.Format(time.TimeOnly), start.Format(time.TimeOnly), ads, timeout)
	}

	got := waitTask(t, ns, "expires", "finished", finished)
	if got.Status.Phase != schedv1.TaskTimeout || got.Status.Attempts != 1 ||
		got.Status.Message != "ran past spec.timeout 20s while it waited to retry: attempt 1 of 2 failed (exit code 3)" {
		t.Errorf("status %+v, want Timeout during the backoff", got.Status)
	}
	expiring := &batchv1.Job{}
	if err := sim.Client.Get(t.Context(), types.NamespacedName{Namespace: ns, Name: names.Job("expires")}, expiring); err != nil {
		t.Fatal(err)
	}
	if end := expiring.CreationTimestamp.Add(20 * time.Second); got.Status.CompletionTime == nil || got.Status.CompletionTime.Time.Before(end) {
		t.Errorf("ended %v, before its timeout ran out at %s", got.Status.CompletionTime, end)
	}
	if pods := taskPods(t, ns, "expires"); len(pods) != 1 {
		t.Errorf("%d pods, want 1: no attempt after the timeout", len(pods))
	}
}

// TestExitCodeNotRetried: an exit code retry.onExitCodes does not list
// fails the task after one attempt, by the Job's podFailurePolicy, and the
// status says why it was not retried.
func TestExitCodeNotRetried(t *testing.T) {
	t.Parallel()
	ns := namespace(t)
	create(t, task("fatal", ns, 1, "bad input").Retry(2, 10*time.Second, 2, 75).Obj())
	got := waitTask(t, ns, "fatal", "finished", finished)
	if got.Status.Phase != schedv1.TaskFailed || got.Status.Reason != schedv1.ReasonNonZeroExit || ptr.Deref(got.Status.ExitCode, -1) != 1 ||
		got.Status.Attempts != 1 || got.Status.Message != "exit code 1 is not in retry.onExitCodes [2 75]: not retried (attempt 1 of 3): bad input" {
		t.Errorf("status %+v", got.Status)
	}
	// The Job controller fails the Job by the same rule.
	job := &batchv1.Job{}
	testenv.Poll(t, testenv.Timeout, "the Job failed by its podFailurePolicy", func(ctx context.Context) (bool, error) {
		if err := sim.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: names.Job("fatal")}, job); err != nil {
			return false, err
		}
		return slices.ContainsFunc(job.Status.Conditions, func(c batchv1.JobCondition) bool {
			return c.Type == batchv1.JobFailed && c.Status == corev1.ConditionTrue && c.Reason == batchv1.JobReasonPodFailurePolicy
		}), nil
	})
	if pods := taskPods(t, ns, "fatal"); len(pods) != 1 {
		t.Errorf("%d pods, want 1", len(pods))
	}
}

// TestRestartDuringBackoff stops the operator while a task's Job is held
// for a backoff and starts a new one: the new operator derives the same
// resume time from the failed pod, resumes the Job once, and the task's
// record of the failed attempt stays. Not parallel: it stops the
// package's operator.
func TestRestartDuringBackoff(t *testing.T) {
	ns := namespace(t)
	create(t, task("restarted", ns, 3, "flaky").Retry(1, 15*time.Second).Obj())
	held := waitTask(t, ns, "restarted", "backing off", func(a *schedv1.AgentTask) bool { return a.Status.Reason == schedv1.ReasonBackingOff })
	waitHeld(t, ns, "restarted")
	// The first attempt's pod goes once the second has failed.
	first := taskPods(t, ns, "restarted")
	if len(first) != 1 {
		t.Fatalf("%d pods while backing off, want 1", len(first))
	}
	// Events are sent in the background and a stop drops those not yet
	// sent, so the first operator's event must be in before the stop for
	// the count below to tell a second wait from a lost first one.
	testenv.Poll(t, testenv.Timeout, "the BackingOff event", func(context.Context) (bool, error) {
		return eventCount(t, ns, "AgentTask", "restarted", schedv1.ReasonBackingOff) == 1, nil
	})
	if err := operator.Stop(); err != nil {
		t.Fatal(err)
	}
	if err := operator.Start(nil); err != nil {
		t.Fatal(err)
	}
	t.Logf("operator restarted while the task waits until %s", held.Status.NextAttemptTime.Format(time.TimeOnly))

	got := waitTask(t, ns, "restarted", "finished", finished)
	if got.Status.Phase != schedv1.TaskFailed || got.Status.Attempts != 2 || ptr.Deref(got.Status.ExitCode, -1) != 3 {
		t.Errorf("status %+v, want Failed after 2 attempts, exit code 3", got.Status)
	}
	pods := slices.Concat(first, slices.DeleteFunc(taskPods(t, ns, "restarted"), func(p corev1.Pod) bool { return p.Name == first[0].Name }))
	if len(pods) != 2 {
		t.Fatalf("%d pods, want 2: one per attempt", len(pods))
	}
	if want := finishedAt(pods[0]).Add(15 * time.Second); !held.Status.NextAttemptTime.Time.Equal(want) {
		t.Errorf("next attempt announced for %s, want the first attempt's end plus 15s, %s", held.Status.NextAttemptTime, want)
	}
	if created := pods[1].CreationTimestamp; created.Before(held.Status.NextAttemptTime) {
		t.Errorf("the second attempt's pod was created %s, before %s", created, held.Status.NextAttemptTime)
	}
	// The new operator found the same wait (a different one would be a
	// second BackingOff event) and resumed the Job once.
	if n := eventCount(t, ns, "AgentTask", "restarted", schedv1.ReasonBackingOff); n != 1 {
		t.Errorf("%d BackingOff events, want 1", n)
	}
	if n := eventCount(t, ns, "Job", names.Job("restarted"), "Resumed"); n != 1 {
		t.Errorf("the Job was resumed %d times, want once", n)
	}
}

// waitHeld waits until the operator holds the task's Job (suspended).
func waitHeld(t *testing.T, ns, task string) {
	t.Helper()
	testenv.Poll(t, testenv.Timeout, "the Job of "+task+" held", func(ctx context.Context) (bool, error) {
		job := &batchv1.Job{}
		err := sim.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: names.Job(task)}, job)
		return err == nil && ptr.Deref(job.Spec.Suspend, false), err
	})
}

// nthPod waits for the task's nth pod (by creation, the pods the operator
// pruned counted) to be held by AnnotationConfigError, and returns it.
// Released before the simulated kubelet has held it, a pod could be
// started and then held after all.
func nthPod(t *testing.T, ns, task string, n int) corev1.Pod {
	t.Helper()
	var pod corev1.Pod
	waitPods(t, ns, task, fmt.Sprintf("%d created and held", n), func(pods []corev1.Pod) bool {
		a := &schedv1.AgentTask{}
		if err := sim.Client.Get(t.Context(), types.NamespacedName{Namespace: ns, Name: task}, a); err != nil {
			return false
		}
		i := n
		if p := a.Status.Pruned; p != nil {
			pods = slices.DeleteFunc(pods, func(pod corev1.Pod) bool { return slices.Contains(p.Pods, pod.Name) })
			i -= len(p.Pods)
		}
		if i < 1 || len(pods) < i {
			return false
		}
		pod = sortByCreation(pods)[i-1]
		return slices.ContainsFunc(pod.Status.ContainerStatuses, func(cs corev1.ContainerStatus) bool {
			return cs.State.Waiting != nil && cs.State.Waiting.Reason == "CreateContainerConfigError"
		})
	})
	return pod
}

// release lets a pod held by AnnotationConfigError run, to end with code
// and msg.
func release(t *testing.T, pod corev1.Pod, code, msg string) {
	t.Helper()
	patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:null,%q:%q,%q:%q}}}`,
		cluster.AnnotationConfigError, cluster.AnnotationExitCode, code, cluster.AnnotationTerminationMessage, msg)
	if err := sim.Client.Patch(t.Context(), &pod, client.RawPatch(types.MergePatchType, []byte(patch))); err != nil {
		t.Fatal(err)
	}
}

// taskPods lists the task's pods by creation.
func taskPods(t *testing.T, ns, task string) []corev1.Pod {
	t.Helper()
	var pods corev1.PodList
	if err := sim.Client.List(t.Context(), &pods, client.InNamespace(ns), client.MatchingLabels{schedv1.LabelAgentTask: names.Job(task)}); err != nil {
		t.Fatal(err)
	}
	return sortByCreation(pods.Items)
}

func sortByCreation(pods []corev1.Pod) []corev1.Pod {
	slices.SortStableFunc(pods, func(a, b corev1.Pod) int { return a.CreationTimestamp.Compare(b.CreationTimestamp.Time) })
	return pods
}

// finishedAt is when a pod's task container ended.
func finishedAt(p corev1.Pod) time.Time {
	for _, cs := range p.Status.ContainerStatuses {
		if cs.State.Terminated != nil {
			return cs.State.Terminated.FinishedAt.Time
		}
	}
	return time.Time{}
}

// eventCount sums the counts of the events with reason about the object.
func eventCount(t *testing.T, ns, kind, name, reason string) int32 {
	t.Helper()
	var evs corev1.EventList
	if err := sim.Client.List(t.Context(), &evs, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	var n int32
	for _, e := range evs.Items {
		if e.InvolvedObject.Kind == kind && e.InvolvedObject.Name == name && e.Reason == reason {
			n += max(e.Count, 1)
		}
	}
	return n
}

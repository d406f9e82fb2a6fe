package agenttask_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	authorizationv1 "k8s.io/api/authorization/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	. "github.com/kubectl-sched/kubectl-sched/api/builders"
	"github.com/kubectl-sched/kubectl-sched/api/names"
	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
	"github.com/kubectl-sched/kubectl-sched/hack/cluster"
	"github.com/kubectl-sched/kubectl-sched/hack/testenv"
	"github.com/kubectl-sched/kubectl-sched/operator/agenttask"
)

var (
	sim *testenv.Sim
	// operator is the package's operator; the tests that restart it
	// (TestRestartDuringBackoff and the pod cleanup test) are not parallel.
	operator *testenv.Operator
)

// One simulated cluster and one operator (with only its generated RBAC)
// for the package.
func TestMain(m *testing.M) {
	testenv.Main(m, testenv.MainOptions{Sim: &sim, Controllers: []string{"agenttask"}, Operator: &operator})
}

func namespace(t *testing.T) string { return testenv.Namespace(t, sim.Client) }

// task starts a task whose simulated pod exits with code and message.
func task(name, ns string, code int, msg string) *AgentTaskWrapper {
	return MakeAgentTask(name, ns).Image("registry.example/agent:1").Args("run").
		PodAnnotation(cluster.AnnotationExitCode, fmt.Sprint(code)).
		PodAnnotation(cluster.AnnotationTerminationMessage, msg)
}

func create(t *testing.T, obj client.Object) {
	t.Helper()
	if err := sim.Client.Create(t.Context(), obj); err != nil {
		t.Fatal(err)
	}
}

// waitTask polls until cond holds for the task and returns it.
func waitTask(t *testing.T, ns, name, what string, cond func(*schedv1.AgentTask) bool) *schedv1.AgentTask {
	t.Helper()
	got := &schedv1.AgentTask{}
	err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, testenv.Timeout, true, func(ctx context.Context) (bool, error) {
		if err := sim.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, got); err != nil {
			return false, client.IgnoreNotFound(err)
		}
		return cond(got), nil
	})
	if err != nil {
		t.Fatalf("waiting for task %s to be %s: %v; last status: %+v", name, what, err, got.Status)
	}
	return got
}

func finished(at *schedv1.AgentTask) bool { return at.Status.Phase.Finished() }

func TestTaskSucceedsWithOutputs(t *testing.T) {
	t.Parallel()
	ns := namespace(t)
	// Quotes, unicode, $ and ${ survive as written.
	msg := `{"sha":"abc123","note":"say \"hi\" — ✓","tmpl":"cost $5 ${not.a.ref}","multi":"a\nb"}`
	at := task("ok", ns, 0, msg).Env("MODE", "fast").Obj()
	at.Spec.PodMetadata.Labels = map[string]string{"team": "agents"}
	create(t, at)

	got := waitTask(t, ns, "ok", "finished", finished)
	want := map[string]string{"sha": "abc123", "note": `say "hi" — ✓`, "tmpl": "cost $5 ${not.a.ref}", "multi": "a\nb"}
	if diff := cmp.Diff(want, got.Status.Outputs); diff != "" {
		t.Errorf("outputs (-want +got):\n%s", diff)
	}
	if got.Status.Phase != schedv1.TaskSucceeded || ptr.Deref(got.Status.ExitCode, -1) != 0 || got.Status.Attempts != 1 {
		t.Errorf("status %+v, want Succeeded with exit 0 after 1 attempt", got.Status)
	}
	if got.Status.JobName != "ok" || got.Status.PodName == "" || got.Status.CompletionTime == nil {
		t.Errorf("job %q pod %q completion %v: want all set", got.Status.JobName, got.Status.PodName, got.Status.CompletionTime)
	}
	if c := findCond(got.Status.Conditions, schedv1.ConditionSucceeded); c == nil || c.Status != metav1.ConditionTrue || c.ObservedGeneration != got.Generation {
		t.Errorf("Succeeded condition %+v, want True at generation %d", c, got.Generation)
	}

	// The Job: owned, labelled, never restarted, restricted, pass-through metadata.
	job := &batchv1.Job{}
	if err := sim.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "ok"}, job); err != nil {
		t.Fatal(err)
	}
	if !metav1.IsControlledBy(job, got) {
		t.Errorf("job is not controlled by the task: %+v", job.OwnerReferences)
	}
	pod := job.Spec.Template
	if pod.Spec.RestartPolicy != corev1.RestartPolicyNever || pod.Labels["team"] != "agents" || pod.Annotations[cluster.AnnotationExitCode] != "0" {
		t.Errorf("pod template: restart %s labels %v annotations %v", pod.Spec.RestartPolicy, pod.Labels, pod.Annotations)
	}
	sc := pod.Spec.Containers[0].SecurityContext
	if sc == nil || ptr.Deref(sc.AllowPrivilegeEscalation, true) || sc.Capabilities == nil || len(sc.Capabilities.Drop) != 1 ||
		!ptr.Deref(pod.Spec.SecurityContext.RunAsNonRoot, false) || pod.Spec.SecurityContext.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
		t.Errorf("security context is not restricted: pod %+v container %+v", pod.Spec.SecurityContext, sc)
	}

	// The pod is released once the outputs are recorded.
	waitPods(t, ns, "ok", "released", func(pods []corev1.Pod) bool {
		for _, p := range pods {
			if len(p.Finalizers) > 0 && contains(p.Finalizers, agenttask.OutputsFinalizer) {
				return false
			}
		}
		return true
	})

	// One event per task, when it ends: each event is an API write, and
	// the Job and its pod tell the rest.
	var reasons []string
	testenv.Poll(t, testenv.Timeout, "the task's events", func(ctx context.Context) (bool, error) {
		var evs corev1.EventList
		if err := sim.Client.List(ctx, &evs, client.InNamespace(ns)); err != nil {
			return false, err
		}
		reasons = reasons[:0]
		for _, e := range evs.Items {
			if e.InvolvedObject.Kind == "AgentTask" && e.InvolvedObject.Name == "ok" {
				reasons = append(reasons, e.Reason)
			}
		}
		return contains(reasons, schedv1.ReasonSucceeded), nil
	})
	if len(reasons) != 1 {
		t.Errorf("task events %v: want only Succeeded", reasons)
	}
}

func TestTaskFailures(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("x", 4100)
	cases := map[string]struct {
		task       func(ns string) *schedv1.AgentTask
		wantPhase  schedv1.AgentTaskPhase
		wantReason string
		wantExit   *int32
		wantTries  int32
		wantMsg    string
	}{
		"non-zero exit": {
			task:      func(ns string) *schedv1.AgentTask { return task("exit3", ns, 3, "disk full").Obj() },
			wantPhase: schedv1.TaskFailed, wantReason: schedv1.ReasonNonZeroExit, wantExit: ptr.To[int32](3), wantTries: 1,
			wantMsg: "exited with code 3 after 1 attempt(s): disk full",
		},
		"retries then fails": {
			task:      func(ns string) *schedv1.AgentTask { return task("retry", ns, 1, "flaky").Retries(2).Obj() },
			wantPhase: schedv1.TaskFailed, wantReason: schedv1.ReasonNonZeroExit, wantExit: ptr.To[int32](1), wantTries: 3,
			wantMsg: "exited with code 1 after 3 attempt(s): flaky",
		},
		"timeout": {
			task: func(ns string) *schedv1.AgentTask {
				return task("slow", ns, 0, "").Timeout(2*time.Second).PodAnnotation(cluster.AnnotationRunSeconds, "120").Obj()
			},
			wantPhase: schedv1.TaskTimeout, wantReason: schedv1.ReasonDeadlineExceeded, wantTries: 1,
			wantMsg: "ran past spec.timeout 2s and was stopped",
		},
		"malformed outputs": {
			task:      func(ns string) *schedv1.AgentTask { return task("words", ns, 0, "all done, thanks").Obj() },
			wantPhase: schedv1.TaskFailed, wantReason: schedv1.ReasonOutputsInvalid, wantExit: ptr.To[int32](0), wantTries: 1,
			wantMsg: "the container exited 0 but its outputs are unusable: line 1",
		},
		"oversize termination message": {
			task:      func(ns string) *schedv1.AgentTask { return task("big", ns, 0, "k="+long).Obj() },
			wantPhase: schedv1.TaskFailed, wantReason: schedv1.ReasonOutputsTruncated, wantExit: ptr.To[int32](0), wantTries: 1,
			wantMsg: "Kubernetes keeps at most 4096",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ns := namespace(t)
			at := tc.task(ns)
			create(t, at)
			got := waitTask(t, ns, at.Name, "finished", finished)
			if got.Status.Phase != tc.wantPhase || got.Status.Reason != tc.wantReason || got.Status.Attempts != tc.wantTries {
				t.Errorf("phase %s reason %s attempts %d; want %s %s %d (message %q)", got.Status.Phase, got.Status.Reason, got.Status.Attempts,
					tc.wantPhase, tc.wantReason, tc.wantTries, got.Status.Message)
			}
			if tc.wantExit != nil && ptr.Deref(got.Status.ExitCode, -1) != *tc.wantExit {
				t.Errorf("exit code %v, want %d", got.Status.ExitCode, *tc.wantExit)
			}
			if !strings.Contains(got.Status.Message, tc.wantMsg) {
				t.Errorf("message %q does not contain %q", got.Status.Message, tc.wantMsg)
			}
			if len(got.Status.Outputs) != 0 {
				t.Errorf("a failed task has outputs %v", got.Status.Outputs)
			}
			if c := findCond(got.Status.Conditions, schedv1.ConditionSucceeded); c == nil || c.Status != metav1.ConditionFalse || c.Reason != tc.wantReason {
				t.Errorf("Succeeded condition %+v, want False with %s", c, tc.wantReason)
			}
		})
	}
}

func TestCancelStopsThePod(t *testing.T) {
	t.Parallel()
	ns := namespace(t)
	create(t, task("long", ns, 0, "").PodAnnotation(cluster.AnnotationRunSeconds, "300").Obj())
	at := waitTask(t, ns, "long", "Running", func(a *schedv1.AgentTask) bool { return a.Status.Phase == schedv1.TaskRunning })

	patch := client.MergeFrom(at.DeepCopy())
	at.Spec.Cancel = true
	if err := sim.Client.Patch(t.Context(), at, patch); err != nil {
		t.Fatal(err)
	}
	got := waitTask(t, ns, "long", "finished", finished)
	if got.Status.Phase != schedv1.TaskCancelled || got.Status.Reason != schedv1.ReasonCancelled {
		t.Errorf("status %+v, want Cancelled/Cancelled", got.Status)
	}
	waitPods(t, ns, "long", "gone", func(pods []corev1.Pod) bool { return len(pods) == 0 })
}

func TestImmediateTTLKeepsOutputs(t *testing.T) {
	t.Parallel()
	ns := namespace(t)
	create(t, task("keep", ns, 0, "answer=42").TTL(0, schedv1.CleanupJob).Obj())
	create(t, task("drop", ns, 0, "answer=43").TTL(0, schedv1.CleanupTask).Obj())

	got := waitTask(t, ns, "keep", "finished", finished)
	if diff := cmp.Diff(map[string]string{"answer": "42"}, got.Status.Outputs); diff != "" {
		t.Errorf("outputs (-want +got):\n%s", diff)
	}
	testenv.Poll(t, testenv.Timeout, "the Job deleted by the TTL", func(ctx context.Context) (bool, error) {
		err := sim.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "keep"}, &batchv1.Job{})
		return apierrors.IsNotFound(err), client.IgnoreNotFound(err)
	})
	waitPods(t, ns, "keep", "gone", func(pods []corev1.Pod) bool { return len(pods) == 0 })
	again := waitTask(t, ns, "keep", "still there", func(*schedv1.AgentTask) bool { return true })
	if diff := cmp.Diff(got.Status, again.Status); diff != "" {
		t.Errorf("status changed after the Job was deleted (-before +after):\n%s", diff)
	}

	testenv.Poll(t, testenv.Timeout, "the task deleted by the TTL", func(ctx context.Context) (bool, error) {
		err := sim.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "drop"}, &schedv1.AgentTask{})
		return apierrors.IsNotFound(err), client.IgnoreNotFound(err)
	})
	waitPods(t, ns, "drop", "gone", func(pods []corev1.Pod) bool { return len(pods) == 0 })
}

func TestStuckTasksSayWhy(t *testing.T) {
	t.Parallel()
	cases := map[string]struct {
		task       func(ns string) *schedv1.AgentTask
		wantReason string
		wantMsg    string
	}{
		"unschedulable": {
			task: func(ns string) *schedv1.AgentTask {
				return task("nowhere", ns, 0, "").Placement(schedv1.Placement{NodePools: []string{"no-such-pool"}}).Obj()
			},
			wantReason: schedv1.ReasonUnschedulable, wantMsg: "no node can run the pod: 0/6 nodes are available",
		},
		"image cannot be pulled": {
			task: func(ns string) *schedv1.AgentTask {
				return task("badimage", ns, 0, "").PodAnnotation(cluster.AnnotationImagePullError, "ErrImagePull").Obj()
			},
			wantReason: schedv1.ReasonImagePull, wantMsg: "cannot pull image registry.example/agent:1: ErrImagePull",
		},
		"missing Secret": {
			// The simulated kubelet does not read Secrets; the annotation
			// makes it answer as a real one does for this task.
			task: func(ns string) *schedv1.AgentTask {
				return task("nosecret", ns, 0, "").Spec(func(s *schedv1.AgentTaskSpec) {
					s.Env = append(s.Env, schedv1.EnvVar{Name: "TOKEN", ValueFrom: &corev1.EnvVarSource{
						SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "agent-token"}, Key: "token"},
					}})
				}).PodAnnotation(cluster.AnnotationConfigError, `secret "agent-token" not found`).Obj()
			},
			wantReason: schedv1.ReasonMissingRef, wantMsg: `the container cannot be configured: secret "agent-token" not found`,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ns := namespace(t)
			at := tc.task(ns)
			create(t, at)
			got := waitTask(t, ns, at.Name, tc.wantReason, func(a *schedv1.AgentTask) bool { return a.Status.Reason == tc.wantReason })
			if got.Status.Phase != schedv1.TaskPending || !strings.Contains(got.Status.Message, tc.wantMsg) {
				t.Errorf("phase %s message %q; want Pending with %q", got.Status.Phase, got.Status.Message, tc.wantMsg)
			}
			if c := findCond(got.Status.Conditions, schedv1.ConditionReady); c == nil || c.Status != metav1.ConditionFalse || c.Reason != tc.wantReason {
				t.Errorf("Ready condition %+v, want False with %s", c, tc.wantReason)
			}
		})
	}
}

// TestNoWritesWhenNothingChanges: a finished task and its Job are left
// alone; resourceVersions do not move while nothing happens.
func TestNoWritesWhenNothingChanges(t *testing.T) {
	t.Parallel()
	ns := namespace(t)
	create(t, task("quiet", ns, 0, "k=v").Obj())
	got := waitTask(t, ns, "quiet", "finished", finished)
	waitPods(t, ns, "quiet", "released", func(pods []corev1.Pod) bool {
		return len(pods) == 1 && !contains(pods[0].Finalizers, agenttask.OutputsFinalizer)
	})
	job := &batchv1.Job{}
	if err := sim.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "quiet"}, job); err != nil {
		t.Fatal(err)
	}
	// Let any in-flight event settle, then watch a quiet period.
	time.Sleep(3 * time.Second)
	after := &schedv1.AgentTask{}
	if err := sim.Client.Get(t.Context(), client.ObjectKeyFromObject(got), after); err != nil {
		t.Fatal(err)
	}
	if after.ResourceVersion != got.ResourceVersion {
		t.Errorf("task written while nothing changed: resourceVersion %s -> %s", got.ResourceVersion, after.ResourceVersion)
	}
}

func TestLongNamesStayWithin63(t *testing.T) {
	t.Parallel()
	ns := namespace(t)
	name := strings.Repeat("long-task-name-", 6) + "end"
	create(t, task(name, ns, 0, "x=1").Obj())
	got := waitTask(t, ns, name, "finished", finished)
	if got.Status.Phase != schedv1.TaskSucceeded || got.Status.JobName != names.Job(name) || len(got.Status.JobName) > 63 {
		t.Errorf("phase %s job %q (%d chars)", got.Status.Phase, got.Status.JobName, len(got.Status.JobName))
	}
}

func waitPods(t *testing.T, ns, task, what string, cond func([]corev1.Pod) bool) {
	t.Helper()
	testenv.Poll(t, testenv.Timeout, "pods of "+task+" "+what, func(ctx context.Context) (bool, error) {
		var pods corev1.PodList
		if err := sim.Client.List(ctx, &pods, client.InNamespace(ns), client.MatchingLabels{schedv1.LabelAgentTask: names.Job(task)}); err != nil {
			return false, err
		}
		return cond(pods.Items), nil
	})
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func findCond(cs []metav1.Condition, t string) *metav1.Condition {
	for i := range cs {
		if cs[i].Type == t {
			return &cs[i]
		}
	}
	return nil
}

// TestUnmappedPriorityReported: a task whose placement.priority maps to no
// PriorityClass (this operator maps none) still runs, and says so.
func TestUnmappedPriorityReported(t *testing.T) {
	t.Parallel()
	ns := namespace(t)
	at := task("urgent", ns, 0, "").Obj()
	at.Spec.Placement = &schedv1.Placement{Priority: schedv1.PriorityCritical}
	create(t, at)
	got := waitTask(t, ns, "urgent", "finished", finished)
	c := meta.FindStatusCondition(got.Status.Conditions, schedv1.ConditionPriorityMapped)
	if got.Status.Phase != schedv1.TaskSucceeded || c == nil || c.Status != metav1.ConditionFalse || c.Reason != schedv1.ReasonPriorityUnmapped ||
		!strings.Contains(c.Message, "--priority-class Critical=CLASS") || c.ObservedGeneration != got.Generation {
		t.Errorf("phase %s, PriorityMapped %+v", got.Status.Phase, c)
	}
}

// TestTaskRunsWherePodSecurityIsRestricted: the Job's pod passes Pod
// Security "restricted" admission even when the task sets a harmless field
// of its own (which once replaced, and so dropped, the restricted default).
func TestTaskRunsWherePodSecurityIsRestricted(t *testing.T) {
	t.Parallel()
	ns := namespace(t)
	nsObj := &corev1.Namespace{}
	if err := sim.Client.Get(t.Context(), client.ObjectKey{Name: ns}, nsObj); err != nil {
		t.Fatal(err)
	}
	nsObj.Labels = map[string]string{"pod-security.kubernetes.io/enforce": "restricted"}
	if err := sim.Client.Update(t.Context(), nsObj); err != nil {
		t.Fatal(err)
	}
	create(t, task("plain", ns, 0, "k=v").Obj())
	create(t, task("readonly", ns, 0, "k=v").SecurityContext(&schedv1.SecurityContext{ReadOnlyRootFilesystem: ptr.To(true)}).Obj())
	for _, name := range []string{"plain", "readonly"} {
		got := waitTask(t, ns, name, "finished", finished)
		if got.Status.Phase != schedv1.TaskSucceeded || got.Status.Outputs["k"] != "v" {
			t.Errorf("%s: status %+v, want Succeeded with k=v", name, got.Status)
		}
	}
}

// TestLookAlikePodCannotForgeOutputs: a pod someone else made with the
// task's labels and a forged termination message, finished before the
// task's own, does not change the task's outputs.
func TestLookAlikePodCannotForgeOutputs(t *testing.T) {
	t.Parallel()
	ns := namespace(t)
	forged := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: "forged", Namespace: ns,
			Labels: map[string]string{schedv1.LabelManagedBy: schedv1.ManagedByValue, schedv1.LabelAgentTask: names.Job("real")},
			Annotations: map[string]string{
				cluster.AnnotationExitCode:           "0",
				cluster.AnnotationTerminationMessage: `{"verdict":"forged"}`,
			},
		},
		Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{{Name: agenttask.ContainerName, Image: "x"}}},
	}
	// A namespace user with the built-in edit role, who may create pods,
	// may not give one the operator's labels (config/policy/reserved_labels.yaml).
	mallory, err := testenv.BindUser(t.Context(), sim.Client, sim.Config, ns, "mallory", "edit",
		authorizationv1.ResourceAttributes{Verb: "create", Resource: "pods"})
	if err != nil {
		t.Fatal(err)
	}
	if err := mallory.Create(t.Context(), forged.DeepCopy()); !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "reserved for the kubectl-sched operator") {
		t.Fatalf("a namespace user creating a pod with the task's labels: err = %v, want forbidden", err)
	}
	// Whoever may still (a cluster admin) gains nothing: outputs come only
	// from the pods the task's Job controls.
	if err := sim.Client.Create(t.Context(), forged); err != nil {
		t.Fatal(err)
	}
	testenv.Poll(t, testenv.Timeout, "the look-alike pod to finish", func(ctx context.Context) (bool, error) {
		err := sim.Client.Get(ctx, client.ObjectKeyFromObject(forged), forged)
		return err == nil && forged.Status.Phase == corev1.PodSucceeded, err
	})

	// The real pod runs a while, so the forged one is seen first.
	create(t, task("real", ns, 0, `{"verdict":"real"}`).PodAnnotation(cluster.AnnotationRunSeconds, "2").Obj())
	got := waitTask(t, ns, "real", "finished", finished)
	if diff := cmp.Diff(map[string]string{"verdict": "real"}, got.Status.Outputs); diff != "" {
		t.Errorf("outputs (-want +got):\n%s", diff)
	}
	if got.Status.PodName == "forged" {
		t.Errorf("the status names the look-alike pod")
	}
}

// TestMissingServiceAccountIsReported: a task can only run as a service
// account of its own namespace that exists (the API server's
// ServiceAccount admission refuses its pod); the task says which is missing.
func TestMissingServiceAccountIsReported(t *testing.T) {
	t.Parallel()
	ns := namespace(t)
	create(t, task("sa", ns, 0, "").Spec(func(s *schedv1.AgentTaskSpec) { s.ServiceAccountName = "nobody" }).Obj())
	got := waitTask(t, ns, "sa", "reporting the missing service account", func(at *schedv1.AgentTask) bool {
		return strings.Contains(at.Status.Message, `serviceaccount "nobody" not found`)
	})
	if got.Status.Phase.Finished() || got.Status.PodName != "" {
		t.Errorf("status %+v, want it waiting with no pod", got.Status)
	}
}

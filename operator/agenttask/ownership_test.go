package agenttask_test

import (
	"context"
	"maps"
	"slices"
	"strings"
	"testing"

	authorizationv1 "k8s.io/api/authorization/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubectl-sched/kubectl-sched/api/names"
	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
	"github.com/kubectl-sched/kubectl-sched/hack/cluster"
	"github.com/kubectl-sched/kubectl-sched/hack/testenv"
	"github.com/kubectl-sched/kubectl-sched/operator/agenttask"
)

// namespaceUser is a user with the built-in edit role in ns, who may create
// pods and Jobs there: the tenant the operator must not be fooled by.
func namespaceUser(t *testing.T, ns, user string) client.Client {
	t.Helper()
	c, err := testenv.BindUser(t.Context(), sim.Client, sim.Config, ns, user, "edit",
		authorizationv1.ResourceAttributes{Verb: "create", Resource: "pods"},
		authorizationv1.ResourceAttributes{Verb: "create", Group: "batch", Resource: "jobs"})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func runningJob(t *testing.T, ns, name string) (*batchv1.Job, corev1.Pod) {
	t.Helper()
	var pod corev1.Pod
	waitPods(t, ns, name, "running", func(pods []corev1.Pod) bool {
		for _, p := range pods {
			if p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil {
				pod = p
				return true
			}
		}
		return false
	})
	job := &batchv1.Job{}
	if err := sim.Client.Get(t.Context(), types.NamespacedName{Namespace: ns, Name: names.Job(name)}, job); err != nil {
		t.Fatal(err)
	}
	return job, pod
}

// TestPodCannotClaimTheTasksJob: outputs are read only from pods the Job
// controls, by UID; a namespace user who reads the Job's UID and names it
// as the controller of a pod of their own, with a forged termination
// message, is refused, on create and by a later update.
func TestPodCannotClaimTheTasksJob(t *testing.T) {
	t.Parallel()
	ns := namespace(t)
	create(t, task("claimed", ns, 0, "verdict=real").PodAnnotation(cluster.AnnotationRunSeconds, "30").Obj())
	job, _ := runningJob(t, ns, "claimed")
	mallory := namespaceUser(t, ns, "mallory")

	claim := metav1.OwnerReference{APIVersion: "batch/v1", Kind: "Job", Name: job.Name, UID: job.UID, Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}
	forged := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			// No labels: kubectl-sched-reserved-labels refuses the task's to
			// a namespace user, and a claim must be refused without them.
			Name: "forged", Namespace: ns,
			Annotations: map[string]string{cluster.AnnotationTerminationMessage: "verdict=forged"},
		},
		Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{{Name: agenttask.ContainerName, Image: "x"}}},
	}
	withClaim := forged.DeepCopy()
	withClaim.OwnerReferences = []metav1.OwnerReference{claim}
	err := mallory.Create(t.Context(), withClaim)
	if !apierrors.IsForbidden(err) && !apierrors.IsInvalid(err) {
		t.Fatalf("creating a pod controlled by the task's Job: err = %v, want it refused", err)
	}
	for _, want := range []string{"metadata.ownerReferences names Job " + job.Name + " as its controller", "only the Job controller creates the pods of a Job"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("err = %q, want it to say %q", err, want)
		}
	}

	// Nor by taking it over later.
	if err := mallory.Create(t.Context(), forged); err != nil {
		t.Fatal(err)
	}
	patch := client.MergeFrom(forged.DeepCopy())
	forged.OwnerReferences = []metav1.OwnerReference{claim}
	if err := mallory.Patch(t.Context(), forged, patch); err == nil || !strings.Contains(err.Error(), "only the Job controller creates the pods of a Job") {
		t.Errorf("update err = %v, want the claim refused", err)
	}

	// An AgentTask owns no pods at all.
	task := &schedv1.AgentTask{}
	if err := sim.Client.Get(t.Context(), types.NamespacedName{Namespace: ns, Name: "claimed"}, task); err != nil {
		t.Fatal(err)
	}
	byTask := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "by-task", Namespace: ns, OwnerReferences: []metav1.OwnerReference{
		{APIVersion: schedv1.GroupVersion.String(), Kind: "AgentTask", Name: task.Name, UID: task.UID}}}, Spec: forged.Spec}
	if err := mallory.Create(t.Context(), byTask); err == nil || !strings.Contains(err.Error(), "AgentTasks own no pods") {
		t.Errorf("pod owned by the AgentTask: err = %v, want it refused", err)
	}
}

// TestTakenJobNameFailsTheTask: a Job the tenant made beforehand under the
// name the task's Job would have is never taken as the task's: the task
// fails and says whose it is and what to do, and the Job is left alone.
func TestTakenJobNameFailsTheTask(t *testing.T) {
	t.Parallel()
	ns := namespace(t)
	mallory := namespaceUser(t, ns, "mallory")
	squat := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: names.Job("squat"), Namespace: ns},
		Spec: batchv1.JobSpec{Suspend: ptr.To(true), Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{{Name: "c", Image: "x"}},
		}}},
	}
	if err := mallory.Create(t.Context(), squat); err != nil {
		t.Fatal(err)
	}

	create(t, task("squat", ns, 0, "").Obj())
	got := waitTask(t, ns, "squat", "finished", finished)
	if got.Status.Phase != schedv1.TaskFailed || got.Status.Reason != schedv1.ReasonNameTaken {
		t.Fatalf("phase %s reason %s (%s), want Failed with %s", got.Status.Phase, got.Status.Reason, got.Status.Message, schedv1.ReasonNameTaken)
	}
	for _, want := range []string{"Job " + squat.Name + " already exists and is not this task's (it has no controller)", "kubectl delete job " + squat.Name + " -n " + ns} {
		if !strings.Contains(got.Status.Message, want) {
			t.Errorf("message %q, want it to say %q", got.Status.Message, want)
		}
	}
	if got.Status.JobName != "" {
		t.Errorf("status names Job %q, want none", got.Status.JobName)
	}
	after := &batchv1.Job{}
	if err := sim.Client.Get(t.Context(), client.ObjectKeyFromObject(squat), after); err != nil {
		t.Fatal(err)
	}
	// The Job controller writes its status; nobody else may touch it.
	if len(after.OwnerReferences) != 0 || !maps.Equal(after.Labels, squat.Labels) || after.Generation != squat.Generation {
		t.Errorf("the tenant's Job was changed: owners %v, labels %v, generation %d -> %d", after.OwnerReferences, after.Labels, squat.Generation, after.Generation)
	}
}

// TestDeletedTaskReleasesOnlyItsJobsPods: deleting a task releases the
// outputs finalizer of the pods its Job controls (by UID), not of a pod
// that merely carries the task's labels.
func TestDeletedTaskReleasesOnlyItsJobsPods(t *testing.T) {
	t.Parallel()
	ns := namespace(t)
	create(t, task("released", ns, 0, "").PodAnnotation(cluster.AnnotationRunSeconds, "60").Obj())
	_, real := runningJob(t, ns, "released")
	mallory := namespaceUser(t, ns, "mallory")
	lookAlike := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: "look-alike", Namespace: ns, Finalizers: []string{agenttask.OutputsFinalizer},
			Labels: map[string]string{schedv1.LabelManagedBy: schedv1.ManagedByValue, schedv1.LabelAgentTask: names.Job("released")},
		},
		Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{{Name: agenttask.ContainerName, Image: "x"}}},
	}
	// A namespace user cannot make it (kubectl-sched-reserved-labels);
	// one left from before that policy, or made by a cluster admin, can
	// still exist, and must keep its finalizer.
	if err := mallory.Create(t.Context(), lookAlike.DeepCopy()); !apierrors.IsForbidden(err) {
		t.Fatalf("a namespace user creating a pod with the task's labels: err = %v, want forbidden", err)
	}
	if err := sim.Client.Create(t.Context(), lookAlike); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = sim.Client.Patch(context.Background(), lookAlike, client.RawPatch(types.StrategicMergePatchType, []byte(schedv1.ReleaseOutputsPatch)))
	})

	if err := sim.Client.Delete(t.Context(), &schedv1.AgentTask{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "released"}},
		client.PropagationPolicy(metav1.DeletePropagationBackground)); err != nil {
		t.Fatal(err)
	}
	testenv.Poll(t, testenv.Timeout, "the task's own pod released and gone", func(ctx context.Context) (bool, error) {
		err := sim.Client.Get(ctx, client.ObjectKeyFromObject(&real), &corev1.Pod{})
		return apierrors.IsNotFound(err), client.IgnoreNotFound(err)
	})
	if err := sim.Client.Get(t.Context(), client.ObjectKeyFromObject(lookAlike), lookAlike); err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(lookAlike.Finalizers, agenttask.OutputsFinalizer) {
		t.Errorf("the look-alike pod lost its finalizer: the operator released a pod its task's Job does not control")
	}
}

// TestDisruptedPodIsRetriedNotFailed: a pod evicted (as a node drain does)
// or preempted is not a failure of the task: the Job replaces it without
// using a retry (podFailurePolicy), and the task succeeds with one attempt
// and none to spare. The evicted container exits 137, which the task's
// retry.onExitCodes does not list: the podFailurePolicy ignores the
// disruption before it looks at exit codes, so that does not fail it.
func TestDisruptedPodIsRetriedNotFailed(t *testing.T) {
	t.Parallel()
	ns := namespace(t)
	create(t, task("evicted", ns, 0, "k=v").Retry(0, 0, 3).PodAnnotation(cluster.AnnotationRunSeconds, "4").Obj())
	_, pod := runningJob(t, ns, "evicted")
	eviction := &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: pod.Name, Namespace: ns}}
	if err := sim.Client.SubResource("eviction").Create(t.Context(), &pod, eviction); err != nil {
		t.Fatal(err)
	}
	got := waitTask(t, ns, "evicted", "finished", finished)
	if got.Status.Phase != schedv1.TaskSucceeded || got.Status.Outputs["k"] != "v" {
		t.Fatalf("phase %s (%s: %s), want Succeeded on the replacement pod", got.Status.Phase, got.Status.Reason, got.Status.Message)
	}
	if got.Status.Attempts != 1 || got.Status.PodName == pod.Name {
		t.Errorf("attempts %d, pod %s; want 1 attempt, on the replacement of the evicted %s", got.Status.Attempts, got.Status.PodName, pod.Name)
	}
	t.Logf("evicted %s, succeeded on %s", pod.Name, got.Status.PodName)
}

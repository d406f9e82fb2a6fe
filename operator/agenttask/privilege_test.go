package agenttask_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	authorizationv1 "k8s.io/api/authorization/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubectl-sched/kubectl-sched/api/names"
	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
	"github.com/kubectl-sched/kubectl-sched/hack/cluster"
	"github.com/kubectl-sched/kubectl-sched/hack/testenv"
)

// tenantIn returns a client acting as a user bound to kubectl-sched-edit in
// ns only: the namespace user whose requests the operator carries out.
func tenantIn(t *testing.T, ns, user string) client.Client {
	t.Helper()
	c, err := testenv.BindUser(t.Context(), sim.Client, sim.Config, ns, user, "kubectl-sched-edit",
		authorizationv1.ResourceAttributes{Verb: "create", Group: schedv1.GroupVersion.Group, Resource: "agenttasks"})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// A tenant's own capabilities.drop list is added to the default drop: ALL;
// it never takes its place and leaves the runtime's default set in the pod.
func TestTenantDropListStillDropsAll(t *testing.T) {
	t.Parallel()
	ns := namespace(t)
	tenant := tenantIn(t, ns, "drop-tenant")
	at := task("drops", ns, 0, "").SecurityContext(&schedv1.SecurityContext{
		Capabilities: &schedv1.Capabilities{Drop: []corev1.Capability{"NET_RAW"}},
	}).Obj()
	if err := tenant.Create(t.Context(), at); err != nil {
		t.Fatal(err)
	}
	waitTask(t, ns, "drops", "given a Job", func(at *schedv1.AgentTask) bool { return at.Status.JobName != "" })
	job := &batchv1.Job{}
	if err := sim.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: names.Job("drops")}, job); err != nil {
		t.Fatal(err)
	}
	sc := job.Spec.Template.Spec.Containers[0].SecurityContext
	if sc == nil || sc.Capabilities == nil || !slices.Contains(sc.Capabilities.Drop, "ALL") || !slices.Contains(sc.Capabilities.Drop, "NET_RAW") {
		t.Errorf("the Job's container drops %v, want ALL and NET_RAW", sc)
	}
}

// An admin who removes a namespace's opt-out takes the privilege back from
// what already runs there: the privileged task's Job goes, and the task
// fails saying which field and which label.
func TestOptOutRemovedStopsAPrivilegedTask(t *testing.T) {
	t.Parallel()
	ns := namespace(t)
	testenv.SetOptOut(t, sim.Client, ns, true)
	tenant := tenantIn(t, ns, "privileged-tenant")
	at := task("privileged", ns, 0, "").PodAnnotation(cluster.AnnotationRunSeconds, "600").
		SecurityContext(&schedv1.SecurityContext{Privileged: ptr.To(true)}).Obj()
	// Admission learns of the label from its namespace informer.
	var last error
	testenv.Poll(t, testenv.Timeout, "a privileged task admitted in the opted-out namespace", func(ctx context.Context) (bool, error) {
		last = tenant.Create(ctx, at.DeepCopy())
		if last != nil && strings.Contains(last.Error(), "privileged containers are not allowed") {
			return false, nil
		}
		return true, last
	})
	waitTask(t, ns, "privileged", "running", func(at *schedv1.AgentTask) bool { return at.Status.Phase == schedv1.TaskRunning })

	testenv.SetOptOut(t, sim.Client, ns, false)
	got := waitTask(t, ns, "privileged", "finished", finished)
	if got.Status.Phase != schedv1.TaskFailed || got.Status.Reason != schedv1.ReasonPrivilegedNotAllowed {
		t.Errorf("phase %s reason %s, want Failed %s", got.Status.Phase, got.Status.Reason, schedv1.ReasonPrivilegedNotAllowed)
	}
	for _, want := range []string{"spec.securityContext.privileged", schedv1.LabelAllowPrivilegedPods + "=true", "its Job was deleted"} {
		if !strings.Contains(got.Status.Message, want) {
			t.Errorf("message %q does not say %q", got.Status.Message, want)
		}
	}
	testenv.Poll(t, testenv.Timeout, "the privileged Job to be deleted", func(ctx context.Context) (bool, error) {
		err := sim.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: names.Job("privileged")}, &batchv1.Job{})
		return apierrors.IsNotFound(err), client.IgnoreNotFound(err)
	})
	// Its pod is released to the garbage collector, not held by our finalizer.
	waitPods(t, ns, names.Job("privileged"), "gone", func(pods []corev1.Pod) bool { return len(pods) == 0 })
}

// Where no admission policy checks pod annotations (here: no operator
// ConfigMap for its params), the operator refuses them itself: a member's
// task asking for Multus's extra networks fails, naming the annotation and
// the domains allowed, and gets no Job; one of the project's own domain
// (the simulated cluster's) runs.
func TestAnnotationOfAnotherDomainIsRefused(t *testing.T) {
	t.Parallel()
	ns := namespace(t)
	tenant := tenantIn(t, ns, "annotating-tenant")
	const networks = "k8s.v1.cni.cncf.io/networks"
	if err := tenant.Create(t.Context(), task("multus", ns, 0, "").PodAnnotation(networks, "macvlan-conf").Obj()); err != nil {
		t.Fatal(err)
	}
	got := waitTask(t, ns, "multus", "finished", finished)
	if got.Status.Phase != schedv1.TaskFailed || got.Status.Reason != schedv1.ReasonAnnotationNotAllowed ||
		!strings.Contains(got.Status.Message, "spec.podMetadata.annotations["+networks+"]") ||
		!strings.Contains(got.Status.Message, "--allowed-pod-annotation-domains: kubectl-sched.dev") {
		t.Errorf("task %s %s %q, want Failed %s naming the annotation and the domains allowed", got.Status.Phase, got.Status.Reason, got.Status.Message, schedv1.ReasonAnnotationNotAllowed)
	}
	err := sim.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: names.Job("multus")}, &batchv1.Job{})
	if !apierrors.IsNotFound(err) {
		t.Errorf("the refused task's Job: err = %v, want none", err)
	}
	if err := tenant.Create(t.Context(), task("own", ns, 0, "").PodAnnotation(cluster.AnnotationExitCode, "0").Obj()); err != nil {
		t.Fatal(err)
	}
	if got := waitTask(t, ns, "own", "finished", finished); got.Status.Phase != schedv1.TaskSucceeded {
		t.Errorf("a task with the project's own annotation: %s %s %q, want Succeeded", got.Status.Phase, got.Status.Reason, got.Status.Message)
	}
}

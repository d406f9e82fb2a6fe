package teardown_test

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	. "github.com/kubectl-sched/kubectl-sched/api/builders"
	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
	"github.com/kubectl-sched/kubectl-sched/hack/cluster"
	"github.com/kubectl-sched/kubectl-sched/hack/testenv"
)

const (
	pollTimeout = 2 * time.Minute
	// goneTimeout bounds the namespace's deletion: pods end after their
	// grace period and the garbage collector and namespace controller
	// make a few passes; stuck is forever.
	goneTimeout = 3 * time.Minute
	member      = "tess"
	// maxRefused bounds the operator's refused writes into the namespace
	// while it terminates (a handful of objects, each retried with
	// backoff).
	maxRefused = 100
)

// poll waits until cond returns nil, failing the test with its last error.
func poll(t *testing.T, timeout time.Duration, what string, cond func(ctx context.Context) error) {
	t.Helper()
	var last error
	err := wait.PollUntilContextTimeout(t.Context(), 200*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		last = cond(ctx)
		return last == nil, nil
	})
	if err != nil {
		t.Fatalf("waiting for %s: %v (last: %v)", what, err, last)
	}
}

// createAs creates obj with c, again until the tier's quotas count what
// they limit (admission refuses it until then).
func createAs(t *testing.T, c client.Client, obj client.Object) {
	t.Helper()
	poll(t, pollTimeout, fmt.Sprintf("%s %s to be created", obj.GetObjectKind().GroupVersionKind().Kind, obj.GetName()), func(ctx context.Context) error {
		if err := c.Create(ctx, obj); !apierrors.IsAlreadyExists(err) {
			return err
		}
		return nil
	})
}

// taskSpec runs a simulated pod that exits 0 after runSeconds with msg as
// its termination message (its outputs).
func taskSpec(runSeconds int, msg string) schedv1.AgentTaskSpec {
	return schedv1.AgentTaskSpec{Image: "registry.example/agent:1", Args: []string{"run"},
		PodMetadata: &schedv1.PodMetadata{Annotations: map[string]string{
			cluster.AnnotationRunSeconds:         fmt.Sprint(runSeconds),
			cluster.AnnotationExitCode:           "0",
			cluster.AnnotationTerminationMessage: msg,
		}}}
}

// watched lists what the operator makes in a namespace, or a tenant makes
// through it.
func watched() []client.ObjectList {
	return []client.ObjectList{
		&schedv1.AgentTaskList{}, &schedv1.WorkflowList{}, &schedv1.CronWorkflowList{}, &schedv1.UserDeploymentList{},
		&batchv1.JobList{}, &appsv1.DeploymentList{}, &corev1.ServiceList{}, &corev1.ConfigMapList{},
		&corev1.ResourceQuotaList{}, &corev1.LimitRangeList{}, &networkingv1.NetworkPolicyList{},
	}
}

// created is an object that appeared in the namespace, as a watch saw it.
type created struct {
	kind, name string
	at         metav1.Time
}

// TestDeletedTenantNamespaceGoes: a tenant's namespace holding a task
// still running (its pod holds the outputs finalizer), a task that
// succeeded with outputs, a workflow in the middle of a step, a schedule
// due to fire every minute and a running app is deleted by the admin; it
// goes within goneTimeout, and the operator creates nothing in it once its
// deletion started: the namespace stuck Terminating that an SRE would
// otherwise see forever.
func TestDeletedTenantNamespaceGoes(t *testing.T) {
	ctx := t.Context()
	ns := testenv.Namespace(t, sim.Client)
	n := &corev1.Namespace{}
	if err := sim.Client.Get(ctx, client.ObjectKey{Name: ns}, n); err != nil {
		t.Fatal(err)
	}
	n.Labels = map[string]string{schedv1.LabelTier: "team"}
	if err := sim.Client.Update(ctx, n); err != nil {
		t.Fatal(err)
	}
	tess, err := testenv.BindUser(ctx, sim.Client, sim.Config, ns, member, "kubectl-sched-tenant",
		authorizationv1.ResourceAttributes{Verb: "create", Group: schedv1.GroupVersion.Group, Resource: "agenttasks"})
	if err != nil {
		t.Fatal(err)
	}

	// Everything the operator makes or a tenant makes through it,
	// watched from now on: what appears after the deletion started is
	// what the operator created into a terminating namespace.
	var (
		mu     sync.Mutex
		seen   []created
		events = map[watch.EventType]int{}
	)
	watchCtx, stopWatch := context.WithCancel(context.Background())
	waitWatch, err := testenv.WatchEach(watchCtx, sim.Config, ns, watched(), func(ev watch.Event) {
		o, ok := ev.Object.(client.Object)
		if !ok {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		events[ev.Type]++
		if ev.Type == watch.Added {
			kind := strings.TrimPrefix(fmt.Sprintf("%T", o), "*")
			seen = append(seen, created{kind: kind, name: o.GetName(), at: o.GetCreationTimestamp()})
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stopWatch(); waitWatch() })

	// A task still running: its pod holds the outputs finalizer. Its
	// retries would start a new attempt when the namespace's deletion
	// kills its pod.
	createAs(t, tess, MakeAgentTask("running", ns).Spec(func(s *schedv1.AgentTaskSpec) { *s = taskSpec(3600, "") }).Retry(3, 0).Obj())
	// A task that succeeded, its outputs recorded.
	createAs(t, tess, MakeAgentTask("done", ns).Spec(func(s *schedv1.AgentTaskSpec) { *s = taskSpec(0, `{"answer":"42"}`) }).Obj())
	// A workflow in the middle of its first step, with a finally step
	// that would start when the namespace's deletion ends the first.
	createAs(t, tess, MakeWorkflow("pipeline", ns).StepTask("build", taskSpec(3600, "")).
		StepTask("ship", taskSpec(0, "")).DependsOn("build").Finally("notify", taskSpec(0, "")).Obj())
	// A schedule that fires every minute.
	createAs(t, tess, MakeCronWorkflow("nightly", ns, "* * * * *").StepTask("tick", taskSpec(3600, "")).Obj())
	// A running app.
	createAs(t, tess, MakeUserDeployment("shop", ns).Service("web", "registry.example/web:1", 8080, schedv1.ExposureInternal).Obj())

	poll(t, pollTimeout, "task running to run with its pod holding the outputs finalizer", func(ctx context.Context) error {
		at := &schedv1.AgentTask{}
		if err := tess.Get(ctx, client.ObjectKey{Namespace: ns, Name: "running"}, at); err != nil {
			return err
		}
		if at.Status.Phase != schedv1.TaskRunning || at.Status.PodName == "" {
			return fmt.Errorf("phase %s, pod %q", at.Status.Phase, at.Status.PodName)
		}
		pod := &corev1.Pod{}
		if err := sim.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: at.Status.PodName}, pod); err != nil {
			return err
		}
		if !slices.Contains(pod.Finalizers, schedv1.FinalizerOutputs) {
			return fmt.Errorf("pod %s has finalizers %v", pod.Name, pod.Finalizers)
		}
		return nil
	})
	poll(t, pollTimeout, "task done to succeed with its outputs", func(ctx context.Context) error {
		at := &schedv1.AgentTask{}
		if err := tess.Get(ctx, client.ObjectKey{Namespace: ns, Name: "done"}, at); err != nil {
			return err
		}
		if at.Status.Phase != schedv1.TaskSucceeded || at.Status.Outputs["answer"] != "42" {
			return fmt.Errorf("phase %s, outputs %v", at.Status.Phase, at.Status.Outputs)
		}
		return nil
	})
	poll(t, pollTimeout, "workflow pipeline's step build to run", func(ctx context.Context) error {
		var tasks schedv1.AgentTaskList
		if err := tess.List(ctx, &tasks, client.InNamespace(ns), client.MatchingLabels{schedv1.LabelWorkflow: "pipeline"}); err != nil {
			return err
		}
		if len(tasks.Items) != 1 || tasks.Items[0].Status.Phase != schedv1.TaskRunning {
			return fmt.Errorf("%d step tasks, want 1 Running", len(tasks.Items))
		}
		return nil
	})
	poll(t, pollTimeout, "app shop to be Running", func(ctx context.Context) error {
		ud := &schedv1.UserDeployment{}
		if err := tess.Get(ctx, client.ObjectKey{Namespace: ns, Name: "shop"}, ud); err != nil {
			return err
		}
		if ud.Status.Phase != schedv1.UserDeploymentRunning {
			return fmt.Errorf("phase %s", ud.Status.Phase)
		}
		return nil
	})
	var next time.Time
	poll(t, pollTimeout, "schedule nightly to know its next run", func(ctx context.Context) error {
		cw := &schedv1.CronWorkflow{}
		if err := tess.Get(ctx, client.ObjectKey{Namespace: ns, Name: "nightly"}, cw); err != nil {
			return err
		}
		if cw.Status.NextScheduleTime == nil {
			return fmt.Errorf("no nextScheduleTime yet")
		}
		next = cw.Status.NextScheduleTime.Time
		return nil
	})
	// Delete a moment before the schedule fires, so that the operator
	// wakes for it while the namespace terminates.
	if d := time.Until(next) - time.Second; d > 0 {
		t.Logf("waiting %s for the schedule's next run", d.Round(time.Millisecond))
		select {
		case <-time.After(d):
		case <-ctx.Done():
			t.Fatal(ctx.Err())
		}
	}

	// The admin deletes the namespace: tenants may not.
	if err := tess.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); !apierrors.IsForbidden(err) {
		t.Fatalf("the tenant's delete of its namespace: %v, want forbidden", err)
	}
	start := time.Now()
	if err := sim.Client.Delete(ctx, n); err != nil {
		t.Fatal(err)
	}
	if err := sim.Client.Get(ctx, client.ObjectKey{Name: ns}, n); err != nil {
		t.Fatal(err)
	}
	deleted := n.DeletionTimestamp
	if deleted == nil {
		t.Fatalf("namespace %s has no deletionTimestamp after its delete", ns)
	}

	// What is left each time it changes, told should the namespace stay.
	var left, history string
	err = wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, goneTimeout, true, func(ctx context.Context) (bool, error) {
		err := sim.Client.Get(ctx, client.ObjectKey{Name: ns}, n)
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		if now := remaining(ctx, ns, n); now != left {
			history += fmt.Sprintf("\n%s after the delete: %s", time.Since(start).Round(time.Second), now)
			left = now
		}
		return false, nil
	})
	took := time.Since(start)
	if err != nil {
		t.Fatalf("namespace %s still there %s after its delete; what was left:%s", ns, goneTimeout, history)
	}
	t.Logf("namespace %s gone %s after its delete", ns, took.Round(100*time.Millisecond))

	stopWatch()
	waitWatch()
	mu.Lock()
	defer mu.Unlock()
	if len(seen) == 0 {
		t.Fatal("the watches saw nothing in the namespace")
	}
	for _, c := range seen {
		if c.at.After(deleted.Time) {
			t.Errorf("%s %s was created at %s, after the namespace's deletion started (%s)", c.kind, c.name, c.at.UTC(), deleted.UTC())
		}
	}
	t.Logf("watch events: %v", events)

	// The operator's requests into the namespace once it terminated:
	// creates refused as the namespace is being terminated, retried with
	// the workqueue's backoff, are a few per object; a hot loop would be
	// thousands.
	byKind, refused := map[string]int{}, 0
	for _, r := range requestsIn(ns, start) {
		byKind[fmt.Sprintf("%s %s %d", r.method, resourceOf(r.path), r.code)]++
		if r.method != http.MethodGet && r.code >= 400 {
			refused++
		}
	}
	for _, k := range slices.Sorted(maps.Keys(byKind)) {
		t.Logf("operator request after the delete: %s x%d", k, byKind[k])
	}
	if refused > maxRefused {
		t.Errorf("the operator made %d refused writes into the terminating namespace (at most %d expected): a loop", refused, maxRefused)
	}
}

// resourceOf is the resource (and subresource) of a namespaced request's
// path: /apis/G/V/namespaces/NS/RESOURCE[/NAME[/SUB]].
func resourceOf(path string) string {
	parts := strings.Split(path, "/")
	i := slices.Index(parts, "namespaces")
	if i < 0 || i+2 >= len(parts) {
		return path
	}
	res := parts[i+2]
	if i+4 < len(parts) {
		res += "/" + parts[i+4]
	}
	return res
}

// remaining says what holds namespace ns: its conditions (the namespace
// controller names what is left and which finalizers hold it), and the
// objects left, with their finalizers.
func remaining(ctx context.Context, ns string, n *corev1.Namespace) string {
	var b strings.Builder
	fmt.Fprintf(&b, "phase %s, finalizers %v; ", n.Status.Phase, n.Spec.Finalizers)
	for _, c := range n.Status.Conditions {
		fmt.Fprintf(&b, "%s=%s: %s; ", c.Type, c.Status, c.Message)
	}
	for _, list := range append(watched(), &corev1.PodList{}) {
		if err := sim.Client.List(ctx, list, client.InNamespace(ns)); err != nil {
			fmt.Fprintf(&b, "list %T: %v; ", list, err)
			continue
		}
		_ = meta.EachListItem(list, func(o runtime.Object) error {
			obj := o.(client.Object)
			fmt.Fprintf(&b, "%T %s (finalizers %v, deleting %v); ", obj, obj.GetName(), obj.GetFinalizers(), obj.GetDeletionTimestamp() != nil)
			return nil
		})
	}
	return b.String()
}

package schedext_test

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	. "github.com/kubectl-sched/kubectl-sched/api/builders"
	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
	"github.com/kubectl-sched/kubectl-sched/hack/cluster"
	"github.com/kubectl-sched/kubectl-sched/hack/testenv"
)

// simNodes are the simulated cluster's nodes.
var simNodes = []string{"sim-general-a", "sim-general-b", "sim-general-c", "sim-gpu-c", "sim-highmem-a", "sim-spot-b"}

// TestNodesCarryTheAttachedScheduler: a node is labelled with the
// scheduler its loader's attach check reports, and only while it does: the
// label goes when the scheduler detaches, the node leaves the selection or
// goes to an older SchedExt, or the SchedExt is deleted (also while the
// operator is down), and a label set by hand is undone.
func TestNodesCarryTheAttachedScheduler(t *testing.T) {
	t.Cleanup(func() { clearCPUSchedulerLabels(t) })
	lavdOnGeneral := map[string]string{"sim-general-a": "scx_lavd", "sim-general-b": "scx_lavd", "sim-general-c": "scx_lavd"}

	create(t, MakeSchedExt("label-lavd").Scheduler("scx_lavd").NodeSelector(schedv1.NodeLabelPool, "general").Obj())
	waitNodeLabels(t, "attached on the general pool", lavdOnGeneral)

	// A label already right is not written again: a node change the
	// labeler looks at (another label) is reconciled, and patches nothing.
	const other = "scx.example/unrelated"
	t.Cleanup(func() {
		for _, n := range generalNodes {
			labelNode(t, n, other, "")
		}
	})
	time.Sleep(time.Second) // the last pod and node events of the attach
	reconciles, patches := reconcileCountOf(t, "schedext-nodes"), nodePatches.Load()
	for _, n := range generalNodes {
		labelNode(t, n, other, "x")
	}
	testenv.Poll(t, testenv.Timeout, "the relabelled nodes reconciled", func(context.Context) (bool, error) {
		return reconcileCountOf(t, "schedext-nodes") >= reconciles+len(generalNodes), nil
	})
	time.Sleep(time.Second)
	if n := nodePatches.Load() - patches; n != 0 {
		t.Errorf("%d node writes while every label was right", n)
	}

	// Detach on one node: its attach check fails, the pod is not Ready.
	setAttached(t, "label-lavd", "sim-general-b", false)
	waitNodeLabels(t, "detached from general-b", map[string]string{"sim-general-a": "scx_lavd", "sim-general-c": "scx_lavd"})
	setAttached(t, "label-lavd", "sim-general-b", true)
	waitNodeLabels(t, "attached again on general-b", lavdOnGeneral)

	// Only the operator says: a wrong value and a label on a node nothing
	// runs on are both undone.
	labelNode(t, "sim-general-a", schedv1.NodeLabelCPUScheduler, "scx_rusty")
	labelNode(t, "sim-highmem-a", schedv1.NodeLabelCPUScheduler, "scx_lavd")
	waitNodeLabels(t, "hand-set labels undone", lavdOnGeneral)

	// Leaving the selection.
	update(t, "label-lavd", func(s *schedv1.SchedExt) { s.Spec.NodeSelector[schedv1.NodeLabelZone] = "zone-a" })
	waitNodeLabels(t, "only zone-a left", map[string]string{"sim-general-a": "scx_lavd"})
	update(t, "label-lavd", func(s *schedv1.SchedExt) { delete(s.Spec.NodeSelector, schedv1.NodeLabelZone) })
	waitNodeLabels(t, "the general pool again", lavdOnGeneral)

	// Arbitration: a younger SchedExt gets the nodes the older leaves, and
	// loses one when the older widens its selection to it.
	create(t, MakeSchedExt("label-rusty").Scheduler("scx_rusty").Obj())
	waitNodeLabels(t, "rusty on highmem", map[string]string{
		"sim-general-a": "scx_lavd", "sim-general-b": "scx_lavd", "sim-general-c": "scx_lavd", "sim-highmem-a": "scx_rusty"})
	update(t, "label-lavd", func(s *schedv1.SchedExt) { s.Spec.NodeSelector = nil })
	waitNodeLabels(t, "highmem handed to the older lavd", map[string]string{
		"sim-general-a": "scx_lavd", "sim-general-b": "scx_lavd", "sim-general-c": "scx_lavd", "sim-highmem-a": "scx_lavd"})
	// Deleting the older hands everything to the younger.
	remove(t, "label-lavd")
	waitNodeLabels(t, "every untainted node to rusty", map[string]string{
		"sim-general-a": "scx_rusty", "sim-general-b": "scx_rusty", "sim-general-c": "scx_rusty", "sim-highmem-a": "scx_rusty"})

	// Deleted while the operator is down: its loaders go with the garbage
	// collector, and the operator removes the labels when it starts.
	if err := op.Stop(); err != nil {
		t.Fatal(err)
	}
	restarted := false
	t.Cleanup(func() {
		if !restarted {
			_ = op.Start(nil)
		}
	})
	if err := sim.Client.Delete(t.Context(), &schedv1.SchedExt{ObjectMeta: metav1.ObjectMeta{Name: "label-rusty"}}); err != nil {
		t.Fatal(err)
	}
	testenv.Poll(t, testenv.Timeout, "the deleted SchedExt's loaders to go", func(ctx context.Context) (bool, error) {
		var pods corev1.PodList
		err := sim.Client.List(ctx, &pods, client.InNamespace(op.Options().Settings.SchedulerNamespace), client.MatchingLabels{schedv1.LabelSchedExt: "label-rusty"})
		return err == nil && len(pods.Items) == 0, err
	})
	if got := nodeLabels(t); len(got) != 4 {
		t.Fatalf("labels %v while the operator is down: want the four it left", got)
	}
	if err := op.Start(nil); err != nil {
		t.Fatal(err)
	}
	restarted = true
	waitNodeLabels(t, "no label once the operator is back", map[string]string{})
}

// TestWorkloadsFollowTheCPUScheduler: tasks, workflow steps and apps that
// ask for a CPU scheduler run only where it is attached; waiting for it,
// they say which scheduler and which SchedExts load it; an app's pods
// leave a node it detaches from, a running task's pod finishes where it is.
func TestWorkloadsFollowTheCPUScheduler(t *testing.T) {
	t.Cleanup(func() { clearCPUSchedulerLabels(t) })
	ns := testenv.Namespace(t, sim.Client)
	bpfland := schedv1.Placement{CPUScheduler: "scx_bpfland"}

	// Nothing loads scx_bpfland: the task and the workflow step wait, and
	// say who can change that.
	task := MakeAgentTask("waits", ns).Image("registry.example/agent:1").Placement(bpfland).Obj()
	createObj(t, task)
	wf := MakeWorkflow("waits", ns).StepTask("only", schedv1.AgentTaskSpec{Image: "registry.example/agent:1", Placement: &bpfland}).Obj()
	createObj(t, wf)
	none := "no node runs the CPU scheduler scx_bpfland (placement.cpuScheduler) and no SchedExt loads it: ask a cluster admin to create one (kubectl sched schedext set NAME --sched scx_bpfland --nodes LABEL=VALUE)"
	waitTaskMessage(t, ns, "waits", schedv1.ReasonCPUSchedulerUnavailable, none)
	waitStepMessage(t, ns, "waits", none)

	// A SchedExt loads it, not attached yet: the message names it.
	create(t, MakeSchedExt("follow-bpfland").Scheduler("scx_bpfland").NodeSelector(schedv1.NodeLabelPool, "highmem").
		PodAnnotation(cluster.AnnotationReady, "false").Obj())
	pending := "no node runs the CPU scheduler scx_bpfland (placement.cpuScheduler) yet: SchedExt follow-bpfland (NotAttached) loads it, and the pod runs once a node's kernel reports it attached"
	waitTaskMessage(t, ns, "waits", schedv1.ReasonCPUSchedulerUnavailable, pending)
	waitStepMessage(t, ns, "waits", pending)

	// Attached: the task and the step run there, and only there.
	setAttached(t, "follow-bpfland", "sim-highmem-a", true)
	for _, name := range []string{"waits", stepTask(t, wf)} {
		got := waitTask(t, ns, name, func(at *schedv1.AgentTask) bool { return at.Status.Phase == schedv1.TaskSucceeded })
		if node := taskNode(t, ns, got); node != "sim-highmem-a" {
			t.Errorf("task %s ran on %s, want sim-highmem-a, the one node that runs scx_bpfland", name, node)
		}
	}

	// An app and a long task on scx_lavd, loaded on the general pool.
	create(t, MakeSchedExt("follow-lavd").Scheduler("scx_lavd").NodeSelector(schedv1.NodeLabelPool, "general").Obj())
	waitNodeLabels(t, "lavd attached", map[string]string{"sim-general-a": "scx_lavd", "sim-general-b": "scx_lavd", "sim-general-c": "scx_lavd", "sim-highmem-a": "scx_bpfland"})
	lavd := schedv1.Placement{CPUScheduler: "scx_lavd"}
	app := MakeUserDeployment("shop", ns).Service("api", "registry.example/api:1", 8080, schedv1.ExposureInternal).Replicas("api", 2).Placement(lavd).Obj()
	createObj(t, app)
	long := MakeAgentTask("long", ns).Image("registry.example/agent:1").Placement(lavd).PodAnnotation(cluster.AnnotationRunSeconds, "600").Obj()
	createObj(t, long)
	pods := waitAppPods(t, ns, "2 ready pods on lavd nodes", func(ps []corev1.Pod) bool {
		return len(ps) == 2 && allReady(ps) && onNodes(ps, "sim-general-a", "sim-general-b", "sim-general-c")
	})
	running := waitTask(t, ns, "long", func(at *schedv1.AgentTask) bool { return at.Status.Phase == schedv1.TaskRunning })
	taskOn := taskNode(t, ns, running)

	// lavd detaches from the node of one app pod: the pods there are
	// evicted and come back on nodes that run lavd; the app's other pod and
	// the task's pod stay.
	from := pods[0].Spec.NodeName
	setAttached(t, "follow-lavd", from, false)
	rest := slices.DeleteFunc([]string{"sim-general-a", "sim-general-b", "sim-general-c"}, func(n string) bool { return n == from })
	var gone, stay []types.UID
	for _, p := range pods {
		if p.Spec.NodeName == from {
			gone = append(gone, p.UID)
		} else {
			stay = append(stay, p.UID)
		}
	}
	moved := waitAppPods(t, ns, "the pods moved off "+from, func(ps []corev1.Pod) bool {
		return len(ps) == 2 && allReady(ps) && onNodes(ps, rest...) && !slices.ContainsFunc(ps, func(p corev1.Pod) bool { return slices.Contains(gone, p.UID) })
	})
	for _, uid := range stay {
		if !slices.ContainsFunc(moved, func(p corev1.Pod) bool { return p.UID == uid }) {
			t.Errorf("a pod on a node where lavd stayed was replaced too: before %v, after %v", podPlaces(pods), podPlaces(moved))
		}
	}
	if !appEventSeen(t, ns, "shop", schedv1.ReasonCPUSchedulerDetached, pods[0].Name) {
		t.Errorf("no %s event naming %s", schedv1.ReasonCPUSchedulerDetached, pods[0].Name)
	}
	if got := waitTask(t, ns, "long", func(*schedv1.AgentTask) bool { return true }); got.Status.Phase != schedv1.TaskRunning || taskNode(t, ns, got) != taskOn {
		t.Errorf("the running task is %s on %s, want still Running on %s", got.Status.Phase, taskNode(t, ns, got), taskOn)
	}

	// Detached from another node: its pods join the last node with lavd.
	last := rest[0]
	setAttached(t, "follow-lavd", rest[1], false)
	together := waitAppPods(t, ns, "every pod on "+last, func(ps []corev1.Pod) bool {
		return len(ps) == 2 && allReady(ps) && onNodes(ps, last)
	})

	// Detached from the last one too: nowhere to go, so the pods stay.
	before := podNames(together)
	reconciles := reconcileCountOf(t, "userdeployment")
	setAttached(t, "follow-lavd", last, false)
	waitNodeLabels(t, "lavd detached everywhere", map[string]string{"sim-highmem-a": "scx_bpfland"})
	// The label change wakes the app; after that nothing is evicted.
	testenv.Poll(t, testenv.Timeout, "the app reconciled after the detach", func(context.Context) (bool, error) {
		return reconcileCountOf(t, "userdeployment") > reconciles, nil
	})
	time.Sleep(2 * time.Second)
	if after := podNames(appPods(t, ns)); !slices.Equal(before, after) {
		t.Errorf("pods %v became %v with nowhere to go", before, after)
	}
	remove(t, "follow-lavd")
	remove(t, "follow-bpfland")
}

// createObj creates a namespaced object for the test.
func createObj(t *testing.T, obj client.Object) {
	t.Helper()
	if err := sim.Client.Create(t.Context(), obj); err != nil {
		t.Fatal(err)
	}
}

// nodeLabels are the simulated nodes' CPU scheduler labels, by node.
func nodeLabels(t *testing.T) map[string]string {
	t.Helper()
	var nodes corev1.NodeList
	if err := sim.Client.List(t.Context(), &nodes); err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, n := range nodes.Items {
		if v, ok := n.Labels[schedv1.NodeLabelCPUScheduler]; ok {
			out[n.Name] = v
		}
	}
	return out
}

func waitNodeLabels(t *testing.T, what string, want map[string]string) {
	t.Helper()
	var got map[string]string
	err := wait.PollUntilContextTimeout(t.Context(), 200*time.Millisecond, testenv.Timeout, true, func(context.Context) (bool, error) {
		got = nodeLabels(t)
		return maps.Equal(got, want), nil
	})
	if err != nil {
		t.Fatalf("waiting for node labels (%s): have %v, want %v", what, got, want)
	}
}

// clearCPUSchedulerLabels removes what a failed test may have left, so the
// next test starts from no label.
func clearCPUSchedulerLabels(t *testing.T) {
	for _, n := range simNodes {
		labelNode(t, n, schedv1.NodeLabelCPUScheduler, "")
	}
}

// setAttached makes a SchedExt's loader on node report the scheduler
// attached or not, as its attach check would (kwok's pod-readiness stage).
func setAttached(t *testing.T, scx, node string, attached bool) {
	t.Helper()
	var pod corev1.Pod
	testenv.Poll(t, testenv.Timeout, fmt.Sprintf("%s's running loader on %s", scx, node), func(ctx context.Context) (bool, error) {
		var pods corev1.PodList
		if err := sim.Client.List(ctx, &pods, client.InNamespace(op.Options().Settings.SchedulerNamespace), client.MatchingLabels{schedv1.LabelSchedExt: scx}); err != nil {
			return false, err
		}
		for _, p := range pods.Items {
			if p.Spec.NodeName == node && p.DeletionTimestamp.IsZero() && p.Status.Phase == corev1.PodRunning {
				pod = p
				return true, nil
			}
		}
		return false, nil
	})
	patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, cluster.AnnotationReady, fmt.Sprint(attached))
	if err := sim.Client.Patch(t.Context(), &pod, client.RawPatch(types.MergePatchType, []byte(patch))); err != nil {
		t.Fatal(err)
	}
}

func waitTask(t *testing.T, ns, name string, cond func(*schedv1.AgentTask) bool) *schedv1.AgentTask {
	t.Helper()
	got := &schedv1.AgentTask{}
	err := wait.PollUntilContextTimeout(t.Context(), 200*time.Millisecond, testenv.Timeout, true, func(ctx context.Context) (bool, error) {
		if err := sim.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, got); err != nil {
			return false, client.IgnoreNotFound(err)
		}
		return cond(got), nil
	})
	if err != nil {
		t.Fatalf("waiting for task %s: %v; last status: %+v", name, err, got.Status)
	}
	return got
}

// waitTaskMessage waits for the task's reason and message, in its status
// and its Ready condition.
func waitTaskMessage(t *testing.T, ns, name, reason, msg string) {
	t.Helper()
	waitTask(t, ns, name, func(at *schedv1.AgentTask) bool {
		ready := meta.FindStatusCondition(at.Status.Conditions, schedv1.ConditionReady)
		return at.Status.Phase == schedv1.TaskPending && at.Status.Reason == reason && at.Status.Message == msg &&
			ready != nil && ready.Reason == reason && ready.Message == msg
	})
}

func waitStepMessage(t *testing.T, ns, name, msg string) {
	t.Helper()
	got := &schedv1.Workflow{}
	err := wait.PollUntilContextTimeout(t.Context(), 200*time.Millisecond, testenv.Timeout, true, func(ctx context.Context) (bool, error) {
		if err := sim.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, got); err != nil {
			return false, client.IgnoreNotFound(err)
		}
		return len(got.Status.Steps) == 1 && got.Status.Steps[0].Phase == schedv1.StepPending && got.Status.Steps[0].Message == msg, nil
	})
	if err != nil {
		t.Fatalf("waiting for workflow %s's step to say %q: %v; last status: %+v", name, msg, err, got.Status)
	}
}

// stepTask is the name of a workflow's first step's task.
func stepTask(t *testing.T, wf *schedv1.Workflow) string {
	t.Helper()
	got := &schedv1.Workflow{}
	if err := sim.Client.Get(t.Context(), client.ObjectKeyFromObject(wf), got); err != nil {
		t.Fatal(err)
	}
	if len(got.Status.Steps) == 0 || got.Status.Steps[0].TaskName == "" {
		t.Fatalf("workflow %s has no step task: %+v", wf.Name, got.Status)
	}
	return got.Status.Steps[0].TaskName
}

// taskNode is the node of the task's pod.
func taskNode(t *testing.T, ns string, at *schedv1.AgentTask) string {
	t.Helper()
	if at.Status.PodName == "" {
		return ""
	}
	pod := &corev1.Pod{}
	if err := sim.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: at.Status.PodName}, pod); err != nil {
		if apierrors.IsNotFound(err) {
			return ""
		}
		t.Fatal(err)
	}
	return pod.Spec.NodeName
}

// appPods are the shop app's pods that are not being deleted, by name.
func appPods(t *testing.T, ns string) []corev1.Pod {
	t.Helper()
	var pods corev1.PodList
	if err := sim.Client.List(t.Context(), &pods, client.InNamespace(ns), client.MatchingLabels{schedv1.LabelUserDeployment: "shop"}); err != nil {
		t.Fatal(err)
	}
	out := slices.DeleteFunc(pods.Items, func(p corev1.Pod) bool { return !p.DeletionTimestamp.IsZero() })
	slices.SortFunc(out, func(a, b corev1.Pod) int { return strings.Compare(a.Name, b.Name) })
	return out
}

func waitAppPods(t *testing.T, ns, what string, cond func([]corev1.Pod) bool) []corev1.Pod {
	t.Helper()
	var got []corev1.Pod
	err := wait.PollUntilContextTimeout(t.Context(), 200*time.Millisecond, testenv.Timeout, true, func(context.Context) (bool, error) {
		got = appPods(t, ns)
		return cond(got), nil
	})
	if err != nil {
		t.Fatalf("waiting for the app's pods (%s): %v; have %v", what, err, podPlaces(got))
	}
	return got
}

func allReady(pods []corev1.Pod) bool {
	for _, p := range pods {
		ready := false
		for _, c := range p.Status.Conditions {
			ready = ready || (c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue)
		}
		if !ready {
			return false
		}
	}
	return true
}

func onNodes(pods []corev1.Pod, nodes ...string) bool {
	for _, p := range pods {
		if !slices.Contains(nodes, p.Spec.NodeName) {
			return false
		}
	}
	return true
}

func podNames(pods []corev1.Pod) []string {
	out := make([]string, 0, len(pods))
	for _, p := range pods {
		out = append(out, p.Name)
	}
	return out
}

func podPlaces(pods []corev1.Pod) []string {
	out := make([]string, 0, len(pods))
	for _, p := range pods {
		out = append(out, p.Name+"@"+p.Spec.NodeName)
	}
	return out
}

// appEventSeen polls for an event with reason about the app whose note
// names what.
func appEventSeen(t *testing.T, ns, app, reason, what string) bool {
	t.Helper()
	err := wait.PollUntilContextTimeout(t.Context(), 200*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
		var evs eventsv1.EventList
		if err := sim.Client.List(ctx, &evs, client.InNamespace(ns)); err != nil {
			return false, err
		}
		for _, e := range evs.Items {
			if e.Regarding.Kind == "UserDeployment" && e.Regarding.Name == app && e.Reason == reason && strings.Contains(e.Note, what) {
				return true, nil
			}
		}
		return false, nil
	})
	return err == nil
}

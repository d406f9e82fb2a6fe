package schedext_test

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"sigs.k8s.io/controller-runtime/pkg/client"

	. "github.com/kubectl-sched/kubectl-sched/api/builders"
	"github.com/kubectl-sched/kubectl-sched/api/names"
	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
	"github.com/kubectl-sched/kubectl-sched/hack/cluster"
	"github.com/kubectl-sched/kubectl-sched/hack/testenv"
	"github.com/kubectl-sched/kubectl-sched/operator/app"
	"github.com/kubectl-sched/kubectl-sched/operator/schedext"
	plugincmd "github.com/kubectl-sched/kubectl-sched/plugin/cmd"
)

var (
	sim *testenv.Sim
	op  *testenv.Operator
)

// One simulated cluster and one operator (with only its generated RBAC)
// for the package; the operator logs to a file, kept and named when a test
// fails. The tests run one after another: arbitration spans every SchedExt
// in the cluster, so each test removes its own before the next starts.
func TestMain(m *testing.M) {
	testenv.Main(m, testenv.MainOptions{
		Sim: &sim,
		// The workload controllers too: tasks, steps and apps follow the
		// CPU scheduler the SchedExts attach (cpuscheduler_test.go).
		Controllers: []string{"schedext", "agenttask", "workflow", "userdeployment"},
		Options: func(o *app.Options) {
			o.Settings.SchedulerImages["scx_lavd"] = "registry.example/scx:lavd"
			o.Settings.SchedulerImages["scx_rusty"] = "registry.example/scx:rusty"
			o.Settings.AllowedSchedulerRegistries = []string{"registry.example"}
		},
		Operator:      &op,
		OperatorLog:   "schedext-operator-*.log",
		WrapTransport: func(rt http.RoundTripper) http.RoundTripper { return nodePatchCounter{rt} },
	})
}

// nodePatches counts the operator's writes to nodes.
var nodePatches atomic.Int64

type nodePatchCounter struct{ next http.RoundTripper }

func (c nodePatchCounter) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Method != http.MethodGet && strings.HasPrefix(req.URL.Path, "/api/v1/nodes") {
		nodePatches.Add(1)
	}
	return c.next.RoundTrip(req)
}

var (
	generalNodes = []string{"sim-general-a", "sim-general-b", "sim-general-c"}
	untainted    = []string{"sim-general-a", "sim-general-b", "sim-general-c", "sim-highmem-a"}
)

// TestSchedulerOnANodePool: pods land only on the pool's nodes, the counts
// and conditions say attached, and deleting the SchedExt leaves nothing.
func TestSchedulerOnANodePool(t *testing.T) {
	create(t, MakeSchedExt("lavd-general").Scheduler("scx_lavd").NodeSelector(schedv1.NodeLabelPool, "general").
		Args("--performance").Env("RUST_LOG", "info").Obj())

	got := waitSchedExt(t, "lavd-general", "attached on the general pool", func(s *schedv1.SchedExt) bool {
		return s.Status.DesiredNodes == 3 && s.Status.ReadyNodes == 3 && condIs(s, schedv1.ConditionReady, metav1.ConditionTrue, schedv1.ReasonAttached)
	})
	want := schedv1.SchedExtStatus{
		ObservedGeneration: got.Generation, ResolvedImage: "registry.example/scx:lavd", DaemonSetName: "scx-lavd-general",
		DesiredNodes: 3, ReadyNodes: 3, AvailableNodes: 3, UnavailableNodes: 0,
	}
	gotCounts := got.Status
	gotCounts.Conditions = nil
	if !equalStatus(want, gotCounts) {
		t.Errorf("status %+v, want %+v", gotCounts, want)
	}
	if !condIs(got, schedv1.ConditionProgressing, metav1.ConditionFalse, schedv1.ReasonRolledOut) ||
		!condIs(got, schedv1.ConditionDegraded, metav1.ConditionFalse, schedv1.ReasonAsExpected) {
		t.Errorf("conditions %+v", got.Status.Conditions)
	}
	if nodes := podNodes(t, "lavd-general"); !slices.Equal(nodes, generalNodes) {
		t.Errorf("pods on %v, want %v", nodes, generalNodes)
	}

	ds := daemonSet(t, "lavd-general")
	if !metav1.IsControlledBy(ds, got) {
		t.Errorf("DaemonSet owners %+v, want the SchedExt", ds.OwnerReferences)
	}
	pod := ds.Spec.Template.Spec
	sched := pod.Containers[0]
	if sched.Name != schedext.ContainerScheduler || !slices.Equal(sched.Command, []string{"scx_lavd"}) || !slices.Equal(sched.Args, []string{"--performance"}) ||
		len(sched.Env) != 1 || sched.Env[0].Value != "info" || sched.SecurityContext == nil || !*sched.SecurityContext.Privileged {
		t.Errorf("scheduler container %+v", sched)
	}
	if pod.Containers[1].ReadinessProbe == nil || pod.InitContainers[0].Image != op.Options().Settings.HelperImage {
		t.Errorf("attach check or preflight missing: %+v / %+v", pod.Containers[1], pod.InitContainers)
	}

	if !eventSeen(t, "lavd-general", schedv1.ReasonAttached) {
		t.Errorf("no %s event", schedv1.ReasonAttached)
	}

	// Deletion leaves nothing: the garbage collector follows the owner
	// reference from the namespaced DaemonSet to the cluster-scoped SchedExt.
	remove(t, "lavd-general")
}

// TestSchedulerNamespaceMissing: the operator creates no namespace (install
// does, with its Role there). Without it a SchedExt says what to do; once
// it is back, with the Role, the SchedExt proceeds without a nudge.
func TestSchedulerNamespaceMissing(t *testing.T) {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: op.Options().Settings.SchedulerNamespace}}
	if err := sim.Client.Delete(t.Context(), ns); err != nil {
		t.Fatal(err)
	}
	if err := wait.PollUntilContextTimeout(t.Context(), 200*time.Millisecond, testenv.Timeout, true, func(ctx context.Context) (bool, error) {
		return apierrors.IsNotFound(sim.Client.Get(ctx, client.ObjectKeyFromObject(ns), ns)), nil
	}); err != nil {
		t.Fatalf("namespace %s not gone: %v", ns.Name, err)
	}

	create(t, MakeSchedExt("no-namespace").Scheduler("scx_lavd").NodeSelector(schedv1.NodeLabelPool, "highmem").Obj())
	got := waitSchedExt(t, "no-namespace", "degraded for the missing namespace", func(s *schedv1.SchedExt) bool {
		return condIs(s, schedv1.ConditionDegraded, metav1.ConditionTrue, schedv1.ReasonSchedulerNamespaceMissing)
	})
	if c := meta.FindStatusCondition(got.Status.Conditions, schedv1.ConditionReady); c == nil ||
		!strings.Contains(c.Message, "the scheduler namespace "+ns.Name+" does not exist; 'kubectl sched install' creates it") {
		t.Errorf("Ready condition %+v does not say what to do", c)
	}

	// What install does: the namespace and the operator's Role in it.
	if _, err := testenv.OperatorConfig(t.Context(), sim.Config); err != nil {
		t.Fatal(err)
	}
	waitSchedExt(t, "no-namespace", "attached once the namespace is back", func(s *schedv1.SchedExt) bool { return s.Status.ReadyNodes == 1 })
	remove(t, "no-namespace")
}

// TestNotAttached: pods that run but whose attach probe fails are not
// counted as ready; fixing it (here, the simulated probe) makes them ready.
func TestNotAttached(t *testing.T) {
	create(t, MakeSchedExt("unattached").Scheduler("scx_rusty").NodeSelector(schedv1.NodeLabelPool, "general").
		PodAnnotation(cluster.AnnotationReady, "false").Obj())
	got := waitSchedExt(t, "unattached", "running but not attached", func(s *schedv1.SchedExt) bool {
		return s.Status.DesiredNodes == 3 && len(podNodes(t, "unattached")) == 3 &&
			condIs(s, schedv1.ConditionReady, metav1.ConditionFalse, schedv1.ReasonNotAttached)
	})
	if got.Status.ReadyNodes != 0 || got.Status.AvailableNodes != 0 || got.Status.UnavailableNodes != 3 {
		t.Errorf("counts ready %d available %d unavailable %d, want 0 0 3", got.Status.ReadyNodes, got.Status.AvailableNodes, got.Status.UnavailableNodes)
	}
	if c := meta.FindStatusCondition(got.Status.Conditions, schedv1.ConditionReady); !strings.Contains(c.Message, "attached on 0 of 3 nodes") || !strings.Contains(c.Message, "sim-general-a") {
		t.Errorf("Ready message %q", c.Message)
	}
	if condIs(got, schedv1.ConditionDegraded, metav1.ConditionTrue, "") {
		t.Errorf("not attached (yet) is not Degraded: %+v", got.Status.Conditions)
	}

	// A spec change rolls the DaemonSet; the new pods attach.
	update(t, "unattached", func(s *schedv1.SchedExt) { s.Spec.PodMetadata = nil })
	waitSchedExt(t, "unattached", "attached after the fix", func(s *schedv1.SchedExt) bool {
		return s.Status.ReadyNodes == 3 && s.Status.ObservedGeneration == s.Generation &&
			condIs(s, schedv1.ConditionReady, metav1.ConditionTrue, schedv1.ReasonAttached)
	})
	remove(t, "unattached")
}

// TestConflictingSchedExts: the older keeps shared nodes; the younger
// excludes them, says so, and takes them over when the older narrows and
// then goes.
func TestConflictingSchedExts(t *testing.T) {
	create(t, MakeSchedExt("conflict-a").Scheduler("scx_lavd").NodeSelector(schedv1.NodeLabelPool, "general").Obj())
	waitSchedExt(t, "conflict-a", "attached", func(s *schedv1.SchedExt) bool { return s.Status.ReadyNodes == 3 })
	// Younger (and later by name, should they share a creation second);
	// no selector: every node without an untolerated taint.
	create(t, MakeSchedExt("conflict-b").Scheduler("scx_rusty").Obj())

	young := waitSchedExt(t, "conflict-b", "in conflict over the general pool", func(s *schedv1.SchedExt) bool {
		return slices.Equal(s.Status.ConflictingNodes, generalNodes) && s.Status.DesiredNodes == 1 && s.Status.ReadyNodes == 1 &&
			condIs(s, schedv1.ConditionDegraded, metav1.ConditionTrue, schedv1.ReasonSchedulerConflict)
	})
	msg := meta.FindStatusCondition(young.Status.Conditions, schedv1.ConditionDegraded).Message
	for _, w := range append([]string{"conflict-a"}, generalNodes...) {
		if !strings.Contains(msg, w) {
			t.Errorf("Degraded message %q does not name %s", msg, w)
		}
	}
	waitPodNodes(t, "conflict-b", []string{"sim-highmem-a"})
	waitPodNodes(t, "conflict-a", generalNodes)
	old := get(t, "conflict-a")
	if len(old.Status.ConflictingNodes) != 0 || condIs(old, schedv1.ConditionDegraded, metav1.ConditionTrue, "") {
		t.Errorf("the older one is not in conflict: %+v", old.Status)
	}
	if !eventSeen(t, "conflict-b", schedv1.ReasonSchedulerConflict) {
		t.Errorf("no %s event on the younger", schedv1.ReasonSchedulerConflict)
	}

	// Narrowed: the older keeps zone-a only; the younger takes the rest.
	update(t, "conflict-a", func(s *schedv1.SchedExt) { s.Spec.NodeSelector[schedv1.NodeLabelZone] = "zone-a" })
	waitSchedExt(t, "conflict-b", "holding the narrowed-away nodes", func(s *schedv1.SchedExt) bool {
		return slices.Equal(s.Status.ConflictingNodes, []string{"sim-general-a"}) && s.Status.DesiredNodes == 3 && s.Status.ReadyNodes == 3
	})
	waitPodNodes(t, "conflict-b", []string{"sim-general-b", "sim-general-c", "sim-highmem-a"})
	waitPodNodes(t, "conflict-a", []string{"sim-general-a"})

	// Deleted: the younger takes everything and is no longer Degraded.
	remove(t, "conflict-a")
	waitSchedExt(t, "conflict-b", "owning every untainted node", func(s *schedv1.SchedExt) bool {
		return len(s.Status.ConflictingNodes) == 0 && s.Status.DesiredNodes == 4 && s.Status.ReadyNodes == 4 &&
			condIs(s, schedv1.ConditionDegraded, metav1.ConditionFalse, schedv1.ReasonAsExpected) &&
			condIs(s, schedv1.ConditionReady, metav1.ConditionTrue, schedv1.ReasonAttached)
	})
	waitPodNodes(t, "conflict-b", untainted)
	remove(t, "conflict-b")
}

// TestNodeRelabelled: a node labelled into an older SchedExt's selection
// moves to it from a younger one, and back when the label goes; the counts
// follow.
func TestNodeRelabelled(t *testing.T) {
	const key, node = "scx.example/test", "sim-highmem-a"
	t.Cleanup(func() { labelNode(t, node, key, "") })
	create(t, MakeSchedExt("relabel-old").Scheduler("scx_lavd").NodeSelector(key, "on").Obj())
	waitSchedExt(t, "relabel-old", "without nodes", func(s *schedv1.SchedExt) bool {
		return s.Status.DesiredNodes == 0 && condIs(s, schedv1.ConditionReady, metav1.ConditionFalse, schedv1.ReasonNoNodes)
	})
	create(t, MakeSchedExt("relabel-young").Scheduler("scx_rusty").NodeSelector(schedv1.NodeLabelPool, "highmem").Obj())
	waitSchedExt(t, "relabel-young", "attached on highmem", func(s *schedv1.SchedExt) bool {
		return s.Status.ReadyNodes == 1 && condIs(s, schedv1.ConditionReady, metav1.ConditionTrue, schedv1.ReasonAttached)
	})

	labelNode(t, node, key, "on")
	waitSchedExt(t, "relabel-old", "attached on the relabelled node", func(s *schedv1.SchedExt) bool {
		return s.Status.DesiredNodes == 1 && s.Status.ReadyNodes == 1 && condIs(s, schedv1.ConditionReady, metav1.ConditionTrue, schedv1.ReasonAttached)
	})
	waitSchedExt(t, "relabel-young", "in conflict", func(s *schedv1.SchedExt) bool {
		return s.Status.DesiredNodes == 0 && slices.Equal(s.Status.ConflictingNodes, []string{node}) &&
			condIs(s, schedv1.ConditionReady, metav1.ConditionFalse, schedv1.ReasonSchedulerConflict)
	})
	waitPodNodes(t, "relabel-young", nil)
	waitPodNodes(t, "relabel-old", []string{node})

	labelNode(t, node, key, "")
	waitSchedExt(t, "relabel-old", "without nodes again", func(s *schedv1.SchedExt) bool {
		return s.Status.DesiredNodes == 0 && s.Status.ReadyNodes == 0 && condIs(s, schedv1.ConditionReady, metav1.ConditionFalse, schedv1.ReasonNoNodes)
	})
	waitSchedExt(t, "relabel-young", "back on highmem", func(s *schedv1.SchedExt) bool {
		return s.Status.ReadyNodes == 1 && len(s.Status.ConflictingNodes) == 0 && condIs(s, schedv1.ConditionReady, metav1.ConditionTrue, schedv1.ReasonAttached)
	})
	waitPodNodes(t, "relabel-old", nil)
	remove(t, "relabel-old")
	remove(t, "relabel-young")
}

// TestNoWritesWhenNothingChanged: events that change nothing (a node label
// no selector uses, an annotation on the SchedExt) are reconciled but write
// nothing: resourceVersions stay while the reconcile count moves.
func TestNoWritesWhenNothingChanged(t *testing.T) {
	const key, node = "scx.example/unrelated", "sim-general-b"
	t.Cleanup(func() { labelNode(t, node, key, "") })
	create(t, MakeSchedExt("quiet").Scheduler("scx_lavd").NodeSelector(schedv1.NodeLabelPool, "general").Obj())
	waitSchedExt(t, "quiet", "attached", func(s *schedv1.SchedExt) bool {
		return s.Status.ReadyNodes == 3 && condIs(s, schedv1.ConditionReady, metav1.ConditionTrue, schedv1.ReasonAttached)
	})
	// Let the pods' and DaemonSet's last updates arrive.
	time.Sleep(3 * time.Second)

	// Each change must be followed by a reconcile (the count moves), and
	// then by nothing else.
	reconciles := reconcileCount(t)
	update(t, "quiet", func(s *schedv1.SchedExt) { metav1.SetMetaDataAnnotation(&s.ObjectMeta, "note", "touched") })
	testenv.Poll(t, testenv.Timeout, "a reconcile after the annotation", func(context.Context) (bool, error) { return reconcileCount(t) > reconciles, nil })
	scxBefore, dsBefore := get(t, "quiet"), daemonSet(t, "quiet")
	reconciles = reconcileCount(t)
	labelNode(t, node, key, "x")
	testenv.Poll(t, testenv.Timeout, "a reconcile after the node label", func(context.Context) (bool, error) { return reconcileCount(t) > reconciles, nil })
	time.Sleep(2 * time.Second)

	scxAfter, dsAfter := get(t, "quiet"), daemonSet(t, "quiet")
	if scxAfter.ResourceVersion != scxBefore.ResourceVersion {
		t.Errorf("SchedExt written while nothing changed: resourceVersion %s -> %s\nbefore %+v\nafter %+v",
			scxBefore.ResourceVersion, scxAfter.ResourceVersion, scxBefore.Status, scxAfter.Status)
	}
	if dsAfter.ResourceVersion != dsBefore.ResourceVersion {
		t.Errorf("DaemonSet written while nothing changed: resourceVersion %s -> %s", dsBefore.ResourceVersion, dsAfter.ResourceVersion)
	}
	remove(t, "quiet")
}

// TestDriftRepaired: an edit to the DaemonSet's template is undone.
func TestDriftRepaired(t *testing.T) {
	create(t, MakeSchedExt("drift").Scheduler("scx_lavd").NodeSelector(schedv1.NodeLabelPool, "highmem").Args("--a").Obj())
	waitSchedExt(t, "drift", "attached", func(s *schedv1.SchedExt) bool { return s.Status.ReadyNodes == 1 })
	ds := daemonSet(t, "drift")
	patch := client.MergeFrom(ds.DeepCopy())
	ds.Spec.Template.Spec.Containers[0].Args = []string{"--b"}
	if err := sim.Client.Patch(t.Context(), ds, patch); err != nil {
		t.Fatal(err)
	}
	testenv.Poll(t, testenv.Timeout, "the args restored", func(ctx context.Context) (bool, error) {
		got := &appsv1.DaemonSet{}
		if err := sim.Client.Get(ctx, client.ObjectKeyFromObject(ds), got); err != nil {
			return false, err
		}
		return slices.Equal(got.Spec.Template.Spec.Containers[0].Args, []string{"--a"}), nil
	})
	if !eventSeen(t, "drift", schedv1.ReasonRepaired) {
		t.Errorf("no %s event", schedv1.ReasonRepaired)
	}
	remove(t, "drift")
}

// TestUnknownScheduler: a name with no configured image makes no
// DaemonSet and says why.
func TestUnknownScheduler(t *testing.T) {
	create(t, MakeSchedExt("unknown").Scheduler("scx_nonexistent").Obj())
	got := waitSchedExt(t, "unknown", "degraded", func(s *schedv1.SchedExt) bool {
		return condIs(s, schedv1.ConditionDegraded, metav1.ConditionTrue, schedv1.ReasonUnknownScheduler)
	})
	if got.Status.DaemonSetName != "" || got.Status.ResolvedImage != "" || !condIs(got, schedv1.ConditionReady, metav1.ConditionFalse, schedv1.ReasonUnknownScheduler) {
		t.Errorf("status %+v", got.Status)
	}
	err := sim.Client.Get(t.Context(), client.ObjectKey{Namespace: op.Options().Settings.SchedulerNamespace, Name: names.DaemonSet("unknown")}, &appsv1.DaemonSet{})
	if !apierrors.IsNotFound(err) {
		t.Errorf("DaemonSet for an unknown scheduler: %v", err)
	}
	remove(t, "unknown")
}

// TestImagePullFailure: a scheduler image that cannot be pulled is the
// reason in Ready and Degraded.
func TestImagePullFailure(t *testing.T) {
	create(t, MakeSchedExt("nopull").Image("registry.example/missing:1", "").NodeSelector(schedv1.NodeLabelPool, "highmem").
		PodAnnotation(cluster.AnnotationImagePullError, "ErrImagePull").Obj())
	got := waitSchedExt(t, "nopull", "degraded by the image", func(s *schedv1.SchedExt) bool {
		return condIs(s, schedv1.ConditionDegraded, metav1.ConditionTrue, schedv1.ReasonImagePull)
	})
	if !condIs(got, schedv1.ConditionReady, metav1.ConditionFalse, schedv1.ReasonImagePull) || got.Status.ReadyNodes != 0 {
		t.Errorf("status %+v", got.Status)
	}
	remove(t, "nopull")
}

func create(t *testing.T, s *schedv1.SchedExt) {
	t.Helper()
	if err := sim.Client.Create(t.Context(), s); err != nil {
		t.Fatal(err)
	}
	// Remove it even when the test fails, so the next test's arbitration
	// is not disturbed.
	t.Cleanup(func() { _ = sim.Client.Delete(context.Background(), s) })
}

// remove deletes a SchedExt and waits for its DaemonSet and pods to go.
func remove(t *testing.T, name string) {
	t.Helper()
	if err := sim.Client.Delete(t.Context(), &schedv1.SchedExt{ObjectMeta: metav1.ObjectMeta{Name: name}}); err != nil {
		t.Fatal(err)
	}
	testenv.Poll(t, testenv.Timeout, "SchedExt "+name+"'s DaemonSet and pods to be gone", func(ctx context.Context) (bool, error) {
		err := sim.Client.Get(ctx, client.ObjectKey{Namespace: op.Options().Settings.SchedulerNamespace, Name: names.DaemonSet(name)}, &appsv1.DaemonSet{})
		if !apierrors.IsNotFound(err) {
			return false, client.IgnoreNotFound(err)
		}
		var pods corev1.PodList
		if err := sim.Client.List(ctx, &pods, client.InNamespace(op.Options().Settings.SchedulerNamespace), client.MatchingLabels{schedv1.LabelSchedExt: name}); err != nil {
			return false, err
		}
		return len(pods.Items) == 0, nil
	})
}

func get(t *testing.T, name string) *schedv1.SchedExt {
	t.Helper()
	s := &schedv1.SchedExt{}
	if err := sim.Client.Get(t.Context(), client.ObjectKey{Name: name}, s); err != nil {
		t.Fatal(err)
	}
	return s
}

func update(t *testing.T, name string, f func(*schedv1.SchedExt)) {
	t.Helper()
	s := get(t, name)
	patch := client.MergeFrom(s.DeepCopy())
	f(s)
	if err := sim.Client.Patch(t.Context(), s, patch); err != nil {
		t.Fatal(err)
	}
}

func daemonSet(t *testing.T, name string) *appsv1.DaemonSet {
	t.Helper()
	ds := &appsv1.DaemonSet{}
	if err := sim.Client.Get(t.Context(), client.ObjectKey{Namespace: op.Options().Settings.SchedulerNamespace, Name: names.DaemonSet(name)}, ds); err != nil {
		t.Fatal(err)
	}
	return ds
}

// labelNode sets a node label, or removes it when value is "".
func labelNode(t *testing.T, name, key, value string) {
	t.Helper()
	n := &corev1.Node{}
	if err := sim.Client.Get(context.Background(), client.ObjectKey{Name: name}, n); err != nil {
		t.Fatal(err)
	}
	patch := client.MergeFrom(n.DeepCopy())
	if value == "" {
		delete(n.Labels, key)
	} else {
		n.Labels[key] = value
	}
	if err := sim.Client.Patch(context.Background(), n, patch); err != nil {
		t.Fatal(err)
	}
}

func waitSchedExt(t *testing.T, name, what string, cond func(*schedv1.SchedExt) bool) *schedv1.SchedExt {
	t.Helper()
	got := &schedv1.SchedExt{}
	err := wait.PollUntilContextTimeout(t.Context(), 200*time.Millisecond, testenv.Timeout, true, func(ctx context.Context) (bool, error) {
		if err := sim.Client.Get(ctx, client.ObjectKey{Name: name}, got); err != nil {
			return false, client.IgnoreNotFound(err)
		}
		return cond(got), nil
	})
	if err != nil {
		t.Fatalf("waiting for SchedExt %s to be %s: %v; last status: %+v", name, what, err, got.Status)
	}
	return got
}

// podNodes lists the nodes of a SchedExt's pods that are not terminating.
func podNodes(t *testing.T, name string) []string {
	t.Helper()
	var pods corev1.PodList
	if err := sim.Client.List(t.Context(), &pods, client.InNamespace(op.Options().Settings.SchedulerNamespace), client.MatchingLabels{schedv1.LabelSchedExt: name}); err != nil {
		t.Fatal(err)
	}
	var nodes []string
	for _, p := range pods.Items {
		if p.DeletionTimestamp.IsZero() {
			nodes = append(nodes, p.Spec.NodeName)
		}
	}
	slices.Sort(nodes)
	return nodes
}

func waitPodNodes(t *testing.T, name string, want []string) {
	t.Helper()
	var got []string
	err := wait.PollUntilContextTimeout(t.Context(), 200*time.Millisecond, testenv.Timeout, true, func(context.Context) (bool, error) {
		got = podNodes(t, name)
		return slices.Equal(got, want), nil
	})
	if err != nil {
		t.Fatalf("pods of %s on %v, want %v", name, got, want)
	}
}

// condIs matches a condition's status and, unless reason is "", reason.
func condIs(s *schedv1.SchedExt, typ string, status metav1.ConditionStatus, reason string) bool {
	c := meta.FindStatusCondition(s.Status.Conditions, typ)
	return c != nil && c.Status == status && (reason == "" || c.Reason == reason) && c.ObservedGeneration == s.Generation
}

func equalStatus(a, b schedv1.SchedExtStatus) bool {
	return a.ObservedGeneration == b.ObservedGeneration && a.ResolvedImage == b.ResolvedImage && a.DaemonSetName == b.DaemonSetName &&
		a.DesiredNodes == b.DesiredNodes && a.ReadyNodes == b.ReadyNodes && a.AvailableNodes == b.AvailableNodes &&
		a.UnavailableNodes == b.UnavailableNodes && slices.Equal(a.ConflictingNodes, b.ConflictingNodes) && slices.Equal(a.UnsupportedNodes, b.UnsupportedNodes)
}

// eventSeen polls for an event with reason about the named SchedExt.
func eventSeen(t *testing.T, name, reason string) bool {
	t.Helper()
	err := wait.PollUntilContextTimeout(t.Context(), 200*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
		var evs eventsv1.EventList
		if err := sim.Client.List(ctx, &evs); err != nil {
			return false, err
		}
		for _, e := range evs.Items {
			if e.Regarding.Kind == "SchedExt" && e.Regarding.Name == name && e.Reason == reason {
				return true, nil
			}
		}
		return false, nil
	})
	return err == nil
}

// reconcileCount reads how many SchedExt reconciles the operator has run
// from its metrics endpoint.
func reconcileCount(t *testing.T) int {
	t.Helper()
	return reconcileCountOf(t, "schedext")
}

// reconcileCountOf reads how many reconciles one controller has run.
func reconcileCountOf(t *testing.T, controller string) int {
	t.Helper()
	n, err := op.Reconciles(context.Background(), controller)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestUnsupportedKernel: the preflight init container exits 78 on a kernel
// without sched_ext (simulated by pod-init-error); the nodes are listed as
// unsupported with the preflight's message, instead of a bare crash loop.
func TestUnsupportedKernel(t *testing.T) {
	const msg = "kernel 5.15.0 has no sched_ext (no /sys/kernel/sched_ext)"
	create(t, MakeSchedExt("oldkernel").Scheduler("scx_rusty").NodeSelector(schedv1.NodeLabelPool, "highmem").
		PodAnnotation(cluster.AnnotationInitExitCode, fmt.Sprint(schedext.ExitUnsupported)).
		PodAnnotation(cluster.AnnotationTerminationMessage, msg).Obj())
	got := waitSchedExt(t, "oldkernel", "degraded by the kernel", func(s *schedv1.SchedExt) bool {
		return condIs(s, schedv1.ConditionDegraded, metav1.ConditionTrue, schedv1.ReasonUnsupportedKernel) &&
			len(s.Status.UnsupportedNodes) == len(podNodes(t, "oldkernel")) && len(s.Status.UnsupportedNodes) > 0
	})
	if !condIs(got, schedv1.ConditionReady, metav1.ConditionFalse, schedv1.ReasonUnsupportedKernel) || got.Status.ReadyNodes != 0 {
		t.Errorf("status %+v", got.Status)
	}
	if c := meta.FindStatusCondition(got.Status.Conditions, schedv1.ConditionDegraded); !strings.Contains(c.Message, msg) {
		t.Errorf("Degraded message %q does not carry the preflight's %q", c.Message, msg)
	}
	remove(t, "oldkernel")
}

// TestSwitchingSchedulerRollsTheDaemonSet: `schedext set` with another
// scheduler replaces the pods on every node with ones running it, and the
// status follows: the new image, attached everywhere, rolled out.
func TestSwitchingSchedulerRollsTheDaemonSet(t *testing.T) {
	set := func(sched string, more ...string) {
		t.Helper()
		var out bytes.Buffer
		streams := genericiooptions.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &out}
		root := plugincmd.NewRootCommand(streams)
		root.SetArgs(append([]string{"schedext", "set", "switch", "--sched", sched, "--nodes", schedv1.NodeLabelPool + "=general", "--kubeconfig", sim.Kubeconfig}, more...))
		if code := plugincmd.Execute(root, streams); code != 0 {
			t.Fatalf("schedext set --sched %s: exit %d\n%s", sched, code, out.String())
		}
	}
	t.Cleanup(func() {
		_ = sim.Client.Delete(context.Background(), &schedv1.SchedExt{ObjectMeta: metav1.ObjectMeta{Name: "switch"}})
	})
	set("scx_lavd")
	waitSchedExt(t, "switch", "scx_lavd attached", func(s *schedv1.SchedExt) bool {
		return s.Status.ReadyNodes == 3 && s.Status.ResolvedImage == "registry.example/scx:lavd" && condIs(s, schedv1.ConditionReady, metav1.ConditionTrue, schedv1.ReasonAttached)
	})
	pods := func() map[string]corev1.Pod {
		var list corev1.PodList
		if err := sim.Client.List(t.Context(), &list, client.InNamespace(op.Options().Settings.SchedulerNamespace), client.MatchingLabels{schedv1.LabelSchedExt: "switch"}); err != nil {
			t.Fatal(err)
		}
		out := map[string]corev1.Pod{}
		for _, p := range list.Items {
			if p.DeletionTimestamp.IsZero() {
				out[string(p.UID)] = p
			}
		}
		return out
	}
	switchTo := func(sched, image string, more ...string) {
		t.Helper()
		before := pods()
		set(sched, more...)
		got := waitSchedExt(t, "switch", sched+" from "+image+" rolled out and attached", func(s *schedv1.SchedExt) bool {
			return s.Status.ObservedGeneration == s.Generation && s.Status.ResolvedImage == image && s.Status.ReadyNodes == 3 &&
				condIs(s, schedv1.ConditionProgressing, metav1.ConditionFalse, schedv1.ReasonRolledOut) &&
				condIs(s, schedv1.ConditionReady, metav1.ConditionTrue, schedv1.ReasonAttached)
		})
		if got.Status.DaemonSetName != "scx-switch" {
			t.Errorf("DaemonSet %q: switching must roll the same DaemonSet", got.Status.DaemonSetName)
		}
		testenv.Poll(t, testenv.Timeout, "every pod replaced by one running "+sched+" from "+image, func(context.Context) (bool, error) {
			var nodes []string
			for uid, p := range pods() {
				if _, old := before[uid]; old {
					return false, nil
				}
				c := p.Spec.Containers[0]
				if c.Image != image || !slices.Equal(c.Command, []string{sched}) {
					return false, nil
				}
				nodes = append(nodes, p.Spec.NodeName)
			}
			slices.Sort(nodes)
			return slices.Equal(nodes, generalNodes), nil
		})
	}
	switchTo("scx_rusty", "registry.example/scx:rusty")
	// The same scheduler from an image of this SchedExt's own.
	switchTo("scx_rusty", "registry.example/scx:v1.0.13", "--image", "registry.example/scx:v1.0.13")
	remove(t, "switch")
}

// TestImageFromARegistryNotAllowed: a SchedExt's own image from outside the
// allowed registries gets no DaemonSet and says why, naming the list; an
// allowed image then runs.
func TestImageFromARegistryNotAllowed(t *testing.T) {
	create(t, MakeSchedExt("outsider").Image("evil.example.com/scx:1", "").NodeSelector(schedv1.NodeLabelPool, "highmem").Obj())
	got := waitSchedExt(t, "outsider", "refused", func(s *schedv1.SchedExt) bool {
		return condIs(s, schedv1.ConditionDegraded, metav1.ConditionTrue, schedv1.ReasonImageNotAllowed)
	})
	if c := meta.FindStatusCondition(got.Status.Conditions, schedv1.ConditionReady); c.Status != metav1.ConditionFalse || !strings.Contains(c.Message, "evil.example.com/scx:1") || !strings.Contains(c.Message, "(registry.example)") {
		t.Errorf("Ready %+v", c)
	}
	err := sim.Client.Get(t.Context(), client.ObjectKey{Namespace: op.Options().Settings.SchedulerNamespace, Name: names.DaemonSet("outsider")}, &appsv1.DaemonSet{})
	if !apierrors.IsNotFound(err) {
		t.Errorf("a DaemonSet for a refused image: %v", err)
	}
	update(t, "outsider", func(s *schedv1.SchedExt) { s.Spec.Scheduler.Image = "registry.example/scx:own" })
	waitSchedExt(t, "outsider", "attached from the allowed image", func(s *schedv1.SchedExt) bool {
		return s.Status.ReadyNodes == 1 && condIs(s, schedv1.ConditionReady, metav1.ConditionTrue, schedv1.ReasonAttached)
	})
	remove(t, "outsider")
}

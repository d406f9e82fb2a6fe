package userdeployment_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	. "github.com/kubectl-sched/kubectl-sched/api/builders"
	"github.com/kubectl-sched/kubectl-sched/api/revision"
	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
	"github.com/kubectl-sched/kubectl-sched/hack/testenv"
)

// revisionsOf lists the app's ControllerRevisions that carry its revision
// labels, by number.
func revisionsOf(ctx context.Context, ns, app string) ([]appsv1.ControllerRevision, error) {
	var list appsv1.ControllerRevisionList
	if err := sim.Client.List(ctx, &list, client.InNamespace(ns), client.MatchingLabels{schedv1.LabelUserDeployment: app}, client.HasLabels{schedv1.LabelRevisionHash}); err != nil {
		return nil, err
	}
	slices.SortFunc(list.Items, func(a, b appsv1.ControllerRevision) int { return int(a.Revision - b.Revision) })
	return list.Items, nil
}

func numbers(revs []appsv1.ControllerRevision) []int64 {
	var n []int64
	for _, r := range revs {
		n = append(n, r.Revision)
	}
	return n
}

// waitRevisions waits until the app's revisions are want (numbers) and
// returns them.
func waitRevisions(t *testing.T, ns, app string, want ...int64) []appsv1.ControllerRevision {
	t.Helper()
	var revs []appsv1.ControllerRevision
	testenv.EventuallyWithin(t, testenv.Timeout, fmt.Sprintf("revisions %v of %s", want, app), func(ctx context.Context) error {
		var err error
		if revs, err = revisionsOf(ctx, ns, app); err != nil {
			return err
		}
		if got := numbers(revs); !slices.Equal(got, want) {
			return fmt.Errorf("revisions %v", got)
		}
		return nil
	})
	return revs
}

// applyImage sets one service's image with server-side apply as manager.
func applyImage(t *testing.T, ns, app, svc, image, manager string) {
	t.Helper()
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": schedv1.GroupVersion.String(), "kind": "UserDeployment",
		"metadata": map[string]any{"name": app, "namespace": ns},
		"spec":     map[string]any{"services": []any{map[string]any{"name": svc, "image": image}}},
	}}
	if err := sim.Client.Patch(t.Context(), u, client.Apply, client.FieldOwner(manager), client.ForceOwnership); err != nil {
		t.Fatal(err)
	}
}

// running waits until the app is Running at its generation, with every
// service on revision n, and returns it.
func runningRevision(t *testing.T, ns, app string, n int64) *schedv1.UserDeployment {
	t.Helper()
	return waitUD(t, ns, app, fmt.Sprintf("Running revision %d", n), func(ud *schedv1.UserDeployment) bool {
		if !phase(schedv1.UserDeploymentRunning)(ud) || ud.Status.CurrentRevision != n || ud.Status.LastRunningRevision != n {
			return false
		}
		for _, s := range ud.Status.Services {
			if s.Revision != n {
				return false
			}
		}
		return true
	})
}

func images(t *testing.T, ns, dep string) string {
	t.Helper()
	d := &appsv1.Deployment{}
	if err := sim.Client.Get(t.Context(), types.NamespacedName{Namespace: ns, Name: dep}, d); err != nil {
		t.Fatal(err)
	}
	return d.Spec.Template.Spec.Containers[0].Image
}

// TestRevisions: revision 1 on create, recorded with who made it; a new
// image is revision 2; scaling and restarting make none; going back to
// the first image is revision 3, which records the same template as 1;
// the history limit trims the oldest, never the one that runs.
func TestRevisions(t *testing.T) {
	t.Parallel()
	ns := namespace(t)
	ctx := t.Context()
	ud := MakeUserDeployment("shop", ns).
		Service("web", "nginx:1.25", 80, schedv1.ExposureInternal).
		Service("api", "api:1", 8080, schedv1.ExposureInternal).Obj()
	if err := sim.Client.Create(ctx, ud, client.FieldOwner("tester")); err != nil {
		t.Fatal(err)
	}
	got := runningRevision(t, ns, "shop", 1)
	revs := waitRevisions(t, ns, "shop", 1)
	r1 := revs[0]
	if r1.Name != "shop.v1" || !metav1.IsControlledBy(&r1, got) || r1.Labels[schedv1.LabelManagedBy] != schedv1.ManagedByValue ||
		r1.Annotations[schedv1.AnnotationChangedBy] != "tester" {
		t.Errorf("revision 1: name %s, owners %v, labels %v, annotations %v", r1.Name, r1.OwnerReferences, r1.Labels, r1.Annotations)
	}
	tmpl, err := revision.Read(&r1)
	if err != nil || tmpl.Spec.Services[0].Image != "nginx:1.25" || revision.Check(&r1, got) != "" {
		t.Errorf("revision 1 reads %+v, %v", tmpl, err)
	}

	// A new image: revision 2, by the manager that applied it.
	applyImage(t, ns, "shop", "web", "nginx:1.27", "deployer")
	runningRevision(t, ns, "shop", 2)
	revs = waitRevisions(t, ns, "shop", 1, 2)
	if by := revs[1].Annotations[schedv1.AnnotationChangedBy]; by != "deployer" {
		t.Errorf("revision 2 changed by %q, want deployer", by)
	}
	if img := images(t, ns, "shop-web"); img != "nginx:1.27" {
		t.Errorf("web runs %s", img)
	}

	// Scaling, restarting: no revision.
	update(t, ns, "shop", func(s *schedv1.UserDeploymentSpec) {
		s.Services[1].Replicas = ptr.To[int32](2)
		s.RestartedAt = map[string]string{"web": "2026-11-26T12:00:00Z"}
	})
	waitUD(t, ns, "shop", "Running with 2 api replicas", func(ud *schedv1.UserDeployment) bool {
		return phase(schedv1.UserDeploymentRunning)(ud) && ud.Status.Services[1].ReadyReplicas == 2
	})
	waitRevisions(t, ns, "shop", 1, 2)

	// Back to the first image: revision 3, the same template as 1.
	applyImage(t, ns, "shop", "web", "nginx:1.25", "deployer")
	got = runningRevision(t, ns, "shop", 3)
	revs = waitRevisions(t, ns, "shop", 1, 2, 3)
	if revs[2].Labels[schedv1.LabelRevisionHash] != revs[0].Labels[schedv1.LabelRevisionHash] {
		t.Errorf("revision 3 records another template than revision 1: hashes %s and %s", revs[2].Labels[schedv1.LabelRevisionHash], revs[0].Labels[schedv1.LabelRevisionHash])
	}
	if img := images(t, ns, "shop-web"); img != "nginx:1.25" {
		t.Errorf("web runs %s", img)
	}
	if got.Status.CurrentRevision != 3 {
		t.Errorf("status.currentRevision %d", got.Status.CurrentRevision)
	}

	// A limit of 2 keeps the two newest.
	update(t, ns, "shop", func(s *schedv1.UserDeploymentSpec) { s.RevisionHistoryLimit = ptr.To[int32](2) })
	waitRevisions(t, ns, "shop", 2, 3)
	applyImage(t, ns, "shop", "web", "nginx:1.28", "deployer")
	runningRevision(t, ns, "shop", 4)
	waitRevisions(t, ns, "shop", 3, 4)
}

// TestRevisionsSurviveARestart: an operator restart makes no revision; nor
// does one after a crash between creating a revision and writing the
// status (the revision is there, the status still names the one before).
// Numbers go on from the highest, even when revisions were deleted.
func TestRevisionsSurviveARestart(t *testing.T) {
	ns := namespace(t)
	ctx := t.Context()
	create(t, MakeUserDeployment("shop", ns).Service("web", "nginx:1.25", 80, schedv1.ExposureInternal).Obj())
	runningRevision(t, ns, "shop", 1)
	waitRevisions(t, ns, "shop", 1)

	restartOperator(t, nil)
	applyImage(t, ns, "shop", "web", "nginx:1.27", "deployer")
	runningRevision(t, ns, "shop", 2)
	before := waitRevisions(t, ns, "shop", 1, 2)

	// The crash: revision 3 made as the operator would, and the status not
	// written, while the operator is down.
	if err := op.Stop(); err != nil {
		t.Fatal(err)
	}
	started := false
	t.Cleanup(func() {
		if !started {
			_ = op.Start(nil)
		}
	})
	applyImage(t, ns, "shop", "web", "nginx:1.28", "deployer")
	ud := &schedv1.UserDeployment{}
	if err := sim.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: "shop"}, ud); err != nil {
		t.Fatal(err)
	}
	if err := sim.Client.Create(ctx, revision.New(ud, 3, revision.Of(ud), "deployer")); err != nil {
		t.Fatal(err)
	}
	if err := op.Start(nil); err != nil {
		t.Fatal(err)
	}
	started = true
	runningRevision(t, ns, "shop", 3)
	after := waitRevisions(t, ns, "shop", 1, 2, 3)
	for i := range before {
		if before[i].UID != after[i].UID || before[i].ResourceVersion != after[i].ResourceVersion {
			t.Errorf("revision %d was rewritten", before[i].Revision)
		}
	}
	// No fourth, some time later.
	time.Sleep(2 * time.Second)
	waitRevisions(t, ns, "shop", 1, 2, 3)

	// Deleting the newest does not reuse its number.
	for _, r := range after[1:] {
		if err := sim.Client.Delete(ctx, &r); err != nil {
			t.Fatal(err)
		}
	}
	waitRevisions(t, ns, "shop", 1, 4)
	runningRevision(t, ns, "shop", 4)
}

// TestForgedRevisionIgnored: a tenant who may write ControllerRevisions in
// their namespace (more than edit or admin grant) cannot give one the
// operator's labels, and what they can make without them (a squatter on
// the next name, a copy of the revision rolled back to with another image,
// a renumbered revision, one of the app's name for another app) the
// operator neither takes for a revision nor runs.
func TestForgedRevisionIgnored(t *testing.T) {
	t.Parallel()
	ns := namespace(t)
	ctx := t.Context()
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "revision-writer", Namespace: ns},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{"apps"}, Resources: []string{"controllerrevisions"}, Verbs: []string{"get", "list", "create", "update", "patch", "delete"}}}}
	create(t, role)
	create(t, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "mallory-revisions", Namespace: ns},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: role.Name},
		Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: "mallory"}}})
	mallory, err := testenv.BindUser(ctx, sim.Client, sim.Config, ns, "mallory", "kubectl-sched-edit",
		authorizationv1.ResourceAttributes{Verb: "create", Group: "apps", Resource: "controllerrevisions"},
		authorizationv1.ResourceAttributes{Verb: "patch", Group: schedv1.GroupName, Resource: "userdeployments"})
	if err != nil {
		t.Fatal(err)
	}
	create(t, MakeUserDeployment("shop", ns).Service("web", "nginx:1.25", 80, schedv1.ExposureInternal).
		Spec(func(s *schedv1.UserDeploymentSpec) {
			s.Rollback = schedv1.RollbackOnDegraded
			s.ProgressDeadline = &metav1.Duration{Duration: 10 * time.Second}
		}).Obj())
	create(t, MakeUserDeployment("other", ns).Service("web", "nginx:1.25", 80, schedv1.ExposureInternal).Obj())
	shop := runningRevision(t, ns, "shop", 1)
	runningRevision(t, ns, "other", 1)
	genuine := waitRevisions(t, ns, "shop", 1)[0]

	evil := shop.DeepCopy()
	evil.Spec.Services[0].Image = "evil:1"
	forge := func(name string, n int64, owner *schedv1.UserDeployment, labels map[string]string) *appsv1.ControllerRevision {
		cr := revision.New(evil, n, revision.Of(evil), "mallory")
		cr.Name, cr.Labels = name, labels
		cr.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(owner, schedv1.GroupVersion.WithKind("UserDeployment"))}
		cr.TypeMeta = metav1.TypeMeta{}
		return cr
	}

	// With the labels: refused at admission.
	if err := mallory.Create(ctx, forge("shop.v9", 9, shop, revision.Labels("shop", revision.Hash(revision.Of(evil))))); !apierrors.IsForbidden(err) ||
		!strings.Contains(err.Error(), "reserved for the kubectl-sched operator") {
		t.Fatalf("a labelled forgery: err = %v, want it refused by kubectl-sched-reserved-labels", err)
	}
	// Adding them to the genuine revision's copy of another: refused too.
	relabel := genuine.DeepCopy()
	relabel.Labels[schedv1.LabelUserDeployment] = "other"
	if err := mallory.Update(ctx, relabel); !apierrors.IsForbidden(err) {
		t.Errorf("moving a revision to another app: err = %v, want forbidden", err)
	}

	// Without them: the next name taken, a stand-in for the revision
	// rolled back to (deleted first), a renumbered copy for the other app.
	if err := mallory.Create(ctx, forge("shop.v2", 2, shop, nil)); err != nil {
		t.Fatal(err)
	}
	if err := mallory.Create(ctx, forge("other.v2", 2, shop, nil)); err != nil {
		t.Fatal(err)
	}
	// The next revision's name is taken: not recorded, and said so.
	update(t, ns, "shop", unpullable)
	ud := waitUD(t, ns, "shop", "Degraded, its revision's name taken", func(ud *schedv1.UserDeployment) bool {
		return phase(schedv1.UserDeploymentDegraded)(ud) && strings.Contains(condition(ud, schedv1.ConditionDegraded).Message, "ControllerRevision shop.v2 already exists and is not controlled by this UserDeployment")
	})
	if ud.Status.CurrentRevision != 1 {
		t.Errorf("currentRevision %d with revision 2 not recorded, want 1", ud.Status.CurrentRevision)
	}
	// Freed, it is recorded; then fails, and is rolled back to revision
	// 1 only if revision 1 is the operator's. Mallory replaces it with
	// one of the evil image first: it is not, so no rollback.
	if err := mallory.Delete(ctx, &genuine); err != nil {
		t.Fatal(err)
	}
	if err := mallory.Create(ctx, forge("shop.v1", 1, shop, nil)); err != nil {
		t.Fatal(err)
	}
	if err := mallory.Delete(ctx, &appsv1.ControllerRevision{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "shop.v2"}}); err != nil {
		t.Fatal(err)
	}
	// An unlabelled object's deletion is no event of the operator's.
	poke(t, ns, "shop")
	waitUD(t, ns, "shop", "revision 2 recorded, Degraded", func(ud *schedv1.UserDeployment) bool {
		return phase(schedv1.UserDeploymentDegraded)(ud) && ud.Status.CurrentRevision == 2
	})
	// Past its deadline, and more.
	time.Sleep(15 * time.Second)
	ud = waitUD(t, ns, "shop", "still Degraded, not rolled back", phase(schedv1.UserDeploymentDegraded))
	if ud.Status.RolledBack != nil || condition(ud, schedv1.ConditionRolledBack).Type != "" {
		t.Errorf("rolled back to a forged revision: %+v", ud.Status.RolledBack)
	}
	var pods corev1.PodList
	if err := sim.Client.List(ctx, &pods, client.InNamespace(ns), appLabel("shop")); err != nil {
		t.Fatal(err)
	}
	for _, p := range pods.Items {
		if img := p.Spec.Containers[0].Image; img == "evil:1" {
			t.Errorf("pod %s runs the forged image", p.Name)
		}
	}
	// The other app's history has only its own.
	revs, err := revisionsOf(ctx, ns, "other")
	if err != nil || len(revs) != 1 || revs[0].Name != "other.v1" {
		t.Errorf("other's revisions: %v (%v)", numbers(revs), err)
	}
	if img := images(t, ns, "other-web"); img != "nginx:1.25" {
		t.Errorf("other runs %s", img)
	}
}

// TestRollbackOnDegraded: with spec.rollback OnDegraded a revision that
// does not become Running within spec.progressDeadline is rolled back
// once, with an event and the RolledBack condition, and the spec stays
// as it was written. When the revision rolled back to does not run
// either, the app is Degraded and not rolled back further.
func TestRollbackOnDegraded(t *testing.T) {
	t.Parallel()
	deadline := &metav1.Duration{Duration: 10 * time.Second}
	broken := func(t *testing.T, ns string) { update(t, ns, "shop", unpullable) }

	t.Run("back to the last that ran", func(t *testing.T) {
		t.Parallel()
		ns := namespace(t)
		create(t, MakeUserDeployment("shop", ns).Service("web", "nginx:1.25", 80, schedv1.ExposureInternal).
			Spec(func(s *schedv1.UserDeploymentSpec) {
				s.Rollback, s.ProgressDeadline = schedv1.RollbackOnDegraded, deadline
			}).Obj())
		runningRevision(t, ns, "shop", 1)
		broken(t, ns)
		ud := waitUD(t, ns, "shop", "rolled back and Running", func(ud *schedv1.UserDeployment) bool {
			return phase(schedv1.UserDeploymentRunning)(ud) && ud.Status.RolledBack != nil
		})
		if rb := ud.Status.RolledBack; rb.FromRevision != ud.Status.CurrentRevision || rb.ToRevision != 1 || ud.Status.Services[0].Revision != 1 {
			t.Errorf("status %+v, rolled back %+v", ud.Status, rb)
		}
		c := condition(ud, schedv1.ConditionRolledBack)
		if c.Status != metav1.ConditionTrue || c.Reason != schedv1.ReasonRolledBack || !strings.Contains(c.Message, "did not become Running within 10s") {
			t.Errorf("RolledBack %+v", c)
		}
		if r := condition(ud, schedv1.ConditionReady); r.Status != metav1.ConditionTrue || r.Reason != schedv1.ReasonRolledBack {
			t.Errorf("Ready %+v", r)
		}
		// The spec is as written: the operator changed only what it derives.
		if img := ud.Spec.Services[0].Image; img != "nginx:does-not-exist" {
			t.Errorf("the spec's image is %s", img)
		}
		if img := images(t, ns, "shop-web"); img != "nginx:1.25" {
			t.Errorf("web's Deployment runs %s", img)
		}
		waitEvent(t, ns, "shop", schedv1.ReasonRolledBack)
		// Once: past another deadline, still one event and the same rollback.
		time.Sleep(12 * time.Second)
		again := waitUD(t, ns, "shop", "still Running", phase(schedv1.UserDeploymentRunning))
		if diff := cmp.Diff(ud.Status.RolledBack, again.Status.RolledBack); diff != "" {
			t.Errorf("the rollback changed (-before +after):\n%s", diff)
		}
		if n := countRollbacks(t, ns, "shop"); n != 1 {
			t.Errorf("%d RolledBack events, want 1", n)
		}

		// A new spec tries again, and ends the rollback.
		update(t, ns, "shop", func(s *schedv1.UserDeploymentSpec) {
			s.Services[0].PodMetadata = nil
			s.Services[0].Image = "nginx:1.27"
		})
		ud = runningRevision(t, ns, "shop", ud.Status.CurrentRevision+1)
		if ud.Status.RolledBack != nil || condition(ud, schedv1.ConditionRolledBack).Type != "" {
			t.Errorf("still rolled back: %+v", ud.Status.RolledBack)
		}
		if img := images(t, ns, "shop-web"); img != "nginx:1.27" {
			t.Errorf("web's Deployment runs %s", img)
		}
	})

	t.Run("the revision rolled back to fails too", func(t *testing.T) {
		t.Parallel()
		ns := namespace(t)
		create(t, MakeUserDeployment("shop", ns).Service("web", "nginx:1.25", 80, schedv1.ExposureInternal).
			Spec(func(s *schedv1.UserDeploymentSpec) {
				s.Rollback, s.ProgressDeadline = schedv1.RollbackOnDegraded, deadline
			}).Obj())
		runningRevision(t, ns, "shop", 1)
		// Two pods at most: three replicas of revision 1 cannot run (not
		// a revision: nothing to roll back), then revision 2 fails.
		create(t, &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: "pods", Namespace: ns},
			Spec: corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{corev1.ResourcePods: resource.MustParse("2")}}})
		testenv.EventuallyWithin(t, testenv.Timeout, "the quota to count", func(ctx context.Context) error {
			q := &corev1.ResourceQuota{}
			if err := sim.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: "pods"}, q); err != nil {
				return err
			}
			if _, ok := q.Status.Used[corev1.ResourcePods]; !ok {
				return fmt.Errorf("not counted yet")
			}
			return nil
		})
		update(t, ns, "shop", func(s *schedv1.UserDeploymentSpec) { s.Services[0].Replicas = ptr.To[int32](3) })
		waitUD(t, ns, "shop", "Degraded at three replicas", phase(schedv1.UserDeploymentDegraded))
		broken(t, ns)
		ud := waitUD(t, ns, "shop", "rolled back, and Degraded", func(ud *schedv1.UserDeployment) bool {
			return phase(schedv1.UserDeploymentDegraded)(ud) && ud.Status.RolledBack != nil &&
				strings.Contains(condition(ud, schedv1.ConditionRolledBack).Message, "revision 1 does not run either")
		})
		if rb := ud.Status.RolledBack; rb.ToRevision != 1 || rb.FromRevision != 2 {
			t.Errorf("rolled back %+v, want 2 to 1", rb)
		}
		time.Sleep(12 * time.Second)
		again := waitUD(t, ns, "shop", "still Degraded", phase(schedv1.UserDeploymentDegraded))
		if diff := cmp.Diff(ud.Status.RolledBack, again.Status.RolledBack); diff != "" || again.Status.CurrentRevision != 2 {
			t.Errorf("rolled back further (-before +after):\n%s", diff)
		}
		if n := countRollbacks(t, ns, "shop"); n != 1 {
			t.Errorf("%d RolledBack events, want 1", n)
		}
	})
}

// unpullable gives the first service an image that cannot be pulled (the
// simulated kubelet's annotation says so): one change, one revision.
func unpullable(s *schedv1.UserDeploymentSpec) {
	s.Services[0].Image = "nginx:does-not-exist"
	s.Services[0].PodMetadata = &schedv1.PodMetadata{Annotations: map[string]string{"sim.kubectl-sched.dev/image-pull-error": "ErrImagePull"}}
}

// poke changes an annotation of the app, which has the operator reconcile it.
func poke(t *testing.T, ns, name string) {
	t.Helper()
	patch := client.RawPatch(types.MergePatchType, []byte(fmt.Sprintf(`{"metadata":{"annotations":{"test/poke":"%d"}}}`, time.Now().UnixNano())))
	if err := sim.Client.Patch(t.Context(), &schedv1.UserDeployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}, patch); err != nil {
		t.Fatal(err)
	}
}

// countRollbacks counts the operator's Warning events about an app with
// reason RolledBack, a recurrence counting once per series. (The Normal
// event of the app reaching Running has the Ready condition's reason,
// which is RolledBack too while it runs a revision rolled back to.)
func countRollbacks(t *testing.T, ns, name string) int {
	t.Helper()
	var list eventsv1.EventList
	if err := sim.Client.List(t.Context(), &list, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range list.Items {
		if e.Regarding.Kind == "UserDeployment" && e.Regarding.Name == name && e.Reason == schedv1.ReasonRolledBack && e.Type == corev1.EventTypeWarning {
			n++
			if e.Series != nil {
				n += int(e.Series.Count) - 1
			}
		}
	}
	return n
}

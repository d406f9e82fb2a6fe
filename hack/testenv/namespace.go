package testenv

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
	"github.com/kubectl-sched/kubectl-sched/operator/app"
)

// Namespace creates a namespace for one test, named after it (a DNS label
// with a suffix that differs from run to run), and deletes it when the test
// ends.
func Namespace(t testing.TB, c client.Client) string {
	t.Helper()
	name := strings.ToLower(strings.NewReplacer("/", "-", "_", "-", "'", "").Replace(t.Name()))
	if len(name) > 40 {
		name = name[:40]
	}
	name = strings.Trim(name, "-") + fmt.Sprintf("-%d", time.Now().UnixNano()%100000)
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if err := c.Create(context.Background(), ns); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Delete(context.Background(), ns) })
	return name
}

// TierNamespace creates a namespace for one test as the tenant controller
// leaves a namespace of tier: its ResourceQuota kubectl-sched-tier (the
// operator's, limiting pods to 100) carrying the tier's ttlAfterFinished
// default and maximum ("" for none), then the tier label. For tests of the
// controllers that read a tier without running the tenant controller.
func TierNamespace(t testing.TB, c client.Client, tier, ttlDefault, ttlMax string) string {
	t.Helper()
	ns := Namespace(t, c)
	MakeTier(t, c, ns, tier, ttlDefault, ttlMax)
	return ns
}

// MakeTier makes namespace ns one of tier, as TierNamespace makes its
// namespace: for a test that names its namespaces itself.
func MakeTier(t testing.TB, c client.Client, ns, tier, ttlDefault, ttlMax string) {
	t.Helper()
	q := &corev1.ResourceQuota{
		ObjectMeta: metav1.ObjectMeta{Name: schedv1.TierObjectName, Namespace: ns,
			Labels:      map[string]string{schedv1.LabelManagedBy: schedv1.ManagedByValue, schedv1.LabelTier: tier},
			Annotations: map[string]string{schedv1.AnnotationTierTTLDefault: ttlDefault, schedv1.AnnotationTierTTLMax: ttlMax}},
		Spec: corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{corev1.ResourcePods: resource.MustParse("100")}},
	}
	if err := c.Create(context.Background(), q); err != nil {
		t.Fatal(err)
	}
	// The quota first: the tier policies refuse everything in a namespace
	// of a tier without it.
	n := &corev1.Namespace{}
	if err := c.Get(context.Background(), client.ObjectKey{Name: ns}, n); err != nil {
		t.Fatal(err)
	}
	if n.Labels == nil {
		n.Labels = map[string]string{}
	}
	n.Labels[schedv1.LabelTier] = tier
	if err := c.Update(context.Background(), n); err != nil {
		t.Fatal(err)
	}
	waitTierParams(t, c, ns)
}

// waitTierParams waits until the API server's admission sees the tier's
// quota, the tier policies' parameter: until then they refuse everything
// in the namespace ("no params found for policy binding"). A server-side
// dry run of a task asks admission without making anything.
func waitTierParams(t testing.TB, c client.Client, ns string) {
	t.Helper()
	probe := func() error {
		task := &schedv1.AgentTask{ObjectMeta: metav1.ObjectMeta{Name: "tier-params-probe", Namespace: ns},
			Spec: schedv1.AgentTaskSpec{Image: "busybox"}}
		return c.Create(context.Background(), task, client.DryRunAll)
	}
	deadline := time.Now().Add(Timeout)
	for {
		err := probe()
		if err == nil || !strings.Contains(err.Error(), "no params found") {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the tier policies of namespace %s still find no params after %v: %v", ns, Timeout, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TenantNamespace creates a namespace for one test as `kubectl sched
// tenant create --tier tier --user U --group G` leaves it once the operator
// has applied the tier (TierNamespace, with no TTLs): Pod Security
// restricted, and the users and groups bound to the ClusterRole
// kubectl-sched-tenant by the RoleBinding of that name. It waits until the
// authorizer lets each member create workflows there. Impersonate gives a
// member's client.
func TenantNamespace(t testing.TB, c client.Client, tier string, users, groups []string) string {
	t.Helper()
	ctx := context.Background()
	ns := TierNamespace(t, c, tier, "", "")
	n := &corev1.Namespace{}
	if err := c.Get(ctx, client.ObjectKey{Name: ns}, n); err != nil {
		t.Fatal(err)
	}
	n.Labels["pod-security.kubernetes.io/enforce"] = "restricted"
	n.Labels["pod-security.kubernetes.io/warn"] = "restricted"
	n.Labels["app.kubernetes.io/part-of"] = "kubectl-sched"
	if err := c.Update(ctx, n); err != nil {
		t.Fatal(err)
	}
	rb := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "kubectl-sched-tenant", Namespace: ns, Labels: map[string]string{"app.kubernetes.io/part-of": "kubectl-sched"}},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "kubectl-sched-tenant"},
	}
	for _, u := range users {
		rb.Subjects = append(rb.Subjects, rbacv1.Subject{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: u})
	}
	for _, g := range groups {
		rb.Subjects = append(rb.Subjects, rbacv1.Subject{APIGroup: rbacv1.GroupName, Kind: rbacv1.GroupKind, Name: g})
	}
	if err := c.Create(ctx, rb); err != nil {
		t.Fatal(err)
	}
	attrs := authorizationv1.ResourceAttributes{Namespace: ns, Verb: "create", Group: schedv1.GroupName, Resource: "workflows"}
	for _, u := range users {
		if err := WaitAllowed(ctx, c, u, attrs); err != nil {
			t.Fatal(err)
		}
	}
	for _, g := range groups {
		if err := waitGroupAllowed(ctx, c, g, attrs); err != nil {
			t.Fatal(err)
		}
	}
	return ns
}

// Impersonate returns a client that acts as user, member of groups: a
// tenant's member, as the API server would authenticate them.
func Impersonate(cfg *rest.Config, user string, groups ...string) (client.Client, error) {
	cfg = rest.CopyConfig(cfg)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user, Groups: groups}
	return client.New(cfg, client.Options{Scheme: app.Scheme()})
}

// SetOptOut sets or removes the opt-out of the restricted pod defaults
// (schedv1.LabelAllowPrivilegedPods) on namespace ns, with c, a cluster
// admin's client.
func SetOptOut(t testing.TB, c client.Client, ns string, on bool) {
	t.Helper()
	n := &corev1.Namespace{}
	if err := c.Get(context.Background(), client.ObjectKey{Name: ns}, n); err != nil {
		t.Fatal(err)
	}
	patch := client.MergeFrom(n.DeepCopy())
	if n.Labels == nil {
		n.Labels = map[string]string{}
	}
	if on {
		n.Labels[schedv1.LabelAllowPrivilegedPods] = "true"
	} else {
		delete(n.Labels, schedv1.LabelAllowPrivilegedPods)
	}
	if err := c.Patch(context.Background(), n, patch); err != nil {
		t.Fatal(err)
	}
}

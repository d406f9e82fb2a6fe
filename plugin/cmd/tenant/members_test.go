package tenant_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
	"github.com/kubectl-sched/kubectl-sched/operator/app"
	"github.com/kubectl-sched/kubectl-sched/plugin/cmd/tenant"
	"github.com/kubectl-sched/kubectl-sched/plugin/internal/cmdutil"
)

// access is one request as RBAC sees it.
type access struct{ verb, group, resource, sub string }

func (a access) String() string {
	r := a.resource
	if a.sub != "" {
		r += "/" + a.sub
	}
	if a.group != "" {
		r += "." + a.group
	}
	return a.verb + " " + r
}

func acc(verb, group, resource string) access {
	return access{verb: verb, group: group, resource: resource}
}

func each(group, resource string, verbs ...string) []access {
	out := make([]access, 0, len(verbs))
	for _, v := range verbs {
		out = append(out, acc(v, group, resource))
	}
	return out
}

const g = schedv1.GroupName

// commandAccess is what each command a member runs asks of the API server
// in their namespace, read from the commands (plugin/cmd, plugin/internal).
// hack/test/members runs the commands as a member on the simulated cluster and
// derives the same from their requests.
var commandAccess = map[string][]access{
	"deploy --secret --wait": slices.Concat(
		each("", "secrets", "get", "create", "patch"), // keepSecrets reads it back; apply creates or patches
		each(g, "userdeployments", "get", "create", "patch", "list", "watch"),
		each("", "configmaps", "list")), // the namespace's templates
	"stop, start, restart --wait": each(g, "userdeployments", "get", "patch", "list", "watch"),
	"scale":                       slices.Concat(each(g, "userdeployments", "get", "patch"), each("autoscaling", "horizontalpodautoscalers", "list")),
	"logs APP -f": slices.Concat(
		each(g, "userdeployments", "get"),
		each("", "pods", "list", "watch", "get"),
		[]access{{verb: "get", resource: "pods", sub: "log"}}),
	"logs agenttask/NAME, workflow/NAME -f": slices.Concat(
		each(g, "agenttasks", "get", "list", "watch"),
		each(g, "workflows", "get", "list", "watch"),
		each("", "pods", "list", "watch"),
		[]access{{verb: "get", resource: "pods", sub: "log"}}),
	"task run --wait, -f": slices.Concat(
		each(g, "agenttasks", "create", "list", "watch"),
		[]access{{verb: "get", resource: "pods", sub: "log"}}),
	"task logs":   slices.Concat(each(g, "agenttasks", "get"), []access{{verb: "get", resource: "pods", sub: "log"}}),
	"task cancel": each(g, "agenttasks", "get", "patch"),
	"workflow run --watch --logs": slices.Concat(
		each(g, "workflows", "create", "list", "watch"),
		each(g, "agenttasks", "list", "watch"),
		each("", "secrets", "create", "patch"), // a template's secret parameters
		each("", "configmaps", "list"),
		[]access{{verb: "get", resource: "pods", sub: "log"}}),
	"workflow stop":  each(g, "workflows", "get", "patch"),
	"workflow retry": each(g, "workflows", "get", "create", "patch"),
	"get [-w]": slices.Concat(
		each(g, "userdeployments", "get", "list", "watch"),
		each(g, "agenttasks", "get", "list", "watch"),
		each(g, "workflows", "get", "list", "watch")),
	"describe ud": slices.Concat(
		each(g, "userdeployments", "get", "list"),
		each("apps", "deployments", "list"), each("apps", "statefulsets", "list"),
		each("", "persistentvolumeclaims", "list"), each("", "services", "list"),
		each("networking.k8s.io", "ingresses", "list"), each("", "events", "list")),
	"describe at": slices.Concat(
		each(g, "agenttasks", "get", "list"),
		each("batch", "jobs", "list"), each("", "pods", "list"), each("", "events", "list")),
	"describe wf": slices.Concat(each(g, "workflows", "get", "list"), each(g, "agenttasks", "list"), each("", "events", "list")),
	"delete --wait": slices.Concat(
		each(g, "userdeployments", "delete", "get", "list", "watch"),
		each(g, "agenttasks", "delete", "get", "list", "watch"),
		each(g, "workflows", "delete", "get", "list", "watch")),
	"template list, show, render": each("", "configmaps", "list"),
	"tenant list":                 slices.Concat(each("", "namespaces", "get"), each("", "resourcequotas", "get")),
}

// notForMembers is what a member must not do in their namespace: every
// write that would go around an admission policy or the tier (quotas,
// limits, the namespace's labels, roles, policies), make pods or
// workloads other than through the kinds (pod owners, tier tolerations),
// or reach outside the namespace.
var notForMembers = slices.Concat(
	each("", "resourcequotas", "create", "update", "patch", "delete"),
	each("", "limitranges", "create", "update", "patch", "delete"),
	each("", "namespaces", "update", "patch", "delete", "list"),
	each("rbac.authorization.k8s.io", "rolebindings", "create", "update", "patch", "delete"),
	each("rbac.authorization.k8s.io", "roles", "create", "update", "patch", "delete", "escalate", "bind"),
	each("rbac.authorization.k8s.io", "clusterroles", "bind", "escalate"),
	each("admissionregistration.k8s.io", "validatingadmissionpolicies", "create", "update", "patch", "delete"),
	each("admissionregistration.k8s.io", "validatingadmissionpolicybindings", "create", "update", "patch", "delete"),
	each("", "pods", "create", "update", "patch", "delete"),
	[]access{
		{verb: "create", resource: "pods", sub: "exec"}, {verb: "create", resource: "pods", sub: "attach"},
		{verb: "create", resource: "pods", sub: "portforward"}, {verb: "patch", resource: "pods", sub: "ephemeralcontainers"},
		{verb: "create", resource: "pods", sub: "eviction"}, {verb: "patch", resource: "pods", sub: "status"},
		{verb: "create", resource: "serviceaccounts", sub: "token"},
	},
	each("apps", "deployments", "create", "patch", "delete"),
	each("apps", "statefulsets", "create", "patch", "delete"),
	each("apps", "daemonsets", "create", "get"),
	each("apps", "replicasets", "create", "patch"),
	each("batch", "jobs", "create", "patch", "delete"),
	each("batch", "cronjobs", "create"),
	each("", "services", "create", "patch", "delete"),
	each("networking.k8s.io", "ingresses", "create", "patch", "delete"),
	each("networking.k8s.io", "networkpolicies", "create", "patch", "delete"),
	each("", "configmaps", "create", "update", "patch", "delete"),
	each("", "persistentvolumeclaims", "create", "delete"),
	each("", "serviceaccounts", "create", "impersonate"),
	each("", "users", "impersonate"),
	each("", "events", "create", "patch"),
	each("", "secrets", "list", "watch", "update", "delete"),
	each(g, "schedexts", "get", "list", "create", "patch"),
	each("", "nodes", "get", "list"),
)

// sar asks the API server whether the user (with groups) may do a in ns.
func sar(t *testing.T, user string, groups []string, ns string, a access) bool {
	t.Helper()
	r := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User: user, Groups: groups,
		ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: ns, Verb: a.verb, Group: a.group, Resource: a.resource, Subresource: a.sub},
	}}
	if a.resource == "namespaces" {
		r.Spec.ResourceAttributes.Name = ns
	}
	if err := env.Client.Create(context.Background(), r); err != nil {
		t.Fatal(err)
	}
	return r.Status.Allowed
}

// member waits until RBAC has seen the bindings tenant create made for user.
func member(t *testing.T, ns, user string) {
	t.Helper()
	env.WaitAllowed(t, user, authorizationv1.ResourceAttributes{Namespace: ns, Verb: "get", Resource: "pods", Subresource: "log"})
}

// TestMembersMayRunEveryCommand: a tenant's members, by user and by group,
// may make every request each command makes in their namespace; a member
// of another tenant may make none of them there.
func TestMembersMayRunEveryCommand(t *testing.T) {
	installTiers(t)
	for _, args := range [][]string{
		{"tenant", "create", "members-a", "--tier", "free", "--user", "alice", "--group", "a-devs", "--wait=false"},
		{"tenant", "create", "members-b", "--tier", "free", "--user", "bob", "--wait=false"},
	} {
		if res := env.Run(args...); res.Code != 0 {
			t.Fatalf("%v: exit %d: %s", args, res.Code, res.Stderr)
		}
	}
	member(t, "members-a", "alice")
	member(t, "members-b", "bob")
	for cmd, accesses := range commandAccess {
		for _, a := range accesses {
			if !sar(t, "alice", nil, "members-a", a) {
				t.Errorf("%s: user alice may not %s in her namespace", cmd, a)
			}
			if !sar(t, "carol", []string{"a-devs"}, "members-a", a) {
				t.Errorf("%s: carol of group a-devs may not %s in the namespace", cmd, a)
			}
			if sar(t, "bob", nil, "members-a", a) {
				t.Errorf("%s: bob, a member of another tenant, may %s in members-a", cmd, a)
			}
		}
	}
}

// TestMembersMayNotGoAroundThePolicies tries, as a member, every write
// that would loosen the tier, forge what the operator trusts or reach
// outside the namespace: each is refused. The built-in edit and admin
// roles grant several of them (pods, Secrets to list, admin RoleBindings),
// which is why members get kubectl-sched-tenant instead.
func TestMembersMayNotGoAroundThePolicies(t *testing.T) {
	installTiers(t)
	if res := env.Run("tenant", "create", "members-c", "--tier", "free", "--user", "mallory", "--wait=false"); res.Code != 0 {
		t.Fatalf("tenant create: exit %d: %s", res.Code, res.Stderr)
	}
	member(t, "members-c", "mallory")
	for _, a := range notForMembers {
		if sar(t, "mallory", nil, "members-c", a) {
			t.Errorf("a member may %s in the namespace", a)
		}
	}
	for _, a := range []access{acc("get", "", "pods"), acc("get", g, "agenttasks"), acc("get", "", "secrets"), acc("get", "", "namespaces")} {
		if sar(t, "mallory", nil, "default", a) {
			t.Errorf("a member may %s in namespace default", a)
		}
	}

	// The one new write, Secrets, against the reserved-labels policy.
	cfg := rest.CopyConfig(env.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: "mallory"}
	mallory, err := client.New(cfg, client.Options{Scheme: app.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	forged := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "forged", Namespace: "members-c",
		Labels: map[string]string{schedv1.LabelManagedBy: schedv1.ManagedByValue}}}
	if err := mallory.Create(ctx, forged); err == nil || !strings.Contains(err.Error(), schedv1.LabelManagedBy) {
		t.Errorf("a member created a Secret with the operator's label: %v", err)
	}
	plain := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "plain", Namespace: "members-c"}}
	if err := mallory.Create(ctx, plain); err != nil {
		t.Errorf("a member may not create a Secret, which deploy --secret needs: %v", err)
	}
	opaque := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "opaque", Namespace: "members-c"}, Type: corev1.SecretTypeOpaque, StringData: map[string]string{"k": "v"}}
	if err := mallory.Create(ctx, opaque); err != nil {
		t.Errorf("a member may not create an Opaque Secret, the type the plugin makes: %v", err)
	}
	// A token Secret: a token of the account that never expires and
	// outlives the membership.
	token := func(name, account string) *corev1.Secret {
		return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "members-c",
			Annotations: map[string]string{corev1.ServiceAccountNameKey: account}}, Type: corev1.SecretTypeServiceAccountToken}
	}
	if err := mallory.Create(ctx, token("minted", "default")); !apierrors.IsForbidden(err) ||
		!strings.Contains(err.Error(), "may not request that account's tokens (create serviceaccounts/token)") {
		t.Errorf("a member created a service account token Secret: err = %v, want forbidden", err)
	}
	for _, typ := range []corev1.SecretType{corev1.SecretTypeDockerConfigJson, corev1.SecretTypeTLS, corev1.SecretTypeBasicAuth, "example.com/own"} {
		s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "typed", Namespace: "members-c"}, Type: typ}
		switch typ {
		case corev1.SecretTypeDockerConfigJson:
			s.StringData = map[string]string{corev1.DockerConfigJsonKey: `{"auths":{}}`}
		case corev1.SecretTypeTLS:
			s.StringData = map[string]string{corev1.TLSCertKey: "", corev1.TLSPrivateKeyKey: ""}
		case corev1.SecretTypeBasicAuth:
			s.StringData = map[string]string{corev1.BasicAuthUsernameKey: "u"}
		}
		if err := mallory.Create(ctx, s, client.DryRunAll); !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "may create only Opaque Secrets here") {
			t.Errorf("a member created a Secret of type %s: err = %v, want forbidden", typ, err)
		}
	}
	// An admin's token Secret, which a member may patch, pointed at
	// another account.
	if err := env.Client.Create(ctx, token("ci-token", "ci")); err != nil {
		t.Fatalf("an admin's token Secret: %v", err)
	}
	repoint := client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"annotations":{"kubernetes.io/service-account.name":"deployer"}}}`))
	if err := mallory.Patch(ctx, token("ci-token", "ci"), repoint); !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "service account deployer") {
		t.Errorf("a member pointed a token Secret at another account: err = %v, want forbidden", err)
	}
	annotate := client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"annotations":{"note":"x"}}}`))
	if err := mallory.Patch(ctx, token("ci-token", "ci"), annotate); err != nil {
		t.Errorf("a member annotating a Secret, account unchanged: %v", err)
	}
	ns := &corev1.Namespace{}
	if err := mallory.Get(ctx, client.ObjectKey{Name: "members-c"}, ns); err != nil {
		t.Fatalf("a member may not read their namespace: %v", err)
	}
	ns.Labels[schedv1.LabelTier] = "enterprise"
	if err := mallory.Update(ctx, ns); !apierrors.IsForbidden(err) {
		t.Errorf("a member changed their tier: %v", err)
	}
}

// TestCreateUpdatesAnEarlierTenant: a tenant made by an earlier version
// (its members bound to kubectl-sched-edit) gets kubectl-sched-tenant when
// create runs again, with its members, and the old binding goes; --user
// then replaces the members. A binding of that name someone else made
// stays.
func TestCreateUpdatesAnEarlierTenant(t *testing.T) {
	installTiers(t)
	ctx := context.Background()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "earlier", Labels: map[string]string{schedv1.LabelTier: "free"}}}
	if err := env.Client.Create(ctx, ns); err != nil {
		t.Fatal(err)
	}
	old := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "kubectl-sched-edit", Namespace: "earlier", Labels: map[string]string{"app.kubernetes.io/part-of": "kubectl-sched"}},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "kubectl-sched-edit"},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: "dana"}},
	}
	if err := env.Client.Create(ctx, old); err != nil {
		t.Fatal(err)
	}
	env.WaitAllowed(t, "dana", authorizationv1.ResourceAttributes{Namespace: "earlier", Verb: "create", Group: g, Resource: "agenttasks"})
	logs := access{verb: "get", resource: "pods", sub: "log"}
	if sar(t, "dana", nil, "earlier", logs) {
		t.Fatal("kubectl-sched-edit alone lets dana read logs: this test shows nothing")
	}

	res := env.Run("tenant", "create", "earlier", "--tier", "free", "--wait=false")
	want := "namespace/earlier applied (tier free, Pod Security restricted)\n" +
		"rolebinding.rbac.authorization.k8s.io/kubectl-sched-tenant applied in earlier (1 subject(s), ClusterRole kubectl-sched-tenant)\n" +
		"rolebinding.rbac.authorization.k8s.io/kubectl-sched-edit deleted in earlier (made by an earlier tenant create; kubectl-sched-tenant replaces it)\n"
	if res.Code != 0 || res.Stdout != want {
		t.Fatalf("re-run: exit %d, stdout %q, stderr %q", res.Code, res.Stdout, res.Stderr)
	}
	member(t, "earlier", "dana")
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(old), &rbacv1.RoleBinding{}); !apierrors.IsNotFound(err) {
		t.Errorf("the earlier binding is still there: %v", err)
	}

	res = env.Run("tenant", "create", "earlier", "--tier", "free", "--user", "erin", "--wait=false")
	if res.Code != 0 || !strings.Contains(res.Stdout, "kubectl-sched-tenant applied in earlier (1 subject(s)") || strings.Contains(res.Stdout, "deleted") {
		t.Fatalf("--user: exit %d, stdout %q, stderr %q", res.Code, res.Stdout, res.Stderr)
	}
	rb := &rbacv1.RoleBinding{}
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: "earlier", Name: tenant.MemberRole}, rb); err != nil {
		t.Fatal(err)
	}
	if len(rb.Subjects) != 1 || rb.Subjects[0].Name != "erin" {
		t.Errorf("members after --user erin: %+v, want erin alone", rb.Subjects)
	}

	theirs := old.DeepCopy()
	theirs.ResourceVersion, theirs.UID, theirs.Labels = "", "", nil
	if err := env.Client.Create(ctx, theirs); err != nil {
		t.Fatal(err)
	}
	if res := env.Run("tenant", "create", "earlier", "--tier", "free", "--wait=false"); res.Code != 0 || strings.Contains(res.Stdout, "deleted") {
		t.Fatalf("with someone else's binding: exit %d, stdout %q, stderr %q", res.Code, res.Stdout, res.Stderr)
	}
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(theirs), &rbacv1.RoleBinding{}); err != nil {
		t.Errorf("a kubectl-sched-edit binding tenant create did not make was deleted: %v", err)
	}
}

// TestMemberRoleHasTheKinds: kubectl-sched-tenant grants the kinds exactly
// as kubectl-sched-edit does, so a member can do with them what an editor
// of the namespace can.
func TestMemberRoleHasTheKinds(t *testing.T) {
	ctx := context.Background()
	edit, member := &rbacv1.ClusterRole{}, &rbacv1.ClusterRole{}
	if err := env.Client.Get(ctx, client.ObjectKey{Name: "kubectl-sched-edit"}, edit); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Get(ctx, client.ObjectKey{Name: tenant.MemberRole}, member); err != nil {
		t.Fatal(err)
	}
	var kinds []rbacv1.PolicyRule
	for _, r := range member.Rules {
		if slices.Contains(r.APIGroups, g) {
			kinds = append(kinds, r)
		}
	}
	if fmt.Sprint(kinds) != fmt.Sprint(edit.Rules) {
		t.Errorf("kubectl-sched-tenant's rules for %s:\n%v\nkubectl-sched-edit's:\n%v", g, kinds, edit.Rules)
	}
}

// TestMemberTenantList: a member, who may not list namespaces, sees their
// own tenant; a member of another tenant is told which permission is
// missing.
func TestMemberTenantList(t *testing.T) {
	installTiers(t)
	for _, args := range [][]string{
		{"tenant", "create", "members-d", "--tier", "team", "--user", "ann", "--wait=false"},
		{"tenant", "create", "members-e", "--tier", "free", "--user", "ben", "--wait=false"},
	} {
		if res := env.Run(args...); res.Code != 0 {
			t.Fatalf("%v: exit %d: %s", args, res.Code, res.Stderr)
		}
	}
	member(t, "members-d", "ann")
	member(t, "members-e", "ben")
	res := env.Run("tenant", "list", "-n", "members-d", "--as", "ann")
	if res.Code != 0 || !strings.Contains(res.Stdout, "members-d") || strings.Contains(res.Stdout, "members-e") ||
		!strings.Contains(res.Stderr, "You may not list namespaces: showing namespace members-d only.") {
		t.Errorf("a member's tenant list: exit %d, stdout:\n%s\nstderr:\n%s", res.Code, res.Stdout, res.Stderr)
	}
	res = env.Run("tenant", "list", "-n", "members-d", "--as", "ben")
	if res.Code != cmdutil.ExitForbidden || !strings.Contains(res.Stderr, `forbidden: user "ben" may not get namespaces "members-d" in namespace "members-d"`) {
		t.Errorf("another tenant's member: exit %d, stderr:\n%s", res.Code, res.Stderr)
	}
	res = env.Run("tenant", "list", "-n", "default", "--as", "ann")
	if res.Code != cmdutil.ExitForbidden || !strings.Contains(res.Stderr, `may not get namespaces "default" in namespace "default"`) {
		t.Errorf("a member asking about default: exit %d, stderr:\n%s", res.Code, res.Stderr)
	}
}

package tenant_test

import (
	"context"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
	"github.com/kubectl-sched/kubectl-sched/hack/testenv"
	"github.com/kubectl-sched/kubectl-sched/hack/testenv/plugintest"
	"github.com/kubectl-sched/kubectl-sched/plugin/internal/cmdutil"
)

var env *plugintest.Env

func TestMain(m *testing.M) { plugintest.Main(m, &env) }

// installTiers puts the shipped tiers where install would.
func installTiers(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	if err := env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: schedv1.DefaultOperatorNamespace}}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	if err := testenv.ApplyFile(ctx, env.Client, filepath.Join(root, "config", "manager", "tiers.yaml")); err != nil {
		t.Fatal(err)
	}
}

// clusterRBAC names the cluster-scoped roles and bindings.
func clusterRBAC(t *testing.T) []string {
	t.Helper()
	var out []string
	roles, bindings := &rbacv1.ClusterRoleList{}, &rbacv1.ClusterRoleBindingList{}
	if err := env.Client.List(context.Background(), roles); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.List(context.Background(), bindings); err != nil {
		t.Fatal(err)
	}
	for _, r := range roles.Items {
		out = append(out, "ClusterRole "+r.Name)
	}
	for _, b := range bindings.Items {
		out = append(out, "ClusterRoleBinding "+b.Name)
	}
	return out
}

// TestCreateListDelete: create makes the namespace and the members'
// binding in it, nothing outside it, so deleting the namespace removes
// everything create made.
func TestCreateListDelete(t *testing.T) {
	installTiers(t)
	before := clusterRBAC(t)
	res := env.Run("tenant", "create", "payments", "--tier", "team", "--group", "payments-devs", "--user", "ana", "--wait=false")
	want := "namespace/payments applied (tier team, Pod Security restricted)\nrolebinding.rbac.authorization.k8s.io/kubectl-sched-tenant applied in payments (2 subject(s), ClusterRole kubectl-sched-tenant)\n"
	if res.Code != 0 || res.Stdout != want {
		t.Fatalf("create: exit %d, stdout %q, stderr %q", res.Code, res.Stdout, res.Stderr)
	}
	ns := &corev1.Namespace{}
	if err := env.Client.Get(context.Background(), client.ObjectKey{Name: "payments"}, ns); err != nil {
		t.Fatal(err)
	}
	if ns.Labels[schedv1.LabelTier] != "team" || ns.Labels["pod-security.kubernetes.io/enforce"] != "restricted" {
		t.Errorf("namespace labels %v", ns.Labels)
	}
	rb := &rbacv1.RoleBinding{}
	if err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: "payments", Name: "kubectl-sched-tenant"}, rb); err != nil {
		t.Fatal(err)
	}
	if rb.RoleRef.Name != "kubectl-sched-tenant" || len(rb.Subjects) != 2 || rb.Subjects[0].Name != "ana" || rb.Subjects[1].Kind != rbacv1.GroupKind {
		t.Errorf("binding %+v", rb)
	}

	if diff := cmp.Diff(before, clusterRBAC(t)); diff != "" {
		t.Errorf("tenant create changed cluster-scoped RBAC (-before +after):\n%s", diff)
	}

	// The operator has not made its quota (none runs here): no usage.
	// Other tests' tenants may be listed too.
	res = env.Run("tenant", "list")
	if res.Code != 0 || !regexp.MustCompile(`^NAME\s+TIER\s+TASKS\s+WORKFLOWS\s+APPS\s+CPU\s+MEMORY\s+AGE\n`).MatchString(res.Stdout) ||
		!regexp.MustCompile(`(?m)^payments\s+team\s+-\s+-\s+-\s+-\s+-\s+\S+$`).MatchString(res.Stdout) {
		t.Errorf("list: exit %d, stdout:\n%s", res.Code, res.Stdout)
	}

	res = env.Run("tenant", "delete", "default")
	if res.Code != cmdutil.ExitError || !strings.Contains(res.Stderr, "namespace default is not a tenant") {
		t.Errorf("deleting a namespace that is not a tenant: exit %d, stderr %q", res.Code, res.Stderr)
	}
	res = env.Run("tenant", "delete", "payments")
	if res.Code != 0 || res.Stdout != "namespace/payments deleted (tier team)\n" {
		t.Fatalf("delete: exit %d, stdout %q, stderr %q", res.Code, res.Stdout, res.Stderr)
	}
	if err := env.Client.Get(context.Background(), client.ObjectKey{Name: "payments"}, ns); err == nil && ns.DeletionTimestamp.IsZero() {
		t.Errorf("the namespace is not being deleted")
	}
}

func TestCreateErrors(t *testing.T) {
	installTiers(t)
	nobody, err := env.UserKubeconfig("nobody")
	if err != nil {
		t.Fatal(err)
	}
	cases := map[string]plugintest.ErrorCase{
		"no name":        {Args: []string{"tenant", "create", "--tier", "team"}, Code: cmdutil.ExitUsage, Stderr: []string{"takes one tenant name, got 0 arguments"}},
		"no tier":        {Args: []string{"tenant", "create", "x"}, Code: cmdutil.ExitUsage, Stderr: []string{"--tier is required"}},
		"bad timeout":    {Args: []string{"tenant", "create", "x", "--tier", "team", "--timeout", "0s"}, Code: cmdutil.ExitUsage, Stderr: []string{"--timeout must be positive"}},
		"describe none":  {Args: []string{"tenant", "describe", "nope"}, Code: cmdutil.ExitNotFound, Stderr: []string{`"nope" not found`}},
		"not a tenant":   {Args: []string{"tenant", "describe", "default"}, Code: cmdutil.ExitNotFound, Stderr: []string{"namespace default is not a tenant"}},
		"list -o bad":    {Args: []string{"tenant", "list", "-o", "table"}, Code: cmdutil.ExitUsage, Stderr: []string{"Use -o wide, json, yaml or name."}},
		"bad name":       {Args: []string{"tenant", "create", "Team_A", "--tier", "team"}, Code: cmdutil.ExitUsage, Stderr: []string{`tenant name "Team_A" is not a namespace name`}},
		"unknown tier":   {Args: []string{"tenant", "create", "x", "--tier", "platinum"}, Code: cmdutil.ExitUsage, Stderr: []string{"Tiers: enterprise, free, team."}},
		"not installed":  {Args: []string{"tenant", "create", "x", "--tier", "team", "--operator-namespace", "elsewhere"}, Code: cmdutil.ExitNotInstalled, Stderr: []string{"no tiers are defined"}},
		"forbidden":      {Args: []string{"tenant", "create", "x", "--tier", "team", "--kubeconfig", nobody}, NoKubeconfig: true, Code: cmdutil.ExitForbidden, Stderr: []string{"forbidden"}},
		"delete unknown": {Args: []string{"tenant", "delete", "nope"}, Code: cmdutil.ExitNotFound, Stderr: []string{`"nope" not found`}},
	}
	env.RunErrorCases(t, cases, nil)
	if err := env.Client.Get(context.Background(), client.ObjectKey{Name: "x"}, &corev1.Namespace{}); !apierrors.IsNotFound(err) {
		t.Errorf("a failed create made the namespace: %v", err)
	}
}

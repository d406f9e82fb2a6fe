package app_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	. "github.com/kubectl-sched/kubectl-sched/api/builders"
	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
	"github.com/kubectl-sched/kubectl-sched/hack/testenv"
)

// TestOperatorKeepsTheAccountsTenantsName acts as the operator's service
// account, with its generated RBAC, in a namespace made as `kubectl sched
// tenant create` makes it, and tries to make a tenant's task or app run as
// another service account, or change hands, by patching it: RBAC lets the
// operator patch AgentTasks (it cancels a step's task) and, with a wider
// role, apps and workflows; kubectl-sched-operator-confinement refuses all
// but the cancel, naming the field. The member may still change them.
func TestOperatorKeepsTheAccountsTenantsName(t *testing.T) {
	env, err := testenv.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Stop() })
	ctx := context.Background()
	op := operatorClient(t, env)
	ns := testenv.TenantNamespace(t, env.Client, "team", []string{"alice"}, nil)
	alice, err := testenv.Impersonate(env.Config, "alice")
	if err != nil {
		t.Fatal(err)
	}
	for _, sa := range []string{"builder", "deployer"} {
		if err := env.Client.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: sa, Namespace: ns}}); err != nil {
			t.Fatal(err)
		}
	}
	task := MakeAgentTask("build", ns).Image("busybox").Spec(func(s *schedv1.AgentTaskSpec) { s.ServiceAccountName = "builder" }).Obj()
	if err := alice.Create(ctx, task); err != nil {
		t.Fatal(err)
	}
	wf := &schedv1.Workflow{ObjectMeta: metav1.ObjectMeta{Name: "release", Namespace: ns},
		Spec: schedv1.WorkflowSpec{Steps: []schedv1.WorkflowStep{{Name: "a", Task: schedv1.AgentTaskSpec{Image: "busybox"}}}}}
	if err := alice.Create(ctx, wf); err != nil {
		t.Fatal(err)
	}
	ud := &schedv1.UserDeployment{ObjectMeta: metav1.ObjectMeta{Name: "shop", Namespace: ns},
		Spec: schedv1.UserDeploymentSpec{Services: []schedv1.ServiceSpec{{Name: "web", Image: "busybox", Exposure: schedv1.ExposureNone, ServiceAccountName: "deployer"}}}}
	if err := alice.Create(ctx, ud); err != nil {
		t.Fatal(err)
	}
	// The generated role lets the operator patch AgentTasks only; a wider
	// one, as a stolen token might meet, shows the policy alone holds an
	// app and a workflow too.
	wider := &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Name: "operator-widened", Namespace: ns},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{schedv1.GroupVersion.Group}, Resources: []string{"userdeployments", "workflows"}, Verbs: []string{"patch"}}},
	}
	widened := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "operator-widened", Namespace: ns},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: wider.Name},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: testenv.OperatorServiceAccount, Namespace: testenv.OperatorNamespace}},
	}
	for _, obj := range []client.Object{wider, widened} {
		if err := env.Client.Create(ctx, obj); err != nil {
			t.Fatal(err)
		}
	}
	user := "system:serviceaccount:" + testenv.OperatorNamespace + ":" + testenv.OperatorServiceAccount
	for _, resource := range []string{"agenttasks", "userdeployments", "workflows"} {
		if err := testenv.WaitAllowed(ctx, env.Client, user, authorizationAttrs("patch", schedv1.GroupVersion.Group, resource, ns)); err != nil {
			t.Fatalf("the refusals below must be the policy's, not RBAC's: %v", err)
		}
	}
	patch := func(c client.Client, obj client.Object, body string) error {
		return c.Patch(ctx, obj.DeepCopyObject().(client.Object), client.RawPatch(types.MergePatchType, []byte(body)), client.DryRunAll)
	}
	const otherAccount = `{"spec":{"serviceAccountName":"default"}}`
	// Policies take effect asynchronously.
	testenv.Eventually(t, 100*time.Millisecond, 30*time.Second, "the confinement policy to hold a task's account", func(context.Context) error {
		if err := patch(op, task, otherAccount); !apierrors.IsForbidden(err) {
			return fmt.Errorf("a task's account changed by the operator: err = %v, want forbidden", err)
		}
		return nil
	})

	refused := map[string]struct {
		obj       client.Object
		body      string
		want      string
		wantField string
	}{
		"a task's service account": {task, otherAccount,
			"changes the spec of agenttasks only to cancel a step's AgentTask (spec.cancel), not spec.serviceAccountName", "serviceAccountName"},
		"a task's service account back to the namespace's default": {task, `{"spec":{"serviceAccountName":null}}`,
			"not spec.serviceAccountName", "serviceAccountName"},
		"a task's image, with its cancel": {task, `{"spec":{"cancel":true,"image":"evil"}}`, "not spec.image", "image"},
		"a task's owner": {task, `{"metadata":{"ownerReferences":[{"apiVersion":"sched.kubectl-sched.dev/v1alpha1","kind":"Workflow","name":"release","uid":"` + string(wf.UID) + `","controller":true}]}}`,
			"sets the owners of agenttasks only when it creates them", ""},
		"an app's service account": {ud, `{"spec":{"services":[{"name":"web","image":"busybox","exposure":"None","serviceAccountName":"default"}]}}`,
			"changes the spec of userdeployments only to cancel a step's AgentTask (spec.cancel), not spec.services", "services"},
		"a workflow's cancel": {wf, `{"spec":{"cancel":true}}`, "changes the spec of workflows only to cancel a step's AgentTask", "cancel"},
	}
	for name, tc := range refused {
		t.Run("refused: "+name, func(t *testing.T) {
			err := patch(op, tc.obj, tc.body)
			if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want forbidden saying %q", err, tc.want)
			}
			// The member may: the refusal is the operator's alone (a
			// task's owner aside, which members cannot set on their own
			// objects to another's either way).
			if tc.wantField != "" {
				if err := patch(alice, tc.obj, tc.body); err != nil && !isOwnRule(err) {
					t.Errorf("the member's own change: %v", err)
				}
			}
		})
	}
	t.Run("allowed: cancelling a task", func(t *testing.T) {
		if err := patch(op, task, `{"spec":{"cancel":true}}`); err != nil {
			t.Errorf("refused: %v", err)
		}
	})
	t.Run("allowed: labelling a task", func(t *testing.T) {
		if err := patch(op, task, `{"metadata":{"labels":{"x":"y"}}}`); err != nil {
			t.Errorf("refused: %v", err)
		}
	})
}

// isOwnRule tells a refusal by a rule that holds every user (a Workflow's
// spec is fixed once created) from the operator's confinement.
func isOwnRule(err error) bool {
	var status apierrors.APIStatus
	return errors.As(err, &status) && !strings.Contains(err.Error(), "the kubectl-sched operator")
}

package userdeployment_test

import (
	"strings"
	"testing"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	. "github.com/kubectl-sched/kubectl-sched/api/builders"
	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
	"github.com/kubectl-sched/kubectl-sched/hack/testenv"
	"github.com/kubectl-sched/kubectl-sched/operator/app"
)

// TestNamespaceNamedLikeTheStoreMount: External Secrets strips a store's
// mount from a key that starts with it, so the tenant of namespace "secret"
// (a store mounted at secret, the default reserved path) asking for
// "secret/<victim>/db" would read the victim's "<victim>/db". The operator
// makes no ExternalSecret for that namespace and says why.
func TestNamespaceNamedLikeTheStoreMount(t *testing.T) {
	restartOperator(t, func(o *app.Options) { o.Settings.ClusterSecretStore = "vault" })
	ctx := t.Context()
	nsObj := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "secret"}}
	if err := sim.Client.Create(ctx, nsObj); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sim.Client.Delete(ctx, nsObj) })
	tenant, err := testenv.BindUser(ctx, sim.Client, sim.Config, "secret", "mount-squatter", "kubectl-sched-edit",
		authorizationv1.ResourceAttributes{Verb: "create", Group: schedv1.GroupVersion.Group, Resource: "userdeployments"})
	if err != nil {
		t.Fatal(err)
	}
	if err := tenant.Create(ctx, MakeUserDeployment("steal", "secret").Service("api", "api:1", 8080, schedv1.ExposureInternal).
		ExternalSecretRef("db", "secret/victim/db", "api").Obj()); err != nil {
		t.Fatal(err)
	}
	ud := waitUD(t, "secret", "steal", "Degraded", phase(schedv1.UserDeploymentDegraded))
	c := condition(ud, schedv1.ConditionDegraded)
	if c.Reason != schedv1.ReasonInvalidSpec || !strings.Contains(c.Message, `namespace secret may not read the shared store: its part, "secret/", would cover "secret"`) ||
		!strings.Contains(c.Message, "--external-secret-reserved-paths") {
		t.Errorf("Degraded %s %q, want InvalidSpec naming the reserved path and the setting", c.Reason, c.Message)
	}
	list := &unstructured.UnstructuredList{}
	list.SetAPIVersion("external-secrets.io/v1")
	list.SetKind("ExternalSecretList")
	if err := sim.Client.List(ctx, list, client.InNamespace("secret")); err != nil || len(list.Items) != 0 {
		t.Errorf("ExternalSecrets in namespace secret: %d (err %v), want none", len(list.Items), err)
	}
}

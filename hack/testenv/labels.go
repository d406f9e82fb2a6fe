package testenv

import (
	"context"
	"fmt"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
	"github.com/kubectl-sched/kubectl-sched/operator/app"
)

// waitLabelsReserved waits until the API server enforces
// config/policy/reserved_labels.yaml. The admin (system:masters) may set
// the reserved labels, so a probe user who may create ConfigMaps tries;
// its role is removed afterwards.
func waitLabelsReserved(ctx context.Context, cfg *rest.Config, admin client.Client) error {
	const user = "testenv-reserved-labels-probe"
	role := &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: user},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"create"}}},
	}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: user},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: user},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}},
	}
	for _, o := range []client.Object{role, binding} {
		if err := createOrUpdate(ctx, admin, o); err != nil {
			return err
		}
		defer func() { _ = admin.Delete(context.Background(), o) }()
	}
	probeCfg := rest.CopyConfig(cfg)
	probeCfg.Impersonate = rest.ImpersonationConfig{UserName: user}
	probe, err := client.New(probeCfg, client.Options{Scheme: app.Scheme()})
	if err != nil {
		return err
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "reserved-labels-probe", Namespace: "default",
		Labels: map[string]string{schedv1.LabelManagedBy: schedv1.ManagedByValue}}}
	var last error
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		last = probe.Create(ctx, cm.DeepCopy(), client.DryRunAll)
		return last != nil && strings.Contains(last.Error(), "reserved for the kubectl-sched operator"), nil
	})
	if err != nil {
		return fmt.Errorf("the reserved-labels policy is not enforced (last answer: %v): %w", last, err)
	}
	return nil
}

// Unreserve renames the labels only the operator may set
// (kubectl-sched-reserved-labels refuses them from anyone else) to as
// many labels of the same sizes, so the direct side applies objects as
// large as the operator's, and its selectors still match: what a user
// applies to compare with an app's objects (userdeployment.PlanObjects).
func Unreserve(o client.Object) {
	re := func(l map[string]string) map[string]string {
		out := make(map[string]string, len(l))
		for k, v := range l {
			if k == "app.kubernetes.io/managed-by" && v == "kubectl-sched" {
				v = "benchmark-ed"
			}
			if rest, ok := strings.CutPrefix(k, schedv1.GroupVersion.Group+"/"); ok {
				k = "bench.kubectl-example.dev/" + rest
			}
			out[k] = v
		}
		return out
	}
	o.SetLabels(re(o.GetLabels()))
	switch o := o.(type) {
	case *appsv1.Deployment:
		o.Spec.Selector.MatchLabels = re(o.Spec.Selector.MatchLabels)
		o.Spec.Template.Labels = re(o.Spec.Template.Labels)
	case *corev1.Service:
		o.Spec.Selector = re(o.Spec.Selector)
	}
}

package testenv

import (
	"context"
	"fmt"
	"strings"
	"time"

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

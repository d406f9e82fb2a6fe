package tenant_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
	"github.com/kubectl-sched/kubectl-sched/hack/testenv"
)

var env *testenv.Env

// A real API server with the shipped tiers, and the operator running only
// the tenant controller with its generated RBAC.
func TestMain(m *testing.M) {
	testenv.Main(m, testenv.MainOptions{
		Env:         &env,
		Controllers: []string{"tenant"},
		// The tiers ConfigMap lives in the operator's namespace, which
		// starting the operator creates.
		AfterOperator: func(ctx context.Context, _ *rest.Config, c client.Client) error {
			root, err := testenv.RepoRoot()
			if err != nil {
				return err
			}
			return testenv.ApplyFile(ctx, c, filepath.Join(root, "config", "manager", "tiers.yaml"))
		},
	})
}

func tenantNamespace(t *testing.T, name, tier string) {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{schedv1.LabelTier: tier}}}
	if err := env.Client.Create(t.Context(), ns); err != nil {
		t.Fatal(err)
	}
}

func eventually(t *testing.T, what string, cond func(ctx context.Context) error) {
	t.Helper()
	var last error
	err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		last = cond(ctx)
		return last == nil, nil
	})
	if err != nil {
		t.Fatalf("waiting for %s: %v", what, last)
	}
}

func quotaIs(ns, resourceName, want string) func(ctx context.Context) error {
	return func(ctx context.Context) error {
		q := &corev1.ResourceQuota{}
		if err := env.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: schedv1.TierObjectName}, q); err != nil {
			return err
		}
		got := q.Spec.Hard[corev1.ResourceName(resourceName)]
		if got.Cmp(resource.MustParse(want)) != 0 {
			return fmt.Errorf("%s = %s, want %s", resourceName, got.String(), want)
		}
		return nil
	}
}

func TestTierGivesQuotaAndLimits(t *testing.T) {
	tenantNamespace(t, "tier-team", "team")
	eventually(t, "the team quota", quotaIs("tier-team", "pods", "100"))
	lr := &corev1.LimitRange{}
	eventually(t, "the team limits", func(ctx context.Context) error {
		return env.Client.Get(ctx, types.NamespacedName{Namespace: "tier-team", Name: schedv1.TierObjectName}, lr)
	})
	if d := lr.Spec.Limits[0].Default[corev1.ResourceCPU]; lr.Spec.Limits[0].Type != corev1.LimitTypeContainer || d.String() != "500m" {
		t.Errorf("limits %+v, want the team container defaults", lr.Spec.Limits)
	}

	// An edit is repaired.
	q := &corev1.ResourceQuota{}
	if err := env.Client.Get(t.Context(), types.NamespacedName{Namespace: "tier-team", Name: schedv1.TierObjectName}, q); err != nil {
		t.Fatal(err)
	}
	q.Spec.Hard[corev1.ResourcePods] = resource.MustParse("100000")
	if err := env.Client.Update(t.Context(), q); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the edited quota repaired", quotaIs("tier-team", "pods", "100"))

	// A new tier is followed.
	ns := &corev1.Namespace{}
	if err := env.Client.Get(t.Context(), client.ObjectKey{Name: "tier-team"}, ns); err != nil {
		t.Fatal(err)
	}
	ns.Labels[schedv1.LabelTier] = "free"
	if err := env.Client.Update(t.Context(), ns); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the free quota", quotaIs("tier-team", "pods", "10"))
}

func TestTiersConfigMapChangesAreFollowed(t *testing.T) {
	tenantNamespace(t, "tier-follow", "enterprise")
	eventually(t, "the enterprise quota", quotaIs("tier-follow", "pods", "1000"))
	cm := &corev1.ConfigMap{}
	key := types.NamespacedName{Namespace: testenv.OperatorNamespace, Name: schedv1.TiersConfigMap}
	if err := env.Client.Get(t.Context(), key, cm); err != nil {
		t.Fatal(err)
	}
	old := cm.Data["enterprise"]
	cm.Data["enterprise"] = strings.Replace(old, `pods: "1000"`, `pods: "1500"`, 1)
	if err := env.Client.Update(t.Context(), cm); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := env.Client.Get(context.Background(), key, cm); err == nil {
			cm.Data["enterprise"] = old
			_ = env.Client.Update(context.Background(), cm)
		}
	})
	eventually(t, "the new enterprise quota", quotaIs("tier-follow", "pods", "1500"))
}

func TestUnknownTierIsReported(t *testing.T) {
	tenantNamespace(t, "tier-unknown", "platinum")
	eventually(t, "an UnknownTier event", func(ctx context.Context) error {
		var list eventsv1.EventList
		if err := env.Client.List(ctx, &list); err != nil {
			return err
		}
		for _, e := range list.Items {
			if e.Regarding.Kind == "Namespace" && e.Regarding.Name == "tier-unknown" && e.Reason == "UnknownTier" {
				if !strings.Contains(e.Note, `tier "platinum" is not defined`) || !strings.Contains(e.Note, "enterprise, free, team") {
					return fmt.Errorf("note %q does not name the tier and those defined", e.Note)
				}
				return nil
			}
		}
		return fmt.Errorf("no event yet")
	})
	q := &corev1.ResourceQuota{}
	if err := env.Client.Get(t.Context(), types.NamespacedName{Namespace: "tier-unknown", Name: schedv1.TierObjectName}, q); err == nil {
		t.Errorf("a quota was made for an unknown tier: %+v", q.Spec)
	}
}

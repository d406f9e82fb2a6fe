package tenant_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
	"github.com/kubectl-sched/kubectl-sched/hack/cluster"
	"github.com/kubectl-sched/kubectl-sched/hack/testenv"
)

var (
	sim *testenv.Sim
	op  *testenv.Operator
)

// A simulated cluster (pods run, and the quota controller keeps quota
// status) with the shipped tiers and PriorityClasses, and the operator
// running only the tenant controller with its generated RBAC. Its requests
// are recorded.
func TestMain(m *testing.M) {
	testenv.Main(m, testenv.MainOptions{
		Sim:      &sim,
		Operator: &op,
		// The quota controller counts the CRDs only from its discovery
		// resync (30s after they are installed) and then recounts a
		// quota only on its full resync (5m by default).
		SimOptions:    cluster.Options{ExtraControllerManagerArgs: []string{"--resource-quota-sync-period=5s"}},
		Controllers:   []string{"tenant"},
		WrapTransport: func(rt http.RoundTripper) http.RoundTripper { return recorder{rt} },
		// The tiers ConfigMap lives in the operator's namespace, which
		// starting the operator creates.
		AfterOperator: func(ctx context.Context, _ *rest.Config, c client.Client) error {
			return testenv.ApplyTiers(ctx, c)
		},
	})
}

// requests records the operator's requests other than watches.
var requests struct {
	sync.Mutex
	log []string
}

type recorder struct{ next http.RoundTripper }

func (r recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.URL.Query().Get("watch") != "true" {
		requests.Lock()
		requests.log = append(requests.log, req.Method+" "+req.URL.Path)
		requests.Unlock()
	}
	return r.next.RoundTrip(req)
}

func requestCount() int {
	requests.Lock()
	defer requests.Unlock()
	return len(requests.log)
}

func requestsSince(n int) []string {
	requests.Lock()
	defer requests.Unlock()
	return append([]string(nil), requests.log[n:]...)
}

func tenantNamespace(t testing.TB, name, tier string) {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{schedv1.LabelTier: tier}}}
	if err := sim.Client.Create(context.Background(), ns); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sim.Client.Delete(context.Background(), ns) })
}

func quotaIs(ns, resourceName, want string) func(ctx context.Context) error {
	return func(ctx context.Context) error {
		q := &corev1.ResourceQuota{}
		if err := sim.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: schedv1.TierObjectName}, q); err != nil {
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
	testenv.EventuallyWithin(t, testenv.ShortTimeout, "the team quota", quotaIs("tier-team", "pods", "100"))
	lr := &corev1.LimitRange{}
	testenv.EventuallyWithin(t, testenv.ShortTimeout, "the team limits", func(ctx context.Context) error {
		return sim.Client.Get(ctx, types.NamespacedName{Namespace: "tier-team", Name: schedv1.TierObjectName}, lr)
	})
	if d := lr.Spec.Limits[0].Default[corev1.ResourceCPU]; lr.Spec.Limits[0].Type != corev1.LimitTypeContainer || d.String() != "500m" {
		t.Errorf("limits %+v, want the team container defaults", lr.Spec.Limits)
	}

	// An edit is repaired.
	q := &corev1.ResourceQuota{}
	if err := sim.Client.Get(t.Context(), types.NamespacedName{Namespace: "tier-team", Name: schedv1.TierObjectName}, q); err != nil {
		t.Fatal(err)
	}
	// A patch, not an update: the operator and the quota controller write
	// the quota too.
	patch := client.MergeFrom(q.DeepCopy())
	q.Spec.Hard[corev1.ResourcePods] = resource.MustParse("100000")
	if err := sim.Client.Patch(t.Context(), q, patch); err != nil {
		t.Fatal(err)
	}
	testenv.EventuallyWithin(t, testenv.ShortTimeout, "the edited quota repaired", quotaIs("tier-team", "pods", "100"))

	// A new tier is followed.
	ns := &corev1.Namespace{}
	if err := sim.Client.Get(t.Context(), client.ObjectKey{Name: "tier-team"}, ns); err != nil {
		t.Fatal(err)
	}
	ns.Labels[schedv1.LabelTier] = "free"
	if err := sim.Client.Update(t.Context(), ns); err != nil {
		t.Fatal(err)
	}
	testenv.EventuallyWithin(t, testenv.ShortTimeout, "the free quota", quotaIs("tier-team", "pods", "10"))
	// With the tier's TTLs, where admission and the task and workflow
	// controllers read them.
	testenv.EventuallyWithin(t, testenv.ShortTimeout, "the free TTLs", func(ctx context.Context) error {
		if err := sim.Client.Get(ctx, types.NamespacedName{Namespace: "tier-team", Name: schedv1.TierObjectName}, q); err != nil {
			return err
		}
		if d, m := q.Annotations[schedv1.AnnotationTierTTLDefault], q.Annotations[schedv1.AnnotationTierTTLMax]; d != "15m" || m != "24h" {
			return fmt.Errorf("ttl annotations %q, %q; want 15m, 24h", d, m)
		}
		return nil
	})
}

func TestTiersConfigMapChangesAreFollowed(t *testing.T) {
	tenantNamespace(t, "tier-follow", "enterprise")
	testenv.EventuallyWithin(t, testenv.ShortTimeout, "the enterprise quota", quotaIs("tier-follow", "pods", "1000"))
	cm := &corev1.ConfigMap{}
	key := types.NamespacedName{Namespace: testenv.OperatorNamespace, Name: schedv1.TiersConfigMap}
	if err := sim.Client.Get(t.Context(), key, cm); err != nil {
		t.Fatal(err)
	}
	old := cm.Data["enterprise"]
	cm.Data["enterprise"] = strings.Replace(old, `pods: "1000"`, `pods: "1500"`, 1)
	if err := sim.Client.Update(t.Context(), cm); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := sim.Client.Get(context.Background(), key, cm); err == nil {
			cm.Data["enterprise"] = old
			_ = sim.Client.Update(context.Background(), cm)
		}
	})
	testenv.EventuallyWithin(t, testenv.ShortTimeout, "the new enterprise quota", quotaIs("tier-follow", "pods", "1500"))
}

func TestUnknownTierIsReported(t *testing.T) {
	tenantNamespace(t, "tier-unknown", "platinum")
	testenv.EventuallyWithin(t, testenv.ShortTimeout, "an UnknownTier event", func(ctx context.Context) error {
		var list eventsv1.EventList
		if err := sim.Client.List(ctx, &list); err != nil {
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
	if err := sim.Client.Get(t.Context(), types.NamespacedName{Namespace: "tier-unknown", Name: schedv1.TierObjectName}, q); err == nil {
		t.Errorf("a quota was made for an unknown tier: %+v", q.Spec)
	}
}

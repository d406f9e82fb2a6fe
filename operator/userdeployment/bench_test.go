package userdeployment_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	. "github.com/kubectl-sched/kubectl-sched/api/testing"
	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
	"github.com/kubectl-sched/kubectl-sched/hack/testenv"
	"github.com/kubectl-sched/kubectl-sched/operator/app"
	"github.com/kubectl-sched/kubectl-sched/operator/userdeployment"
)

// benchApps is how many apps each side of the benchmark starts. Their 200
// pods fit on the simulated cluster's untainted nodes twice over.
const benchApps = 200

// BenchmarkUserDeployments times 200 one-service UserDeployments going to
// Running through the operator, against the same Deployments and Services
// created directly (10 clients at once) until available, and reports the
// ratio (target <= 1.1). The apps are Open (no NetworkPolicy) so both sides
// create the same objects, as the same kind of user (see benchUser).
// Neither side is held back by a client-side rate limit, and the operator
// runs 20 reconciles at once, since a reconcile waits for its writes. On
// two cores the API server's write rate bounds both sides: per app the
// operator adds the UserDeployment, two status writes and two events to the
// two objects the direct side creates.
//
//	go test ./operator/userdeployment/ -run '^$' -bench BenchmarkUserDeployments -benchtime 1x
func BenchmarkUserDeployments(b *testing.B) {
	restartOperator(b, func(o *app.Options) {
		o.KubeAPIQPS, o.KubeAPIBurst = 1000, 2000
		o.MaxConcurrentReconciles = 20
	})
	cfg := rest.CopyConfig(sim.Config)
	cfg.QPS, cfg.Burst = 1000, 2000
	c, err := client.New(cfg, client.Options{Scheme: app.Scheme()})
	if err != nil {
		b.Fatal(err)
	}
	creator := benchUser(b, c, cfg)
	apps := func(ns string) []*schedv1.UserDeployment {
		out := make([]*schedv1.UserDeployment, benchApps)
		for i := range out {
			out[i] = MakeUserDeployment(fmt.Sprintf("app-%03d", i), ns).
				Service("web", "nginx:1.27", 80, schedv1.ExposureInternal).
				Isolation(schedv1.IsolationOpen).Obj()
		}
		return out
	}

	var direct, operator time.Duration
	for range b.N {
		b.StopTimer()
		ns := namespace(b)
		var objs []client.Object
		for _, ud := range apps(ns) {
			for _, o := range userdeployment.PlanObjects(ud, userdeployment.Settings{}) {
				o.SetOwnerReferences(nil)
				objs = append(objs, o)
			}
		}
		b.StartTimer()
		direct += timeToReady(b, creator, objs, func(ctx context.Context) (int, error) {
			var deps appsv1.DeploymentList
			if err := c.List(ctx, &deps, client.InNamespace(ns)); err != nil {
				return 0, err
			}
			ready := 0
			for _, d := range deps.Items {
				if d.Status.ObservedGeneration == d.Generation && d.Status.AvailableReplicas == 1 {
					ready++
				}
			}
			return ready, nil
		})
		b.StopTimer()
		emptyNamespace(b, c, ns)

		ns = namespace(b)
		objs = objs[:0]
		for _, ud := range apps(ns) {
			objs = append(objs, ud)
		}
		b.StartTimer()
		operator += timeToReady(b, creator, objs, func(ctx context.Context) (int, error) {
			var uds schedv1.UserDeploymentList
			if err := c.List(ctx, &uds, client.InNamespace(ns)); err != nil {
				return 0, err
			}
			ready := 0
			for i := range uds.Items {
				if phase(schedv1.UserDeploymentRunning)(&uds.Items[i]) {
					ready++
				}
			}
			return ready, nil
		})
		b.StopTimer()
		emptyNamespace(b, c, ns)
	}
	n := float64(b.N)
	b.ReportMetric(direct.Seconds()/n, "direct-s")
	b.ReportMetric(operator.Seconds()/n, "operator-s")
	b.ReportMetric(operator.Seconds()/direct.Seconds(), "ratio")
}

// benchUser returns a client for a service account that may create the
// benchmark's objects. The admin is exempt from API Priority and Fairness
// while the operator, a service account, is not; creating as a service
// account too keeps the comparison even.
func benchUser(b *testing.B, admin client.Client, adminCfg *rest.Config) client.Client {
	b.Helper()
	ctx := context.Background()
	const name = "benchmark-user"
	objs := []client.Object{
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: testenv.OperatorNamespace}},
		&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{"apps"}, Resources: []string{"deployments"}, Verbs: []string{"create"}},
			{APIGroups: []string{""}, Resources: []string{"services"}, Verbs: []string{"create"}},
			{APIGroups: []string{schedv1.GroupName}, Resources: []string{"userdeployments"}, Verbs: []string{"create"}},
		}},
		&rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: name, Namespace: testenv.OperatorNamespace}},
		},
	}
	for _, o := range objs {
		if err := admin.Create(ctx, o); err != nil && !apierrors.IsAlreadyExists(err) {
			b.Fatal(err)
		}
	}
	cfg := rest.CopyConfig(adminCfg)
	cfg.Impersonate = rest.ImpersonationConfig{
		UserName: "system:serviceaccount:" + testenv.OperatorNamespace + ":" + name,
		Groups:   []string{"system:serviceaccounts", "system:serviceaccounts:" + testenv.OperatorNamespace, "system:authenticated"},
	}
	c, err := client.New(cfg, client.Options{Scheme: app.Scheme()})
	if err != nil {
		b.Fatal(err)
	}
	return c
}

// timeToReady creates objs with a few workers and returns how long it takes
// until ready counts benchApps of them.
func timeToReady(b *testing.B, c client.Client, objs []client.Object, ready func(context.Context) (int, error)) time.Duration {
	b.Helper()
	ctx := context.Background()
	start := time.Now()
	work := make(chan client.Object)
	errs := make(chan error, len(objs))
	var wg sync.WaitGroup
	for range 10 {
		wg.Go(func() {
			for o := range work {
				if err := c.Create(ctx, o); err != nil {
					errs <- err
				}
			}
		})
	}
	for _, o := range objs {
		work <- o
	}
	close(work)
	wg.Wait()
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
	eventuallyWithin(b, fmt.Sprintf("%d apps ready", benchApps), 10*time.Minute, func(ctx context.Context) error {
		n, err := ready(ctx)
		if err == nil && n < benchApps {
			err = fmt.Errorf("%d of %d ready", n, benchApps)
		}
		return err
	})
	return time.Since(start)
}

// emptyNamespace deletes ns and waits for its pods to go, so the next run
// has the nodes to itself.
func emptyNamespace(b *testing.B, c client.Client, ns string) {
	b.Helper()
	if err := c.Delete(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		b.Fatal(err)
	}
	eventuallyWithin(b, "the pods of "+ns+" to go", 5*time.Minute, func(ctx context.Context) error {
		var pods corev1.PodList
		if err := c.List(ctx, &pods, client.InNamespace(ns)); err != nil {
			return err
		}
		if len(pods.Items) > 0 {
			return fmt.Errorf("%d pods left", len(pods.Items))
		}
		return nil
	})
}

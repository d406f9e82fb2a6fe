package userdeployment_test

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	. "github.com/kubectl-sched/kubectl-sched/api/builders"
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
// applied directly until available, and reports the ratio (target <= 1.1).
// Both sides server-side apply with 10 clients at once, as `kubectl apply
// --server-side` and `kubectl sched deploy` do, as the same kind of user
// (see benchUser), and readiness is counted from a watch. The apps are Open
// (no NetworkPolicy) so both sides create the same objects. Neither side is
// held back by a client-side rate limit, and the operator runs 20
// reconciles at once, since a reconcile waits for its writes. On two cores
// the API server's write rate bounds both sides: per app the operator adds
// the UserDeployment, two status writes and two events to the two objects
// the direct side applies.
//
//	go test ./operator/userdeployment/ -run '^$' -bench BenchmarkUserDeployments -benchtime 1x
func BenchmarkUserDeployments(b *testing.B) {
	restartOperator(b, func(o *app.Options) {
		o.Settings.KubeAPIQPS, o.Settings.KubeAPIBurst = 1000, 2000
		o.Settings.MaxConcurrentReconciles = 20
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

	apiserver, err := testenv.APIServerPID(sim.Config.Host)
	if err != nil {
		b.Fatal(err)
	}
	var direct, operator, directCPU, operatorCPU time.Duration
	for i := range b.N {
		b.StopTimer()
		ns := namespace(b)
		var objs []client.Object
		for _, ud := range apps(ns) {
			for _, o := range userdeployment.PlanObjects(ud, userdeployment.Settings{}) {
				o.SetOwnerReferences(nil)
				testenv.Unreserve(o)
				objs = append(objs, o)
			}
		}
		stopProfile := profileAPIServer(b, "direct")
		cpu := testenv.ProcessCPU(apiserver)
		b.StartTimer()
		direct += timeToReady(b, creator, objs, ns, &appsv1.DeploymentList{}, func(o client.Object) bool {
			d := o.(*appsv1.Deployment)
			return d.Status.ObservedGeneration == d.Generation && d.Status.AvailableReplicas == 1
		})
		b.StopTimer()
		directCPU += testenv.ProcessCPU(apiserver) - cpu
		stopProfile()
		emptyNamespace(b, c, ns)

		ns = namespace(b)
		objs = objs[:0]
		for _, ud := range apps(ns) {
			objs = append(objs, ud)
		}
		stopTrace := traceApps(b, ns)
		before, results := requestCounts(), reconcileResults(b)
		stopProfile = profileAPIServer(b, "operator")
		cpu = testenv.ProcessCPU(apiserver)
		b.StartTimer()
		operator += timeToReady(b, creator, objs, ns, &schedv1.UserDeploymentList{}, func(o client.Object) bool {
			return phase(schedv1.UserDeploymentRunning)(o.(*schedv1.UserDeployment))
		})
		b.StopTimer()
		operatorCPU += testenv.ProcessCPU(apiserver) - cpu
		stopTrace()
		stopProfile()
		printRequestsPerApp(before, requestCounts())
		printReconcilesPerApp(results, reconcileResults(b))
		if i == 0 {
			printCachedManagedFields(b, c, ns)
		}
		emptyNamespace(b, c, ns)
	}
	n := float64(b.N)
	b.ReportMetric(direct.Seconds()/n, "direct-s")
	b.ReportMetric(operator.Seconds()/n, "operator-s")
	b.ReportMetric(operator.Seconds()/direct.Seconds(), "ratio")
	// kube-apiserver's CPU time, which unlike wall time holds on a machine
	// busy with other work.
	b.ReportMetric(directCPU.Seconds()/n, "direct-apiserver-cpu-s")
	b.ReportMetric(operatorCPU.Seconds()/n, "operator-apiserver-cpu-s")
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
			{APIGroups: []string{"apps"}, Resources: []string{"deployments"}, Verbs: []string{"create", "patch"}},
			{APIGroups: []string{""}, Resources: []string{"services"}, Verbs: []string{"create", "patch"}},
			{APIGroups: []string{schedv1.GroupName}, Resources: []string{"userdeployments"}, Verbs: []string{"create", "patch"}},
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
// until ready holds for benchApps objects of list in ns, counted from a
// watch.
func timeToReady(b *testing.B, c client.Client, objs []client.Object, ns string, list client.ObjectList, ready func(client.Object) bool) time.Duration {
	b.Helper()
	ctx := context.Background()
	allReady, err := testenv.CountDone(sim.Config, list, ns, benchApps, 10*time.Minute, ready)
	if err != nil {
		b.Fatal(err)
	}
	start := time.Now()
	work := make(chan client.Object)
	errs := make(chan error, len(objs))
	var wg sync.WaitGroup
	for range 10 {
		wg.Go(func() {
			for o := range work {
				if err := testenv.Apply(ctx, c, o, "benchmark"); err != nil {
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
	created := time.Since(start)
	if err := allReady(); err != nil {
		b.Fatalf("waiting for %d apps ready: %v", benchApps, err)
	}
	took := time.Since(start)
	fmt.Printf("%d %T created in %v, ready in %v\n", len(objs), list, created.Round(time.Millisecond), took.Round(time.Millisecond))
	return took
}

// emptyNamespace deletes ns and waits for its pods to go, so the next run
// has the nodes to itself.
func emptyNamespace(b *testing.B, c client.Client, ns string) {
	b.Helper()
	if err := c.Delete(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		b.Fatal(err)
	}
	// The namespace, not only its pods: the rest of its deletion (the
	// objects, their garbage collection, its events) would load the next
	// side.
	testenv.EventuallyWithin(b, 5*time.Minute, ns+" to go", func(ctx context.Context) error {
		err := c.Get(ctx, client.ObjectKey{Name: ns}, &corev1.Namespace{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return err
		}
		return fmt.Errorf("%s is still there", ns)
	})
}

// traceApps watches the apps in ns and, when stopped, prints where the time
// of an app goes: from its creation to its Deployment's, from there to the
// Deployment being available, and from there to the app being Running.
func traceApps(b *testing.B, ns string) (stop func() (lags []time.Duration)) {
	b.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var mu sync.Mutex
	created, depCreated, depReady, running := map[string]time.Time{}, map[string]time.Time{}, map[string]time.Time{}, map[string]time.Time{}
	writes := map[string]int{} // to each app after its creation: the operator's status writes
	first := func(m map[string]time.Time, k string, at time.Time) {
		if _, ok := m[k]; !ok {
			m[k] = at
		}
	}
	lists := []client.ObjectList{&schedv1.UserDeploymentList{}, &appsv1.DeploymentList{}}
	wait, err := testenv.WatchEach(ctx, sim.Config, ns, lists, func(ev watch.Event) {
		at := time.Now()
		mu.Lock()
		defer mu.Unlock()
		switch o := ev.Object.(type) {
		case *schedv1.UserDeployment:
			if ev.Type == watch.Modified {
				writes[o.Name]++
			}
			first(created, o.Name, at)
			if phase(schedv1.UserDeploymentRunning)(o) {
				first(running, o.Name, at)
			}
		case *appsv1.Deployment:
			app := o.Labels[schedv1.LabelUserDeployment]
			first(depCreated, app, at)
			if o.Status.ObservedGeneration == o.Generation && o.Status.AvailableReplicas == 1 {
				first(depReady, app, at)
			}
		}
	})
	if err != nil {
		cancel()
		b.Fatal(err)
	}
	return func() []time.Duration {
		cancel()
		wait()
		var toDep, toReady, toRunning []time.Duration
		for app, t := range running {
			if created[app].IsZero() || depCreated[app].IsZero() || depReady[app].IsZero() {
				continue
			}
			toDep = append(toDep, depCreated[app].Sub(created[app]))
			toReady = append(toReady, depReady[app].Sub(depCreated[app]))
			toRunning = append(toRunning, t.Sub(depReady[app]))
		}
		total := 0
		for _, n := range writes {
			total += n
		}
		fmt.Printf("per app, median/max: created -> Deployment created %v/%v; -> Deployment available %v/%v; -> app Running %v/%v; status writes mean %.2f\n",
			median(toDep), maxOf(toDep), median(toReady), maxOf(toReady), median(toRunning), maxOf(toRunning), float64(total)/float64(max(len(created), 1)))
		return toRunning
	}
}

// BenchmarkDeployLagIdle is `kubectl sched deploy --wait` on an idle
// cluster: 20 one-service apps created one after another, each waited for,
// timing from the watch event of its Deployment becoming available to the
// one of the app reporting Running (target p50 <= 100 ms).
//
//	go test ./operator/userdeployment/ -run '^$' -bench BenchmarkDeployLagIdle -benchtime 1x
func BenchmarkDeployLagIdle(b *testing.B) {
	const apps = 20
	var lags []time.Duration
	for range b.N {
		b.StopTimer()
		ns := namespace(b)
		stop := traceApps(b, ns)
		b.StartTimer()
		for i := range apps {
			ud := MakeUserDeployment(fmt.Sprintf("idle-%02d", i), ns).
				Service("web", "nginx:1.27", 80, schedv1.ExposureInternal).Isolation(schedv1.IsolationOpen).Obj()
			if err := sim.Client.Create(context.Background(), ud); err != nil {
				b.Fatal(err)
			}
			deadline := time.Now().Add(time.Minute)
			for !phase(schedv1.UserDeploymentRunning)(ud) {
				if time.Now().After(deadline) {
					b.Fatalf("app %s not Running after a minute: %+v", ud.Name, ud.Status)
				}
				time.Sleep(10 * time.Millisecond)
				if err := sim.Client.Get(context.Background(), client.ObjectKeyFromObject(ud), ud); err != nil {
					b.Fatal(err)
				}
			}
		}
		b.StopTimer()
		lags = append(lags, stop()...)
		emptyNamespace(b, sim.Client, ns)
	}
	slices.Sort(lags)
	b.ReportMetric(float64(median(lags).Microseconds())/1000, "lag-p50-ms")
	b.ReportMetric(float64(lags[len(lags)*9/10].Microseconds())/1000, "lag-p90-ms")
}

func median(d []time.Duration) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2].Round(time.Millisecond)
}

func maxOf(d []time.Duration) time.Duration {
	if len(d) == 0 {
		return 0
	}
	return slices.Max(d).Round(time.Millisecond)
}

// printRequestsPerApp prints the operator's requests between two counts,
// per app, by verb and resource, most first.
func printRequestsPerApp(before, after map[string]int) {
	type count struct {
		what string
		n    int
	}
	var counts []count
	total := 0
	for what, n := range after {
		if d := n - before[what]; d > 0 {
			counts = append(counts, count{what, d})
			total += d
		}
	}
	slices.SortFunc(counts, func(a, b count) int { return cmp.Or(b.n-a.n, strings.Compare(a.what, b.what)) })
	var parts []string
	for _, c := range counts {
		parts = append(parts, fmt.Sprintf("%s %.2f", c.what, float64(c.n)/benchApps))
	}
	fmt.Printf("operator requests per app: %.2f (%s)\n", float64(total)/benchApps, strings.Join(parts, ", "))
}

// profileAPIServer saves a CPU profile of kube-apiserver over the next 8
// seconds (a side's busiest) to $BENCH_PROFILE_DIR/apiserver-SIDE.pprof,
// when that is set; stop waits for it and prints where the time went.
func profileAPIServer(b *testing.B, side string) (stop func()) {
	dir := os.Getenv("BENCH_PROFILE_DIR")
	if dir == "" {
		return func() {}
	}
	cs, err := kubernetes.NewForConfig(sim.Config)
	if err != nil {
		b.Fatal(err)
	}
	path := filepath.Join(dir, "apiserver-"+side+".pprof")
	done := make(chan error, 1)
	go func() { done <- testenv.SaveAPIServerProfile(context.Background(), cs, path, 8*time.Second) }()
	return func() {
		if err := <-done; err != nil {
			b.Logf("API server profile: %v", err)
			return
		}
		fmt.Printf("kube-apiserver, %s side: %s\n", side, testenv.CostBreakdown(path))
	}
}

// reconcileResults is the userdeployment controller's reconciles so far by
// result (success, error, requeue, requeue_after), from controller-runtime's
// metrics of the operator running in this process.
func reconcileResults(b *testing.B) map[string]float64 {
	families, err := ctrlmetrics.Registry.Gather()
	if err != nil {
		b.Fatal(err)
	}
	out := map[string]float64{}
	for _, f := range families {
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			switch {
			case f.GetName() == "controller_runtime_reconcile_total" && labels["controller"] == "userdeployment":
				out[labels["result"]] += m.GetCounter().GetValue()
			case f.GetName() == "controller_runtime_reconcile_time_seconds" && labels["controller"] == "userdeployment":
				out[" seconds reconciling"] += m.GetHistogram().GetSampleSum()
			case f.GetName() == "workqueue_queue_duration_seconds" && labels["name"] == "userdeployment":
				out[" seconds queued"] += m.GetHistogram().GetSampleSum()
			}
		}
	}
	return out
}

// printReconcilesPerApp prints the reconciles between two counts per app,
// by result.
func printReconcilesPerApp(before, after map[string]float64) {
	var parts []string
	for _, r := range slices.Sorted(maps.Keys(after)) {
		parts = append(parts, fmt.Sprintf("%s %.2f", r, (after[r]-before[r])/benchApps))
	}
	fmt.Printf("reconciles per app: %s\n", strings.Join(parts, ", "))
}

// printCachedManagedFields prints the size of what the operator's cache
// keeps of an app beyond its spec: the managed fields of its spec and
// metadata (userdeployment.TrimApp).
func printCachedManagedFields(b *testing.B, c client.Client, ns string) {
	ud := &schedv1.UserDeployment{}
	if err := c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "app-000"}, ud); err != nil {
		b.Fatal(err)
	}
	kept, err := userdeployment.TrimApp(ud)
	if err != nil {
		b.Fatal(err)
	}
	size := 0
	for _, e := range kept.(*schedv1.UserDeployment).ManagedFields {
		size += len(e.Manager) + len(e.Operation) + len(e.APIVersion) + len(e.FieldsType) + len(e.FieldsV1.GetRawBytes())
	}
	fmt.Printf("managed fields cached per app: %d bytes\n", size)
}

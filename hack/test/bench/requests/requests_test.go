package requests

import (
	"context"
	"flag"
	"fmt"
	"net/http"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	. "github.com/kubectl-sched/kubectl-sched/api/builders"
	"github.com/kubectl-sched/kubectl-sched/api/names"
	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
	"github.com/kubectl-sched/kubectl-sched/hack/testenv"
	"github.com/kubectl-sched/kubectl-sched/operator/app"
	"github.com/kubectl-sched/kubectl-sched/operator/metrics"
)

var env *testenv.Env

// TestMain starts the API server only when benchmarks run, so that
// `go test ./...` pays nothing for this package. No pods need to run:
// events and autoscaler statuses are written as their controllers would.
func TestMain(m *testing.M) {
	flag.Parse()
	if f := flag.Lookup("test.bench"); f == nil || f.Value.String() == "" {
		os.Exit(m.Run())
	}
	ctrl.SetLogger(logr.Discard())
	var err error
	// BenchmarkRequestCost creates thousands of Services, more than
	// envtest's /24 of cluster IPs holds.
	if env, err = testenv.Start("service-cluster-ip-range=10.0.0.0/16"); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	_ = env.Stop()
	os.Exit(code)
}

// requestCounter counts requests to the API server, watches aside (they
// are long-lived connections, not a cost per event).
type requestCounter struct{ n atomic.Int64 }

func (c *requestCounter) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripper(func(req *http.Request) (*http.Response, error) {
		if req.URL.Query().Get("watch") != "true" {
			c.n.Add(1)
		}
		return rt.RoundTrip(req)
	})
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

// admin is a client for the benchmark's own writes, with QPS to spare.
func admin(b *testing.B) client.Client {
	b.Helper()
	cfg := rest.CopyConfig(env.Config)
	cfg.QPS, cfg.Burst = 1000, 2000
	c, err := client.New(cfg, client.Options{Scheme: app.Scheme()})
	if err != nil {
		b.Fatal(err)
	}
	return c
}

func namespace(b *testing.B, c client.Client, prefix string) string {
	b.Helper()
	ns := fmt.Sprintf("%s-%d", prefix, time.Now().UnixNano()%100000)
	if err := c.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		b.Fatal(err)
	}
	return ns
}

// operator runs the whole operator, with only its generated RBAC and its
// requests counted.
type operator struct {
	requests *requestCounter
	metrics  string
	stop     func() error
}

func startOperator(b *testing.B) *operator {
	b.Helper()
	op := &operator{requests: &requestCounter{}}
	cfg := rest.CopyConfig(env.Config)
	cfg.Wrap(op.requests.wrap)
	stop, opts, err := testenv.StartOperator(context.Background(), cfg, func(o *app.Options) {
		o.Settings.KubeAPIQPS, o.Settings.KubeAPIBurst = 1000, 2000
	})
	if err != nil {
		b.Fatal(err)
	}
	op.stop, op.metrics = stop, "http://"+opts.MetricsAddr+"/metrics"
	poll(b, "the operator's metrics", time.Minute, func(ctx context.Context) error {
		_, err := testenv.ScrapeMetrics(ctx, op.metrics)
		return err
	})
	return op
}

// settle waits until no controller has finished a reconcile or queued one
// for two seconds, and returns the reconciles so far of controller.
func (op *operator) settle(b *testing.B, controller string) float64 {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	m, err := testenv.WaitQuiet(ctx, op.metrics, 500*time.Millisecond, 4)
	if err != nil {
		b.Fatalf("waiting for the operator to settle: %v", err)
	}
	return m.Sum("controller_runtime_reconcile_total", map[string]string{"controller": controller})
}

// liveHeap is the median of five samples of the live heap after a GC.
func liveHeap() uint64 {
	var samples []uint64
	for i := range 5 {
		if i > 0 {
			time.Sleep(200 * time.Millisecond)
		}
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		samples = append(samples, ms.HeapAlloc)
	}
	slices.Sort(samples)
	return samples[2]
}

// create makes n objects with ten workers, building each when it is sent.
func create(b *testing.B, c client.Client, n int, obj func(int) client.Object) {
	b.Helper()
	if err := testenv.ForEach(10, n, func(i int) error { return c.Create(context.Background(), obj(i)) }); err != nil {
		b.Fatal(err)
	}
}

// createWithJobs creates n tasks in ns and waits for the operator to make
// their Jobs.
func createWithJobs(b *testing.B, c client.Client, ns string, n int, task func(int) client.Object) {
	b.Helper()
	create(b, c, n, task)
	poll(b, "the tasks' Jobs", 5*time.Minute, func(ctx context.Context) error {
		var list batchv1.JobList
		if err := c.List(ctx, &list, client.InNamespace(ns)); err != nil || len(list.Items) < n {
			return fmt.Errorf("%d Jobs (%v)", len(list.Items), err)
		}
		return nil
	})
}

func poll(b *testing.B, what string, timeout time.Duration, cond func(context.Context) error, interval ...time.Duration) {
	b.Helper()
	every := time.Second
	if len(interval) > 0 {
		every = interval[0]
	}
	var last error
	err := wait.PollUntilContextTimeout(context.Background(), every, timeout, true, func(ctx context.Context) (bool, error) {
		last = cond(ctx)
		return last == nil, nil
	})
	if err != nil {
		b.Fatalf("waiting for %s: %v", what, last)
	}
}

// BenchmarkMetricsScrape: the AgentTask gauge, with 100, 1,000 and 5,000
// tasks cached. A scrape reads the counts the cache's informer keeps; the
// figure beside it is what listing and counting the cached tasks, as a
// scrape did before, allocates. Neither sends a request to the API server.
//
//	go test ./hack/test/bench/requests -run '^$' -bench MetricsScrape -benchtime 1x -timeout 30m
func BenchmarkMetricsScrape(b *testing.B) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c := admin(b)
	requests := &requestCounter{}
	cfg := rest.CopyConfig(env.Config)
	cfg.Wrap(requests.wrap)
	tasks, err := cache.New(cfg, cache.Options{Scheme: app.Scheme()})
	if err != nil {
		b.Fatal(err)
	}
	if err := metrics.Register(tasks); err != nil {
		b.Fatal(err)
	}
	go func() { _ = tasks.Start(ctx) }()
	if !tasks.WaitForCacheSync(ctx) {
		b.Fatal("cache did not sync")
	}
	ns := namespace(b, c, "scrape")
	gauge := func() float64 {
		families, err := ctrlmetrics.Registry.Gather()
		if err != nil {
			b.Fatal(err)
		}
		total := 0.0
		for _, f := range families {
			if f.GetName() == "kubectl_sched_agenttasks" {
				for _, m := range f.GetMetric() {
					total += m.GetGauge().GetValue()
				}
			}
		}
		return total
	}
	// perScrape is what one call of f allocates, over 20 calls.
	perScrape := func(f func()) (uint64, int64) {
		before := requests.n.Load()
		var ms0, ms1 runtime.MemStats
		runtime.ReadMemStats(&ms0)
		for range 20 {
			f()
		}
		runtime.ReadMemStats(&ms1)
		return (ms1.TotalAlloc - ms0.TotalAlloc) / 20, (requests.n.Load() - before) / 20
	}
	fmt.Printf("%-8s %-26s %-26s %s\n", "tasks", "scrape allocates", "list-and-count allocates", "requests per scrape")
	made := 0
	for _, n := range []int{100, 1000, 5000} {
		create(b, c, n-made, func(i int) client.Object {
			return MakeAgentTask(fmt.Sprintf("t-%05d", made+i), ns).Image("busybox").Args("run", "--flag=value").Env("A", "1").Obj()
		})
		made = n
		poll(b, fmt.Sprintf("%d tasks cached", n), 5*time.Minute, func(ctx context.Context) error {
			var list schedv1.AgentTaskList
			if err := tasks.List(ctx, &list, client.InNamespace(ns)); err != nil || len(list.Items) < n {
				return fmt.Errorf("%d cached (%v)", len(list.Items), err)
			}
			if g := gauge(); g < float64(n) {
				return fmt.Errorf("gauge says %.0f", g)
			}
			return nil
		})
		scrape, scrapeRequests := perScrape(func() { gauge() })
		listed, _ := perScrape(func() {
			var list schedv1.AgentTaskList
			if err := tasks.List(ctx, &list); err != nil {
				b.Fatal(err)
			}
			counts := map[schedv1.AgentTaskPhase]int{}
			for i := range list.Items {
				counts[list.Items[i].Status.Phase]++
			}
		})
		fmt.Printf("%-8d %-26s %-26s %d\n", n, kib(scrape), kib(listed), scrapeRequests)
		b.ReportMetric(float64(scrape), fmt.Sprintf("B/scrape@%d", n))
	}
}

// BenchmarkFailedCreateEvents: the operator caches the Job controller's
// FailedCreate events in every namespace, since no label selects them.
// 2,000 are about Jobs that are not the operator's (another tenant's Jobs
// over quota), then 50 about a stuck task's Job. Printed: reconciles and
// API requests per event, and the heap each cached event costs.
//
//	go test ./hack/test/bench/requests -run '^$' -bench FailedCreateEvents -benchtime 1x -timeout 30m
func BenchmarkFailedCreateEvents(b *testing.B) {
	const others, ours = 2000, 50
	ctx := context.Background()
	c := admin(b)
	op := startOperator(b)
	defer func() { _ = op.stop() }()
	ns := namespace(b, c, "events")
	task := MakeAgentTask("stuck", ns).Image("busybox").Obj()
	if err := c.Create(ctx, task); err != nil {
		b.Fatal(err)
	}
	job := &batchv1.Job{}
	poll(b, "the task's Job", time.Minute, func(ctx context.Context) error {
		return c.Get(ctx, types.NamespacedName{Namespace: ns, Name: names.Job(task.Name)}, job)
	})
	base := op.settle(b, "agenttask")
	heap0 := liveHeap()
	requests0 := op.requests.n.Load()

	event := func(i int, involved corev1.ObjectReference, msg string) *corev1.Event {
		now := metav1.Now()
		return &corev1.Event{
			ObjectMeta:     metav1.ObjectMeta{Name: fmt.Sprintf("%s.%05d", involved.Name, i), Namespace: involved.Namespace},
			InvolvedObject: involved,
			Reason:         "FailedCreate", Type: corev1.EventTypeWarning, Message: msg,
			Source:         corev1.EventSource{Component: "job-controller"},
			FirstTimestamp: now, LastTimestamp: now, Count: 1,
			ReportingController: "job-controller", ReportingInstance: "kube-controller-manager",
		}
	}
	otherNS := namespace(b, c, "events-others")
	create(b, c, others, func(i int) client.Object {
		involved := corev1.ObjectReference{Kind: "Job", APIVersion: "batch/v1", Namespace: otherNS, Name: fmt.Sprintf("other-%05d", i), UID: uuid.NewUUID()}
		return event(i, involved, `Error creating: pods "`+involved.Name+`-abcde" is forbidden: exceeded quota: compute, requested: limits.cpu=1, used: limits.cpu=8, limited: limits.cpu=8`)
	})
	afterOthers := op.settle(b, "agenttask")
	requests1 := op.requests.n.Load()
	heap1 := liveHeap()

	involved := corev1.ObjectReference{Kind: "Job", APIVersion: "batch/v1", Namespace: ns, Name: job.Name, UID: job.UID}
	create(b, c, ours, func(i int) client.Object {
		return event(i, involved, `Error creating: pods "`+job.Name+`-abcde" is forbidden: exceeded quota: compute`)
	})
	afterOurs := op.settle(b, "agenttask")
	requests2 := op.requests.n.Load()

	fmt.Printf("%d FailedCreate events about other Jobs: %.2f reconciles and %.2f API requests per event; heap %.0f B per cached event\n",
		others, (afterOthers-base)/others, float64(requests1-requests0)/others, float64(int64(heap1)-int64(heap0))/others)
	fmt.Printf("%d FailedCreate events about a task's Job: %.2f reconciles and %.2f API requests per event\n",
		ours, (afterOurs-afterOthers)/ours, float64(requests2-requests1)/ours)
	b.ReportMetric((afterOthers-base)/others, "reconciles/other-event")
	b.ReportMetric(float64(int64(heap1)-int64(heap0))/others, "B/cached-event")
}

// BenchmarkHPAStatusUpdates: 20 apps each scaled by an autoscaler, among
// 1,000 autoscalers in the cluster, whose statuses are written three
// times, as the autoscaler controller does on every sync. Printed:
// reconciles and API requests per status update, and the heap each cached
// autoscaler costs.
//
//	go test ./hack/test/bench/requests -run '^$' -bench HPAStatusUpdates -benchtime 1x -timeout 30m
func BenchmarkHPAStatusUpdates(b *testing.B) {
	const apps, hpas, rounds = 20, 1000, 3
	ctx := context.Background()
	c := admin(b)
	op := startOperator(b)
	defer func() { _ = op.stop() }()
	ns := namespace(b, c, "hpa")
	create(b, c, apps, func(i int) client.Object {
		return MakeUserDeployment(fmt.Sprintf("app-%02d", i), ns).Service("web", "nginx:1.27", 80, schedv1.ExposureInternal).Obj()
	})
	poll(b, "the apps' Deployments", 2*time.Minute, func(ctx context.Context) error {
		var list appsv1.DeploymentList
		if err := c.List(ctx, &list, client.InNamespace(ns)); err != nil || len(list.Items) < apps {
			return fmt.Errorf("%d Deployments (%v)", len(list.Items), err)
		}
		return nil
	})
	base := op.settle(b, "userdeployment")
	heap0 := liveHeap()
	create(b, c, hpas, func(i int) client.Object {
		target := fmt.Sprintf("other-%04d", i)
		if i < apps {
			target = fmt.Sprintf("app-%02d-web", i)
		}
		return &autoscalingv2.HorizontalPodAutoscaler{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("hpa-%04d", i), Namespace: ns, Labels: map[string]string{"team": "web"}},
			Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
				ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: target},
				MinReplicas:    ptr.To[int32](1), MaxReplicas: 10,
				Metrics: []autoscalingv2.MetricSpec{{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricSource{
					Name: corev1.ResourceCPU, Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: ptr.To[int32](80)}}}},
			},
		}
	})
	afterCreate := op.settle(b, "userdeployment")
	heap1 := liveHeap()
	requests0 := op.requests.n.Load()
	for round := range rounds {
		for i := range hpas {
			hpa := &autoscalingv2.HorizontalPodAutoscaler{}
			if err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: fmt.Sprintf("hpa-%04d", i)}, hpa); err != nil {
				b.Fatal(err)
			}
			now := metav1.Now()
			hpa.Status = autoscalingv2.HorizontalPodAutoscalerStatus{
				CurrentReplicas: int32(1 + round), DesiredReplicas: int32(2 + round), LastScaleTime: &now,
				CurrentMetrics: []autoscalingv2.MetricStatus{{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricStatus{
					Name: corev1.ResourceCPU, Current: autoscalingv2.MetricValueStatus{AverageUtilization: ptr.To[int32](int32(50 + round)), AverageValue: ptr.To(resource.MustParse("250m"))}}}},
				Conditions: []autoscalingv2.HorizontalPodAutoscalerCondition{
					{Type: autoscalingv2.AbleToScale, Status: corev1.ConditionTrue, Reason: "ReadyForNewScale", Message: "recommended size matches current size", LastTransitionTime: now},
					{Type: autoscalingv2.ScalingActive, Status: corev1.ConditionTrue, Reason: "ValidMetricFound", Message: "the HPA was able to successfully calculate a replica count from cpu resource utilization (percentage of request)", LastTransitionTime: now},
				},
			}
			if err := c.Status().Update(ctx, hpa); err != nil {
				b.Fatal(err)
			}
		}
	}
	afterUpdates := op.settle(b, "userdeployment")
	requests1 := op.requests.n.Load()
	updates := float64(hpas * rounds)
	fmt.Printf("%d autoscalers created (%d of them on the apps' workloads): %.0f reconciles; heap %.0f B per cached autoscaler\n",
		hpas, apps, afterCreate-base, float64(int64(heap1)-int64(heap0))/hpas)
	fmt.Printf("%d status updates: %.3f reconciles and %.3f API requests per update\n",
		hpas*rounds, (afterUpdates-afterCreate)/updates, float64(requests1-requests0)/updates)
	b.ReportMetric((afterUpdates-afterCreate)/updates, "reconciles/status-update")
	b.ReportMetric(float64(int64(heap1)-int64(heap0))/hpas, "B/cached-hpa")
}

func kib(n uint64) string {
	if n < 1024 {
		return fmt.Sprintf("%d B", n)
	}
	return fmt.Sprintf("%.1f KiB", float64(n)/1024)
}

// BenchmarkTaskCache: 300 AgentTasks of 16 KiB of args each; the operator
// creates their Jobs, which copy the task's spec into their pod template.
// Printed: the heap per task, its Job included. (No pods run here.)
//
//	go test ./hack/test/bench/requests -run '^$' -bench TaskCache -benchtime 1x -timeout 30m
func BenchmarkTaskCache(b *testing.B) {
	const tasks = 300
	c := admin(b)
	op := startOperator(b)
	defer func() { _ = op.stop() }()
	ns := namespace(b, c, "tasks")
	op.settle(b, "agenttask")
	heap0 := liveHeap()
	args := make([]string, 16)
	for i := range args {
		args[i] = strings.Repeat("a", 1024)
	}
	createWithJobs(b, c, ns, tasks, func(i int) client.Object {
		return MakeAgentTask(fmt.Sprintf("t-%03d", i), ns).Image("busybox").Args(args...).Obj()
	})
	op.settle(b, "agenttask")
	heap1 := liveHeap()
	perTask := float64(int64(heap1)-int64(heap0)) / tasks
	fmt.Printf("%d AgentTasks of 16 KiB of args and their Jobs: heap %.1f KiB per task\n", tasks, perTask/1024)
	b.ReportMetric(perTask/1024, "KiB/task")
}

// BenchmarkPaddedObjects: a namespace user may edit what the operator made
// in their namespace. They add 64 KiB of annotations to each of 100 apps'
// Deployments and Services and to their pods' template. Printed: what the
// operator's heap grew by per padded object, and the reconciles and
// requests it took (the annotations are not drift: nothing is rewritten).
//
//	go test ./hack/test/bench/requests -run '^$' -bench PaddedObjects -benchtime 1x -timeout 30m
func BenchmarkPaddedObjects(b *testing.B) {
	const apps = 100
	ctx := context.Background()
	c := admin(b)
	op := startOperator(b)
	defer func() { _ = op.stop() }()
	ns := namespace(b, c, "padded")
	create(b, c, apps, func(i int) client.Object {
		return MakeUserDeployment(fmt.Sprintf("app-%03d", i), ns).Service("web", "nginx:1.27", 80, schedv1.ExposureInternal).Obj()
	})
	poll(b, "the apps' Deployments and Services", 2*time.Minute, func(ctx context.Context) error {
		var deps appsv1.DeploymentList
		var svcs corev1.ServiceList
		if err := c.List(ctx, &deps, client.InNamespace(ns)); err != nil || len(deps.Items) < apps {
			return fmt.Errorf("%d Deployments (%v)", len(deps.Items), err)
		}
		if err := c.List(ctx, &svcs, client.InNamespace(ns)); err != nil || len(svcs.Items) < apps {
			return fmt.Errorf("%d Services (%v)", len(svcs.Items), err)
		}
		return nil
	})
	base := op.settle(b, "userdeployment")
	heap0 := liveHeap()
	requests0 := op.requests.n.Load()
	padding := fmt.Sprintf(`{"metadata":{"annotations":{"padding":%q}}}`, strings.Repeat("x", 64<<10))
	templatePadding := fmt.Sprintf(`{"spec":{"template":{"metadata":{"annotations":{"padding":%q}}}}}`, strings.Repeat("x", 64<<10))
	for i := range apps {
		name := fmt.Sprintf("app-%03d-web", i)
		for _, p := range []struct {
			obj   client.Object
			patch string
		}{
			{&appsv1.Deployment{}, padding}, {&corev1.Service{}, padding}, {&appsv1.Deployment{}, templatePadding},
		} {
			p.obj.SetNamespace(ns)
			p.obj.SetName(name)
			if err := c.Patch(ctx, p.obj, client.RawPatch(types.MergePatchType, []byte(p.patch)), client.FieldOwner("tenant")); err != nil {
				b.Fatal(err)
			}
		}
	}
	after := op.settle(b, "userdeployment")
	heap1 := liveHeap()
	requests1 := op.requests.n.Load()
	padded := float64(2 * apps)
	fmt.Printf("%d Deployments (annotations and pod template) and %d Services padded with 64 KiB each: heap %+.1f KiB per padded object; %.0f reconciles, %d API requests\n",
		apps, apps, float64(int64(heap1)-int64(heap0))/padded/1024, after-base, requests1-requests0)
	b.ReportMetric(float64(int64(heap1)-int64(heap0))/padded/1024, "KiB/padded-object")
}

// BenchmarkQuotaUpdates: 1,000 tasks in a namespace whose quota
// (count/jobs.batch) is full, 20 more refused by it and waiting. The quota
// controller rewrites a quota's status.used whenever a pod or object it
// counts comes or goes; here 100 updates take room (pods used goes up) and
// 100 give it back (it goes down). Printed: reconciles and API requests
// per update of each sort. Only an update that gives room can let a
// refused task through.
//
//	go test ./hack/test/bench/requests -run '^$' -bench QuotaUpdates -benchtime 1x -timeout 30m
func BenchmarkQuotaUpdates(b *testing.B) {
	const tasks, waiting, updates = 1000, 20, 100
	ctx := context.Background()
	c := admin(b)
	op := startOperator(b)
	defer func() { _ = op.stop() }()
	ns := namespace(b, c, "quota")
	createWithJobs(b, c, ns, tasks, func(i int) client.Object {
		return MakeAgentTask(fmt.Sprintf("t-%04d", i), ns).Image("busybox").Obj()
	})
	quota := &corev1.ResourceQuota{
		ObjectMeta: metav1.ObjectMeta{Name: "jobs", Namespace: ns},
		Spec: corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{
			"count/jobs.batch": resource.MustParse(strconv.Itoa(tasks)), corev1.ResourcePods: resource.MustParse("10000")}},
	}
	if err := c.Create(ctx, quota); err != nil {
		b.Fatal(err)
	}
	// As the quota controller would: full for Jobs, no pods yet.
	setUsed := func(pods int) {
		b.Helper()
		quota.Status = corev1.ResourceQuotaStatus{Hard: quota.Spec.Hard, Used: corev1.ResourceList{
			"count/jobs.batch": resource.MustParse(strconv.Itoa(tasks)), corev1.ResourcePods: resource.MustParse(strconv.Itoa(pods))}}
		if err := c.Status().Update(ctx, quota); err != nil {
			b.Fatal(err)
		}
	}
	setUsed(0)
	create(b, c, waiting, func(i int) client.Object {
		return MakeAgentTask(fmt.Sprintf("w-%02d", i), ns).Image("busybox").Obj()
	})
	poll(b, "the refused tasks to wait for quota", 2*time.Minute, func(ctx context.Context) error {
		var list schedv1.AgentTaskList
		if err := c.List(ctx, &list, client.InNamespace(ns)); err != nil {
			return err
		}
		n := 0
		for _, t := range list.Items {
			if t.Status.Reason == schedv1.ReasonQuotaExceeded {
				n++
			}
		}
		if n < waiting {
			return fmt.Errorf("%d of %d waiting", n, waiting)
		}
		return nil
	})
	base := op.settle(b, "agenttask")
	requests0 := op.requests.n.Load()
	var ms0, ms1 runtime.MemStats
	runtime.ReadMemStats(&ms0)
	for i := 1; i <= updates; i++ {
		setUsed(i)
	}
	taking := op.settle(b, "agenttask")
	requests1 := op.requests.n.Load()
	runtime.ReadMemStats(&ms1)
	for i := updates - 1; i >= 0; i-- {
		setUsed(i)
	}
	giving := op.settle(b, "agenttask")
	requests2 := op.requests.n.Load()
	fmt.Printf("%d quota updates that take room (%d tasks, %d waiting): %.2f reconciles and %.2f API requests per update; the process allocated %s per update\n",
		updates, tasks+waiting, waiting, (taking-base)/updates, float64(requests1-requests0)/updates, kib((ms1.TotalAlloc-ms0.TotalAlloc)/updates))
	fmt.Printf("%d quota updates that give room: %.2f reconciles and %.2f API requests per update\n",
		updates, (giving-taking)/updates, float64(requests2-requests1)/updates)
	b.ReportMetric((taking-base)/updates, "reconciles/taking-update")
	b.ReportMetric((giving-taking)/updates, "reconciles/giving-update")
}

// BenchmarkUnrelatedObjects: the operator with 200 tasks and their Jobs,
// then $UNRELATED ConfigMaps and as many pods (20,000 of each unless set)
// that are not the operator's, half in the tasks' namespace and half in
// ten others. Printed: the growth of the heap, and the reconciles and API
// requests they cost. The operator caches ConfigMaps and pods by its
// managed-by label, so the API server never sends it these.
//
//	UNRELATED=100000 go test ./hack/test/bench/requests -run '^$' -bench UnrelatedObjects -benchtime 1x -timeout 60m
func BenchmarkUnrelatedObjects(b *testing.B) {
	const tasks = 200
	unrelated := 20000
	if v := os.Getenv("UNRELATED"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			b.Fatalf("UNRELATED=%q: %v", v, err)
		}
		unrelated = n
	}
	c := admin(b)
	op := startOperator(b)
	defer func() { _ = op.stop() }()
	ns := namespace(b, c, "tenant")
	createWithJobs(b, c, ns, tasks, func(i int) client.Object {
		return MakeAgentTask(fmt.Sprintf("t-%03d", i), ns).Image("busybox").Obj()
	})
	others := make([]string, 10)
	for i := range others {
		others[i] = namespace(b, c, fmt.Sprintf("other%d", i))
	}
	where := func(i int) string {
		if i%2 == 0 {
			return ns
		}
		return others[(i/2)%len(others)]
	}
	base := op.settle(b, "agenttask")
	heap0 := liveHeap()
	requests0 := op.requests.n.Load()
	start := time.Now()
	create(b, c, unrelated, func(i int) client.Object {
		return &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("cm-%06d", i), Namespace: where(i), Labels: map[string]string{"app": "other"}},
			Data:       map[string]string{"config.yaml": strings.Repeat("x", 256)},
		}
	})
	create(b, c, unrelated, func(i int) client.Object {
		return &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("pod-%06d", i), Namespace: where(i), Labels: map[string]string{"app": "other"}},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "nginx:1.27", Args: []string{"--port", "8080"}}}},
		}
	})
	created := time.Since(start)
	after := op.settle(b, "agenttask")
	heap1 := liveHeap()
	requests1 := op.requests.n.Load()
	fmt.Printf("%d unrelated ConfigMaps and %d pods (created in %s), half in the tasks' namespace: heap %+.2f MiB (from %.1f MiB); %.0f reconciles, %d API requests\n",
		unrelated, unrelated, created.Round(time.Second), float64(int64(heap1)-int64(heap0))/(1<<20), float64(heap0)/(1<<20), after-base, requests1-requests0)
	b.ReportMetric(float64(int64(heap1)-int64(heap0))/(1<<20), "MiB-growth")
}

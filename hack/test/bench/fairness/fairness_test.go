package fairness

import (
	"bytes"
	"cmp"
	"context"
	"flag"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	. "github.com/kubectl-sched/kubectl-sched/api/builders"
	"github.com/kubectl-sched/kubectl-sched/api/names"
	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
	"github.com/kubectl-sched/kubectl-sched/hack/cluster"
	"github.com/kubectl-sched/kubectl-sched/hack/testenv"
	"github.com/kubectl-sched/kubectl-sched/operator/app"
	"github.com/kubectl-sched/kubectl-sched/plugin/cmd"
)

var (
	sim *testenv.Sim
	// adminSet reads the API server's metrics.
	adminSet kubernetes.Interface
)

// TestMain starts the simulated cluster only when benchmarks run, so that
// `go test ./...` pays nothing for this package. The cluster's own
// controllers get the limits hack/test/bench/operator gives them, so that they are
// not what a task waits for; the quota controller counts new kinds within
// seconds, as tenant create waits for it.
func TestMain(m *testing.M) {
	flag.Parse()
	if f := flag.Lookup("test.bench"); f == nil || f.Value.String() == "" {
		os.Exit(m.Run())
	}
	// The operator runs in this process: its client's latencies are
	// served with its metrics.
	ctrlmetrics.RegisterRESTClientMetrics(ctrlmetrics.MetricRequestLatency, ctrlmetrics.MetricRateLimiterLatency)
	limits := []string{"--kube-api-qps=200", "--kube-api-burst=400"}
	var err error
	nodes := cluster.DefaultNodes()
	for i := range nodes {
		nodes[i].Pods = 2000 // finished pods stay until their Job goes
	}
	sim, err = testenv.StartSimWith(cluster.Options{
		Nodes:                      nodes,
		ExtraControllerManagerArgs: append(limits, "--resource-quota-sync-period=5s"),
		ExtraSchedulerArgs:         limits,
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if adminSet, err = kubernetes.NewForConfig(sim.Config); err != nil {
		fmt.Fprintln(os.Stderr, err)
		_ = sim.Stop(false)
		os.Exit(1)
	}
	code := 1
	// The operator's namespace (which OperatorConfig makes, with the
	// operator's RBAC) holds the tiers.
	if _, err = testenv.OperatorConfig(context.Background(), sim.Config); err == nil {
		err = testenv.ApplyTiers(context.Background(), sim.Client)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
	} else {
		code = m.Run()
	}
	_ = sim.Stop(code != 0)
	os.Exit(code)
}

// The benchmark's sizes: tenant A's apps and how often it changes one,
// and how many tasks tenant B starts in each phase.
const (
	churnApps    = 20
	churnPerSec  = 12
	churnWorkers = 12
	tasksPerRun  = 30
	churnWarmUp  = 5 * time.Second
	taskEvery    = 500 * time.Millisecond
	appChanges   = 10
	// appEnv is the variable tenant B's changes set on its app.
	appEnv = "B"
	// fanItems is the forEach of each of the fanWorkflows workflows tenant
	// A starts, one every fanEvery, in the fan-out phase (100 is a
	// forEach's most): 800 tasks in 28 s, more than the operator's budget
	// of 50 requests a second per kind gets through in that time.
	fanItems     = 100
	fanWorkflows = 8
	fanEvery     = 4 * time.Second
)

// quick makes a simulated pod finish at once.
var quick = map[string]string{cluster.AnnotationRunSeconds: "0", cluster.AnnotationExitCode: "0"}

// mode is one way of running the operator.
type mode struct {
	name   string
	mutate func(*app.Options)
}

var modes = []mode{
	// As before: --namespace-fairness=false.
	{name: "first come first served", mutate: func(o *app.Options) { o.Settings.NamespaceFairness = false }},
	{name: "fair", mutate: nil},
}

// BenchmarkTenantChurn starts 30 of tenant B's tasks, one every half
// second, on an idle cluster; then again while tenant A changes the
// environment of its 20 apps 12 times a second (what `kubectl sched set
// env` sends); then again while A starts eight workflows with a forEach
// over 100 tasks, one every 4 seconds. Per mode of the operator it prints
// how long each task took from its creation to its Job (the operator's
// part) and to its pod running (the cluster's too) in each phase, and the
// ratio of the medians to idle's. B also changes its own app with `kubectl
// sched set env` ten times a phase (the plugin's code, in this process),
// timed to its Deployment's update: that one shares the UserDeployment
// controller's queue with A's churn, as B's tasks share the AgentTask
// controller's queue and the tasks' and Jobs' request budgets with A's
// forEach. Both tenants are made by `kubectl sched tenant create` (A
// enterprise, B team) and each works as its member. Each phase prints
// where the time went: the operator's queues, requests and waits, and the
// API server's writes, latency, etcd's latency and every component's CPU.
//
//	go test ./hack/test/bench/fairness -run '^$' -bench TenantChurn -benchtime 1x -timeout 90m
func BenchmarkTenantChurn(b *testing.B) {
	for range b.N {
		for _, m := range modes {
			runMode(b, m)
		}
	}
}

func runMode(b *testing.B, m mode) {
	ctx := context.Background()
	stop, opts, err := testenv.StartOperator(ctx, sim.Config, m.mutate)
	if err != nil {
		b.Fatal(err)
	}
	metricsURL := "http://" + opts.MetricsAddr + "/metrics"
	defer func() {
		if err := stop(); err != nil {
			b.Error(err)
		}
	}()
	suffix := fmt.Sprintf("%d", time.Now().UnixNano()%100000)
	tenantA, tenantB := "churn-a-"+suffix, "quiet-b-"+suffix
	// A's forEach workflows need enterprise's room (5,000 tasks, 1,000 pods).
	tenant(b, tenantA, "enterprise", "alice")
	tenant(b, tenantB, "team", "bob")
	defer deleteNamespaces(b, tenantA, tenantB)
	alice, bob := as(b, "alice"), as(b, "bob")

	for i := range churnApps {
		ud := MakeUserDeployment(fmt.Sprintf("app-%02d", i), tenantA).
			Service("web", "nginx:1.27", 80, schedv1.ExposureInternal).Isolation(schedv1.IsolationOpen).Obj()
		if err := alice.Create(ctx, ud); err != nil {
			b.Fatal(err)
		}
	}
	bApp := MakeUserDeployment("b-app", tenantB).Service("web", "nginx:1.27", 80, schedv1.ExposureInternal).Isolation(schedv1.IsolationOpen).Obj()
	if err := bob.Create(ctx, bApp); err != nil {
		b.Fatal(err)
	}
	appsRunning := func() bool {
		list := &schedv1.UserDeploymentList{}
		if err := sim.Client.List(ctx, list, client.InNamespace(tenantA)); err != nil {
			return false
		}
		running := 0
		for _, ud := range list.Items {
			if ud.Status.Phase == schedv1.UserDeploymentRunning {
				running++
			}
		}
		return running == churnApps && sim.Client.Get(ctx, client.ObjectKeyFromObject(bApp), bApp) == nil &&
			bApp.Status.Phase == schedv1.UserDeploymentRunning
	}
	waitFor(b, "the tenants' apps to run", 5*time.Minute, appsRunning)

	w := watchTasks(b, tenantB)
	defer w.stop()
	// phase measures B's task starts and app changes while load runs.
	phase := func(name string, load func(context.Context) func() string) (starts, string, string) {
		loadCtx, stopLoad := context.WithCancel(ctx)
		defer stopLoad()
		var stopped func() string
		if load != nil {
			stopped = load(loadCtx)
			time.Sleep(churnWarmUp)
		}
		p := mark(b, metricsURL)
		s := startTasks(b, bob, tenantB, name, w)
		s.toApp = changeApp(b, tenantB, name, w)
		where := where(b, metricsURL, p)
		stopLoad()
		what := ""
		if stopped != nil {
			what = stopped()
		}
		return s, where, what
	}
	idle, idleWhere, _ := phase("idle", nil)
	busy, busyWhere, churned := phase("churn", func(ctx context.Context) func() string {
		began, done := time.Now(), churn(ctx, alice, tenantA)
		return func() string {
			n, failed := done()
			return fmt.Sprintf("tenant A ran set env %d times (%.1f a second, %d failed)", n, float64(n)/time.Since(began).Seconds(), failed)
		}
	})
	waitFor(b, "tenant A's apps to settle", 5*time.Minute, appsRunning)
	fan, fanWhere, fanned := phase("fan", func(ctx context.Context) func() string {
		done := fanOut(ctx, alice, tenantA)
		return func() string {
			return fmt.Sprintf("tenant A started %d workflows of a %d-item forEach, one every %v", done(), fanItems, fanEvery)
		}
	})

	fmt.Printf("%s: load average %s\n", m.name, loadAverage())
	ratio := func(a, b time.Duration) float64 { return a.Seconds() / b.Seconds() }
	idle.print("idle")
	fmt.Println("        " + idleWhere)
	for _, ph := range []struct {
		name, what, where string
		s                 starts
	}{{"churn", churned, busyWhere, busy}, {"fan", fanned, fanWhere, fan}} {
		fmt.Printf("  %s: %s\n", ph.name, ph.what)
		ph.s.print(ph.name)
		fmt.Println("        " + ph.where)
		fmt.Printf("%s, %s: task to Job p50 ratio %.2f (p90 %.2f); to pod running p50 ratio %.2f; B's set env to Deployment p50 ratio %.2f\n", m.name, ph.name,
			ratio(testenv.Percentile(ph.s.toJob, 50), testenv.Percentile(idle.toJob, 50)),
			ratio(testenv.Percentile(ph.s.toJob, 90), testenv.Percentile(idle.toJob, 90)),
			ratio(testenv.Percentile(ph.s.toPod, 50), testenv.Percentile(idle.toPod, 50)),
			ratio(testenv.Percentile(ph.s.toApp, 50), testenv.Percentile(idle.toApp, 50)))
		unit := strings.ReplaceAll(m.name, " ", "-") + "-" + ph.name
		b.ReportMetric(ratio(testenv.Percentile(ph.s.toJob, 50), testenv.Percentile(idle.toJob, 50)), "job-p50-ratio-"+unit)
	}
}

// fanOut starts, as alice, a workflow whose forEach runs fanItems quick
// tasks (50 created at a time by each reconcile), every fanEvery, until
// fanWorkflows are started or ctx ends; the returned func waits and says
// how many it started.
func fanOut(ctx context.Context, c client.Client, ns string) func() int {
	var n int
	done := make(chan struct{})
	go func() {
		defer close(done)
		items := make([]string, fanItems)
		for i := range items {
			items[i] = fmt.Sprint(i)
		}
		tick := time.NewTicker(fanEvery)
		defer tick.Stop()
		for n < fanWorkflows {
			wf := MakeWorkflow(fmt.Sprintf("fan-%02d", n), ns).
				StepTask("each", schedv1.AgentTaskSpec{Image: "x", Args: []string{"${item}"}, PodMetadata: &schedv1.PodMetadata{Annotations: quick}}).
				ForEach(items, "", 0).Obj()
			if err := c.Create(context.Background(), wf); err != nil {
				fmt.Fprintf(os.Stderr, "fan-out workflow: %v\n", err)
			} else {
				n++
			}
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	return func() int {
		<-done
		return n
	}
}

// loadAverage is the machine's load average over 1, 5 and 15 minutes.
func loadAverage() string {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	return strings.Join(strings.Fields(string(data))[:3], " ")
}

func scrape(b *testing.B, url string) testenv.Samples {
	b.Helper()
	m, err := testenv.ScrapeMetrics(context.Background(), url)
	if err != nil {
		b.Fatal(err)
	}
	return m
}

// point is what where compares a phase's end with: the operator's and the
// API server's metrics, the API server's CPU time and the clock.
type point struct {
	operator, apiserver testenv.Samples
	// cpu is each cluster component's CPU time, by binary, and this
	// process's (the operator's and the benchmark's) as "operator".
	cpu map[string]time.Duration
	at  time.Time
}

func mark(b *testing.B, url string) point {
	b.Helper()
	m, err := testenv.ScrapeAPIServerMetrics(context.Background(), adminSet)
	if err != nil {
		b.Fatal(err)
	}
	cpu := map[string]time.Duration{"operator": testenv.ProcessCPU(os.Getpid())}
	for name, pid := range sim.PIDs() {
		cpu[name] = testenv.ProcessCPU(pid)
	}
	return point{operator: scrape(b, url), apiserver: m, cpu: cpu, at: time.Now()}
}

// where says where the time went in the phase since p, from the
// operator's metrics (the AgentTask and UserDeployment queues' mean wait
// and reconcile time, its requests a second, their mean time and mean wait
// for the client's rate limiter) and the API server's (the cores it used,
// the writes a second to the resources most written, and the mean wait in
// its priority-and-fairness queues by priority level).
func where(b *testing.B, url string, p point) string {
	now := mark(b, url)
	d := now.at.Sub(p.at).Seconds()
	m := testenv.MetricsDelta(now.operator, p.operator)
	mean := func(m testenv.Samples, name string, match map[string]string) time.Duration {
		n := m.Sum(name+"_count", match)
		if n == 0 {
			return 0
		}
		return time.Duration(m.Sum(name+"_sum", match) / n * float64(time.Second)).Round(100 * time.Microsecond)
	}
	queue := func(c string) string {
		return fmt.Sprintf("%s queue wait %v, reconcile %v (%.0f)", c, mean(m, "workqueue_queue_duration_seconds", map[string]string{"name": c}),
			mean(m, "controller_runtime_reconcile_time_seconds", map[string]string{"controller": c}),
			m.Sum("controller_runtime_reconcile_time_seconds_count", map[string]string{"controller": c}))
	}
	out := fmt.Sprintf("operator: %s; %s; %.0f requests/s, mean %v, rate limiter wait mean %v",
		queue("agenttask"), queue("userdeployment"), m.Sum("rest_client_requests_total", nil)/d,
		mean(m, "rest_client_request_duration_seconds", nil), mean(m, "rest_client_rate_limiter_duration_seconds", nil))

	a := testenv.MetricsDelta(now.apiserver, p.apiserver)
	type rate struct {
		what string
		n    float64
	}
	var writes []rate
	for what, n := range a.By("apiserver_request_total", nil, "verb", "resource", "subresource") {
		verb := strings.Fields(what)[0]
		if verb != "GET" && verb != "LIST" && verb != "WATCH" && n > 0 {
			writes = append(writes, rate{what, n / d})
		}
	}
	slices.SortFunc(writes, func(x, y rate) int { return cmp.Compare(y.n, x.n) })
	total := 0.0
	var top []string
	for i, w := range writes {
		total += w.n
		if i < 6 {
			top = append(top, fmt.Sprintf("%s %.1f", strings.TrimSpace(w.what), w.n))
		}
	}
	var waits []string
	for level, n := range a.By("apiserver_flowcontrol_request_wait_duration_seconds_count", nil, "priority_level") {
		if n > 0 {
			waits = append(waits, fmt.Sprintf("%s %v", level, mean(a, "apiserver_flowcontrol_request_wait_duration_seconds", map[string]string{"priority_level": level})))
		}
	}
	slices.Sort(waits)
	var serverWrites time.Duration
	var n float64
	for _, verb := range []string{"POST", "PUT", "PATCH", "APPLY", "DELETE"} {
		c := a.Sum("apiserver_request_duration_seconds_count", map[string]string{"verb": verb})
		serverWrites += time.Duration(a.Sum("apiserver_request_duration_seconds_sum", map[string]string{"verb": verb}) * float64(time.Second))
		n += c
	}
	if n > 0 {
		serverWrites = time.Duration(float64(serverWrites) / n).Round(100 * time.Microsecond)
	}
	var cores []string
	for _, name := range slices.Sorted(maps.Keys(now.cpu)) {
		cores = append(cores, fmt.Sprintf("%s %.2f", name, (now.cpu[name]-p.cpu[name]).Seconds()/d))
	}
	return out + fmt.Sprintf("\n        kube-apiserver: %.0f writes/s (%s), served in %v on average (etcd %v); priority-and-fairness wait mean: %s\n        cores used: %s",
		total, strings.Join(top, ", "), serverWrites, mean(a, "etcd_request_duration_seconds", nil),
		strings.Join(waits, ", "), strings.Join(cores, ", "))
}

// tenant runs `kubectl sched tenant create NAME --tier TIER --user USER`.
func tenant(b *testing.B, name, tier, user string) {
	b.Helper()
	if out, code := plugin("tenant", "create", name, "--tier", tier, "--user", user); code != 0 {
		b.Fatalf("tenant create %s: exit %d\n%s", name, code, out)
	}
}

// plugin runs kubectl sched in this process as the cluster's admin, and
// returns its output and exit code.
func plugin(args ...string) (string, int) {
	var out bytes.Buffer
	streams := genericiooptions.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &out}
	root := cmd.NewRootCommandWithOptions(cmd.RootOptions{IOStreams: streams})
	root.SetArgs(append(args, "--kubeconfig", sim.Kubeconfig))
	code := cmd.Execute(root, streams)
	return out.String(), code
}

// as is a client of user, impersonated by the admin.
func as(b *testing.B, user string) client.Client {
	b.Helper()
	cfg := rest.CopyConfig(sim.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user, Groups: []string{"system:authenticated"}}
	cfg.QPS, cfg.Burst = 1000, 2000
	c, err := client.New(cfg, client.Options{Scheme: app.Scheme()})
	if err != nil {
		b.Fatal(err)
	}
	return c
}

// churn changes variable CHURN of app-NN as alice over the apps in turn,
// churnPerSec times a second, from churnWorkers goroutines (a tick that
// finds them all busy is skipped, so the rate printed is the one reached),
// until ctx ends; the returned func waits for the last and says how many
// succeeded and failed. Each change is what `kubectl sched set env` sends:
// a server-side apply of the variable as field manager kubectl-sched. It
// is sent from a shared client rather than by running the plugin, whose
// start-up would load this process, which runs the operator.
func churn(ctx context.Context, c client.Client, ns string) func() (done, failed int) {
	var ok, bad, n atomic.Int64
	var wg sync.WaitGroup
	var firstErr sync.Once
	ticks := make(chan struct{})
	wg.Go(func() {
		tick := time.NewTicker(time.Second / churnPerSec)
		defer tick.Stop()
		defer close(ticks)
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			select {
			case ticks <- struct{}{}:
			default:
			}
		}
	})
	for range churnWorkers {
		wg.Go(func() {
			for range ticks {
				i := n.Add(1)
				if err := setEnv(context.Background(), c, ns, fmt.Sprintf("app-%02d", i%churnApps), "CHURN", fmt.Sprint(i)); err != nil {
					bad.Add(1)
					firstErr.Do(func() { fmt.Fprintf(os.Stderr, "set env failed: %v\n", err) })
					continue
				}
				ok.Add(1)
			}
		})
	}
	return func() (int, int) {
		wg.Wait()
		return int(ok.Load()), int(bad.Load())
	}
}

// setEnv applies env name=value to service web of app ns/app, as `kubectl
// sched set env` does.
func setEnv(ctx context.Context, c client.Client, ns, app, name, value string) error {
	ud := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": schedv1.GroupVersion.String(),
		"kind":       "UserDeployment",
		"metadata":   map[string]any{"name": app, "namespace": ns},
		"spec": map[string]any{"services": []any{map[string]any{
			"name": "web",
			"env":  []any{map[string]any{"name": name, "value": value}},
		}}},
	}}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	return c.Patch(ctx, ud, client.Apply, client.FieldOwner("kubectl-sched"), client.ForceOwnership)
}

// observed is what one watch of tenant B's namespace saw: when each task
// appeared, its Job appeared, and its pod was first seen running.
type observed struct {
	mu         sync.Mutex
	taskAdded  map[string]time.Time
	jobAdded   map[string]time.Time // by Job name
	podRunning map[string]time.Time // by the pods' task label (the Job name)
	// envSeen is when B's app's Deployment first had each value of its
	// variable B in its pod template.
	envSeen map[string]time.Time
	stop    func()
}

func watchTasks(b *testing.B, ns string) *observed {
	b.Helper()
	o := &observed{taskAdded: map[string]time.Time{}, jobAdded: map[string]time.Time{}, podRunning: map[string]time.Time{}, envSeen: map[string]time.Time{}}
	ctx, cancel := context.WithCancel(context.Background())
	lists := []client.ObjectList{&schedv1.AgentTaskList{}, &batchv1.JobList{}, &corev1.PodList{}, &appsv1.DeploymentList{}}
	wait, err := testenv.WatchEach(ctx, sim.Config, ns, lists, func(ev watch.Event) {
		at := time.Now()
		o.mu.Lock()
		defer o.mu.Unlock()
		switch obj := ev.Object.(type) {
		case *schedv1.AgentTask:
			if _, seen := o.taskAdded[obj.Name]; !seen {
				o.taskAdded[obj.Name] = at
			}
		case *batchv1.Job:
			if _, seen := o.jobAdded[obj.Name]; !seen {
				o.jobAdded[obj.Name] = at
			}
		case *appsv1.Deployment:
			for _, c := range obj.Spec.Template.Spec.Containers {
				for _, e := range c.Env {
					if _, seen := o.envSeen[e.Value]; !seen && e.Name == appEnv {
						o.envSeen[e.Value] = at
					}
				}
			}
		case *corev1.Pod:
			l := obj.Labels[schedv1.LabelAgentTask]
			if _, seen := o.podRunning[l]; !seen && l != "" && (obj.Status.Phase == corev1.PodRunning || obj.Status.Phase == corev1.PodSucceeded) {
				o.podRunning[l] = at
			}
		}
	})
	if err != nil {
		b.Fatal(err)
	}
	o.stop = func() { cancel(); wait() }
	return o
}

// starts are the latencies of one phase's tasks.
type starts struct {
	// toJob is from the task's appearance to its Job's, both on the
	// watch; fromCreate from before the create call to the Job's; toPod
	// from the task's appearance to its pod running.
	toJob, fromCreate, toPod []time.Duration
	// toApp is from the start of B's set env on its app to its
	// Deployment's template having the new value.
	toApp []time.Duration
	// gaveUp says how many tasks did not run within giveUp.
	gaveUp string
}

func (s starts) print(phase string) {
	line := func(what string, d []time.Duration) string {
		return fmt.Sprintf("%s p50 %v p90 %v max %v", what, testenv.Percentile(d, 50).Round(time.Millisecond),
			testenv.Percentile(d, 90).Round(time.Millisecond), testenv.Percentile(d, 100).Round(time.Millisecond))
	}
	gaveUp := ""
	if s.gaveUp != "" {
		gaveUp = " (" + s.gaveUp + ", counted at " + giveUp.String() + ")"
	}
	fmt.Printf("  %-5s %d tasks%s: %s; %s; %s\n", phase, len(s.toJob), gaveUp, line("task to Job", s.toJob), line("create call to Job", s.fromCreate), line("task to pod running", s.toPod))
	fmt.Printf("        %d changes of B's app: %s\n", len(s.toApp), line("set env to Deployment", s.toApp))
}

// giveUp is how long a phase waits for one task or app change before it
// counts the wait so far: first come, first served can keep another
// tenant's task queued for minutes.
const giveUp = 2 * time.Minute

// startTasks creates tasksPerRun quick tasks in ns as c, one every
// taskEvery whether the last has run or not, so that they sample the whole
// phase, and returns their latencies once each has run or giveUp has
// passed since its creation.
func startTasks(b *testing.B, c client.Client, ns, prefix string, o *observed) starts {
	b.Helper()
	var s starts
	created := make([]time.Time, tasksPerRun)
	tick := time.NewTicker(taskEvery)
	defer tick.Stop()
	for i := range tasksPerRun {
		task := MakeAgentTask(fmt.Sprintf("%s-%02d", prefix, i), ns).Image("x").Obj()
		task.Spec.PodMetadata = &schedv1.PodMetadata{Annotations: quick}
		created[i] = time.Now()
		if err := c.Create(context.Background(), task); err != nil {
			b.Fatal(err)
		}
		<-tick.C
	}
	missed := 0
	for i := range tasksPerRun {
		name := fmt.Sprintf("%s-%02d", prefix, i)
		job := names.Job(name)
		var added, jobAt, podAt time.Time
		ran := poll(time.Until(created[i].Add(giveUp)), func() bool {
			o.mu.Lock()
			defer o.mu.Unlock()
			added, jobAt, podAt = o.taskAdded[name], o.jobAdded[job], o.podRunning[job]
			return !added.IsZero() && !jobAt.IsZero() && !podAt.IsZero()
		})
		if !ran {
			now := time.Now()
			added, jobAt, podAt = or(added, created[i]), or(jobAt, now), or(podAt, now)
			missed++
		}
		s.toJob = append(s.toJob, jobAt.Sub(added))
		s.fromCreate = append(s.fromCreate, jobAt.Sub(created[i]))
		s.toPod = append(s.toPod, podAt.Sub(added))
	}
	if missed > 0 {
		s.gaveUp = fmt.Sprintf("%d did not run within %v", missed, giveUp)
	}
	return s
}

// or is t, or else when t is zero.
func or(t, otherwise time.Time) time.Time {
	if t.IsZero() {
		return otherwise
	}
	return t
}

// changeApp runs `kubectl sched set env b-app B=PREFIX-N` as bob,
// appChanges times one after another, and returns how long each took to
// reach the app's Deployment.
func changeApp(b *testing.B, ns, prefix string, o *observed) []time.Duration {
	b.Helper()
	var out []time.Duration
	for i := range appChanges {
		value := fmt.Sprintf("%s-%d", prefix, i)
		began := time.Now()
		if log, code := plugin("set", "env", "b-app", appEnv+"="+value, "-n", ns, "--as", "bob"); code != 0 {
			b.Fatalf("set env as bob: exit %d\n%s", code, log)
		}
		var seen time.Time
		if !poll(giveUp, func() bool {
			o.mu.Lock()
			defer o.mu.Unlock()
			seen = o.envSeen[value]
			return !seen.IsZero()
		}) {
			fmt.Printf("        b-app's Deployment did not have %s within %v; the rest not changed\n", value, giveUp)
			return append(out, time.Since(began))
		}
		out = append(out, seen.Sub(began))
		time.Sleep(taskEvery)
	}
	return out
}

// poll says whether cond held within timeout.
func poll(timeout time.Duration, cond func() bool) bool {
	return wait.PollUntilContextTimeout(context.Background(), 10*time.Millisecond, timeout, true, func(context.Context) (bool, error) {
		return cond(), nil
	}) == nil
}

// deleteNamespaces deletes the tenants' namespaces and waits until they
// are gone, so that their deletion does not load what runs next.
func deleteNamespaces(b *testing.B, namespaces ...string) {
	ctx := context.Background()
	for _, ns := range namespaces {
		if err := sim.Client.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil && !apierrors.IsNotFound(err) {
			b.Error(err)
		}
	}
	waitFor(b, "the tenants' namespaces to go", 15*time.Minute, func() bool {
		for _, ns := range namespaces {
			if err := sim.Client.Get(ctx, client.ObjectKey{Name: ns}, &corev1.Namespace{}); !apierrors.IsNotFound(err) {
				return false
			}
		}
		return true
	})
}

func waitFor(b *testing.B, what string, timeout time.Duration, cond func() bool) {
	b.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 10*time.Millisecond, timeout, true, func(context.Context) (bool, error) {
		return cond(), nil
	})
	if err != nil {
		b.Fatalf("waiting for %s: %v", what, err)
	}
}

package bench

import (
	"context"
	"flag"
	"fmt"
	"os"
	"sort"
	"sync"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	. "github.com/kubectl-sched/kubectl-sched/api/testing"
	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
	"github.com/kubectl-sched/kubectl-sched/hack/cluster"
	"github.com/kubectl-sched/kubectl-sched/hack/testenv"
	"github.com/kubectl-sched/kubectl-sched/operator/app"
	"github.com/kubectl-sched/kubectl-sched/operator/names"
)

var sim *testenv.Sim

// TestMain starts the simulated cluster only when benchmarks run, so that
// `go test ./...` pays nothing for this package. Kubernetes' own client
// limits are raised so the cluster is not the bottleneck.
func TestMain(m *testing.M) {
	flag.Parse()
	if f := flag.Lookup("test.bench"); f == nil || f.Value.String() == "" {
		os.Exit(m.Run())
	}
	nodes := cluster.DefaultNodes()
	for i := range nodes {
		nodes[i].Pods = 2000 // finished pods stay until their Job goes
	}
	var err error
	sim, err = testenv.StartSimWith(cluster.Options{Nodes: nodes, ExtraControllerManagerArgs: []string{"--kube-api-qps=200", "--kube-api-burst=400"}})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	stop, _, err := testenv.StartOperator(context.Background(), sim.Config, func(o *app.Options) {
		o.Controllers = []string{"agenttask", "workflow"}
		o.KubeAPIQPS, o.KubeAPIBurst = 200, 400
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		_ = sim.Stop(false)
		os.Exit(1)
	}
	code := m.Run()
	_ = stop()
	_ = sim.Stop(code != 0)
	os.Exit(code)
}

func namespace(b *testing.B, name string) string {
	b.Helper()
	name = fmt.Sprintf("%s-%d", name, time.Now().UnixNano()%100000)
	if err := sim.Client.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}); err != nil {
		b.Fatal(err)
	}
	return name
}

var quick = map[string]string{cluster.AnnotationRunSeconds: "0", cluster.AnnotationExitCode: "0", cluster.AnnotationTerminationMessage: "out=ok"}

// BenchmarkStepHandoff runs a 20-step workflow and measures, from one watch
// on the API server, the time from each step's pod turning Succeeded to the
// next step's Job appearing.
func BenchmarkStepHandoff(b *testing.B) {
	const steps = 20
	for range b.N {
		ns := namespace(b, "handoff")
		ctx, cancel := context.WithCancel(context.Background())
		podDone := map[string]time.Time{} // task label -> first seen Succeeded
		jobAdded := map[string]time.Time{}
		var mu sync.Mutex
		stopWatch := watchAll(b, ctx, ns, func(ev watch.Event, at time.Time) {
			mu.Lock()
			defer mu.Unlock()
			switch o := ev.Object.(type) {
			case *corev1.Pod:
				l := o.Labels[schedv1.LabelAgentTask]
				if _, seen := podDone[l]; !seen && o.Status.Phase == corev1.PodSucceeded {
					podDone[l] = at
				}
			case *batchv1.Job:
				if _, seen := jobAdded[o.Name]; !seen && ev.Type == watch.Added {
					jobAdded[o.Name] = at
				}
			}
		})
		wf := MakeWorkflow("chain", ns)
		for i := range steps {
			args := []string{}
			if i > 0 {
				args = append(args, fmt.Sprintf("${steps.%d.output.out}", i-1))
			}
			wf.StepTask(fmt.Sprintf("s%d", i), schedv1.AgentTaskSpec{Image: "x", Args: args, PodMetadata: &schedv1.PodMetadata{Annotations: quick}})
		}
		start := time.Now()
		if err := sim.Client.Create(ctx, wf.Obj()); err != nil {
			b.Fatal(err)
		}
		waitFor(b, "the workflow to succeed", 10*time.Minute, func() bool {
			got := &schedv1.Workflow{}
			err := sim.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "chain"}, got)
			return err == nil && got.Status.Phase == schedv1.WorkflowSucceeded
		})
		total := time.Since(start)
		cancel()
		stopWatch()
		var lat []time.Duration
		for i := 0; i+1 < steps; i++ {
			prev := names.StepTask("chain", i, fmt.Sprintf("s%d", i))
			next := names.StepTask("chain", i+1, fmt.Sprintf("s%d", i+1))
			if podDone[prev].IsZero() || jobAdded[next].IsZero() {
				b.Fatalf("missing observation for hand-off %d: pod %v job %v", i, podDone[prev], jobAdded[next])
			}
			lat = append(lat, jobAdded[next].Sub(podDone[prev]))
		}
		p50, p99 := percentile(lat, 50), percentile(lat, 99)
		b.ReportMetric(float64(p50.Microseconds())/1000, "p50-ms")
		b.ReportMetric(float64(p99.Microseconds())/1000, "p99-ms")
		b.ReportMetric(total.Seconds(), "workflow-s")
		fmt.Printf("step hand-off over %d steps: p50 %v, p99 %v, max %v; whole workflow %v\n", steps, p50, p99, percentile(lat, 100), total.Round(time.Millisecond))
	}
}

// BenchmarkTaskThroughput runs 500 bare Jobs to Complete, then 500
// AgentTasks to Succeeded on the same cluster, and counts the API writes of
// each task's lifecycle. It then adds 500 more tasks and watches 60 s of
// steady state with 1,000 finished tasks: there should be no writes at all.
func BenchmarkTaskThroughput(b *testing.B) {
	const n = 500
	for range b.N {
		ctx := context.Background()
		nsJobs := namespace(b, "jobs")
		jobsTime := timeIt(b, func() {
			for i := range n {
				job := &batchv1.Job{
					ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("j%d", i), Namespace: nsJobs},
					Spec: batchv1.JobSpec{BackoffLimit: ptr.To[int32](0), Template: corev1.PodTemplateSpec{
						ObjectMeta: metav1.ObjectMeta{Annotations: quick},
						Spec:       corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{{Name: "task", Image: "x"}}},
					}},
				}
				if err := sim.Client.Create(ctx, job); err != nil {
					b.Fatal(err)
				}
			}
			waitFor(b, "jobs complete", 15*time.Minute, func() bool {
				var list batchv1.JobList
				if err := sim.Client.List(ctx, &list, client.InNamespace(nsJobs)); err != nil {
					return false
				}
				done := 0
				for _, j := range list.Items {
					if j.Status.Succeeded > 0 {
						done++
					}
				}
				return done == n
			})
		})

		nsTasks := namespace(b, "tasks")
		wctx, cancel := context.WithCancel(ctx)
		var mu sync.Mutex
		taskWrites := map[string]int{} // status/metadata changes after creation
		jobCreates := map[string]int{}
		stopWatch := watchAll(b, wctx, nsTasks, func(ev watch.Event, _ time.Time) {
			mu.Lock()
			defer mu.Unlock()
			switch o := ev.Object.(type) {
			case *schedv1.AgentTask:
				if ev.Type == watch.Modified {
					taskWrites[o.Name]++
				}
			case *batchv1.Job:
				if ev.Type == watch.Added {
					jobCreates[o.Name]++
				}
			}
		})
		tasksTime := timeIt(b, func() {
			createTasks(b, nsTasks, 0, n)
			waitTasks(b, nsTasks, n)
		})
		// Give late events a moment, then read the counts.
		time.Sleep(2 * time.Second)
		cancel()
		stopWatch()
		maxW, sumW, maxJ := 0, 0, 0
		for i := range n {
			name := fmt.Sprintf("t%d", i)
			maxW, sumW, maxJ = max(maxW, taskWrites[name]), sumW+taskWrites[name], max(maxJ, jobCreates[name])
		}
		ratio := tasksTime.Seconds() / jobsTime.Seconds()
		b.ReportMetric(ratio, "tasks/jobs")
		b.ReportMetric(float64(sumW)/n, "status-writes/task")
		fmt.Printf("%d bare Jobs: %v; %d AgentTasks: %v; ratio %.2f\n", n, jobsTime.Round(time.Millisecond), n, tasksTime.Round(time.Millisecond), ratio)
		fmt.Printf("writes per AgentTask: Job creates max %d; status writes mean %.2f, max %d\n", maxJ, float64(sumW)/n, maxW)

		// Steady state with 1,000 finished tasks.
		createTasks(b, nsTasks, n, 2*n)
		waitTasks(b, nsTasks, 2*n)
		time.Sleep(5 * time.Second) // let pod releases and late events settle
		wctx, cancel = context.WithCancel(ctx)
		var writes int
		stopWatch = watchAll(b, wctx, nsTasks, func(ev watch.Event, _ time.Time) {
			if ev.Type != watch.Added { // a watch starts with ADDED for what exists
				mu.Lock()
				writes++
				mu.Unlock()
			}
		})
		time.Sleep(60 * time.Second)
		cancel()
		stopWatch()
		b.ReportMetric(float64(writes), "steady-writes")
		fmt.Printf("steady state, %d finished tasks, 60s: %d writes to AgentTasks, Jobs and pods\n", 2*n, writes)
	}
}

func createTasks(b *testing.B, ns string, from, to int) {
	b.Helper()
	for i := from; i < to; i++ {
		at := MakeAgentTask(fmt.Sprintf("t%d", i), ns).Image("x").Obj()
		at.Spec.PodMetadata = &schedv1.PodMetadata{Annotations: quick}
		if err := sim.Client.Create(context.Background(), at); err != nil {
			b.Fatal(err)
		}
	}
}

func waitTasks(b *testing.B, ns string, n int) {
	b.Helper()
	waitFor(b, "tasks succeed", 15*time.Minute, func() bool {
		var list schedv1.AgentTaskList
		if err := sim.Client.List(context.Background(), &list, client.InNamespace(ns)); err != nil {
			return false
		}
		done := 0
		for _, t := range list.Items {
			if t.Status.Phase == schedv1.TaskSucceeded {
				done++
			}
		}
		return done == n
	})
}

// watchAll watches AgentTasks, Jobs and pods in ns and calls f for every
// event with the time it arrived; the returned func waits for the watches
// to end after ctx is cancelled.
func watchAll(b *testing.B, ctx context.Context, ns string, f func(watch.Event, time.Time)) func() {
	b.Helper()
	wc, err := client.NewWithWatch(sim.Config, client.Options{Scheme: sim.Client.Scheme()})
	if err != nil {
		b.Fatal(err)
	}
	var wg sync.WaitGroup
	for _, list := range []client.ObjectList{&schedv1.AgentTaskList{}, &batchv1.JobList{}, &corev1.PodList{}} {
		w, err := wc.Watch(ctx, list, client.InNamespace(ns))
		if err != nil {
			b.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer w.Stop()
			for {
				select {
				case <-ctx.Done():
					return
				case ev, ok := <-w.ResultChan():
					if !ok {
						return
					}
					f(ev, time.Now())
				}
			}
		}()
	}
	return wg.Wait
}

func waitFor(b *testing.B, what string, timeout time.Duration, cond func() bool) {
	b.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 20*time.Millisecond, timeout, true, func(context.Context) (bool, error) {
		return cond(), nil
	})
	if err != nil {
		b.Fatalf("waiting for %s: %v", what, err)
	}
}

func timeIt(b *testing.B, f func()) time.Duration {
	b.Helper()
	start := time.Now()
	f()
	return time.Since(start)
}

func percentile(d []time.Duration, p int) time.Duration {
	s := append([]time.Duration(nil), d...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	idx := (len(s)*p + 99) / 100
	if idx < 1 {
		idx = 1
	}
	return s[min(idx, len(s))-1]
}

package operator

import (
	"context"
	"flag"
	"fmt"
	"os"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	. "github.com/kubectl-sched/kubectl-sched/api/builders"
	"github.com/kubectl-sched/kubectl-sched/api/names"
	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
	"github.com/kubectl-sched/kubectl-sched/hack/cluster"
	"github.com/kubectl-sched/kubectl-sched/hack/testenv"
	"github.com/kubectl-sched/kubectl-sched/operator/app"
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
		o.Settings.KubeAPIQPS, o.Settings.KubeAPIBurst = 200, 400
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

// handoffs records, from one watch on the API server, when each task's pod
// was first seen Succeeded (by task label) and when each Job appeared.
type handoffs struct {
	mu       sync.Mutex
	podDone  map[string]time.Time
	jobAdded map[string]time.Time
	// taskAdded and taskDone are when each AgentTask appeared and was first
	// seen Succeeded, for where a hand-off's time goes.
	taskAdded map[string]time.Time
	taskDone  map[string]time.Time
	// taskWrites counts each AgentTask's updates after its create (its
	// status writes; the operator sets no finalizer or label on a task).
	taskWrites map[string]int
	stop       func()
}

func watchHandoffs(b *testing.B, ctx context.Context, ns string) *handoffs {
	h := &handoffs{podDone: map[string]time.Time{}, jobAdded: map[string]time.Time{}, taskAdded: map[string]time.Time{}, taskDone: map[string]time.Time{}, taskWrites: map[string]int{}}
	h.stop = watchAll(b, ctx, ns, func(ev watch.Event, at time.Time) {
		h.mu.Lock()
		defer h.mu.Unlock()
		switch o := ev.Object.(type) {
		case *corev1.Pod:
			l := o.Labels[schedv1.LabelAgentTask]
			if _, seen := h.podDone[l]; !seen && o.Status.Phase == corev1.PodSucceeded {
				h.podDone[l] = at
			}
		case *batchv1.Job:
			if _, seen := h.jobAdded[o.Name]; !seen && ev.Type == watch.Added {
				h.jobAdded[o.Name] = at
			}
		case *schedv1.AgentTask:
			if _, seen := h.taskAdded[o.Name]; !seen && ev.Type == watch.Added {
				h.taskAdded[o.Name] = at
			}
			if ev.Type == watch.Modified {
				h.taskWrites[o.Name]++
			}
			if _, seen := h.taskDone[o.Name]; !seen && o.Status.Phase == schedv1.TaskSucceeded {
				h.taskDone[o.Name] = at
			}
		}
	})
	return h
}

// BenchmarkStepHandoff runs a 20-step workflow and measures, from one watch
// on the API server, the time from each step's pod turning Succeeded to the
// next step's Job appearing.
func BenchmarkStepHandoff(b *testing.B) {
	const steps = 20
	for range b.N {
		ns := namespace(b, "handoff")
		ctx, cancel := context.WithCancel(context.Background())
		h := watchHandoffs(b, ctx, ns)
		podDone, jobAdded, stopWatch := h.podDone, h.jobAdded, h.stop
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
		waitSucceeded(b, ctx, ns, "chain")
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
		p50, p99 := testenv.Percentile(lat, 50), testenv.Percentile(lat, 99)
		b.ReportMetric(float64(p50.Microseconds())/1000, "p50-ms")
		b.ReportMetric(float64(p99.Microseconds())/1000, "p99-ms")
		b.ReportMetric(total.Seconds(), "workflow-s")
		fmt.Printf("step hand-off over %d steps: p50 %v, p99 %v, max %v; whole workflow %v\n", steps, p50, p99, testenv.Percentile(lat, 100), total.Round(time.Millisecond))
	}
}

// BenchmarkFanOutFanIn runs a workflow of one step, 20 steps side by side
// that depend on it, and one step that depends on all 20, and measures from
// one watch on the API server: from the first step's pod turning Succeeded
// to all 20 Jobs existing (fan-out), and from the last of the 20 pods
// turning Succeeded to the join's Job (fan-in).
func BenchmarkFanOutFanIn(b *testing.B) {
	const width = 20
	var fanOut, fanIn []time.Duration
	var taskWrites, workflowWrites []float64
	for range b.N {
		ns := namespace(b, "fan")
		ctx, cancel := context.WithCancel(context.Background())
		h := watchHandoffs(b, ctx, ns)
		podDone, jobAdded, stopWatch := h.podDone, h.jobAdded, h.stop
		var wfWrites atomic.Int32
		stopWfWatch, err := testenv.WatchEach(ctx, sim.Config, ns, []client.ObjectList{&schedv1.WorkflowList{}}, func(ev watch.Event) {
			if ev.Type == watch.Modified {
				wfWrites.Add(1)
			}
		})
		if err != nil {
			b.Fatal(err)
		}
		task := func(args ...string) schedv1.AgentTaskSpec {
			return schedv1.AgentTaskSpec{Image: "x", Args: args, PodMetadata: &schedv1.PodMetadata{Annotations: quick}}
		}
		wf := MakeWorkflow("fan", ns).StepTask("root", task())
		var branches, joinArgs []string
		for i := range width {
			name := fmt.Sprintf("b%d", i)
			branches = append(branches, name)
			joinArgs = append(joinArgs, fmt.Sprintf("${steps.%s.output.out}", name))
			wf.StepTask(name, task("${steps.root.output.out}")).DependsOn("root")
		}
		wf.StepTask("join", task(joinArgs...)).DependsOn(branches...)
		if err := sim.Client.Create(ctx, wf.Obj()); err != nil {
			b.Fatal(err)
		}
		waitSucceeded(b, ctx, ns, "fan")
		cancel()
		stopWatch()
		stopWfWatch()
		h.mu.Lock()
		root := podDone[names.StepTask("fan", 0, "root")]
		var allJobs, lastPod time.Time
		for i, name := range branches {
			task := names.StepTask("fan", i+1, name)
			if jobAdded[task].IsZero() || podDone[task].IsZero() {
				b.Fatalf("missing observation for branch %s: job %v pod %v", name, jobAdded[task], podDone[task])
			}
			if jobAdded[task].After(allJobs) {
				allJobs = jobAdded[task]
			}
			if podDone[task].After(lastPod) {
				lastPod = podDone[task]
			}
		}
		joinTask := names.StepTask("fan", width+1, "join")
		join := jobAdded[joinTask]
		// Where the time goes: the root's status, the branches' tasks, their
		// Jobs; the last branch's status, the join's task, its Job.
		rootTask := names.StepTask("fan", 0, "root")
		var firstTask, lastTask, lastDone time.Time
		for i, name := range branches {
			at := h.taskAdded[names.StepTask("fan", i+1, name)]
			if firstTask.IsZero() || at.Before(firstTask) {
				firstTask = at
			}
			if at.After(lastTask) {
				lastTask = at
			}
			if d := h.taskDone[names.StepTask("fan", i+1, name)]; d.After(lastDone) {
				lastDone = d
			}
		}
		ms := func(from, to time.Time) time.Duration { return to.Sub(from).Round(time.Millisecond) }
		fmt.Printf("  fan-out: root Succeeded +%v, first branch task +%v, last branch task +%v, last Job +%v\n",
			ms(root, h.taskDone[rootTask]), ms(root, firstTask), ms(root, lastTask), ms(root, allJobs))
		fmt.Printf("  fan-in: last branch Succeeded +%v, join task +%v, join Job +%v\n",
			ms(lastPod, lastDone), ms(lastPod, h.taskAdded[joinTask]), ms(lastPod, join))
		writes := 0
		for _, n := range h.taskWrites {
			writes += n
		}
		fmt.Printf("  AgentTask writes after create: %d over %d tasks (%.2f per task); Workflow writes %d\n", writes, len(h.taskAdded), float64(writes)/float64(max(len(h.taskAdded), 1)), wfWrites.Load())
		workflowWrites = append(workflowWrites, float64(wfWrites.Load()))
		taskWrites = append(taskWrites, float64(writes)/float64(max(len(h.taskAdded), 1)))
		h.mu.Unlock()
		if root.IsZero() || join.IsZero() {
			b.Fatalf("missing observation: root pod %v join job %v", root, join)
		}
		fanOut = append(fanOut, allJobs.Sub(root))
		fanIn = append(fanIn, join.Sub(lastPod))
		fmt.Printf("fan-out 1 -> %d: all Jobs %v after the root's pod finished; fan-in: join's Job %v after the last branch's pod\n",
			width, allJobs.Sub(root).Round(time.Millisecond), join.Sub(lastPod).Round(time.Millisecond))
	}
	b.ReportMetric(float64(testenv.Percentile(fanOut, 50).Microseconds())/1000, "fanout-p50-ms")
	b.ReportMetric(float64(testenv.Percentile(fanIn, 50).Microseconds())/1000, "fanin-p50-ms")
	mean := func(xs []float64) float64 {
		m := 0.0
		for _, x := range xs {
			m += x / float64(len(xs))
		}
		return m
	}
	b.ReportMetric(mean(taskWrites), "task-writes")
	b.ReportMetric(mean(workflowWrites), "workflow-writes")
	fmt.Printf("over %d workflows: fan-out p50 %v max %v; fan-in p50 %v max %v\n", len(fanOut),
		testenv.Percentile(fanOut, 50), testenv.Percentile(fanOut, 100), testenv.Percentile(fanIn, 50), testenv.Percentile(fanIn, 100))
}

// BenchmarkForEach runs a workflow of one step, a forEach step over 100
// items that depends on it (no maxParallel: every item at once) and a
// step that reads the items' gathered outputs, and measures from one watch
// on the API server: from the first step's pod turning Succeeded to the
// first and the last item task created and to all 100 item Jobs existing
// (the target: 100 items started within 1 s), and from the last
// item's pod turning Succeeded to the next step's Job (the fan-in).
func BenchmarkForEach(b *testing.B) {
	const n = 100
	var started []time.Duration
	for range b.N {
		ns := namespace(b, "loop")
		ctx, cancel := context.WithCancel(context.Background())
		h := watchHandoffs(b, ctx, ns)
		items := make([]string, n)
		for k := range items {
			items[k] = fmt.Sprintf("item-%d", k)
		}
		task := func(args ...string) schedv1.AgentTaskSpec {
			return schedv1.AgentTaskSpec{Image: "x", Args: args, PodMetadata: &schedv1.PodMetadata{Annotations: quick}}
		}
		wf := MakeWorkflow("loop", ns).StepTask("root", task()).
			StepTask("fan", task("${item}", "${steps.root.output.out}")).ForEach(items, "", 0).
			StepTask("join", task("${steps.fan.output.out}"))
		if err := sim.Client.Create(ctx, wf.Obj()); err != nil {
			b.Fatal(err)
		}
		waitSucceeded(b, ctx, ns, "loop")
		cancel()
		h.stop()
		h.mu.Lock()
		rootTask := names.StepTask("loop", 0, "root")
		root := h.podDone[rootTask]
		var firstTask, lastTask, allJobs, lastPod, lastDone time.Time
		missed := 0
		for k := range n {
			item := names.ItemTask("loop", 1, "fan", k)
			at, job, pod := h.taskAdded[item], h.jobAdded[names.Job(item)], h.podDone[names.Job(item)]
			if at.IsZero() || job.IsZero() {
				b.Fatalf("missing observation for item %d: task %v job %v", k, at, job)
			}
			if firstTask.IsZero() || at.Before(firstTask) {
				firstTask = at
			}
			lastTask, allJobs, lastPod = later(lastTask, at), later(allJobs, job), later(lastPod, pod)
			lastDone = later(lastDone, h.taskDone[item])
			if pod.IsZero() {
				// The pod watch ended early (the API server ended it
				// with an error WatchEach cannot resume from): the
				// fan-in is not measured.
				missed++
			}
		}
		joinTask := names.StepTask("loop", 2, "join")
		join := h.jobAdded[names.Job(joinTask)]
		h.mu.Unlock()
		if root.IsZero() || join.IsZero() {
			b.Fatalf("missing observation: root pod %v join job %v", root, join)
		}
		ms := func(from, to time.Time) time.Duration { return to.Sub(from).Round(time.Millisecond) }
		started = append(started, allJobs.Sub(root))
		fmt.Printf("  fan-out: root Succeeded +%v, first item task +%v, last item task +%v, all %d item Jobs +%v\n",
			ms(root, h.taskDone[rootTask]), ms(root, firstTask), ms(root, lastTask), n, ms(root, allJobs))
		if missed > 0 {
			fmt.Printf("  fan-in: not measured, the watch missed %d item pods ending\n", missed)
		} else {
			fmt.Printf("  fan-in: last item's pod Succeeded, its task +%v, join task +%v, join Job +%v\n",
				ms(lastPod, lastDone), ms(lastPod, h.taskAdded[joinTask]), ms(lastPod, join))
		}
	}
	b.ReportMetric(float64(testenv.Percentile(started, 50).Microseconds())/1000, "started-p50-ms")
	fmt.Printf("forEach over %d items, %d workflows: all item Jobs p50 %v, max %v after the step before it succeeded\n",
		n, len(started), testenv.Percentile(started, 50), testenv.Percentile(started, 100))
}

// later is the later of two times.
func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// BenchmarkTaskThroughput runs 500 bare Jobs to Complete, then 500
// AgentTasks to Succeeded on the same cluster, twice: submitted one after
// another by one client, as a script would, and by 10 clients at once, which
// loads the cluster as far as it goes. It counts every API write of each
// side and each task's status writes, then watches 60 s of steady state
// with the 1,000 finished tasks: there should be no writes at all.
func BenchmarkTaskThroughput(b *testing.B) {
	const n = 500
	for range b.N {
		var taskNamespaces []string
		for _, workers := range []int{1, 10} {
			jobs := runSide(b, "jobs", workers, n, func(ns string, i int) client.Object {
				return &batchv1.Job{
					ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("j%d", i), Namespace: ns},
					Spec: batchv1.JobSpec{BackoffLimit: ptr.To[int32](0), Template: corev1.PodTemplateSpec{
						ObjectMeta: metav1.ObjectMeta{Annotations: quick},
						Spec:       corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{{Name: "task", Image: "x"}}},
					}},
				}
			}, func(o client.Object) bool { return o.(*batchv1.Job).Status.Succeeded > 0 })
			tasks := runSide(b, "tasks", workers, n, func(ns string, i int) client.Object {
				at := MakeAgentTask(fmt.Sprintf("t%d", i), ns).Image("x").Obj()
				at.Spec.PodMetadata = &schedv1.PodMetadata{Annotations: quick}
				return at
			}, taskSucceeded)
			taskNamespaces = append(taskNamespaces, tasks.ns)

			ratio := tasks.elapsed.Seconds() / jobs.elapsed.Seconds()
			fmt.Printf("%d submitter(s): %d bare Jobs %v (created in %v); %d AgentTasks %v (created in %v); ratio %.2f\n",
				workers, n, jobs.elapsed.Round(time.Millisecond), jobs.created.Round(time.Millisecond),
				n, tasks.elapsed.Round(time.Millisecond), tasks.created.Round(time.Millisecond), ratio)
			fmt.Printf("  API writes per bare Job: %s\n", jobs.writes.per(n))
			fmt.Printf("  API writes per AgentTask: %s\n", tasks.writes.per(n))
			fmt.Printf("  per AgentTask: Job creates max %d; status writes mean %.2f, max %d\n", tasks.maxJobCreates, tasks.meanStatusWrites, tasks.maxStatusWrites)
			for _, h := range tasks.overWritten {
				fmt.Println("  " + h)
			}
			unit := fmt.Sprintf("-%dsubmitters", workers)
			b.ReportMetric(ratio, "tasks/jobs"+unit)
			b.ReportMetric(tasks.meanStatusWrites, "status-writes/task"+unit)
			b.ReportMetric(float64(tasks.maxStatusWrites), "max-status-writes/task"+unit)
		}

		// Steady state with the 1,000 finished tasks.
		time.Sleep(5 * time.Second) // let pod releases and late events settle
		ctx, cancel := context.WithCancel(context.Background())
		var mu sync.Mutex
		var writes int
		var stops []func()
		for _, ns := range taskNamespaces {
			stops = append(stops, watchAll(b, ctx, ns, func(ev watch.Event, _ time.Time) {
				if ev.Type != watch.Added { // a watch starts with ADDED for what exists
					mu.Lock()
					writes++
					mu.Unlock()
				}
			}))
		}
		time.Sleep(60 * time.Second)
		cancel()
		for _, stop := range stops {
			stop()
		}
		b.ReportMetric(float64(writes), "steady-writes")
		fmt.Printf("steady state, %d finished tasks, 60s: %d writes to AgentTasks, Jobs, pods and events\n", len(taskNamespaces)*n, writes)
	}
}

// sideResult is what runSide measured.
type sideResult struct {
	ns               string
	created, elapsed time.Duration // all submitted; all done
	writes           *writeCounter
	// For AgentTasks: writes to each task after its creation, and Job
	// creates per task.
	meanStatusWrites               float64
	maxStatusWrites, maxJobCreates int
	overWritten                    []string // the history of a few tasks written more than three times
}

// runSide creates n objects from build in a new namespace with the given
// number of concurrent clients, and waits until done holds for all of
// them. Completion is counted from a watch: polling with Lists would load
// the API server, more so for the larger AgentTasks.
func runSide(b *testing.B, name string, workers, n int, build func(ns string, i int) client.Object, done func(client.Object) bool) sideResult {
	b.Helper()
	r := sideResult{ns: namespace(b, name), writes: &writeCounter{}}
	var mu sync.Mutex
	statusWrites := map[string]int{}
	history := map[string][]string{}
	jobCreates := map[string]int{}
	ctx, cancel := context.WithCancel(context.Background())
	stopWatch := watchAll(b, ctx, r.ns, func(ev watch.Event, at time.Time) {
		r.writes.observe(ev, at)
		mu.Lock()
		defer mu.Unlock()
		switch o := ev.Object.(type) {
		case *schedv1.AgentTask:
			if ev.Type == watch.Modified {
				statusWrites[o.Name]++
				history[o.Name] = append(history[o.Name], fmt.Sprintf("%s/%s %q", o.Status.Phase, o.Status.Reason, o.Status.Message))
			}
		case *batchv1.Job:
			if ev.Type == watch.Added {
				jobCreates[o.Name]++
			}
		}
	})
	allDone, err := testenv.CountDone(sim.Config, listFor(build(r.ns, 0)), r.ns, n, 15*time.Minute, done)
	if err != nil {
		b.Fatal(err)
	}

	start := time.Now()
	work := make(chan int)
	errs := make(chan error, n)
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for i := range work {
				if err := sim.Client.Create(context.Background(), build(r.ns, i)); err != nil {
					errs <- err
				}
			}
		})
	}
	for i := range n {
		work <- i
	}
	close(work)
	wg.Wait()
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
	r.created = time.Since(start)
	if err := allDone(); err != nil {
		b.Fatal(err)
	}
	r.elapsed = time.Since(start)

	time.Sleep(2 * time.Second) // late writes of the last objects
	cancel()
	stopWatch()
	if name != "tasks" {
		return r
	}
	sum := 0
	for i := range n {
		task := fmt.Sprintf("t%d", i)
		sum += statusWrites[task]
		r.maxStatusWrites = max(r.maxStatusWrites, statusWrites[task])
		r.maxJobCreates = max(r.maxJobCreates, jobCreates[task])
		if statusWrites[task] > 3 && len(r.overWritten) < 5 {
			r.overWritten = append(r.overWritten, fmt.Sprintf("%s was written %d times: %v", task, statusWrites[task], history[task]))
		}
	}
	r.meanStatusWrites = float64(sum) / float64(n)
	return r
}

func listFor(o client.Object) client.ObjectList {
	switch o.(type) {
	case *batchv1.Job:
		return &batchv1.JobList{}
	case *schedv1.AgentTask:
		return &schedv1.AgentTaskList{}
	}
	panic(fmt.Sprintf("no list for %T", o))
}

func taskSucceeded(o client.Object) bool {
	return o.(*schedv1.AgentTask).Status.Phase == schedv1.TaskSucceeded
}

// writeCounter counts the writes a watch reports, by kind: every watch
// event after the watch starts is one create, update or delete.
type writeCounter struct {
	mu     sync.Mutex
	byKind map[string]int
}

func (w *writeCounter) observe(ev watch.Event, _ time.Time) {
	if ev.Type == watch.Error || ev.Type == watch.Bookmark {
		return
	}
	kind := fmt.Sprintf("%T", ev.Object)
	kind = kind[strings.LastIndex(kind, ".")+1:]
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.byKind == nil {
		w.byKind = map[string]int{}
	}
	w.byKind[kind]++
}

// per formats the counts divided by n, largest kind first.
func (w *writeCounter) per(n int) string {
	w.mu.Lock()
	defer w.mu.Unlock()
	kinds := make([]string, 0, len(w.byKind))
	t := 0
	for k, v := range w.byKind {
		kinds = append(kinds, k)
		t += v
	}
	sort.Slice(kinds, func(i, j int) bool { return w.byKind[kinds[i]] > w.byKind[kinds[j]] })
	parts := []string{fmt.Sprintf("%.2f", float64(t)/float64(n))}
	for _, k := range kinds {
		parts = append(parts, fmt.Sprintf("%s %.2f", k, float64(w.byKind[k])/float64(n)))
	}
	return parts[0] + " (" + strings.Join(parts[1:], ", ") + ")"
}

// watchAll watches AgentTasks, Jobs, pods and events in ns and calls f for every
// event with the time it arrived; the returned func waits for the watches
// to end after ctx is cancelled.
func watchAll(b *testing.B, ctx context.Context, ns string, f func(watch.Event, time.Time)) func() {
	b.Helper()
	lists := []client.ObjectList{&schedv1.AgentTaskList{}, &batchv1.JobList{}, &corev1.PodList{}, &corev1.EventList{}}
	wait, err := testenv.WatchEach(ctx, sim.Config, ns, lists, func(ev watch.Event) { f(ev, time.Now()) })
	if err != nil {
		b.Fatal(err)
	}
	return wait
}

// waitSucceeded waits, up to ten minutes, for workflow ns/name to succeed.
func waitSucceeded(b *testing.B, ctx context.Context, ns, name string) {
	b.Helper()
	waitFor(b, "workflow "+name+" to succeed", 10*time.Minute, func() bool {
		got := &schedv1.Workflow{}
		err := sim.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, got)
		return err == nil && got.Status.Phase == schedv1.WorkflowSucceeded
	})
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

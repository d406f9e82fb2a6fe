package scale

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubectl-sched/kubectl-sched/api/names"
	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
	"github.com/kubectl-sched/kubectl-sched/operator/app"
)

// observer records, from informers on the API server (watches, no
// polling), when each pod succeeded, each Job and AgentTask appeared, and
// each Job, AgentTask, Workflow and app finished. Objects are trimmed to
// what it reads.
type observer struct {
	mu        sync.Mutex
	podDone   map[string]time.Time // by namespace/Job name
	jobAdded  map[string]time.Time // by namespace/name
	jobDone   map[string]time.Time
	taskAdded map[string]time.Time
	taskDone  map[string]time.Time
	done      map[string]int // finished objects by kind and run: "Job floor-tasks"
	failed    []string       // a few objects that did not succeed
	running   map[string]bool
	floor     *floorDriver
}

func observe(b *testing.B, ctx context.Context, cfg *rest.Config, s *bench) *observer {
	o := &observer{podDone: map[string]time.Time{}, jobAdded: map[string]time.Time{}, jobDone: map[string]time.Time{},
		taskAdded: map[string]time.Time{}, taskDone: map[string]time.Time{}, done: map[string]int{}, running: map[string]bool{}}
	c, err := cache.New(cfg, cache.Options{Scheme: app.Scheme(), DefaultTransform: trim})
	if err != nil {
		b.Fatal(err)
	}
	handlers := map[client.Object]func(obj any, at time.Time, added bool){
		&corev1.Pod{}:             o.pod,
		&batchv1.Job{}:            o.job,
		&schedv1.AgentTask{}:      o.task,
		&schedv1.Workflow{}:       o.workflow,
		&schedv1.UserDeployment{}: o.app,
	}
	for obj, f := range handlers {
		inf, err := c.GetInformer(ctx, obj)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
			AddFunc:    func(obj any) { f(obj, time.Now(), true) },
			UpdateFunc: func(_, obj any) { f(obj, time.Now(), false) },
		}); err != nil {
			b.Fatal(err)
		}
	}
	go func() { _ = c.Start(ctx) }()
	if !c.WaitForCacheSync(ctx) {
		b.Fatal("the benchmark's informers did not sync")
	}
	return o
}

// trim keeps what the observer reads: names, labels, phases, a pod's
// termination message, a Job's succeeded count.
func trim(obj any) (any, error) {
	meta := func(m metav1.ObjectMeta) metav1.ObjectMeta {
		return metav1.ObjectMeta{Name: m.Name, Namespace: m.Namespace, Labels: m.Labels, ResourceVersion: m.ResourceVersion}
	}
	switch o := obj.(type) {
	case *corev1.Pod:
		p := &corev1.Pod{ObjectMeta: meta(o.ObjectMeta)}
		p.Status.Phase = o.Status.Phase
		for _, cs := range o.Status.ContainerStatuses {
			if t := cs.State.Terminated; t != nil {
				p.Status.ContainerStatuses = append(p.Status.ContainerStatuses, corev1.ContainerStatus{State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Message: t.Message}}})
			}
		}
		return p, nil
	case *batchv1.Job:
		j := &batchv1.Job{ObjectMeta: meta(o.ObjectMeta)}
		j.Status.Succeeded, j.Status.Failed = o.Status.Succeeded, o.Status.Failed
		return j, nil
	case *schedv1.AgentTask:
		t := &schedv1.AgentTask{ObjectMeta: meta(o.ObjectMeta)}
		t.Spec.PodMetadata = o.Spec.PodMetadata
		t.Status.Phase = o.Status.Phase
		return t, nil
	case *schedv1.Workflow:
		w := &schedv1.Workflow{ObjectMeta: meta(o.ObjectMeta)}
		w.Status.Phase = o.Status.Phase
		return w, nil
	case *schedv1.UserDeployment:
		u := &schedv1.UserDeployment{ObjectMeta: meta(o.ObjectMeta)}
		u.Status.Phase = o.Status.Phase
		return u, nil
	}
	return obj, nil
}

func key(ns, name string) string { return ns + "/" + name }

func (o *observer) pod(obj any, at time.Time, _ bool) {
	p, ok := obj.(*corev1.Pod)
	if !ok || p.Status.Phase != corev1.PodSucceeded {
		return
	}
	k := key(p.Namespace, p.Labels[batchv1.JobNameLabel])
	o.mu.Lock()
	_, seen := o.podDone[k]
	if !seen {
		o.podDone[k] = at
	}
	floor := o.floor
	o.mu.Unlock()
	if !seen && floor != nil && p.Labels[labelRun] == "floor-workflows" {
		floor.next(p)
	}
}

func (o *observer) job(obj any, at time.Time, added bool) {
	j, ok := obj.(*batchv1.Job)
	if !ok {
		return
	}
	k := key(j.Namespace, j.Name)
	o.mu.Lock()
	defer o.mu.Unlock()
	if _, seen := o.jobAdded[k]; !seen && added {
		o.jobAdded[k] = at
	}
	if _, seen := o.jobDone[k]; !seen && (j.Status.Succeeded > 0 || j.Status.Failed > 0) {
		o.jobDone[k] = at
		run := j.Labels[labelRun]
		if run == "floor-workflows" && j.Labels[labelStep] != "2" {
			return
		}
		o.done["Job "+run]++
		if j.Status.Failed > 0 {
			o.fail("Job " + k)
		}
	}
}

func (o *observer) task(obj any, at time.Time, added bool) {
	t, ok := obj.(*schedv1.AgentTask)
	if !ok {
		return
	}
	k := key(t.Namespace, t.Name)
	o.mu.Lock()
	defer o.mu.Unlock()
	if _, seen := o.taskAdded[k]; !seen && added {
		o.taskAdded[k] = at
	}
	if _, seen := o.taskDone[k]; !seen && t.Status.Phase.Finished() {
		o.taskDone[k] = at
		run := ""
		if t.Spec.PodMetadata != nil {
			run = t.Spec.PodMetadata.Labels[labelRun]
		}
		o.done["AgentTask "+run]++
		if t.Status.Phase != schedv1.TaskSucceeded {
			o.fail(fmt.Sprintf("AgentTask %s %s", k, t.Status.Phase))
		}
	}
}

func (o *observer) workflow(obj any, _ time.Time, _ bool) {
	w, ok := obj.(*schedv1.Workflow)
	if !ok || !w.Status.Phase.Finished() {
		return
	}
	k := "Workflow " + key(w.Namespace, w.Name)
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.running[k] {
		return
	}
	o.running[k] = true
	o.done["Workflow "+w.Labels[labelRun]]++
	if w.Status.Phase != schedv1.WorkflowSucceeded {
		o.fail(fmt.Sprintf("%s %s", k, w.Status.Phase))
	}
}

func (o *observer) app(obj any, _ time.Time, _ bool) {
	u, ok := obj.(*schedv1.UserDeployment)
	if !ok || u.Status.Phase != schedv1.UserDeploymentRunning {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if k := "App " + key(u.Namespace, u.Name); !o.running[k] {
		o.running[k] = true
		o.done["App"]++
	}
}

// fail notes an object that did not succeed (o.mu held).
func (o *observer) fail(what string) {
	if len(o.failed) < 10 {
		o.failed = append(o.failed, what)
	}
}

func (o *observer) count(what string) int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.done[what]
}

func (o *observer) workflowsDone(run string) int { return o.count("Workflow " + run) }
func (o *observer) tasksDone(run string) int     { return o.count("AgentTask " + run) }
func (o *observer) jobsDone(run string) int      { return o.count("Job " + run) }
func (o *observer) chainsDone() int              { return o.count("Job floor-workflows") }
func (o *observer) appsRunning() int             { return o.count("App") }

// handoffStats are the hand-offs of a run: pod Succeeded to the next
// step's Job; for the operator also the three legs (the task's status
// says Succeeded; the next step's task exists; its Job exists).
type handoffStats struct {
	all  []time.Duration
	legs [3][]time.Duration
}

func (h *handoffStats) add(o handoffStats) {
	h.all = append(h.all, o.all...)
	for i := range h.legs {
		h.legs[i] = append(h.legs[i], o.legs[i]...)
	}
}

// operatorHandoffs are the hand-offs of workflow wf, whose steps are named
// steps.
func (o *observer) operatorHandoffs(ns, wf string, steps []string) handoffStats {
	o.mu.Lock()
	defer o.mu.Unlock()
	var h handoffStats
	for i := 0; i+1 < len(steps); i++ {
		prev, next := names.StepTask(wf, i, steps[i]), names.StepTask(wf, i+1, steps[i+1])
		pod, job := o.podDone[key(ns, names.Job(prev))], o.jobAdded[key(ns, names.Job(next))]
		status, task := o.taskDone[key(ns, prev)], o.taskAdded[key(ns, next)]
		if pod.IsZero() || job.IsZero() || status.IsZero() || task.IsZero() {
			continue
		}
		h.all = append(h.all, job.Sub(pod))
		h.legs[0] = append(h.legs[0], status.Sub(pod))
		h.legs[1] = append(h.legs[1], task.Sub(status))
		h.legs[2] = append(h.legs[2], job.Sub(task))
	}
	return h
}

// floorHandoffs are the hand-offs of the n bare-Job chains.
func (o *observer) floorHandoffs(n int, slot func(int) *tenant) handoffStats {
	o.mu.Lock()
	defer o.mu.Unlock()
	var h handoffStats
	for i := range n {
		ns := slot(i).ns
		for step := range 2 {
			pod, job := o.podDone[key(ns, chainName(i, step))], o.jobAdded[key(ns, chainName(i, step+1))]
			if !pod.IsZero() && !job.IsZero() {
				h.all = append(h.all, job.Sub(pod))
			}
		}
	}
	return h
}

func chainName(i, step int) string { return fmt.Sprintf("chain-%05d-%d", i, step) }

// floorDriver is the script of the floor: when a chain's pod succeeds it
// creates the chain's next Job, with the pod's output as its argument.
type floorDriver struct {
	s    *bench
	work chan func()
}

func newFloorDriver(s *bench) *floorDriver {
	f := &floorDriver{s: s, work: make(chan func(), 3*s.cfg.workflows+16)}
	for range s.cfg.submitters {
		go func() {
			for {
				select {
				case <-s.ctx.Done():
					return
				case do := <-f.work:
					do()
				}
			}
		}()
	}
	return f
}

// next queues the Job after the one whose pod p succeeded.
func (f *floorDriver) next(p *corev1.Pod) {
	step, err := strconv.Atoi(p.Labels[labelStep])
	if err != nil || step >= 2 {
		return
	}
	chain, err := strconv.Atoi(p.Labels[labelChain])
	if err != nil {
		return
	}
	output := ""
	for _, cs := range p.Status.ContainerStatuses {
		if t := cs.State.Terminated; t != nil {
			_, output, _ = strings.Cut(t.Message, "=")
		}
	}
	t := f.s.slot(chain)
	f.work <- func() {
		if err := createRetrying(f.s.ctx, t.client, chainJob(chain, step+1, t.ns, output)); err != nil && f.s.ctx.Err() == nil {
			f.s.asyncErr.CompareAndSwap(nil, &err)
		}
	}
}

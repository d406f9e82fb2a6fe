// Package metrics holds the operator's Prometheus metrics, served on the
// manager's metrics endpoint next to controller-runtime's own (which already
// count reconcile errors: controller_runtime_reconcile_errors_total).
package metrics

import (
	"context"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
)

var (
	// TaskDuration is how long finished AgentTasks ran, by final phase.
	TaskDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "kubectl_sched_agenttask_duration_seconds",
		Help:    "Time from an AgentTask's creation to its end, by final phase.",
		Buckets: prometheus.ExponentialBuckets(0.5, 2, 14),
	}, []string{"phase"})

	// StepHandoff is the operator's share of a workflow hand-off: from the
	// Workflow controller seeing a step finish to the next step's Job being
	// created. The benchmark measures the whole hand-off from the pod.
	StepHandoff = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "kubectl_sched_workflow_step_handoff_seconds",
		Help:    "Time from the operator seeing a workflow step finish to the next step's Job being created.",
		Buckets: []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10},
	})
)

// phaseCounter counts the cached AgentTasks by phase. The cache's informer
// keeps the counts as it sees tasks come, change phase and go, so a scrape
// reads six numbers: its cost does not grow with the number of tasks (it
// used to list, and so copy, every cached task). The counts start from the
// informer's initial list, so they are right after a restart too.
type phaseCounter struct {
	desc   *prometheus.Desc
	mu     sync.Mutex
	counts map[schedv1.AgentTaskPhase]int
}

// phases are reported even at zero, so a dashboard sees every series.
var phases = []schedv1.AgentTaskPhase{schedv1.TaskPending, schedv1.TaskRunning, schedv1.TaskSucceeded, schedv1.TaskFailed, schedv1.TaskTimeout, schedv1.TaskCancelled}

func newPhaseCounter() *phaseCounter {
	return &phaseCounter{
		desc:   prometheus.NewDesc("kubectl_sched_agenttasks", "AgentTasks by phase.", []string{"phase"}, nil),
		counts: map[schedv1.AgentTaskPhase]int{},
	}
}

func (c *phaseCounter) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

func (c *phaseCounter) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, p := range phases {
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, float64(c.counts[p]), string(p))
	}
}

func (c *phaseCounter) move(from, to schedv1.AgentTaskPhase) {
	if from == to {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if from != "" {
		c.counts[from]--
	}
	if to != "" {
		c.counts[to]++
	}
}

// phaseOf is a task's phase, Pending before the operator wrote one; "" for
// anything that is not a task.
func phaseOf(obj any) schedv1.AgentTaskPhase {
	if d, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	task, ok := obj.(*schedv1.AgentTask)
	if !ok {
		return ""
	}
	if task.Status.Phase == "" {
		return schedv1.TaskPending
	}
	return task.Status.Phase
}

// handlers keep c in line with an informer's events.
func (c *phaseCounter) handlers() toolscache.ResourceEventHandler {
	return toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { c.move("", phaseOf(obj)) },
		UpdateFunc: func(old, cur any) { c.move(phaseOf(old), phaseOf(cur)) },
		DeleteFunc: func(obj any) { c.move(phaseOf(obj), "") },
	}
}

var (
	registerOnce sync.Once
	registerErr  error
	// counter is the phase counter of the manager that registered last:
	// tests run several managers in one process, one after another.
	counter   *phaseCounter
	counterMu sync.Mutex
)

// Register adds the metrics to controller-runtime's registry and keeps the
// AgentTask gauge from informers' events (the manager's cache).
func Register(informers cache.Informers) error {
	registerOnce.Do(func() {
		for _, c := range []prometheus.Collector{TaskDuration, StepHandoff} {
			if err := ctrlmetrics.Registry.Register(c); err != nil {
				if _, ok := err.(prometheus.AlreadyRegisteredError); !ok {
					registerErr = err
					return
				}
			}
		}
	})
	if registerErr != nil {
		return registerErr
	}
	inf, err := informers.GetInformer(context.Background(), &schedv1.AgentTask{}, cache.BlockUntilSynced(false))
	if err != nil {
		return err
	}
	c := newPhaseCounter()
	if _, err := inf.AddEventHandler(c.handlers()); err != nil {
		return err
	}
	counterMu.Lock()
	defer counterMu.Unlock()
	if counter != nil {
		ctrlmetrics.Registry.Unregister(counter)
	}
	counter = c
	return ctrlmetrics.Registry.Register(c)
}

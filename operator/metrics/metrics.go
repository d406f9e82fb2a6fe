// Package metrics holds the operator's Prometheus metrics, served on the
// manager's metrics endpoint next to controller-runtime's own (which already
// count reconcile errors: controller_runtime_reconcile_errors_total).
package metrics

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/client"
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

// phaseCollector counts AgentTasks by phase from the manager's cache at
// scrape time, so the figure is right after a restart too.
type phaseCollector struct {
	reader client.Reader
	desc   *prometheus.Desc
}

func (c *phaseCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

func (c *phaseCollector) Collect(ch chan<- prometheus.Metric) {
	// A scrape must not hang on a cache that has not synced yet.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var list schedv1.AgentTaskList
	if err := c.reader.List(ctx, &list); err != nil {
		return
	}
	counts := map[schedv1.AgentTaskPhase]int{}
	for _, p := range []schedv1.AgentTaskPhase{schedv1.TaskPending, schedv1.TaskRunning, schedv1.TaskSucceeded, schedv1.TaskFailed, schedv1.TaskTimeout, schedv1.TaskCancelled} {
		counts[p] = 0
	}
	for i := range list.Items {
		phase := list.Items[i].Status.Phase
		if phase == "" {
			phase = schedv1.TaskPending
		}
		counts[phase]++
	}
	for phase, n := range counts {
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, float64(n), string(phase))
	}
}

// Register adds the metrics to controller-runtime's registry; reader is the
// manager's cache.
func Register(reader client.Reader) error {
	for _, c := range []prometheus.Collector{
		TaskDuration,
		StepHandoff,
		&phaseCollector{reader: reader, desc: prometheus.NewDesc(
			"kubectl_sched_agenttasks", "AgentTasks by phase.", []string{"phase"}, nil)},
	} {
		if err := ctrlmetrics.Registry.Register(c); err != nil {
			if _, ok := err.(prometheus.AlreadyRegisteredError); !ok {
				return err
			}
		}
	}
	return nil
}

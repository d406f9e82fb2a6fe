package fairness

import (
	"errors"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

// DepthByPriority is a queue depth kept per priority, as controller-runtime
// reports its priority queue's.
type DepthByPriority interface {
	Inc(priority int)
	Dec(priority int)
}

// PriorityMetrics is a MetricsProvider that keeps the depth per priority;
// a Queue uses it when its provider is one.
type PriorityMetrics interface {
	workqueue.MetricsProvider
	NewDepthMetricWithPriority(name string) DepthByPriority
}

// queueMetrics are a queue's metrics; every method is called with the
// queue's lock held, and does nothing on a nil receiver.
type queueMetrics[T comparable] struct {
	clock                  clock.Clock
	depth                  workqueue.GaugeMetric
	depthByPriority        DepthByPriority
	adds, retries          workqueue.CounterMetric
	latency, workDuration  workqueue.HistogramMetric
	unfinished, longestRun workqueue.SettableGaugeMetric
	// added is when each ready item became ready, started when each item
	// handed out was.
	added, started map[T]time.Time
}

func newQueueMetrics[T comparable](p workqueue.MetricsProvider, name string, c clock.Clock) *queueMetrics[T] {
	m := &queueMetrics[T]{
		clock:        c,
		adds:         p.NewAddsMetric(name),
		retries:      p.NewRetriesMetric(name),
		latency:      p.NewLatencyMetric(name),
		workDuration: p.NewWorkDurationMetric(name),
		unfinished:   p.NewUnfinishedWorkSecondsMetric(name),
		longestRun:   p.NewLongestRunningProcessorSecondsMetric(name),
		added:        map[T]time.Time{},
		started:      map[T]time.Time{},
	}
	if pp, ok := p.(PriorityMetrics); ok {
		m.depthByPriority = pp.NewDepthMetricWithPriority(name)
	} else {
		m.depth = p.NewDepthMetric(name)
	}
	return m
}

func (m *queueMetrics[T]) add(item T, priority int) {
	if m == nil {
		return
	}
	m.adds.Inc()
	m.inc(priority)
	if _, ok := m.added[item]; !ok {
		m.added[item] = m.clock.Now()
	}
}

func (m *queueMetrics[T]) get(item T, priority int) {
	if m == nil {
		return
	}
	m.dec(priority)
	now := m.clock.Now()
	m.started[item] = now
	if at, ok := m.added[item]; ok {
		m.latency.Observe(now.Sub(at).Seconds())
		delete(m.added, item)
	}
}

func (m *queueMetrics[T]) done(item T) {
	if m == nil {
		return
	}
	if at, ok := m.started[item]; ok {
		m.workDuration.Observe(m.clock.Since(at).Seconds())
		delete(m.started, item)
	}
}

func (m *queueMetrics[T]) reprioritize(from, to int) {
	if m == nil || m.depthByPriority == nil {
		return
	}
	m.depthByPriority.Dec(from)
	m.depthByPriority.Inc(to)
}

func (m *queueMetrics[T]) retry() {
	if m != nil {
		m.retries.Inc()
	}
}

func (m *queueMetrics[T]) updateUnfinishedWork() {
	if m == nil {
		return
	}
	var total, longest float64
	for _, at := range m.started {
		age := m.clock.Since(at).Seconds()
		total += age
		longest = max(longest, age)
	}
	m.unfinished.Set(total)
	m.longestRun.Set(longest)
}

func (m *queueMetrics[T]) inc(priority int) {
	if m.depthByPriority != nil {
		m.depthByPriority.Inc(priority)
	} else {
		m.depth.Inc()
	}
}

func (m *queueMetrics[T]) dec(priority int) {
	if m.depthByPriority != nil {
		m.depthByPriority.Dec(priority)
	} else {
		m.depth.Dec()
	}
}

// ControllerMetrics reports a Queue's metrics as controller-runtime
// reports its own queues' (workqueue_depth, workqueue_adds_total, ...,
// labelled with the controller's name), so dashboards read them alike.
// controller-runtime keeps those collectors unexported; registering
// collectors of the same description hands back its own.
var ControllerMetrics = sync.OnceValue(func() PriorityMetrics {
	name := []string{"name", "controller"}
	hist := func(key, help string) *prometheus.HistogramVec {
		return shared(prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Subsystem: ctrlmetrics.WorkQueueSubsystem, Name: key, Help: help,
			Buckets: prometheus.ExponentialBuckets(10e-9, 10, 12),
		}, name))
	}
	gauge := func(key, help string, labels []string) *prometheus.GaugeVec {
		return shared(prometheus.NewGaugeVec(prometheus.GaugeOpts{Subsystem: ctrlmetrics.WorkQueueSubsystem, Name: key, Help: help}, labels))
	}
	counter := func(key, help string) *prometheus.CounterVec {
		return shared(prometheus.NewCounterVec(prometheus.CounterOpts{Subsystem: ctrlmetrics.WorkQueueSubsystem, Name: key, Help: help}, name))
	}
	return controllerMetrics{
		depth: gauge(ctrlmetrics.DepthKey, "Current depth of workqueue by workqueue and priority", []string{"name", "controller", "priority"}),
		adds:  counter(ctrlmetrics.AddsKey, "Total number of adds handled by workqueue"),
		latency: hist(ctrlmetrics.QueueLatencyKey,
			"How long in seconds an item stays in workqueue before being requested"),
		workDuration: hist(ctrlmetrics.WorkDurationKey, "How long in seconds processing an item from workqueue takes."),
		unfinished: gauge(ctrlmetrics.UnfinishedWorkKey, "How many seconds of work has been done that "+
			"is in progress and hasn't been observed by work_duration. Large "+
			"values indicate stuck threads. One can deduce the number of stuck "+
			"threads by observing the rate at which this increases.", name),
		longestRun: gauge(ctrlmetrics.LongestRunningProcessorKey, "How many seconds has the longest running "+
			"processor for workqueue been running.", name),
		retries: counter(ctrlmetrics.RetriesKey,
			"Total number of items added to the workqueue with a non-zero delay (rate-limited requeues, explicit RequeueAfter or AddAfter calls)"),
	}
})

// shared registers c with controller-runtime's registry, or returns the
// collector registered there under the same description.
func shared[C prometheus.Collector](c C) C {
	var already prometheus.AlreadyRegisteredError
	if err := ctrlmetrics.Registry.Register(c); errors.As(err, &already) {
		if existing, ok := already.ExistingCollector.(C); ok {
			return existing
		}
	}
	return c
}

type controllerMetrics struct {
	depth, unfinished, longestRun *prometheus.GaugeVec
	adds, retries                 *prometheus.CounterVec
	latency, workDuration         *prometheus.HistogramVec
}

func (m controllerMetrics) NewDepthMetric(name string) workqueue.GaugeMetric {
	return m.depth.WithLabelValues(name, name, "")
}

func (m controllerMetrics) NewDepthMetricWithPriority(name string) DepthByPriority {
	return depthByPriority{gauge: m.depth, name: name}
}

func (m controllerMetrics) NewAddsMetric(name string) workqueue.CounterMetric {
	return m.adds.WithLabelValues(name, name)
}

func (m controllerMetrics) NewLatencyMetric(name string) workqueue.HistogramMetric {
	return m.latency.WithLabelValues(name, name)
}

func (m controllerMetrics) NewWorkDurationMetric(name string) workqueue.HistogramMetric {
	return m.workDuration.WithLabelValues(name, name)
}

func (m controllerMetrics) NewUnfinishedWorkSecondsMetric(name string) workqueue.SettableGaugeMetric {
	return m.unfinished.WithLabelValues(name, name)
}

func (m controllerMetrics) NewLongestRunningProcessorSecondsMetric(name string) workqueue.SettableGaugeMetric {
	return m.longestRun.WithLabelValues(name, name)
}

func (m controllerMetrics) NewRetriesMetric(name string) workqueue.CounterMetric {
	return m.retries.WithLabelValues(name, name)
}

// depthByPriority labels the depth with the priority. The operator's
// controllers use two (0, and controller-runtime's -100 for what a cache
// lists when it starts), so the label's values stay few.
type depthByPriority struct {
	gauge *prometheus.GaugeVec
	name  string
}

func (d depthByPriority) Inc(priority int) {
	d.gauge.WithLabelValues(d.name, d.name, strconv.Itoa(priority)).Inc()
}

func (d depthByPriority) Dec(priority int) {
	d.gauge.WithLabelValues(d.name, d.name, strconv.Itoa(priority)).Dec()
}

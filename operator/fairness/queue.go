// Package fairness shares the operator's work among the namespaces it
// serves, as the API server's priority and fairness shares the server
// among its users: each controller's work queue hands out reconciles round
// robin across the namespaces that have work waiting (Queue), and each
// kind's request budget its tokens the same way (Budget), so a namespace
// with thousands of queued reconciles or waiting requests delays another's
// next one by at most one per busy namespace, not by its whole backlog.
package fairness

import (
	"container/heap"
	"slices"
	"sync"
	"time"

	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// Namespace is the flow of a reconcile request: its namespace, or for a
// cluster-scoped object its name (the tenant controller's requests are
// namespaces, so a namespace's own reconciles share its flow).
func Namespace(r reconcile.Request) string {
	if r.Namespace != "" {
		return r.Namespace
	}
	return r.Name
}

// Options configure a Queue.
type Options[T comparable] struct {
	// Flow names the flow an item belongs to; items of one flow are handed
	// out in order, flows in turn. Required.
	Flow func(T) string
	// RateLimiter says how long AddRateLimited waits; per-item exponential
	// backoff from 5 ms to 1000 s when nil (controller-runtime's default).
	RateLimiter workqueue.TypedRateLimiter[T]
	// Metrics records the queue's depth, adds, latency, work duration,
	// unfinished work and retries under Name; nil records nothing.
	Metrics workqueue.MetricsProvider
	Name    string
	// Clock is the real clock when nil; tests pass a fake one.
	Clock clock.WithTicker
}

// Queue is a work queue fair across flows. Like controller-runtime's
// priority queue, which it replaces, it holds each item once (adding a
// queued item again keeps the earliest time it is due and the highest
// priority), never hands out an item that is being processed (an item added
// meanwhile waits for Done), and hands out higher priorities first. Within
// a priority it takes flows in turn, one item each, oldest first: a flow
// that gets work joins the back of the turn, and one that runs out leaves
// it. Memory is per queued item; a flow costs nothing once it has none.
type Queue[T comparable] struct {
	flowOf  func(T) string
	limiter workqueue.TypedRateLimiter[T]
	clock   clock.WithTicker
	metrics *queueMetrics[T]

	mu   sync.Mutex
	cond *sync.Cond
	// items are the queued items: waiting for their time, ready, or ready
	// but held until Done because they are being processed.
	items      map[T]*entry[T]
	processing map[T]struct{}
	// levels hold the ready items that may be handed out, by priority;
	// priorities lists the levels' keys, highest first.
	levels     map[int]*level[T]
	priorities []int
	ready      int
	waiting    waitHeap[T]
	shutdown   bool
	// wake tells the delay loop that the earliest wait changed; done
	// that the queue shut down.
	wake chan struct{}
	done chan struct{}
}

var _ priorityqueue.PriorityQueue[reconcile.Request] = &Queue[reconcile.Request]{}

// entry is one queued item.
type entry[T comparable] struct {
	key      T
	flow     string
	priority int
	// readyAt is when a waiting item is due; zero once ready.
	readyAt time.Time
	// index is its place in the waiting heap, -1 when not waiting;
	// listed says it waits in its level to be handed out, at place.
	index  int
	listed bool
	place  held
}

// level is one priority's ready items, in turns by flow.
type level[T comparable] = turns[*entry[T]]

// New returns a running queue; ShutDown stops it.
func New[T comparable](o Options[T]) *Queue[T] {
	if o.RateLimiter == nil {
		o.RateLimiter = workqueue.NewTypedItemExponentialFailureRateLimiter[T](5*time.Millisecond, 1000*time.Second)
	}
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	q := &Queue[T]{
		flowOf:     o.Flow,
		limiter:    o.RateLimiter,
		clock:      o.Clock,
		items:      map[T]*entry[T]{},
		processing: map[T]struct{}{},
		levels:     map[int]*level[T]{},
		wake:       make(chan struct{}, 1),
		done:       make(chan struct{}),
	}
	q.cond = sync.NewCond(&q.mu)
	if o.Metrics != nil && o.Name != "" {
		q.metrics = newQueueMetrics[T](o.Metrics, o.Name, o.Clock)
		go q.updateUnfinishedWork()
	}
	go q.delayLoop()
	return q
}

// Add queues item now.
func (q *Queue[T]) Add(item T) { q.AddWithOpts(priorityqueue.AddOpts{}, item) }

// AddAfter queues item once after has passed.
func (q *Queue[T]) AddAfter(item T, after time.Duration) {
	q.AddWithOpts(priorityqueue.AddOpts{After: after}, item)
}

// AddRateLimited queues item after the rate limiter's delay for it.
func (q *Queue[T]) AddRateLimited(item T) {
	q.AddWithOpts(priorityqueue.AddOpts{RateLimited: true}, item)
}

// AddWithOpts queues items with o's priority (0 when nil), after o.After
// or, when o.RateLimited, the rate limiter's delay if that is shorter. An
// item already queued keeps the earlier of its two times and the higher
// of its two priorities.
func (q *Queue[T]) AddWithOpts(o priorityqueue.AddOpts, items ...T) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.shutdown {
		return
	}
	priority := ptr.Deref(o.Priority, 0)
	for _, key := range items {
		after := o.After
		if o.RateLimited {
			if d := q.limiter.When(key); after <= 0 || d < after {
				after = d
			}
		}
		var readyAt time.Time
		if after > 0 {
			readyAt = q.clock.Now().Add(after)
			q.metrics.retry()
		}
		e, queued := q.items[key]
		if !queued {
			e = &entry[T]{key: key, flow: q.flowOf(key), priority: priority, readyAt: readyAt, index: -1}
			q.items[key] = e
			if readyAt.IsZero() {
				q.becomeReady(e)
			} else {
				q.wait(e)
			}
			continue
		}
		switch {
		case e.index >= 0 && readyAt.IsZero():
			heap.Remove(&q.waiting, e.index)
			e.priority = max(e.priority, priority)
			q.becomeReady(e)
		case e.index >= 0:
			e.priority = max(e.priority, priority)
			if readyAt.Before(e.readyAt) {
				e.readyAt = readyAt
				heap.Fix(&q.waiting, e.index)
				q.wakeDelayLoop()
			}
		case priority > e.priority:
			q.metrics.reprioritize(e.priority, priority)
			if e.listed {
				// Moved to the back of its flow in the higher level, as
				// controller-runtime's priority queue does.
				q.unlist(e)
				e.priority = priority
				q.list(e)
			} else {
				e.priority = priority
			}
		}
	}
}

// becomeReady makes a queued item ready: listed to be handed out, or held
// until Done when it is being processed.
func (q *Queue[T]) becomeReady(e *entry[T]) {
	e.readyAt = time.Time{}
	q.metrics.add(e.key, e.priority)
	if _, busy := q.processing[e.key]; !busy {
		q.list(e)
	}
}

// wait puts e in the waiting heap.
func (q *Queue[T]) wait(e *entry[T]) {
	heap.Push(&q.waiting, e)
	if e.index == 0 {
		q.wakeDelayLoop()
	}
}

func (q *Queue[T]) wakeDelayLoop() {
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// list appends e to its flow in its priority's level.
func (q *Queue[T]) list(e *entry[T]) {
	l, ok := q.levels[e.priority]
	if !ok {
		l = &level[T]{}
		q.levels[e.priority] = l
		i, _ := slices.BinarySearchFunc(q.priorities, e.priority, func(have, want int) int { return want - have })
		q.priorities = slices.Insert(q.priorities, i, e.priority)
	}
	e.place, e.listed = l.push(e.flow, e), true
	q.ready++
	q.cond.Signal()
}

// unlist takes a listed e out of its level.
func (q *Queue[T]) unlist(e *entry[T]) {
	q.levels[e.priority].remove(e.place)
	q.unlisted(e)
}

// unlisted accounts for e leaving its level, and drops the level when it
// is left empty.
func (q *Queue[T]) unlisted(e *entry[T]) {
	e.listed, e.place = false, held{}
	q.ready--
	if q.levels[e.priority].len() == 0 {
		delete(q.levels, e.priority)
		q.priorities = slices.DeleteFunc(q.priorities, func(p int) bool { return p == e.priority })
	}
}

// Get waits for an item and hands it out; shutdown is true once the queue
// shut down, and the caller should stop.
func (q *Queue[T]) Get() (item T, shutdown bool) {
	item, _, shutdown = q.GetWithPriority()
	return item, shutdown
}

// GetWithPriority is Get, with the item's priority.
func (q *Queue[T]) GetWithPriority() (item T, priority int, shutdown bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for q.ready == 0 && !q.shutdown {
		q.cond.Wait()
	}
	if q.shutdown {
		return item, 0, true
	}
	e, _ := q.levels[q.priorities[0]].pop()
	q.unlisted(e)
	delete(q.items, e.key)
	q.processing[e.key] = struct{}{}
	q.metrics.get(e.key, e.priority)
	return e.key, e.priority, false
}

// Done marks item processed: an add that came meanwhile is handed out
// from now on.
func (q *Queue[T]) Done(item T) {
	q.mu.Lock()
	defer q.mu.Unlock()
	delete(q.processing, item)
	q.metrics.done(item)
	if e, ok := q.items[item]; ok && e.index < 0 && !e.listed {
		q.list(e)
	}
	if len(q.processing) == 0 {
		// ShutDownWithDrain waits for this.
		q.cond.Broadcast()
	}
}

// Forget clears the rate limiter's memory of item.
func (q *Queue[T]) Forget(item T) { q.limiter.Forget(item) }

// NumRequeues is how often item was rate limited since its last Forget.
func (q *Queue[T]) NumRequeues(item T) int { return q.limiter.NumRequeues(item) }

// Len is how many items are ready to be handed out.
func (q *Queue[T]) Len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.ready
}

// ShutDown stops the queue: adds are ignored, and Get returns shutdown at
// once, in every waiting caller.
func (q *Queue[T]) ShutDown() {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.shutdown {
		return
	}
	q.shutdown = true
	close(q.done)
	q.cond.Broadcast()
}

// ShutDownWithDrain is ShutDown, then waits until every item handed out
// is Done.
func (q *Queue[T]) ShutDownWithDrain() {
	q.ShutDown()
	q.mu.Lock()
	defer q.mu.Unlock()
	for len(q.processing) > 0 {
		q.cond.Wait()
	}
}

// ShuttingDown says whether ShutDown was called.
func (q *Queue[T]) ShuttingDown() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.shutdown
}

// delayLoop makes waiting items ready when they are due.
func (q *Queue[T]) delayLoop() {
	for {
		q.mu.Lock()
		now := q.clock.Now()
		for len(q.waiting) > 0 && !q.waiting[0].readyAt.After(now) {
			q.becomeReady(heap.Pop(&q.waiting).(*entry[T]))
		}
		var next <-chan time.Time
		var timer clock.Timer
		if len(q.waiting) > 0 {
			timer = q.clock.NewTimer(q.waiting[0].readyAt.Sub(now))
			next = timer.C()
		}
		q.mu.Unlock()
		select {
		case <-q.done:
			if timer != nil {
				timer.Stop()
			}
			return
		case <-q.wake:
		case <-next:
		}
		if timer != nil {
			timer.Stop()
		}
	}
}

// updateUnfinishedWork refreshes the gauges of work in progress twice a
// second, as client-go's queues do.
func (q *Queue[T]) updateUnfinishedWork() {
	tick := q.clock.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-q.done:
			return
		case <-tick.C():
		}
		q.mu.Lock()
		q.metrics.updateUnfinishedWork()
		q.mu.Unlock()
	}
}

// waitHeap orders waiting items by when they are due.
type waitHeap[T comparable] []*entry[T]

func (h waitHeap[T]) Len() int           { return len(h) }
func (h waitHeap[T]) Less(i, j int) bool { return h[i].readyAt.Before(h[j].readyAt) }
func (h waitHeap[T]) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index, h[j].index = i, j
}

func (h *waitHeap[T]) Push(x any) {
	e := x.(*entry[T])
	e.index = len(*h)
	*h = append(*h, e)
}

func (h *waitHeap[T]) Pop() any {
	old := *h
	e := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	e.index = -1
	return e
}

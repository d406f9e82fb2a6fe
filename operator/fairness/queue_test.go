package fairness

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/workqueue"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// Items in these tests are "flow/name".
func flowOf(item string) string { return strings.SplitN(item, "/", 2)[0] }

func newTestQueue(t *testing.T, o Options[string]) *Queue[string] {
	t.Helper()
	o.Flow = flowOf
	q := New(o)
	t.Cleanup(q.ShutDown)
	return q
}

// drain hands out every ready item, marking each done, in the order Get
// returns them.
func drain(q *Queue[string]) []string {
	var got []string
	for q.Len() > 0 {
		item, _ := q.Get()
		got = append(got, item)
		q.Done(item)
	}
	return got
}

func TestOrder(t *testing.T) {
	type add struct {
		item     string
		priority int
	}
	cases := map[string]struct {
		adds []add
		want []string
	}{
		"one flow is first in, first out": {
			adds: []add{{item: "a/1"}, {item: "a/2"}, {item: "a/3"}},
			want: []string{"a/1", "a/2", "a/3"},
		},
		"flows take turns, one item each, in the order they got work": {
			adds: []add{{item: "a/1"}, {item: "a/2"}, {item: "a/3"}, {item: "a/4"}, {item: "b/1"}, {item: "c/1"}, {item: "c/2"}},
			want: []string{"a/1", "b/1", "c/1", "a/2", "c/2", "a/3", "a/4"},
		},
		"a backlog does not hold back a flow that adds later": {
			adds: []add{{item: "busy/1"}, {item: "busy/2"}, {item: "busy/3"}, {item: "busy/4"}, {item: "busy/5"}, {item: "quiet/1"}},
			want: []string{"busy/1", "quiet/1", "busy/2", "busy/3", "busy/4", "busy/5"},
		},
		"an item added twice is handed out once, in its first place": {
			adds: []add{{item: "a/1"}, {item: "a/2"}, {item: "a/1"}},
			want: []string{"a/1", "a/2"},
		},
		"higher priorities first, flows in turn within each": {
			adds: []add{{item: "a/low", priority: -100}, {item: "a/1"}, {item: "a/2"}, {item: "b/low", priority: -100}, {item: "b/1"}, {item: "a/high", priority: 10}},
			want: []string{"a/high", "a/1", "b/1", "a/2", "a/low", "b/low"},
		},
		"a queued item added again at a higher priority moves up, to the back of its flow": {
			adds: []add{{item: "a/1", priority: -100}, {item: "a/2"}, {item: "a/3"}, {item: "a/1"}},
			want: []string{"a/2", "a/3", "a/1"},
		},
		"a lower priority leaves a queued item where it is": {
			adds: []add{{item: "a/1"}, {item: "a/2"}, {item: "a/1", priority: -100}},
			want: []string{"a/1", "a/2"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			q := newTestQueue(t, Options[string]{})
			for _, a := range tc.adds {
				q.AddWithOpts(priorityqueue.AddOpts{Priority: ptr.To(a.priority)}, a.item)
			}
			if diff := cmp.Diff(tc.want, drain(q)); diff != "" {
				t.Errorf("order (-want +got):\n%s", diff)
			}
			if n := len(q.items) + len(q.levels) + len(q.priorities); n != 0 {
				t.Errorf("%d items, levels or priorities left after draining; want none", n)
			}
		})
	}
}

// A flow that keeps adding gets one turn per round like any other: here
// "busy" adds two items for every one handed out, and "quiet" one item now
// and then, which waits at most one of busy's.
func TestBusyFlowWaitsItsTurn(t *testing.T) {
	q := newTestQueue(t, Options[string]{})
	next := 0
	addBusy := func(n int) {
		for range n {
			q.Add(fmt.Sprintf("busy/%d", next))
			next++
		}
	}
	addBusy(10)
	for round := range 50 {
		if round%5 == 0 {
			q.Add(fmt.Sprintf("quiet/%d", round))
			// At most one busy item comes before it.
			for waited := 0; ; waited++ {
				item, _ := q.Get()
				q.Done(item)
				addBusy(2)
				if flowOf(item) == "quiet" {
					break
				}
				if waited == 1 {
					t.Fatalf("round %d: quiet's item still waits after two of busy's", round)
				}
			}
			continue
		}
		item, _ := q.Get()
		q.Done(item)
		addBusy(2)
	}
}

func TestProcessingItemIsHeldUntilDone(t *testing.T) {
	q := newTestQueue(t, Options[string]{})
	q.Add("a/1")
	item, _ := q.Get()
	q.Add("a/1")
	q.Add("a/2")
	if got := q.Len(); got != 1 {
		t.Fatalf("Len while a/1 is processed = %d, want 1 (a/2; a/1 waits for Done)", got)
	}
	if got, _ := q.Get(); got != "a/2" {
		t.Fatalf("Get = %s, want a/2: a/1 is still being processed", got)
	}
	q.Done("a/2")
	q.Done(item)
	if diff := cmp.Diff([]string{"a/1"}, drain(q)); diff != "" {
		t.Errorf("after Done (-want +got):\n%s", diff)
	}
}

func TestGetWaitsForAnAdd(t *testing.T) {
	q := newTestQueue(t, Options[string]{})
	got := make(chan string)
	go func() {
		item, _ := q.Get()
		got <- item
	}()
	select {
	case item := <-got:
		t.Fatalf("Get returned %q from an empty queue", item)
	case <-time.After(50 * time.Millisecond):
	}
	q.Add("b/1")
	if item := <-got; item != "b/1" {
		t.Errorf("Get = %q, want b/1", item)
	}
}

// eventually polls cond for up to ten seconds.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	err := wait.PollUntilContextTimeout(t.Context(), time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		return cond(), nil
	})
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

func TestAddAfter(t *testing.T) {
	clock := clocktesting.NewFakeClock(time.Now())
	q := newTestQueue(t, Options[string]{Clock: clock})
	q.AddAfter("a/1", 10*time.Second)
	q.AddAfter("a/2", 20*time.Second)
	// The earlier of two times wins.
	q.AddAfter("a/2", 5*time.Second)
	q.AddAfter("a/1", time.Hour)
	if got := q.Len(); got != 0 {
		t.Fatalf("Len before anything is due = %d, want 0", got)
	}
	eventually(t, "the delay loop to wait on a timer", clock.HasWaiters)
	clock.Step(5 * time.Second)
	eventually(t, "a/2 to be due", func() bool { return q.Len() == 1 })
	if diff := cmp.Diff([]string{"a/2"}, drain(q)); diff != "" {
		t.Errorf("at 5s (-want +got):\n%s", diff)
	}
	clock.Step(5 * time.Second)
	eventually(t, "a/1 to be due", func() bool { return q.Len() == 1 })
	// Adding now what waits makes it ready now.
	q.AddAfter("b/1", time.Minute)
	q.Add("b/1")
	if diff := cmp.Diff([]string{"a/1", "b/1"}, drain(q)); diff != "" {
		t.Errorf("at 10s (-want +got):\n%s", diff)
	}
	// An item that comes due while it is processed waits for Done.
	q.Add("c/1")
	item, _ := q.Get()
	q.AddAfter(item, time.Second)
	clock.Step(time.Second)
	eventually(t, "c/1 to be due", func() bool {
		q.mu.Lock()
		defer q.mu.Unlock()
		return len(q.waiting) == 0
	})
	if got := q.Len(); got != 0 {
		t.Fatalf("Len with c/1 due but processed = %d, want 0", got)
	}
	q.Done(item)
	if diff := cmp.Diff([]string{"c/1"}, drain(q)); diff != "" {
		t.Errorf("after Done (-want +got):\n%s", diff)
	}
}

func TestAddRateLimited(t *testing.T) {
	clock := clocktesting.NewFakeClock(time.Now())
	limiter := workqueue.NewTypedItemExponentialFailureRateLimiter[string](time.Second, time.Minute)
	q := newTestQueue(t, Options[string]{Clock: clock, RateLimiter: limiter})
	q.AddRateLimited("a/1")
	q.AddRateLimited("a/1") // second failure: 2s, but the first's 1s is earlier
	if got := q.NumRequeues("a/1"); got != 2 {
		t.Errorf("NumRequeues = %d, want 2", got)
	}
	eventually(t, "the delay loop to wait on a timer", clock.HasWaiters)
	clock.Step(time.Second)
	eventually(t, "a/1 to be due", func() bool { return q.Len() == 1 })
	// A rate-limited add of an item with an earlier After keeps that.
	q.AddWithOpts(priorityqueue.AddOpts{After: time.Millisecond, RateLimited: true}, "b/1")
	q.Forget("a/1")
	if got := q.NumRequeues("a/1"); got != 0 {
		t.Errorf("NumRequeues after Forget = %d, want 0", got)
	}
	clock.Step(time.Millisecond)
	eventually(t, "b/1 to be due", func() bool { return q.Len() == 2 })
}

func TestShutDown(t *testing.T) {
	q := newTestQueue(t, Options[string]{})
	q.Add("a/1")
	item, _ := q.Get()
	var getters sync.WaitGroup
	for range 3 {
		getters.Go(func() {
			if _, shutdown := q.Get(); !shutdown {
				t.Error("Get after ShutDown did not say shutdown")
			}
		})
	}
	drained := make(chan struct{})
	go func() {
		q.ShutDownWithDrain()
		close(drained)
	}()
	getters.Wait()
	select {
	case <-drained:
		t.Fatal("ShutDownWithDrain returned before the item handed out was done")
	case <-time.After(50 * time.Millisecond):
	}
	q.Done(item)
	<-drained
	q.Add("a/2")
	if !q.ShuttingDown() || q.Len() != 0 {
		t.Errorf("after ShutDown: ShuttingDown %v, Len %d; want true, 0 (adds ignored)", q.ShuttingDown(), q.Len())
	}
	q.ShutDown() // twice is fine
}

// Many producers and workers at once (run with -race): every item added is
// processed after its last add, none by two workers at once, and nothing is
// left once they are done.
func TestConcurrentUse(t *testing.T) {
	q := newTestQueue(t, Options[string]{Metrics: ControllerMetrics(), Name: "fairness-test-concurrent"})
	const producers, workers, perProducer = 8, 10, 2000
	var (
		mu        sync.Mutex
		inFlight  = map[string]bool{}
		lastAdd   = map[string]int64{} // by item: the add's sequence number
		processed = map[string]int64{} // by item: the latest add seen when it was handed out
		seq       atomic.Int64
	)
	var working sync.WaitGroup
	for range workers {
		working.Go(func() {
			for {
				item, shutdown := q.Get()
				if shutdown {
					return
				}
				mu.Lock()
				if inFlight[item] {
					t.Errorf("%s handed out to two workers at once", item)
				}
				inFlight[item] = true
				processed[item] = seq.Load()
				mu.Unlock()
				time.Sleep(time.Duration(rand.IntN(50)) * time.Microsecond)
				mu.Lock()
				inFlight[item] = false
				mu.Unlock()
				q.Done(item)
			}
		})
	}
	var producing sync.WaitGroup
	for p := range producers {
		producing.Go(func() {
			for i := range perProducer {
				item := fmt.Sprintf("busy%d/%d", p, rand.IntN(200))
				if p == 0 {
					item = fmt.Sprintf("quiet/%d", i%10)
				}
				mu.Lock()
				lastAdd[item] = seq.Add(1)
				mu.Unlock()
				switch rand.IntN(4) {
				case 0:
					q.AddAfter(item, time.Duration(rand.IntN(1000))*time.Microsecond)
				case 1:
					q.AddWithOpts(priorityqueue.AddOpts{Priority: ptr.To(-100)}, item)
				default:
					q.Add(item)
				}
			}
		})
	}
	producing.Wait()
	eventually(t, "every item to be processed after its last add", func() bool {
		mu.Lock()
		defer mu.Unlock()
		for item, added := range lastAdd {
			if processed[item] < added {
				return false
			}
		}
		return true
	})
	q.ShutDownWithDrain()
	working.Wait()
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.items) != 0 || len(q.processing) != 0 || q.ready != 0 {
		t.Errorf("left: %d items, %d processing, %d ready; want none", len(q.items), len(q.processing), q.ready)
	}
}

func TestMetrics(t *testing.T) {
	clock := clocktesting.NewFakeClock(time.Now())
	const name = "fairness-test-metrics"
	q := newTestQueue(t, Options[string]{Clock: clock, Metrics: ControllerMetrics(), Name: name})
	q.Add("a/1")
	q.Add("a/1")
	q.AddWithOpts(priorityqueue.AddOpts{Priority: ptr.To(-100)}, "b/1")
	q.AddAfter("c/1", time.Minute)
	clock.Step(2 * time.Second)
	item, _ := q.Get()
	clock.Step(3 * time.Second)
	q.Done(item)

	got := map[string]float64{}
	families, err := ctrlmetrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["name"] != name || labels["controller"] != name {
				continue
			}
			key := f.GetName()
			if p, ok := labels["priority"]; ok {
				key += "{priority=" + p + "}"
			}
			switch {
			case m.GetHistogram() != nil:
				got[key+" count"] = float64(m.GetHistogram().GetSampleCount())
				got[key+" sum"] = m.GetHistogram().GetSampleSum()
			case m.GetCounter() != nil:
				got[key] = m.GetCounter().GetValue()
			case m.GetGauge() != nil:
				got[key] = m.GetGauge().GetValue()
			}
		}
	}
	want := map[string]float64{
		"workqueue_adds_total":                        2, // a/1 once, b/1
		"workqueue_depth{priority=0}":                 0,
		"workqueue_depth{priority=-100}":              1,
		"workqueue_queue_duration_seconds count":      1,
		"workqueue_queue_duration_seconds sum":        2,
		"workqueue_work_duration_seconds count":       1,
		"workqueue_work_duration_seconds sum":         3,
		"workqueue_retries_total":                     1, // c/1's AddAfter
		"workqueue_unfinished_work_seconds":           0,
		"workqueue_longest_running_processor_seconds": 0,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("metrics in controller-runtime's registry (-want +got):\n%s", diff)
	}
}

func TestNamespace(t *testing.T) {
	for req, want := range map[reconcile.Request]string{
		{NamespacedName: types.NamespacedName{Namespace: "team-a", Name: "app"}}: "team-a",
		{NamespacedName: types.NamespacedName{Name: "team-a"}}:                   "team-a",
	} {
		if got := Namespace(req); got != want {
			t.Errorf("Namespace(%v) = %q, want %q", req, got, want)
		}
	}
}

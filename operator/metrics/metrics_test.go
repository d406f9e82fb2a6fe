package metrics_test

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	. "github.com/kubectl-sched/kubectl-sched/api/builders"
	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
	"github.com/kubectl-sched/kubectl-sched/hack/testenv"
	"github.com/kubectl-sched/kubectl-sched/operator/app"
	"github.com/kubectl-sched/kubectl-sched/operator/metrics"
)

var env *testenv.Env

func TestMain(m *testing.M) {
	var err error
	if env, err = testenv.Start(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	_ = env.Stop()
	os.Exit(code)
}

// gauge reads kubectl_sched_agenttasks by phase from the registry.
func gauge(t *testing.T) map[string]float64 {
	t.Helper()
	families, err := ctrlmetrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, f := range families {
		if f.GetName() != "kubectl_sched_agenttasks" {
			continue
		}
		for _, m := range f.GetMetric() {
			out[m.GetLabel()[0].GetValue()] = m.GetGauge().GetValue()
		}
	}
	return out
}

// TestPhaseGaugeFollowsTheCache: the AgentTask gauge is kept from the
// cache's events, not counted at scrape time; it counts the tasks there
// were before it started, follows phase changes and deletions, and starts
// afresh with a new cache (a restarted operator).
func TestPhaseGaugeFollowsTheCache(t *testing.T) {
	ctx := t.Context()
	ns := testenv.Namespace(t, env.Client)
	create := func(name string, phase schedv1.AgentTaskPhase) *schedv1.AgentTask {
		task := MakeAgentTask(name, ns).Image("busybox").Obj()
		if err := env.Client.Create(ctx, task); err != nil {
			t.Fatal(err)
		}
		if phase != "" {
			task.Status.Phase = phase
			if err := env.Client.Status().Update(ctx, task); err != nil {
				t.Fatal(err)
			}
		}
		return task
	}
	// Before the cache starts: counted from its first list.
	running := create("a", schedv1.TaskRunning)
	create("b", "")

	start := func() context.CancelFunc {
		ctx, cancel := context.WithCancel(ctx)
		c, err := cache.New(env.Config, cache.Options{Scheme: app.Scheme()})
		if err != nil {
			t.Fatal(err)
		}
		if err := metrics.Register(c); err != nil {
			t.Fatal(err)
		}
		go func() { _ = c.Start(ctx) }()
		if !c.WaitForCacheSync(ctx) {
			t.Fatal("cache did not sync")
		}
		return cancel
	}
	expect := func(what string, want map[string]float64) {
		t.Helper()
		for _, p := range []string{"Pending", "Running", "Succeeded", "Failed", "Timeout", "Cancelled"} {
			if _, ok := want[p]; !ok {
				want[p] = 0
			}
		}
		var got map[string]float64
		err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
			got = gauge(t)
			return cmp.Equal(want, got), nil
		})
		if err != nil {
			t.Fatalf("%s: gauge (-want +got):\n%s", what, cmp.Diff(want, got))
		}
	}
	stop := start()
	expect("tasks from before", map[string]float64{"Pending": 1, "Running": 1})

	running.Status.Phase = schedv1.TaskSucceeded
	if err := env.Client.Status().Update(ctx, running); err != nil {
		t.Fatal(err)
	}
	create("c", schedv1.TaskFailed)
	expect("a phase change and a new task", map[string]float64{"Pending": 1, "Succeeded": 1, "Failed": 1})

	if err := env.Client.Delete(ctx, running); err != nil {
		t.Fatal(err)
	}
	expect("a deletion", map[string]float64{"Pending": 1, "Failed": 1})

	// A restarted operator's new cache counts afresh, not on top.
	stop()
	stop = start()
	defer stop()
	expect("a new cache", map[string]float64{"Pending": 1, "Failed": 1})
	var list schedv1.AgentTaskList
	if err := env.Client.List(ctx, &list, client.InNamespace(ns)); err != nil || len(list.Items) != 2 {
		t.Fatalf("tasks: %d (%v)", len(list.Items), err)
	}
}

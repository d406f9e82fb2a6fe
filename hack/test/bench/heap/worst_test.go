package heap

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	. "github.com/kubectl-sched/kubectl-sched/api/builders"
	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
	"github.com/kubectl-sched/kubectl-sched/hack/testenv"
	"github.com/kubectl-sched/kubectl-sched/operator/app"
)

// worstCounts are how many of each kind BenchmarkWorstCaseObjects makes.
var worstCounts = map[string]int{"AgentTasks": 30, "Workflows": 15, "CronWorkflows": 15}

// BenchmarkWorstCaseObjects measures the heap the operator's cache takes
// for a tenant's largest objects: AgentTasks, Workflows and CronWorkflows
// each holding the largest task spec a tenant may write
// (builders.LargestTenantTaskSpec), a last-applied-configuration
// annotation of 200 KiB (as kubectl apply writes one) and 16 labels of
// its own, about 1.2 MB each in the API server. The tasks are cancelled
// and the workflows and schedules suspended, so nothing else is made for
// them.
//
//   - after: the operator as shipped (its caches trimmed: agenttask.TrimTask,
//     workflow.TrimWorkflow, cronworkflow.TrimCron), the growth of its live
//     heap per object of each kind, past a first object whose growth is
//     printed apart: most of it is the decoding buffers of the watch that
//     carried it, which keeps them as large as the largest object it
//     carried, for good;
//   - before: a second cache in the same process, of the same three kinds
//     kept whole but for their managed fields, as the operator cached them
//     before, its growth per object.
//
// Heap is as BenchmarkOperatorHeap measures it (live, after GC, the median
// of five samples).
//
//	go test ./hack/test/bench/heap -run '^$' -bench WorstCase -benchtime 1x -timeout 30m
func BenchmarkWorstCaseObjects(b *testing.B) {
	ctx := context.Background()
	cfg := rest.CopyConfig(sim.Config)
	cfg.QPS, cfg.Burst = 1000, 2000
	c, err := client.New(cfg, client.Options{Scheme: app.Scheme()})
	if err != nil {
		b.Fatal(err)
	}
	stop, opts, err := testenv.StartOperator(ctx, sim.Config, func(o *app.Options) {
		o.Settings.KubeAPIQPS, o.Settings.KubeAPIBurst = 1000, 2000
	})
	if err != nil {
		b.Fatal(err)
	}
	defer func() {
		if err := stop(); err != nil {
			b.Error(err)
		}
	}()
	op := operator{"http://" + opts.MetricsAddr, "http://" + opts.ProbeAddr}
	poll(b, "the operator's caches to sync", time.Minute, op.ready)

	ns := makeNamespaces(b, c, fmt.Sprintf("heap-worst-%d", time.Now().UnixNano()%100000))[0]
	spec := LargestTenantTaskSpec()
	spec.ServiceAccountName = ""
	bulk := func(o client.Object) client.Object {
		labels := map[string]string{}
		for i := range 16 {
			labels[fmt.Sprintf("tenant.example/l%02d", i)] = strings.Repeat("v", 63)
		}
		o.SetLabels(labels)
		o.SetAnnotations(map[string]string{"kubectl.kubernetes.io/last-applied-configuration": strings.Repeat("{}", 100<<10)})
		return o
	}
	kinds := []struct {
		name string
		make func(i int) client.Object
		list client.ObjectList
		obj  client.Object
	}{
		{"AgentTasks", func(i int) client.Object {
			t := MakeAgentTask(fmt.Sprintf("worst-%02d", i), ns).Obj()
			t.Spec = spec
			t.Spec.Cancel = true
			return bulk(t)
		}, &schedv1.AgentTaskList{}, &schedv1.AgentTask{}},
		{"Workflows", func(i int) client.Object {
			return bulk(MakeWorkflow(fmt.Sprintf("worst-%02d", i), ns).StepTask("a", spec).Suspend(true).Obj())
		}, &schedv1.WorkflowList{}, &schedv1.Workflow{}},
		{"CronWorkflows", func(i int) client.Object {
			return bulk(MakeCronWorkflow(fmt.Sprintf("worst-%02d", i), ns, "0 0 1 1 *").StepTask("a", spec).Suspend(true).Obj())
		}, &schedv1.CronWorkflowList{}, &schedv1.CronWorkflow{}},
	}

	op.settle(b)
	last := heap(b, "worst-empty")
	after, buffers := map[string]float64{}, map[string]float64{}
	apiBytes := map[string]float64{}
	for _, k := range kinds {
		// One first: the watch that carries it keeps decoding buffers as
		// large as the largest object it carried, once for all.
		create(b, c, 1, func(int) client.Object { return k.make(99) })
		op.settle(b)
		now := heap(b, "worst-first-"+k.name)
		buffers[k.name] = float64(int64(now.alloc) - int64(last.alloc))
		last = now
		n := worstCounts[k.name]
		create(b, c, n, k.make)
		op.settle(b)
		now = heap(b, "worst-"+k.name)
		after[k.name] = float64(int64(now.alloc)-int64(last.alloc)) / float64(n)
		last = now
		apiBytes[k.name] = float64(len(mustJSON(b, k.make(0))))
	}

	// The same objects in a cache as the operator had it: whole but for
	// managed fields.
	whole, err := cache.New(cfg, cache.Options{Scheme: app.Scheme(), DefaultTransform: cache.TransformStripManagedFields(),
		DefaultNamespaces: map[string]cache.Config{ns: {}}})
	if err != nil {
		b.Fatal(err)
	}
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() { _ = whole.Start(cctx) }()
	before := map[string]float64{}
	for _, k := range kinds {
		if _, err := whole.GetInformer(ctx, k.obj); err != nil {
			b.Fatal(err)
		}
		if !whole.WaitForCacheSync(ctx) {
			b.Fatal("the whole cache did not sync")
		}
		if err := whole.List(ctx, k.list, client.UnsafeDisableDeepCopy); err != nil {
			b.Fatal(err)
		}
		now := heap(b, "whole-"+k.name)
		before[k.name] = float64(int64(now.alloc)-int64(last.alloc)) / float64(worstCounts[k.name])
		last = now
	}

	fmt.Printf("heap per cached object at the worst-case size, live after GC (the first object's growth, the watch's buffers, apart):\n")
	fmt.Printf("  %-14s %8s %6s %12s %12s %14s\n", "kind", "API", "count", "before", "after", "first (after)")
	for _, k := range kinds {
		fmt.Printf("  %-14s %4.0f KiB %6d %8.1f KiB %8.1f KiB %10.1f MiB\n", k.name, apiBytes[k.name]/1024, worstCounts[k.name],
			before[k.name]/1024, after[k.name]/1024, buffers[k.name]/(1<<20))
		b.ReportMetric(before[k.name]/1024, "KiB-before/"+strings.TrimSuffix(strings.ToLower(k.name), "s"))
		b.ReportMetric(after[k.name]/1024, "KiB-after/"+strings.TrimSuffix(strings.ToLower(k.name), "s"))
	}
}

func mustJSON(b *testing.B, o client.Object) []byte {
	b.Helper()
	data, err := json.Marshal(o)
	if err != nil {
		b.Fatal(err)
	}
	return data
}

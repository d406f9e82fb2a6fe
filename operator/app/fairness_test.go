package app_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	. "github.com/kubectl-sched/kubectl-sched/api/builders"
	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
	"github.com/kubectl-sched/kubectl-sched/hack/testenv"
	"github.com/kubectl-sched/kubectl-sched/operator/app"
)

// TestOneTenantCannotTakeAnothersTurn: tenant alice has 150 AgentTasks
// waiting when the operator starts, and tenant bob one, created after
// them. Each tenant creates its own as a namespace user bound to
// kubectl-sched-tenant, in a namespace of tier team. The operator hands
// out bob's task among its first reconciles, not after alice's backlog
// (first come, first served does: bob's namespace sorts last, the cache
// lists tasks in that order, and alice's Jobs appearing bring her tasks
// back ahead of what the cache listed; 53 to 118 of her Jobs came first
// with --namespace-fairness=false), and still gives every one of alice's
// tasks its Job.
func TestOneTenantCannotTakeAnothersTurn(t *testing.T) {
	env, err := testenv.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Stop() })
	ctx := t.Context()
	c := env.Client

	suffix := time.Now().UnixNano() % 100000
	busy, quiet := fmt.Sprintf("a-busy-%d", suffix), fmt.Sprintf("z-quiet-%d", suffix)
	for _, ns := range []string{busy, quiet} {
		if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
			t.Fatal(err)
		}
		testenv.MakeTier(t, c, ns, "team", "", "")
	}
	createTasks := authorizationv1.ResourceAttributes{Verb: "create", Group: schedv1.GroupVersion.Group, Resource: "agenttasks"}
	alice, err := testenv.BindUser(ctx, c, env.Config, busy, "alice", "kubectl-sched-tenant", createTasks)
	if err != nil {
		t.Fatal(err)
	}
	bob, err := testenv.BindUser(ctx, c, env.Config, quiet, "bob", "kubectl-sched-tenant", createTasks)
	if err != nil {
		t.Fatal(err)
	}
	const backlog = 150
	err = testenv.ForEach(10, backlog, func(i int) error {
		return alice.Create(ctx, MakeAgentTask(fmt.Sprintf("t%03d", i), busy).Image("busybox").Obj())
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := bob.Create(ctx, MakeAgentTask("mine", quiet).Image("busybox").Obj()); err != nil {
		t.Fatal(err)
	}

	// One watch across both namespaces: the order the Jobs were created in.
	var mu sync.Mutex
	var order []string
	watchCtx, stopWatch := context.WithCancel(ctx)
	defer stopWatch()
	wc, err := client.NewWithWatch(env.Config, client.Options{Scheme: app.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	w, err := wc.Watch(watchCtx, &batchv1.JobList{})
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		for ev := range w.ResultChan() {
			if job, ok := ev.Object.(*batchv1.Job); ok && ev.Type == watch.Added {
				mu.Lock()
				order = append(order, job.Namespace)
				mu.Unlock()
			}
		}
	}()

	stop, _, err := testenv.StartOperator(ctx, env.Config, func(o *app.Options) { o.Controllers = []string{"agenttask"} })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := stop(); err != nil {
			t.Errorf("manager stopped with an error: %v", err)
		}
	})

	testenv.EventuallyWithin(t, testenv.ShortTimeout, "every task to have its Job", func(context.Context) error {
		mu.Lock()
		defer mu.Unlock()
		if len(order) < backlog+1 {
			return fmt.Errorf("%d Jobs of %d", len(order), backlog+1)
		}
		return nil
	})
	mu.Lock()
	defer mu.Unlock()
	before := 0
	for _, ns := range order {
		if ns == quiet {
			break
		}
		before++
	}
	// The operator's ten workers may each have taken one of alice's tasks
	// before bob's came up in turn.
	if before > 12 {
		t.Errorf("%d of alice's Jobs were created before bob's one; want bob's among the first reconciles (at most 12 before it)", before)
	}
}

// TestOneTenantCannotTakeAnothersRequests: with a budget of 5 requests a
// second per kind, alice (a member of a tier namespace) starts a workflow
// whose forEach makes 60 tasks, 50 at a time, so 50 task creates wait for
// the AgentTask budget; then bob's own task needs its status written, an
// AgentTask request too. Bob's write waits its turn with alice's creates,
// one each, not behind all of them: fewer than 25 of alice's tasks appear
// between bob's task and its first status (7 here; first come, first
// served put 54 there: all that still waited when bob's write came, a
// second after his task, as the operator paces a task's first status).
func TestOneTenantCannotTakeAnothersRequests(t *testing.T) {
	env, err := testenv.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Stop() })
	ctx := t.Context()
	c := env.Client
	busy, quiet := testenv.TierNamespace(t, c, "team", "", ""), testenv.TierNamespace(t, c, "team", "", "")
	create := func(resource string) authorizationv1.ResourceAttributes {
		return authorizationv1.ResourceAttributes{Verb: "create", Group: schedv1.GroupVersion.Group, Resource: resource}
	}
	alice, err := testenv.BindUser(ctx, c, env.Config, busy, "alice", "kubectl-sched-tenant", create("workflows"))
	if err != nil {
		t.Fatal(err)
	}
	bob, err := testenv.BindUser(ctx, c, env.Config, quiet, "bob", "kubectl-sched-tenant", create("agenttasks"))
	if err != nil {
		t.Fatal(err)
	}

	// One watch of every AgentTask: the order of alice's creates and bob's
	// task's writes.
	type seen struct {
		ns  string
		typ watch.EventType
	}
	var mu sync.Mutex
	var events []seen
	watchCtx, stopWatch := context.WithCancel(ctx)
	defer stopWatch()
	wc, err := client.NewWithWatch(env.Config, client.Options{Scheme: app.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	w, err := wc.Watch(watchCtx, &schedv1.AgentTaskList{})
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		for ev := range w.ResultChan() {
			if task, ok := ev.Object.(*schedv1.AgentTask); ok {
				mu.Lock()
				events = append(events, seen{task.Namespace, ev.Type})
				mu.Unlock()
			}
		}
	}()

	stop, _, err := testenv.StartOperator(ctx, env.Config, func(o *app.Options) {
		o.Controllers = []string{"agenttask", "workflow"}
		o.Settings.KubeAPIQPS, o.Settings.KubeAPIBurst = 5, 1
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := stop(); err != nil {
			t.Errorf("manager stopped with an error: %v", err)
		}
	})

	const items = 60
	list := make([]string, items)
	for i := range list {
		list[i] = fmt.Sprint(i)
	}
	wf := MakeWorkflow("fan", busy).StepTask("each", schedv1.AgentTaskSpec{Image: "busybox", Args: []string{"${item}"}}).ForEach(list, "", 0).Obj()
	if err := alice.Create(ctx, wf); err != nil {
		t.Fatal(err)
	}
	created := func(ns string) int {
		mu.Lock()
		defer mu.Unlock()
		n := 0
		for _, e := range events {
			if e.ns == ns && e.typ == watch.Added {
				n++
			}
		}
		return n
	}
	testenv.EventuallyWithin(t, testenv.ShortTimeout, "alice's first tasks", func(context.Context) error {
		if created(busy) == 0 {
			return fmt.Errorf("none yet")
		}
		return nil
	})
	if err := bob.Create(ctx, MakeAgentTask("mine", quiet).Image("busybox").Obj()); err != nil {
		t.Fatal(err)
	}
	testenv.EventuallyWithin(t, testenv.ShortTimeout, "bob's task to have a status, and alice's every task", func(context.Context) error {
		mu.Lock()
		written := slices.ContainsFunc(events, func(e seen) bool { return e.ns == quiet && e.typ == watch.Modified })
		mu.Unlock()
		if n := created(busy); !written || n < items {
			return fmt.Errorf("bob's status written %v; alice's tasks %d of %d", written, n, items)
		}
		return nil
	})
	mu.Lock()
	defer mu.Unlock()
	between, counting := 0, false
	for _, e := range events {
		if e.ns == quiet && e.typ == watch.Modified {
			break
		}
		if e.ns == quiet && e.typ == watch.Added {
			counting = true
		} else if counting && e.ns == busy && e.typ == watch.Added {
			between++
		}
	}
	t.Logf("%d of alice's tasks came between bob's task and its first status", between)
	if between >= 25 {
		t.Errorf("%d of alice's %d tasks were created between bob's task and its first status write; want fewer than 25 (bob's write in turn with alice's creates)", between, items)
	}
}

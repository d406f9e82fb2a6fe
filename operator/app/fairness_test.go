package app_test

import (
	"context"
	"fmt"
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

	waitFor(t, "every task to have its Job", func() error {
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

package app_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	authorizationv1 "k8s.io/api/authorization/v1"
	batchv1 "k8s.io/api/batch/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	. "github.com/kubectl-sched/kubectl-sched/api/builders"
	"github.com/kubectl-sched/kubectl-sched/api/names"
	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
	"github.com/kubectl-sched/kubectl-sched/hack/testenv"
	"github.com/kubectl-sched/kubectl-sched/operator/app"
	"github.com/kubectl-sched/kubectl-sched/operator/cachetrim"
	"github.com/kubectl-sched/kubectl-sched/operator/taskjob"
)

// maxCachedBytes is the most the operator's cache may hold of one of a
// tenant's AgentTasks, Workflows or CronWorkflows (README, Sizing the
// operator): their metadata, the status the operator writes, and what is
// left of their spec (agenttask.TrimTask, workflow.TrimWorkflow,
// cronworkflow.TrimCron).
const maxCachedBytes = 64 << 10

// TestTenantsLargestObjectsAreCachedSmall: mallory, a member of a
// free-tier namespace, creates the largest AgentTask, Workflow and
// CronWorkflow she may (every string a tenant sizes at its bound, with a
// last-applied-configuration annotation of 200 KiB, as kubectl apply
// writes one, and labels of her own), each over 1 MiB in the API server.
// The operator's cache holds each in at most maxCachedBytes. It still
// works from the whole objects, read past the cache: the task's Job runs
// the task's command, args and env, and the workflow's first step task
// has its step's.
func TestTenantsLargestObjectsAreCachedSmall(t *testing.T) {
	env, err := testenv.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Stop() })
	ctx := t.Context()
	// The operator's account (and namespace, where the tiers are).
	cfg, err := testenv.OperatorConfig(ctx, env.Config)
	if err != nil {
		t.Fatal(err)
	}
	if err := testenv.ApplyTiers(ctx, env.Client); err != nil {
		t.Fatal(err)
	}
	ns := testenv.TierNamespace(t, env.Client, "free", "15m", "1h")
	var allowed []authorizationv1.ResourceAttributes
	for _, r := range []string{"agenttasks", "workflows", "cronworkflows"} {
		allowed = append(allowed, authorizationv1.ResourceAttributes{Verb: "create", Group: schedv1.GroupName, Resource: r})
	}
	mallory, err := testenv.BindUser(ctx, env.Client, env.Config, ns, "mallory", "kubectl-sched-tenant", allowed...)
	if err != nil {
		t.Fatal(err)
	}
	spec := LargestTenantTaskSpec()
	bulk := func(o client.Object) client.Object {
		labels := map[string]string{}
		for i := range 16 {
			labels[fmt.Sprintf("mallory.example/l%02d", i)] = strings.Repeat("v", 63)
		}
		o.SetLabels(labels)
		o.SetAnnotations(map[string]string{"kubectl.kubernetes.io/last-applied-configuration": strings.Repeat("{}", 100<<10)})
		return o
	}
	task := MakeAgentTask("largest", ns).Obj()
	task.Spec = spec
	objs := []client.Object{
		bulk(task),
		bulk(MakeWorkflow("largest", ns).StepTask("a", spec).Obj()),
		bulk(MakeCronWorkflow("largest", ns, "0 0 1 1 *").StepTask("a", spec).Obj()),
	}
	for _, o := range objs {
		if err := mallory.Create(ctx, o); err != nil {
			t.Fatalf("%T: %v", o, err)
		}
	}

	opts := app.DefaultOptions()
	if opts.MetricsAddr, err = testenv.FreeAddr(); err != nil {
		t.Fatal(err)
	}
	if opts.ProbeAddr, err = testenv.FreeAddr(); err != nil {
		t.Fatal(err)
	}
	opts.LeaderElectionNamespace, opts.MetricsSecure = testenv.OperatorNamespace, false
	mgr, err := app.NewManager(cfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	mctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- mgr.Start(mctx) }()
	t.Cleanup(func() {
		stop()
		if err := <-done; err != nil && !strings.Contains(err.Error(), "context canceled") {
			t.Errorf("the operator stopped with an error: %v", err)
		}
	})

	for _, o := range objs {
		whole := o.DeepCopyObject().(client.Object)
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(o), whole); err != nil {
			t.Fatal(err)
		}
		cached := o.DeepCopyObject().(client.Object)
		testenv.EventuallyWithin(t, testenv.ShortTimeout, fmt.Sprintf("the cache to hold %T", o), func(context.Context) error {
			return mgr.GetCache().Get(ctx, client.ObjectKeyFromObject(o), cached, client.UnsafeDisableDeepCopy)
		})
		w, c := jsonSize(t, whole), jsonSize(t, cached)
		t.Logf("%T: %d bytes in the API server, %d in the operator's cache", o, w, c)
		if w < 1<<20 || c > maxCachedBytes || !cachetrim.Trimmed(cached) {
			t.Errorf("%T: %d bytes in the API server, %d cached (trimmed %v); want over 1 MiB, at most %d cached and trimmed",
				o, w, c, cachetrim.Trimmed(cached), maxCachedBytes)
		}
	}

	job := &batchv1.Job{}
	testenv.EventuallyWithin(t, testenv.ShortTimeout, "the task's Job", func(context.Context) error {
		err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: names.Job("largest")}, job)
		if err != nil {
			got := &schedv1.AgentTask{}
			_ = env.Client.Get(ctx, client.ObjectKeyFromObject(task), got)
			err = fmt.Errorf("%w; the task is %s: %s", err, got.Status.Phase, got.Status.Message)
		}
		return err
	})
	ctr := job.Spec.Template.Spec.Containers[0]
	if diff := cmp.Diff(spec.Command, ctr.Command); diff != "" {
		t.Errorf("the Job's command (-task +Job):\n%s", diff)
	}
	if diff := cmp.Diff(spec.Args, ctr.Args); diff != "" {
		t.Errorf("the Job's args (-task +Job):\n%s", diff)
	}
	if diff := cmp.Diff(taskjob.EnvVars(spec.Env), ctr.Env); diff != "" {
		t.Errorf("the Job's env (-task +Job):\n%s", diff)
	}
	step := &schedv1.AgentTask{}
	testenv.EventuallyWithin(t, testenv.ShortTimeout, "the workflow's first step task", func(context.Context) error {
		return env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: names.StepTask("largest", 0, "a")}, step)
	})
	if diff := cmp.Diff(spec.Args, step.Spec.Args); diff != "" || len(step.Spec.Env) != len(spec.Env) {
		t.Errorf("the step task: %d env vars, args (-step +task):\n%s", len(step.Spec.Env), diff)
	}
}

func jsonSize(t *testing.T, v any) int {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return len(data)
}

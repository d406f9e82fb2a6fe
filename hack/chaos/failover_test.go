package chaos

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	. "github.com/kubectl-sched/kubectl-sched/api/testing"
	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
	"github.com/kubectl-sched/kubectl-sched/hack/cluster"
	"github.com/kubectl-sched/kubectl-sched/hack/tour"
	"github.com/kubectl-sched/kubectl-sched/operator/app"
)

// TestLeaderFailover runs two operator replicas with leader election, as
// config/manager ships them, kills the leader with SIGKILL while a
// workflow runs, and measures how long until the other replica acts: a
// task created right after the kill gets its Job. The killed leader cannot
// release its Lease, so the standby waits for it to expire: the lease
// duration (15 s by default) bounds the failover, plus up to one retry
// period (2 s). Nothing runs twice across it.
func TestLeaderFailover(t *testing.T) {
	kubectl, err := exec.LookPath("kubectl")
	if err != nil {
		t.Fatalf("this test needs kubectl on PATH: %v", err)
	}
	wd, _ := os.Getwd()
	root := filepath.Dir(filepath.Dir(wd))
	ctx := context.Background()
	dir := t.TempDir()
	c, err := cluster.Start(ctx, cluster.Options{Dir: filepath.Join(dir, "cluster"), Log: os.Stderr})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Stop() })
	replica := func(name string) *tour.Env {
		d := filepath.Join(dir, name)
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		e := &tour.Env{Root: root, Dir: d, BinDir: filepath.Join(dir, "bin"), Kubeconfig: c.Kubeconfig, Kubectl: kubectl, Cluster: c, Log: os.Stderr}
		// CHAOS_LEASE=8s,5s,1s: lease duration, renew deadline, retry period.
		if l := strings.Split(os.Getenv("CHAOS_LEASE"), ","); len(l) == 3 {
			e.OperatorArgs = []string{"--leader-elect-lease-duration=" + l[0], "--leader-elect-renew-deadline=" + l[1], "--leader-elect-retry-period=" + l[2]}
		}
		return e
	}
	a, b := replica("a"), replica("b")
	if err := a.Build(ctx); err != nil {
		t.Fatal(err)
	}
	if out, errOut, code, err := a.KubectlRun(ctx, "sched", "install", "--without-operator"); err != nil || code != 0 {
		t.Fatalf("install: exit %d %v\n%s%s", code, err, out, errOut)
	}
	for _, e := range []*tour.Env{a, b} {
		if err := e.StartOperator(ctx, false); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = e.StopOperator() })
	}
	cfg, err := c.RESTConfig()
	if err != nil {
		t.Fatal(err)
	}
	cl, err := client.New(cfg, client.Options{Scheme: app.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	// Only the leader starts its controllers.
	leads := func(e *tour.Env) bool {
		log, _ := os.ReadFile(filepath.Join(e.Dir, "operator.log"))
		return strings.Contains(string(log), "Starting workers")
	}
	var leader, standby *tour.Env
	if err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		switch {
		case leads(a):
			leader, standby = a, b
		case leads(b):
			leader, standby = b, a
		}
		return leader != nil, nil
	}); err != nil {
		t.Fatal("no replica started its controllers")
	}

	const ns = "default"
	wf := MakeWorkflow("across", ns)
	for i := range 4 {
		var args []string
		if i > 0 {
			args = []string{fmt.Sprintf("${steps.%d.output.v}", i-1)}
		}
		wf.StepTask(fmt.Sprintf("s%d", i), schedv1.AgentTaskSpec{Image: "x", Args: args, PodMetadata: &schedv1.PodMetadata{Annotations: sim(fmt.Sprintf(`{"v":"%d"}`, i), 2)}})
	}
	if err := cl.Create(ctx, wf.Obj()); err != nil {
		t.Fatal(err)
	}
	time.Sleep(3 * time.Second) // mid-way through the first steps
	if err := leader.KillOperator(); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	probe := MakeAgentTask("after-failover", ns).Image("x").Obj()
	probe.Spec.PodMetadata = &schedv1.PodMetadata{Annotations: sim(`{"ok":"1"}`, 0)}
	if err := cl.Create(ctx, probe); err != nil {
		t.Fatal(err)
	}
	if err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		return cl.Get(ctx, client.ObjectKey{Namespace: ns, Name: "after-failover"}, &batchv1.Job{}) == nil, nil
	}); err != nil {
		t.Fatalf("the standby never took over: %v", err)
	}
	failover := time.Since(killed)
	if !leads(standby) {
		t.Errorf("a Job appeared but the standby's log does not show it leading")
	}

	got := &schedv1.Workflow{}
	if err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		err := cl.Get(ctx, client.ObjectKey{Namespace: ns, Name: "across"}, got)
		return err == nil && got.Status.Phase.Finished(), nil
	}); err != nil {
		t.Fatalf("the workflow did not finish: %v", err)
	}
	if got.Status.Phase != schedv1.WorkflowSucceeded || got.Status.Steps[3].Outputs["v"] != "3" {
		t.Errorf("workflow %s: %s; last outputs %v", got.Status.Phase, got.Status.Message, got.Status.Steps[3].Outputs)
	}
	var jobs batchv1.JobList
	if err := cl.List(ctx, &jobs, client.InNamespace(ns), client.MatchingLabels{schedv1.LabelWorkflow: "across"}); err != nil {
		t.Fatal(err)
	}
	if len(jobs.Items) != 4 {
		t.Errorf("%d Jobs for the 4 steps, want 4", len(jobs.Items))
	}
	lease := os.Getenv("CHAOS_LEASE")
	if lease == "" {
		lease = "15s,10s,2s (the defaults)"
	}
	t.Logf("leader killed: the standby created a new task's Job %v later (lease, renew deadline, retry period: %s)", failover.Round(10*time.Millisecond), lease)
}

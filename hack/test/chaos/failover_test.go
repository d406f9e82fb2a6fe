package chaos

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	. "github.com/kubectl-sched/kubectl-sched/api/builders"
	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
	"github.com/kubectl-sched/kubectl-sched/hack/tour"
)

// TestLeaderFailover runs two operator replicas with leader election, as
// config/manager ships them, kills the leader with SIGKILL while a
// workflow runs, and measures how long until the other replica acts: a
// task created right after the kill gets its Job. The killed leader cannot
// release its Lease, so the standby waits for it to expire: the lease
// duration (15 s by default) bounds the failover, plus up to one retry
// period (2 s). Nothing runs twice across it.
func TestLeaderFailover(t *testing.T) {
	longFault(t)
	s := startSim(t)
	// CHAOS_LEASE=8s,5s,1s: lease duration, renew deadline, retry period.
	var args []string
	if l := strings.Split(os.Getenv("CHAOS_LEASE"), ","); len(l) == 3 {
		args = []string{"--leader-elect-lease-duration=" + l[0], "--leader-elect-renew-deadline=" + l[1], "--leader-elect-retry-period=" + l[2]}
	}
	a, b := s.operator(t, "a", args...), s.operator(t, "b", args...)
	cl, ctx := s.client, context.Background()
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

package chaos

import (
	"context"
	"fmt"
	"syscall"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	. "github.com/kubectl-sched/kubectl-sched/api/builders"
	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
)

// TestAPIServerAndEtcdRestarts stops kube-apiserver for 20 s while a
// workflow and tasks run, then restarts etcd under the API server. The
// operator (one replica, no leader election: a leader that cannot renew its
// Lease for longer than the renew deadline stops, by design, and its
// Deployment restarts it) recovers by itself: its watches resume,
// everything finishes once, and its process was never restarted.
func TestAPIServerAndEtcdRestarts(t *testing.T) {
	longFault(t)
	s := startSim(t)
	c := s.cluster
	e := s.operator(t, "op", "--leader-elect=false")
	pid := e.OperatorPID()
	cl, ctx := s.client, context.Background()
	const ns = "default"
	wf := MakeWorkflow("through", ns)
	for i := range 5 {
		var args []string
		if i > 0 {
			args = []string{fmt.Sprintf("${steps.%d.output.v}", i-1)}
		}
		wf.StepTask(fmt.Sprintf("s%d", i), schedv1.AgentTaskSpec{Image: "x", Args: args, PodMetadata: &schedv1.PodMetadata{Annotations: sim(fmt.Sprintf(`{"v":"%d"}`, i), 2)}})
	}
	if err := cl.Create(ctx, wf.Obj()); err != nil {
		t.Fatal(err)
	}
	task := func(name string, seconds int) {
		t.Helper()
		at := MakeAgentTask(name, ns).Image("x").Obj()
		at.Spec.PodMetadata = &schedv1.PodMetadata{Annotations: sim(`{"name":"`+name+`"}`, seconds)}
		if err := cl.Create(ctx, at); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 10 {
		task(fmt.Sprintf("before-%d", i), i%4*2)
	}
	time.Sleep(3 * time.Second)

	start := time.Now()
	if err := c.Restart(ctx, "kube-apiserver", 20*time.Second); err != nil {
		t.Fatalf("restart the API server: %v", err)
	}
	t.Logf("kube-apiserver down 20 s, back and ready after %v", time.Since(start).Round(100*time.Millisecond))
	task("after-apiserver", 0)
	waitTasks(t, cl, ns, 11)

	start = time.Now()
	if err := c.Restart(ctx, "etcd", 5*time.Second); err != nil {
		t.Fatalf("restart etcd: %v", err)
	}
	t.Logf("etcd down 5 s, the API server ready again after %v", time.Since(start).Round(100*time.Millisecond))
	task("after-etcd", 0)
	waitTasks(t, cl, ns, 12)

	got := &schedv1.Workflow{}
	if err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		err := cl.Get(ctx, client.ObjectKey{Namespace: ns, Name: "through"}, got)
		return err == nil && got.Status.Phase.Finished(), nil
	}); err != nil {
		t.Fatalf("the workflow did not finish: %v", err)
	}
	if got.Status.Phase != schedv1.WorkflowSucceeded || got.Status.Steps[4].Outputs["v"] != "4" {
		t.Errorf("workflow %s: %s", got.Status.Phase, got.Status.Message)
	}
	var jobs batchv1.JobList
	if err := cl.List(ctx, &jobs, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	if len(jobs.Items) != 5+12 {
		t.Errorf("%d Jobs, want one per step and task (17)", len(jobs.Items))
	}
	if e.OperatorPID() != pid || syscall.Kill(pid, 0) != nil {
		t.Errorf("the operator process was restarted or died (pid %d, now %d)", pid, e.OperatorPID())
	}
}

// waitTasks waits until n tasks exist in ns and all Succeeded with the
// outputs their pods wrote.
func waitTasks(t *testing.T, cl client.Client, ns string, n int) {
	t.Helper()
	var last string
	err := wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		var list schedv1.AgentTaskList
		if err := cl.List(ctx, &list, client.InNamespace(ns)); err != nil {
			return false, nil // the last count says more than a list error
		}
		done, pending := 0, []string(nil)
		for _, at := range list.Items {
			if at.Labels[schedv1.LabelWorkflow] != "" {
				continue
			}
			if at.Status.Phase == schedv1.TaskSucceeded && at.Status.Outputs["name"] == at.Name {
				done++
			} else {
				pending = append(pending, at.Name+"="+string(at.Status.Phase))
			}
		}
		last = fmt.Sprintf("%d of %d tasks succeeded with their outputs; not yet: %v", done, n, pending)
		return done == n, nil
	})
	if err != nil {
		t.Fatalf("tasks: %s", last)
	}
}

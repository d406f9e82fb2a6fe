package chaos

import (
	"context"
	"syscall"
	"testing"
	"time"

	"github.com/kubectl-sched/kubectl-sched/operator/crashpoint"
)

// TestKillsBetweenWrites kills the operator exactly where a random SIGKILL
// lands only by luck: after it created a Job and before the task's status
// records it, and after it created a step's AgentTask and before the
// Workflow's status records it. The operator sends itself SIGKILL there
// (operator/crashpoint); the next one must neither create a second Job or
// step task nor lose an output.
func TestKillsBetweenWrites(t *testing.T) {
	const workflows, steps, tasks = 2, 5, 6
	s := startSim(t)
	e := s.env(t, "op", []string{"--leader-elect=false"})
	t.Cleanup(func() { _ = e.StopOperator() })
	cl, ctx := s.client, context.Background()
	const ns = "default"
	createLoad(t, cl, ns, workflows, steps, tasks)

	// Each point twice: on its first hit, and on a later one while other
	// objects are half done. Enough steps remain for each: 10 step tasks
	// and 16 Jobs, created a few at a time.
	for _, point := range []string{crashpoint.JobCreated + ":1", crashpoint.StepTasksCreated + ":1", crashpoint.StepTasksCreated + ":2", crashpoint.JobCreated + ":2"} {
		e.OperatorEnv = []string{crashpoint.EnvVar + "=" + point}
		if err := e.StartOperator(ctx, false); err != nil {
			t.Fatalf("start with crash point %s: %v", point, err)
		}
		st, err := e.WaitOperatorExit(2 * time.Minute)
		if err != nil {
			t.Fatalf("crash point %s was not reached: %v", point, err)
		}
		ws, ok := st.Sys().(syscall.WaitStatus)
		if !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
			t.Fatalf("crash point %s: the operator ended with %v, want SIGKILL", point, st)
		}
		t.Logf("killed at %s", point)
	}
	e.OperatorEnv = nil
	if err := e.StartOperator(ctx, false); err != nil {
		t.Fatal(err)
	}
	checkRanOnce(t, cl, ns, workflows, steps, tasks)
	t.Logf("4 aimed kills: %d workflows of %d steps and %d tasks finished, each step and task once", workflows, steps, tasks)
}

package chaos

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	. "github.com/kubectl-sched/kubectl-sched/api/builders"
	"github.com/kubectl-sched/kubectl-sched/api/names"
	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
	"github.com/kubectl-sched/kubectl-sched/hack/cluster"
)

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

// sim runs a pod that exits 0 after runSeconds with msg as its
// termination message.
func sim(msg string, runSeconds int) map[string]string {
	return map[string]string{
		cluster.AnnotationExitCode:           "0",
		cluster.AnnotationTerminationMessage: msg,
		cluster.AnnotationRunSeconds:         strconv.Itoa(runSeconds),
	}
}

// TestKillLoop kills the operator process with SIGKILL at random moments
// while workflows pass outputs from step to step and tasks run, restarting
// it each time. Afterwards every workflow and task has finished, no step
// ran twice (one AgentTask, one Job and one pod each), every output is what
// its pod wrote, and no pod is left on the outputs finalizer.
func TestKillLoop(t *testing.T) {
	kills := envInt("CHAOS_KILLS", 6)
	scale := envInt("CHAOS_SCALE", 1)
	workflows, steps, tasks := 2*scale, envInt("CHAOS_STEPS", 5), 20*scale
	s := startSim(t)
	// Without leader election a restarted operator starts at once; the
	// lease's own failover is another test's subject.
	e := s.operator(t, "op", "--leader-elect=false")
	cl, ctx := s.client, context.Background()
	const ns = "default"

	createLoad(t, cl, ns, workflows, steps, tasks)

	// The kill loop.
	r := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 1))
	for k := range kills {
		time.Sleep(time.Duration(200+r.IntN(1300)) * time.Millisecond)
		if err := e.KillOperator(); err != nil {
			t.Fatalf("kill %d: %v", k, err)
		}
		if err := e.StartOperator(ctx, false); err != nil {
			t.Fatalf("restart %d: %v", k, err)
		}
	}

	checkRanOnce(t, cl, ns, workflows, steps, tasks)
	t.Logf("%d kills: %d workflows of %d steps and %d tasks finished, each step and task once", kills, workflows, steps, tasks)
}

// createLoad creates workflows chain-0.. of steps steps, each passing its
// output to the next, and tasks task-0.., all in ns.
func createLoad(t *testing.T, cl client.Client, ns string, workflows, steps, tasks int) {
	t.Helper()
	ctx := context.Background()
	// Workflows whose steps each pass their output on.
	for w := range workflows {
		wf := MakeWorkflow(fmt.Sprintf("chain-%d", w), ns)
		for i := range steps {
			var args []string
			if i > 0 {
				args = []string{fmt.Sprintf("${steps.%d.output.v}", i-1)}
			}
			wf.StepTask(fmt.Sprintf("s%d", i), schedv1.AgentTaskSpec{Image: "x", Args: args,
				PodMetadata: &schedv1.PodMetadata{Annotations: sim(fmt.Sprintf(`{"v":"w%d-s%d \"$${x}\" ✓"}`, w, i), 1)}})
		}
		if err := cl.Create(ctx, wf.Obj()); err != nil {
			t.Fatal(err)
		}
	}
	for i := range tasks {
		at := MakeAgentTask(fmt.Sprintf("task-%d", i), ns).Image("x").Obj()
		at.Spec.PodMetadata = &schedv1.PodMetadata{Annotations: sim(fmt.Sprintf(`{"n":"%d"}`, i), i%3)}
		if err := cl.Create(ctx, at); err != nil {
			t.Fatal(err)
		}
	}
}

// checkRanOnce waits for the load of createLoad to finish, then checks that
// every step and task ran once (one AgentTask, one Job and one pod each),
// every output is what its pod wrote, and no pod waits on the outputs
// finalizer.
func checkRanOnce(t *testing.T, cl client.Client, ns string, workflows, steps, tasks int) {
	t.Helper()
	ctx := context.Background()
	// Everything finishes.
	err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, 4*time.Minute, true, func(ctx context.Context) (bool, error) {
		var wfs schedv1.WorkflowList
		var ats schedv1.AgentTaskList
		if err := cl.List(ctx, &wfs, client.InNamespace(ns)); err != nil {
			return false, nil
		}
		if err := cl.List(ctx, &ats, client.InNamespace(ns)); err != nil {
			return false, nil
		}
		for _, wf := range wfs.Items {
			if !wf.Status.Phase.Finished() {
				return false, nil
			}
		}
		for _, at := range ats.Items {
			if !at.Status.Phase.Finished() {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		t.Fatalf("not everything finished: %v", err)
	}

	var jobs batchv1.JobList
	var pods corev1.PodList
	if err := cl.List(ctx, &jobs, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	if err := cl.List(ctx, &pods, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	jobsOf, podsOf := map[string]int{}, map[string]int{}
	for _, j := range jobs.Items {
		jobsOf[j.Labels[schedv1.LabelAgentTask]]++
	}
	for _, p := range pods.Items {
		podsOf[p.Labels[schedv1.LabelAgentTask]]++
	}
	once := func(task string) {
		t.Helper()
		if jobsOf[task] != 1 || podsOf[task] != 1 {
			t.Errorf("task %s ran %d Jobs and %d pods, want one of each", task, jobsOf[task], podsOf[task])
		}
	}

	for w := range workflows {
		wf := &schedv1.Workflow{}
		if err := cl.Get(ctx, client.ObjectKey{Namespace: ns, Name: fmt.Sprintf("chain-%d", w)}, wf); err != nil {
			t.Fatal(err)
		}
		if wf.Status.Phase != schedv1.WorkflowSucceeded {
			t.Errorf("workflow %s: %s %s", wf.Name, wf.Status.Phase, wf.Status.Message)
			continue
		}
		var owned schedv1.AgentTaskList
		if err := cl.List(ctx, &owned, client.InNamespace(ns), client.MatchingLabels{schedv1.LabelWorkflow: wf.Name}); err != nil {
			t.Fatal(err)
		}
		if len(owned.Items) != steps {
			t.Errorf("workflow %s has %d step tasks, want %d", wf.Name, len(owned.Items), steps)
		}
		for i, s := range wf.Status.Steps {
			want := fmt.Sprintf(`w%d-s%d "$${x}" ✓`, w, i)
			if s.Outputs["v"] != want {
				t.Errorf("%s step %d output %q, want %q", wf.Name, i, s.Outputs["v"], want)
			}
			task := names.StepTask(wf.Name, i, s.Name)
			once(task)
			if i == 0 {
				continue
			}
			at := &schedv1.AgentTask{}
			if err := cl.Get(ctx, client.ObjectKey{Namespace: ns, Name: task}, at); err != nil {
				t.Fatal(err)
			}
			if prev := fmt.Sprintf(`w%d-s%d "$${x}" ✓`, w, i-1); len(at.Spec.Args) != 1 || at.Spec.Args[0] != prev {
				t.Errorf("%s got args %q, want the previous step's output %q", task, at.Spec.Args, prev)
			}
		}
	}
	for i := range tasks {
		at := &schedv1.AgentTask{}
		if err := cl.Get(ctx, client.ObjectKey{Namespace: ns, Name: fmt.Sprintf("task-%d", i)}, at); err != nil {
			t.Fatal(err)
		}
		if at.Status.Phase != schedv1.TaskSucceeded || at.Status.Outputs["n"] != strconv.Itoa(i) || at.Status.Attempts != 1 {
			t.Errorf("task %s: phase %s outputs %v attempts %d", at.Name, at.Status.Phase, at.Status.Outputs, at.Status.Attempts)
		}
		once(at.Name)
	}

	// No pod waits on the outputs finalizer once its task recorded them.
	err = wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		var pods corev1.PodList
		if err := cl.List(ctx, &pods, client.InNamespace(ns)); err != nil {
			return false, nil
		}
		for _, p := range pods.Items {
			for _, f := range p.Finalizers {
				if f == schedv1.FinalizerOutputs {
					return false, nil
				}
			}
		}
		return true, nil
	})
	if err != nil {
		t.Errorf("pods still hold the outputs finalizer")
	}
}

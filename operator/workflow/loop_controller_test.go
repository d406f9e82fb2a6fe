package workflow_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	authorizationv1 "k8s.io/api/authorization/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	. "github.com/kubectl-sched/kubectl-sched/api/builders"
	"github.com/kubectl-sched/kubectl-sched/api/names"
	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
	"github.com/kubectl-sched/kubectl-sched/hack/cluster"
	"github.com/kubectl-sched/kubectl-sched/hack/testenv"
)

// itemStep is a step whose simulated pod, per item, exits with the code
// and writes the message that its env holds after substitution, so that
// each item can end its own way (hack/cluster: EnvExitCode).
func itemStep(code, msg string, runSeconds int, args ...string) schedv1.AgentTaskSpec {
	s := step("deployer:1", 0, "", runSeconds, args...)
	s.Env = []schedv1.EnvVar{{Name: cluster.EnvExitCode, Value: code}, {Name: cluster.EnvTerminationMessage, Value: msg}}
	return s
}

// TestForEachOnTheSimulatedCluster: a namespace member runs a loop over
// the list an earlier step wrote, two items at a time; each item runs as
// an AgentTask and a Job of its own, and a later step gets the items'
// outputs gathered in item order. A second loop, with an item that fails,
// starts no more items and fails naming it.
func TestForEachOnTheSimulatedCluster(t *testing.T) {
	t.Parallel()
	ns := namespace(t)
	alice, err := testenv.BindUser(t.Context(), sim.Client, sim.Config, ns, "alice", "kubectl-sched-edit",
		authorizationv1.ResourceAttributes{Verb: "create", Group: schedv1.GroupVersion.Group, Resource: "workflows"})
	if err != nil {
		t.Fatal(err)
	}
	regions := []string{"eu", "us", "ap", "sa", "af", "me"}
	list, _ := json.Marshal(regions)
	plan, _ := json.Marshal(map[string]string{"regions": string(list)})

	// The most items running at once, from one watch on the API server.
	ctx, cancel := context.WithCancel(t.Context())
	var mu sync.Mutex
	running, most := map[string]bool{}, 0
	wait, err := testenv.WatchEach(ctx, sim.Config, ns, []client.ObjectList{&schedv1.AgentTaskList{}}, func(ev watch.Event) {
		at, ok := ev.Object.(*schedv1.AgentTask)
		if !ok || at.Labels[schedv1.LabelWorkflowItem] == "" || !strings.HasPrefix(at.Name, "rollout-") {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		running[at.Name] = !at.Status.Phase.Finished() && ev.Type != watch.Deleted
		n := 0
		for _, r := range running {
			if r {
				n++
			}
		}
		most = max(most, n)
	})
	if err != nil {
		t.Fatal(err)
	}

	wf := MakeWorkflow("rollout", ns).
		StepTask("plan", step("planner:1", 0, string(plan), 0)).
		StepTask("deploy", itemStep("0", "url=https://${item}.example.com", 1, "--region=${item}")).ForEach(nil, "${steps.plan.output.regions}", 2).
		StepTask("report", step("busybox", 0, "", 0, "${steps.deploy.output.url}")).Obj()
	if err := alice.Create(t.Context(), wf); err != nil {
		t.Fatal(err)
	}
	got := waitWorkflow(t, ns, "rollout", "finished", finished)
	cancel()
	wait()
	if got.Status.Phase != schedv1.WorkflowSucceeded {
		t.Fatalf("workflow %s: %s", got.Status.Phase, got.Status.Message)
	}
	deploy := got.Status.Steps[1]
	want := `["https://eu.example.com","https://us.example.com","https://ap.example.com","https://sa.example.com","https://af.example.com","https://me.example.com"]`
	if deploy.Outputs["url"] != want {
		t.Errorf("gathered url %q, want %q", deploy.Outputs["url"], want)
	}
	if deploy.ForEach == nil || deploy.ForEach.Total != 6 || deploy.ForEach.Succeeded != 6 || len(deploy.ForEach.Items) != 6 {
		t.Errorf("deploy's forEach status %+v", deploy.ForEach)
	}
	if diff := cmp.Diff([]string{want}, getTask(t, ns, names.StepTask("rollout", 2, "report")).Spec.Args); diff != "" {
		t.Errorf("report's args (-want +got):\n%s", diff)
	}
	mu.Lock()
	if most < 1 || most > 2 {
		t.Errorf("at most %d items ran at once, want 1 or 2 (maxParallel 2)", most)
	}
	mu.Unlock()
	// One AgentTask and one Job per item, each with its item's args.
	var jobs batchv1.JobList
	if err := sim.Client.List(t.Context(), &jobs, client.InNamespace(ns), client.MatchingLabels{schedv1.LabelWorkflow: "rollout", schedv1.LabelWorkflowStep: "1"}); err != nil {
		t.Fatal(err)
	}
	jobsOf := map[string]int{}
	for _, j := range jobs.Items {
		jobsOf[j.Labels[schedv1.LabelWorkflowItem]]++
	}
	for k, region := range regions {
		at := getTask(t, ns, names.ItemTask("rollout", 1, "deploy", k))
		if diff := cmp.Diff([]string{"--region=" + region}, at.Spec.Args); diff != "" {
			t.Errorf("item %d's args (-want +got):\n%s", k, diff)
		}
		if jobsOf[fmt.Sprint(k)] != 1 {
			t.Errorf("item %d ran %d Jobs, want 1", k, jobsOf[fmt.Sprint(k)])
		}
	}
	// Events for the step, not for each item.
	var evs corev1.EventList
	if err := sim.Client.List(t.Context(), &evs, client.InNamespace(ns), client.MatchingFields{"involvedObject.name": "rollout"}); err != nil {
		t.Fatal(err)
	}
	steps := 0
	for _, e := range evs.Items {
		if e.InvolvedObject.Kind == "Workflow" && strings.Contains(e.Message, "(deploy)") {
			steps++
		}
	}
	if steps == 0 || steps > 4 {
		t.Errorf("%d events about step deploy, want one per phase it went through (at most 4)", steps)
	}

	// The third item fails (one at a time: the order is certain): the
	// fourth never starts, and the step fails naming the item.
	failing := MakeWorkflow("rollout-bad", ns).
		StepTask("deploy", itemStep("${item}", "done=1", 1, "${item}")).ForEach([]string{"0", "0", "3", "0", "0"}, "", 1).
		StepTask("report", step("busybox", 0, "", 0, "${steps.deploy.output.url}")).Obj()
	if err := alice.Create(t.Context(), failing); err != nil {
		t.Fatal(err)
	}
	got = waitWorkflow(t, ns, "rollout-bad", "finished", finished)
	deploy = got.Status.Steps[0]
	if got.Status.Phase != schedv1.WorkflowFailed || deploy.Phase != schedv1.StepFailed || !strings.HasPrefix(deploy.Message, `item 2 ("3") failed: exited with code 3`) {
		t.Errorf("workflow %s, deploy %s %q", got.Status.Phase, deploy.Phase, deploy.Message)
	}
	var phases []string
	for _, it := range deploy.ForEach.Items {
		phases = append(phases, fmt.Sprintf("%d=%s", it.Index, it.Phase))
	}
	if diff := cmp.Diff([]string{"0=Succeeded", "1=Succeeded", "2=Failed"}, phases); diff != "" {
		t.Errorf("items (-want +got):\n%s", diff)
	}
	if s := got.Status.Steps[1]; s.Phase != schedv1.StepSkipped {
		t.Errorf("report %s, want Skipped", s.Phase)
	}
}

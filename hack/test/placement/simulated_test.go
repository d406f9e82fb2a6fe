package placement

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubectl-sched/kubectl-sched/api/builders"
	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
	"github.com/kubectl-sched/kubectl-sched/hack/testenv"
	"github.com/kubectl-sched/kubectl-sched/hack/testenv/plugintest"
	"github.com/kubectl-sched/kubectl-sched/plugin/cmd/placement"
)

// exitNoNode is explain's exit code when no node fits, as scripts see it
// (docs/reference/exit-codes.md).
const exitNoNode = 13

var sim *testenv.Sim

// The simulated cluster's six kwok nodes (DefaultNodes: general in three
// zones, highmem, a tainted spot node and a tainted GPU node), kube-scheduler,
// and the operator's task, workflow and SchedExt controllers.
func TestMain(m *testing.M) {
	testenv.Main(m, testenv.MainOptions{Sim: &sim, Controllers: []string{"agenttask", "workflow", "schedext"}})
}

const pollTimeout = 60 * time.Second

// explain runs placement explain with stdin and returns its report.
func explain(t *testing.T, stdin string, args ...string) (placement.Report, plugintest.Result) {
	t.Helper()
	res := plugintest.RunWithInput(stdin, append(append([]string{"placement", "explain"}, args...), "-o", "json", "--kubeconfig", sim.Kubeconfig)...)
	var r placement.Report
	if err := json.Unmarshal([]byte(res.Stdout), &r); err != nil {
		t.Fatalf("placement explain %v: exit %d, %v\nstdout:\n%s\nstderr:\n%s", args, res.Code, err, res.Stdout, res.Stderr)
	}
	return r, res
}

func fits(p placement.PodReport) []string {
	var out []string
	for _, n := range p.Nodes {
		if n.Fits {
			out = append(out, n.Name)
		}
	}
	slices.Sort(out)
	return out
}

// scheduled waits until the scheduler has decided on a pod of the task
// (labelled with the task's Job): bound to a node, or found no node.
func scheduled(t *testing.T, ns, task string) corev1.Pod {
	t.Helper()
	var got corev1.Pod
	err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, pollTimeout, true, func(ctx context.Context) (bool, error) {
		var pods corev1.PodList
		if err := sim.Client.List(ctx, &pods, client.InNamespace(ns), client.MatchingLabels{schedv1.LabelAgentTask: task}); err != nil || len(pods.Items) == 0 {
			return false, nil
		}
		got = pods.Items[0]
		if got.Spec.NodeName != "" {
			return true, nil
		}
		for _, c := range got.Status.Conditions {
			if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable {
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("the scheduler decided nothing on task %s's pod: %v", task, err)
	}
	return got
}

func TestExplainAgreesWithTheScheduler(t *testing.T) {
	ns := testenv.Namespace(t, sim.Client)
	general := []string{"sim-general-a", "sim-general-b", "sim-general-c"}
	cases := []struct {
		name      string
		placement *schedv1.Placement
		wantFit   []string
	}{
		// No placement adds no affinity: every untainted node.
		{name: "anywhere", wantFit: append(slices.Clone(general), "sim-highmem-a")},
		{name: "general", placement: &schedv1.Placement{NodePools: []string{"general"}}, wantFit: general},
		{name: "highmem-or-spot", placement: &schedv1.Placement{NodePools: []string{"highmem", "spot"}, Spot: schedv1.SpotAllowed}, wantFit: []string{"sim-highmem-a", "sim-spot-b"}},
		{name: "spot", placement: &schedv1.Placement{Spot: schedv1.SpotRequired}, wantFit: []string{"sim-spot-b"}},
		{name: "gpu", placement: &schedv1.Placement{WorkloadType: schedv1.WorkloadGPU}, wantFit: []string{"sim-gpu-c"}},
		{name: "nowhere", placement: &schedv1.Placement{NodePools: []string{"batch"}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			task := builders.MakeAgentTask(tc.name, ns).Image("busybox:1.36").Obj()
			task.Spec.Placement = tc.placement
			task.TypeMeta = metav1.TypeMeta{APIVersion: schedv1.GroupVersion.String(), Kind: "AgentTask"}
			manifest, err := json.Marshal(task)
			if err != nil {
				t.Fatal(err)
			}

			// Before: from the file, through the operator's translation.
			before, res := explain(t, string(manifest), "-f", "-", "-n", ns)
			wantCode := 0
			if len(tc.wantFit) == 0 {
				wantCode = exitNoNode
			}
			if res.Code != wantCode || len(before.Pods) != 1 {
				t.Fatalf("before: exit %d (want %d), %d pods\nstderr:\n%s", res.Code, wantCode, len(before.Pods), res.Stderr)
			}
			if got := fits(before.Pods[0]); !slices.Equal(got, tc.wantFit) {
				t.Errorf("before: explain fits %v, want %v", got, tc.wantFit)
			}

			if err := sim.Client.Create(t.Context(), task); err != nil {
				t.Fatal(err)
			}
			pod := scheduled(t, ns, tc.name)
			if len(tc.wantFit) == 0 {
				msg := ""
				for _, c := range pod.Status.Conditions {
					if c.Type == corev1.PodScheduled {
						msg = c.Message
					}
				}
				if pod.Spec.NodeName != "" || !strings.HasPrefix(msg, "0/6 nodes are available") {
					t.Errorf("explain found no node, the scheduler put the pod on %q (%s)", pod.Spec.NodeName, msg)
				}
			} else if !slices.Contains(fits(before.Pods[0]), pod.Spec.NodeName) {
				t.Errorf("the scheduler put the pod on %s, which explain said it may not use: %v", pod.Spec.NodeName, before.Pods[0].Nodes)
			}

			// After: the Job's pod template, and where the pod is.
			after, res := explain(t, "", "at", tc.name, "-n", ns)
			if res.Code != wantCode || len(after.Pods) != 1 {
				t.Fatalf("after: exit %d (want %d)\nstderr:\n%s", res.Code, wantCode, res.Stderr)
			}
			p := after.Pods[0]
			if p.PodSpecFrom != "Job/"+tc.name || !slices.Equal(fits(p), fits(before.Pods[0])) {
				t.Errorf("after: from %s, fits %v; want Job/%s and the same nodes as before (%v)", p.PodSpecFrom, fits(p), tc.name, fits(before.Pods[0]))
			}
			if len(p.Pods) == 0 || p.Pods[0].Node != pod.Spec.NodeName {
				t.Errorf("after: pods %+v, want %s on %q", p.Pods, pod.Name, pod.Spec.NodeName)
			}
			text := plugintest.RunWithInput("", "placement", "explain", "at", tc.name, "-n", ns, "--kubeconfig", sim.Kubeconfig)
			t.Logf("$ kubectl sched placement explain at %s\n%s%s(exit %d)", tc.name, text.Stdout, text.Stderr, text.Code)
		})
	}
}

// A workflow's steps, before it runs and after: each step's pod is where
// explain said it may go.
func TestExplainWorkflowSteps(t *testing.T) {
	ns := testenv.Namespace(t, sim.Client)
	wf := builders.MakeWorkflow("release", ns).
		StepTask("build", schedv1.AgentTaskSpec{Image: "busybox:1.36", Placement: &schedv1.Placement{NodePools: []string{"general"}}}).
		StepTask("train", schedv1.AgentTaskSpec{Image: "busybox:1.36", Placement: &schedv1.Placement{WorkloadType: schedv1.WorkloadGPU}}).
		StepTask("report", schedv1.AgentTaskSpec{Image: "busybox:1.36", Placement: &schedv1.Placement{NodePools: []string{"highmem", "general"}}}).Obj()
	wf.TypeMeta = metav1.TypeMeta{APIVersion: schedv1.GroupVersion.String(), Kind: "Workflow"}
	manifest, err := json.Marshal(wf)
	if err != nil {
		t.Fatal(err)
	}
	before, res := explain(t, string(manifest), "-f", "-", "-n", ns)
	if res.Code != 0 || len(before.Pods) != 3 {
		t.Fatalf("before: exit %d, %d pods\n%s", res.Code, len(before.Pods), res.Stderr)
	}
	if err := sim.Client.Create(t.Context(), wf); err != nil {
		t.Fatal(err)
	}
	err = wait.PollUntilContextTimeout(t.Context(), 200*time.Millisecond, 2*pollTimeout, true, func(ctx context.Context) (bool, error) {
		err := sim.Client.Get(ctx, client.ObjectKeyFromObject(wf), wf)
		return err == nil && wf.Status.Phase.Finished(), nil
	})
	if err != nil || wf.Status.Phase != schedv1.WorkflowSucceeded {
		t.Fatalf("workflow %s: %v (%s: %s)", wf.Name, err, wf.Status.Phase, wf.Status.Message)
	}
	after, res := explain(t, "", "wf", "release", "-n", ns)
	if res.Code != 0 || len(after.Pods) != 3 {
		t.Fatalf("after: exit %d, %d pods\n%s", res.Code, len(after.Pods), res.Stderr)
	}
	for i, p := range after.Pods {
		if len(p.Pods) != 1 || !slices.Contains(fits(before.Pods[i]), p.Pods[0].Node) {
			t.Errorf("step %s: pods %+v; explain said %v", p.Step, p.Pods, fits(before.Pods[i]))
		}
		if !slices.Equal(fits(p), fits(before.Pods[i])) || !strings.HasPrefix(p.PodSpecFrom, "Job/") {
			t.Errorf("step %s after: fits %v from %s, before %v", p.Step, fits(p), p.PodSpecFrom, fits(before.Pods[i]))
		}
	}
	text := plugintest.RunWithInput("", "placement", "explain", "wf", "release", "-n", ns, "--kubeconfig", sim.Kubeconfig)
	t.Logf("$ kubectl sched placement explain wf release\n%s%s(exit %d)", text.Stdout, text.Stderr, text.Code)
}

// schedext status lists the workloads that ask for each scheduler, with
// the nodes labelled with it attached; explain sends a task that asks for
// scx_lavd to those nodes, and the scheduler agrees.
func TestSchedExtStatusListsWorkloads(t *testing.T) {
	ctx := t.Context()
	ns := testenv.Namespace(t, sim.Client)
	scx := builders.MakeSchedExt("lavd").Scheduler("scx_lavd").NodeSelector(schedv1.NodeLabelPool, "general").Obj()
	if err := sim.Client.Create(ctx, scx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sim.Client.Delete(context.Background(), scx) })
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, pollTimeout, true, func(ctx context.Context) (bool, error) {
		err := sim.Client.Get(ctx, client.ObjectKeyFromObject(scx), scx)
		return err == nil && scx.Status.ReadyNodes == 3, nil
	})
	if err != nil {
		t.Fatalf("lavd not attached on the general nodes: %v (%+v)", err, scx.Status)
	}
	// The label the SchedExt controller sets on the nodes where the
	// scheduler is attached (issue 25), set here as it will.
	general := []string{"sim-general-a", "sim-general-b", "sim-general-c"}
	for _, name := range general {
		labelNode(t, name, "scx_lavd")
		t.Cleanup(func() { labelNode(t, name, "") })
	}

	task := builders.MakeAgentTask("bench", ns).Image("busybox:1.36").
		Placement(schedv1.Placement{NodePools: []string{"general"}, CPUScheduler: "scx_lavd"}).Obj()
	wf := builders.MakeWorkflow("nightly", ns).
		StepTask("build", schedv1.AgentTaskSpec{Image: "busybox:1.36", Placement: &schedv1.Placement{NodePools: []string{"general"}, CPUScheduler: "scx_bpfland"}}).Obj()
	for _, o := range []client.Object{task, wf} {
		if err := sim.Client.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}

	res := plugintest.RunWithInput("", "schedext", "status", "--kubeconfig", sim.Kubeconfig)
	t.Logf("$ kubectl sched schedext status\n%s%s(exit %d)", res.Stdout, res.Stderr, res.Code)
	for _, want := range []string{
		"lavd (scx_lavd): attached on 3 of 3 nodes; 1 workload asks for it\n",
		"scx_bpfland: no SchedExt runs it; 1 workload asks for it\n",
		"WORKLOAD",
	} {
		if !strings.Contains(res.Stdout, want) {
			t.Errorf("schedext status lacks %q", want)
		}
	}
	var lines []string
	for _, l := range strings.Split(res.Stdout, "\n") {
		f := strings.Fields(l)
		if len(f) > 0 && (f[0] == "agenttask/bench" || f[0] == "workflow/nightly") {
			// WORKLOAD, NAMESPACE, CPU SCHEDULER, ..., NODES WITH IT
			lines = append(lines, f[0]+" "+f[len(f)-3]+" "+f[len(f)-1])
		}
	}
	want := []string{"workflow/nightly scx_bpfland 0", "agenttask/bench scx_lavd 3"}
	if res.Code != 0 || !slices.Equal(lines, want) {
		t.Errorf("exit %d, workloads %q, want %q", res.Code, lines, want)
	}

	pod := scheduled(t, ns, "bench")
	r, res := explain(t, "", "at", "bench", "-n", ns)
	if res.Code != 0 || !slices.Equal(fits(r.Pods[0]), general) || !slices.Contains(general, pod.Spec.NodeName) {
		t.Errorf("explain at bench: exit %d, fits %v; the pod is on %q", res.Code, fits(r.Pods[0]), pod.Spec.NodeName)
	}
}

// labelNode sets the cpu-scheduler label of node to value, or removes it.
func labelNode(t *testing.T, name, value string) {
	t.Helper()
	var n corev1.Node
	if err := sim.Client.Get(context.Background(), client.ObjectKey{Name: name}, &n); err != nil {
		t.Fatal(err)
	}
	patch := client.MergeFrom(n.DeepCopy())
	if value == "" {
		delete(n.Labels, schedv1.NodeLabelCPUScheduler)
	} else {
		n.Labels[schedv1.NodeLabelCPUScheduler] = value
	}
	if err := sim.Client.Patch(context.Background(), &n, patch); err != nil {
		t.Fatal(err)
	}
}

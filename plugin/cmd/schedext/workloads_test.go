package schedext_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubectl-sched/kubectl-sched/api/builders"
	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
	"github.com/kubectl-sched/kubectl-sched/hack/testenv/plugintest"
	"github.com/kubectl-sched/kubectl-sched/plugin/cmd/schedext"
)

func TestStatusWorkloads(t *testing.T) {
	ctx := context.Background()
	bpfland := func() *schedv1.Placement { return &schedv1.Placement{CPUScheduler: "scx_bpfland"} }
	for _, ns := range []string{"team-a", "team-b"} {
		if err := env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
			t.Fatal(err)
		}
	}
	wf := builders.MakeWorkflow("release", "team-a").
		StepTask("build", schedv1.AgentTaskSpec{Image: "busybox:1.36", Placement: bpfland()}).
		StepTask("lint", schedv1.AgentTaskSpec{Image: "busybox:1.36", Placement: &schedv1.Placement{CPUScheduler: "scx_flash"}}).
		StepTask("test", schedv1.AgentTaskSpec{Image: "busybox:1.36", Placement: bpfland()}).
		StepTask("ship", schedv1.AgentTaskSpec{Image: "busybox:1.36"}).Obj()
	// A workflow's step task is listed as the workflow's step.
	step := builders.MakeAgentTask("release-0-build", "team-a").Image("busybox:1.36").Placement(*bpfland()).Obj()
	step.Labels = map[string]string{schedv1.LabelWorkflow: "release", schedv1.LabelWorkflowStep: "0"}
	objs := []client.Object{
		builders.MakeSchedExt("fast").Scheduler("scx_bpfland").NodeSelector("pool", "fast").Obj(),
		builders.MakeUserDeployment("shop", "team-a").Service("web", "web:1", 80, schedv1.ExposureInternal).Placement(*bpfland()).Obj(),
		builders.MakeUserDeployment("plain", "team-a").Service("web", "web:1", 80, schedv1.ExposureInternal).Obj(),
		builders.MakeAgentTask("bench", "team-b").Image("busybox:1.36").Placement(*bpfland()).Obj(),
		builders.MakeAgentTask("probe", "team-b").Image("busybox:1.36").Placement(schedv1.Placement{CPUScheduler: "scx_cosmos"}).Obj(),
		builders.MakeAgentTask("mine", "default").Image("busybox:1.36").Placement(*bpfland()).Obj(),
		wf, step,
		&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "fast-1", Labels: map[string]string{"pool": "fast", schedv1.NodeLabelCPUScheduler: "scx_bpfland"}}},
		&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "fast-2", Labels: map[string]string{"pool": "fast"}}},
	}
	for _, o := range objs {
		if err := env.Client.Create(ctx, o); err != nil {
			t.Fatalf("create %s: %v", o.GetName(), err)
		}
	}
	t.Cleanup(func() {
		for _, o := range objs {
			_ = env.Client.Delete(ctx, o)
		}
	})

	res := env.Run("schedext", "status", "fast")
	if res.Code != 0 || res.Stderr != "" {
		t.Fatalf("exit %d: %s", res.Code, res.Stderr)
	}
	plugintest.Golden(t, "status-workloads", res.Stdout)

	res = env.Run("schedext", "status", "fast", "-o", "json")
	var reports []schedext.Report
	if err := json.Unmarshal([]byte(res.Stdout), &reports); err != nil || len(reports) != 1 {
		t.Fatalf("exit %d, %v:\n%s", res.Code, err, res.Stdout)
	}
	want := []schedext.Workload{
		{Kind: "agenttask", Namespace: "default", Name: "mine", CPUScheduler: "scx_bpfland"},
		{Kind: "userdeployment", Namespace: "team-a", Name: "shop", CPUScheduler: "scx_bpfland"},
		{Kind: "workflow", Namespace: "team-a", Name: "release", Steps: []string{"build", "test"}, CPUScheduler: "scx_bpfland"},
		{Kind: "agenttask", Namespace: "team-b", Name: "bench", CPUScheduler: "scx_bpfland"},
	}
	if diff := cmp.Diff(want, reports[0].Workloads); diff != "" {
		t.Errorf("workloads (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(ptr.To(1), reports[0].NodesWithScheduler); diff != "" {
		t.Errorf("nodes with scx_bpfland (-want +got):\n%s", diff)
	}

	// Every SchedExt: schedulers no SchedExt runs have their own line;
	// -n keeps one namespace's workloads.
	res = env.Run("schedext", "status", "-n", "team-b")
	for _, want := range []string{
		"fast (scx_bpfland): on no nodes; 1 workload asks for it\n",
		"scx_cosmos: no SchedExt runs it; 1 workload asks for it\n",
		"agenttask/bench   team-b      scx_bpfland     <none>   1\n",
		"agenttask/probe   team-b      scx_cosmos      <none>   0\n",
	} {
		if !strings.Contains(res.Stdout, want) {
			t.Errorf("-n team-b lacks %q:\n%s", want, res.Stdout)
		}
	}
	if res.Code != 0 || strings.Contains(res.Stdout, "team-a") || strings.Contains(res.Stdout, "scx_flash") {
		t.Errorf("-n team-b: exit %d\n%s%s", res.Code, res.Stdout, res.Stderr)
	}

	// A user who may read SchedExts, and list workloads only in the
	// current namespace (default), not nodes: that namespace's workloads,
	// the number of nodes unknown, each said on stderr.
	const user = "default-viewer"
	kc, err := env.UserKubeconfig(user)
	if err != nil {
		t.Fatal(err)
	}
	grantSchedExtRead(t, user)
	grant := []client.Object{
		&rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: user, Namespace: "default"}, Rules: []rbacv1.PolicyRule{{
			APIGroups: []string{schedv1.GroupName}, Resources: []string{"userdeployments", "agenttasks", "workflows", "cronworkflows"}, Verbs: []string{"get", "list"}}}},
		&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: user, Namespace: "default"},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: user},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}}},
	}
	for _, o := range grant {
		if err := env.Client.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	env.WaitAllowed(t, user, authorizationv1.ResourceAttributes{Namespace: "default", Group: schedv1.GroupName, Resource: "workflows", Verb: "list"})
	res = plugintest.RunWithInput("", "schedext", "status", "fast", "--kubeconfig", kc)
	wantErr := `Warning: forbidden: user "default-viewer" may not list userdeployments.sched.kubectl-sched.dev at the cluster scope; showing the userdeployments of namespace default only.
Warning: forbidden: user "default-viewer" may not list agenttasks.sched.kubectl-sched.dev at the cluster scope; showing the agenttasks of namespace default only.
Warning: forbidden: user "default-viewer" may not list workflows.sched.kubectl-sched.dev at the cluster scope; showing the workflows of namespace default only.
Warning: forbidden: user "default-viewer" may not list cronworkflows.sched.kubectl-sched.dev at the cluster scope; showing the cronworkflows of namespace default only.
Warning: forbidden: user "default-viewer" may not list nodes at the cluster scope; how many nodes have each scheduler is unknown.
Warning: forbidden: user "default-viewer" may not list pods in namespace "kubectl-sched-schedulers"; pod states are unknown.
`
	if res.Code != 0 || res.Stderr != wantErr {
		t.Errorf("exit %d, stderr:\n%s\nwant:\n%s", res.Code, res.Stderr, wantErr)
	}
	if !strings.HasSuffix(res.Stdout, "agenttask/mine   default     scx_bpfland     <none>   ?\n") || strings.Contains(res.Stdout, "team-") {
		t.Errorf("stdout:\n%s", res.Stdout)
	}
	// With -n another namespace, nothing falls back: one line says what
	// is not shown.
	res = plugintest.RunWithInput("", "schedext", "status", "fast", "-n", "team-a", "--kubeconfig", kc)
	if res.Code != 0 || !strings.Contains(res.Stderr, `Warning: forbidden: user "default-viewer" may not list workflows.sched.kubectl-sched.dev in namespace "team-a"; workloads of that kind are not shown.`) ||
		strings.Contains(res.Stdout, "WORKLOAD") {
		t.Errorf("-n team-a: exit %d\n%s%s", res.Code, res.Stdout, res.Stderr)
	}
}

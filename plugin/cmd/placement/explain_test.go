package placement_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/kubectl-sched/kubectl-sched/api/builders"
	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
	"github.com/kubectl-sched/kubectl-sched/hack/testenv/plugintest"
	"github.com/kubectl-sched/kubectl-sched/plugin/cmd/placement"
	"github.com/kubectl-sched/kubectl-sched/plugin/internal/cmdutil"
	"github.com/kubectl-sched/kubectl-sched/plugin/internal/fit"
)

var env *plugintest.Env

// The package's nodes: general nodes in two zones (one with scx_lavd
// attached), highmem, spot and GPU nodes tainted as the simulated
// cluster's, a reserved pool, and a general node that is not Ready and
// one that is cordoned.
func TestMain(m *testing.M) {
	plugintest.Main(m, &env)
}

func readyNode(name string, labels map[string]string, taints ...corev1.Taint) *corev1.Node {
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
		Spec:       corev1.NodeSpec{Taints: taints},
		Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue,
			LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.Now(), Reason: "KubeletReady"}}},
	}
}

func taint(key, value string) corev1.Taint {
	return corev1.Taint{Key: key, Value: value, Effect: corev1.TaintEffectNoSchedule}
}

func pool(p, zone string, more ...string) map[string]string {
	l := map[string]string{schedv1.NodeLabelPool: p, schedv1.NodeLabelZone: zone}
	for i := 0; i+1 < len(more); i += 2 {
		l[more[i]] = more[i+1]
	}
	return l
}

var nodesOnce bool

// createNodes creates the package's nodes once.
func createNodes(t *testing.T) {
	t.Helper()
	if nodesOnce {
		return
	}
	nodesOnce = true
	down := readyNode("general-down", pool("general", "zone-a"))
	down.Status.Conditions[0].Status, down.Status.Conditions[0].Reason = corev1.ConditionFalse, "KubeletNotReady"
	cordoned := readyNode("general-cordoned", pool("general", "zone-b"))
	cordoned.Spec.Unschedulable = true
	nodes := []*corev1.Node{
		readyNode("general-a", pool("general", "zone-a", schedv1.NodeLabelCPUScheduler, "scx_lavd")),
		readyNode("general-b", pool("general", "zone-b")),
		readyNode("highmem-a", pool("highmem", "zone-a")),
		readyNode("spot-b", pool("spot", "zone-b", schedv1.NodeLabelSpot, "true"), taint(schedv1.TaintSpot, "true")),
		readyNode("gpu-c", pool("gpu", "zone-c", schedv1.NodeLabelGPU, "true"), taint(schedv1.TaintGPU, "present")),
		readyNode("real", pool("real", "zone-c"), taint(schedv1.TaintPool, "real")),
		down, cordoned,
	}
	for _, n := range nodes {
		taints := n.Spec.Taints
		env.CreateWithStatus(t, n)
		// The API server taints a new node not-ready; the node lifecycle
		// controller, which envtest lacks, lifts that once it is Ready.
		if n.Name != down.Name {
			n.Spec.Taints = taints
			if err := env.Client.Update(context.Background(), n); err != nil {
				t.Fatal(err)
			}
		}
	}
}

func namespace(t *testing.T, name string) string {
	t.Helper()
	if err := env.Client.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}); err != nil {
		t.Fatal(err)
	}
	return name
}

func writeFile(t *testing.T, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "objects.yaml")
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// objects.yaml: an app with a general service and a GPU one, a task for
// spot nodes only, and a workflow whose first step needs scx_lavd and
// whose second names a pool no node is in.
const objectsYAML = `apiVersion: sched.kubectl-sched.dev/v1alpha1
kind: UserDeployment
metadata:
  name: shop
spec:
  placement:
    nodePools: [general]
  services:
    - name: web
      image: web:1
      replicas: 2
---
apiVersion: sched.kubectl-sched.dev/v1alpha1
kind: AgentTask
metadata:
  name: cheap
spec:
  image: busybox:1.36
  placement:
    spot: Required
---
apiVersion: sched.kubectl-sched.dev/v1alpha1
kind: Workflow
metadata:
  name: release
spec:
  steps:
    - name: build
      task:
        image: busybox:1.36
        placement:
          cpuScheduler: scx_lavd
    - name: train
      task:
        image: busybox:1.36
        placement:
          workloadType: GPU
          nodePools: [general]
`

func TestExplainFile(t *testing.T) {
	createNodes(t)
	path := writeFile(t, objectsYAML)
	cases := map[string]struct {
		args     []string
		golden   string
		wantCode int
	}{
		"default": {args: []string{"placement", "explain", "-f", path, "-n", "default"}, golden: "file", wantCode: cmdutil.ExitNoNode},
		"wide":    {args: []string{"placement", "explain", "-f", path, "-o", "wide"}, golden: "file-wide", wantCode: cmdutil.ExitNoNode},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			res := env.Run(tc.args...)
			if res.Code != tc.wantCode {
				t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", res.Code, tc.wantCode, res.Stdout, res.Stderr)
			}
			plugintest.Golden(t, tc.golden, res.Stdout)
			want := "error: wf/release/train has no node it may use: no node fits\nThe reasons are above (-o wide lists every node): change the placement, or ask a cluster admin about the nodes or the quota.\n"
			if res.Stderr != want {
				t.Errorf("stderr:\n%s\nwant:\n%s", res.Stderr, want)
			}
		})
	}

	t.Run("json", func(t *testing.T) {
		res := env.Run("placement", "explain", "-f", path, "-o", "json")
		if res.Code != cmdutil.ExitNoNode {
			t.Fatalf("exit %d: %s", res.Code, res.Stderr)
		}
		var r placement.Report
		if err := json.Unmarshal([]byte(res.Stdout), &r); err != nil {
			t.Fatal(err)
		}
		type brief struct {
			Name    string
			From    string
			Wanted  int
			HasNode bool
			Fit     []string
		}
		var got []brief
		for _, p := range r.Pods {
			b := brief{Name: p.Name, From: p.PodSpecFrom, Wanted: p.Wanted, HasNode: p.HasNode}
			for _, n := range p.Nodes {
				if n.Fits {
					b.Fit = append(b.Fit, n.Name)
				}
			}
			if p.NodesTotal != 8 || p.Namespace != "default" || p.Created {
				t.Errorf("%s: %d nodes, namespace %q, created %v", p.Name, p.NodesTotal, p.Namespace, p.Created)
			}
			got = append(got, b)
		}
		want := []brief{
			{Name: "ud/shop/web", From: "spec.placement", Wanted: 2, HasNode: true, Fit: []string{"general-a", "general-b"}},
			{Name: "at/cheap", From: "spec.placement", Wanted: 1, HasNode: true, Fit: []string{"spot-b"}},
			{Name: "wf/release/build", From: "spec.placement", Wanted: 1, HasNode: true, Fit: []string{"general-a"}},
			{Name: "wf/release/train", From: "spec.placement", Wanted: 1},
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("(-want +got):\n%s", diff)
		}
	})

	t.Run("one that fits exits 0", func(t *testing.T) {
		res := plugintest.RunWithInput(`{"apiVersion":"sched.kubectl-sched.dev/v1alpha1","kind":"AgentTask","metadata":{"name":"t"},"spec":{"image":"x","placement":{"nodePools":["highmem"]}}}`,
			"placement", "explain", "-f", "-", "--kubeconfig", env.Kubeconfig, "--no-headers")
		if res.Code != 0 || res.Stderr != "" {
			t.Fatalf("exit %d, stderr %q", res.Code, res.Stderr)
		}
		if !strings.Contains(res.Stdout, "at/t   1 of 8") || !strings.HasSuffix(res.Stdout, "\nat/t: may use 1 of 8 nodes; not created yet\n") {
			t.Errorf("stdout:\n%s", res.Stdout)
		}
	})
}

// pod is a pod of an object, on node (or Pending and unschedulable with
// message when node is ""), in phase.
func pod(ns, name string, labels map[string]string, node string, phase corev1.PodPhase, message string) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: labels},
		Spec:       corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "c", Image: "busybox:1.36"}}},
		Status:     corev1.PodStatus{Phase: phase},
	}
	if node == "" {
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: "Unschedulable", Message: message}}
	}
	return p
}

func TestExplainApp(t *testing.T) {
	createNodes(t)
	ns := namespace(t, "explain-app")
	ud := builders.MakeUserDeployment("shop", ns).
		Service("web", "web:1", 8080, schedv1.ExposurePublic).Replicas("web", 3).
		Service("api", "api:1", 9090, schedv1.ExposureInternal).
		Placement(schedv1.Placement{NodePools: []string{"general", "highmem"}}).Obj()
	env.CreateWithStatus(t, ud)

	// The operator made web's Deployment before highmem left the
	// placement, and with the scx_lavd requirement its translation adds:
	// explain judges the template, not the spec.
	tmpl := corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{schedv1.LabelUserDeployment: "shop", schedv1.LabelService: "web"}},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: "web", Image: "web:1"}},
			Affinity: &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
				NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{
					{Key: schedv1.NodeLabelPool, Operator: corev1.NodeSelectorOpIn, Values: []string{"general"}},
					{Key: schedv1.NodeLabelCPUScheduler, Operator: corev1.NodeSelectorOpIn, Values: []string{"scx_lavd"}},
				}}}}}},
		},
	}
	dep := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "shop-web", Namespace: ns},
		Spec:       appsv1.DeploymentSpec{Replicas: ptr.To[int32](3), Selector: &metav1.LabelSelector{MatchLabels: tmpl.Labels}, Template: tmpl},
	}
	if err := env.Client.Create(context.Background(), dep); err != nil {
		t.Fatal(err)
	}
	web := map[string]string{schedv1.LabelUserDeployment: "shop", schedv1.LabelService: "web"}
	for _, p := range []*corev1.Pod{
		pod(ns, "shop-web-1", web, "general-a", corev1.PodRunning, ""),
		// Scheduled before the scheduler label went: no longer a fit.
		pod(ns, "shop-web-2", web, "general-b", corev1.PodRunning, ""),
		pod(ns, "shop-web-3", web, "", corev1.PodPending, "0/8 nodes are available: 7 node(s) didn't match Pod's node affinity/selector."),
	} {
		env.CreateWithStatus(t, p)
	}

	res := env.Run("placement", "explain", "ud", "shop", "-n", ns)
	if res.Code != 0 || res.Stderr != "" {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", res.Code, res.Stdout, res.Stderr)
	}
	plugintest.Golden(t, "app", res.Stdout)

	res = env.Run("placement", "explain", "userdeployment/shop", "-n", ns, "-o", "json")
	var r placement.Report
	if err := json.Unmarshal([]byte(res.Stdout), &r); err != nil || res.Code != 0 {
		t.Fatalf("exit %d, %v\n%s", res.Code, err, res.Stdout)
	}
	if len(r.Pods) != 2 || r.Pods[0].PodSpecFrom != "Deployment/shop-web" || r.Pods[1].PodSpecFrom != "spec.placement" {
		t.Fatalf("pods: %+v", r.Pods)
	}
	wantPods := []placement.PodPlacement{
		{Name: "shop-web-1", Node: "general-a", Phase: "Running"},
		{Name: "shop-web-2", Node: "general-b", Phase: "Running", Reasons: []fit.Reason{{Kind: fit.KindCPUScheduler,
			Message: "CPU scheduler scx_lavd not attached", Detail: "node.kubectl-sched.dev/cpu-scheduler in (scx_lavd)"}}},
		{Name: "shop-web-3", Phase: "Pending", Unschedulable: "0/8 nodes are available: 7 node(s) didn't match Pod's node affinity/selector"},
	}
	if diff := cmp.Diff(wantPods, r.Pods[0].Pods); diff != "" {
		t.Errorf("web's pods (-want +got):\n%s", diff)
	}

	// A stateful service's StatefulSet is judged as a Deployment is.
	db := builders.MakeUserDeployment("db", ns).Service("pg", "postgres:17", 5432, schedv1.ExposureInternal).Obj()
	env.CreateWithStatus(t, db)
	dbLabels := map[string]string{schedv1.LabelUserDeployment: "db", schedv1.LabelService: "pg"}
	sts := &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: "db-pg", Namespace: ns},
		Spec: appsv1.StatefulSetSpec{Selector: &metav1.LabelSelector{MatchLabels: dbLabels}, Template: corev1.PodTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: dbLabels},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "pg", Image: "postgres:17"}},
				NodeSelector: map[string]string{schedv1.NodeLabelPool: "highmem"}},
		}},
	}
	if err := env.Client.Create(context.Background(), sts); err != nil {
		t.Fatal(err)
	}
	res = env.Run("placement", "explain", "ud", "db", "-n", ns, "-o", "json")
	r = placement.Report{}
	if err := json.Unmarshal([]byte(res.Stdout), &r); err != nil || res.Code != 0 {
		t.Fatalf("exit %d, %v\n%s\n%s", res.Code, err, res.Stdout, res.Stderr)
	}
	if len(r.Pods) != 1 || r.Pods[0].PodSpecFrom != "StatefulSet/db-pg" || r.Pods[0].NodesFit != 1 {
		t.Errorf("db: %+v", r.Pods)
	}
}

func TestExplainTaskAndWorkflow(t *testing.T) {
	createNodes(t)
	ns := namespace(t, "explain-runs")
	ctx := context.Background()

	// A task that ran on highmem-a, and whose Job still exists.
	task := builders.MakeAgentTask("report", ns).Image("busybox:1.36").Placement(schedv1.Placement{NodePools: []string{"highmem"}}).Obj()
	task.Status = schedv1.AgentTaskStatus{Phase: schedv1.TaskSucceeded, JobName: "report"}
	env.CreateWithStatus(t, task)
	job := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: "report", Namespace: ns,
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(task, schedv1.GroupVersion.WithKind("AgentTask"))}},
		Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyNever,
			Containers:    []corev1.Container{{Name: "task", Image: "busybox:1.36"}},
			Affinity: &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
				NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{
					{Key: schedv1.NodeLabelPool, Operator: corev1.NodeSelectorOpIn, Values: []string{"highmem"}},
				}}}}}},
		}}},
	}
	if err := env.Client.Create(ctx, job); err != nil {
		t.Fatal(err)
	}
	env.CreateWithStatus(t, pod(ns, "report-x1", map[string]string{schedv1.LabelAgentTask: "report"}, "highmem-a", corev1.PodSucceeded, ""))

	res := env.Run("placement", "explain", "at", "report", "-n", ns)
	if res.Code != 0 || res.Stderr != "" {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", res.Code, res.Stdout, res.Stderr)
	}
	plugintest.Golden(t, "task", res.Stdout)

	// A workflow whose first step's task runs and whose second has not
	// started; its GPU step fits nowhere but the GPU node.
	wf := builders.MakeWorkflow("nightly", ns).
		StepTask("build", schedv1.AgentTaskSpec{Image: "busybox:1.36", Placement: &schedv1.Placement{CPUScheduler: "scx_lavd"}}).
		StepTask("train", schedv1.AgentTaskSpec{Image: "busybox:1.36", Placement: &schedv1.Placement{WorkloadType: schedv1.WorkloadGPU}}).Obj()
	wf.Status = schedv1.WorkflowStatus{Phase: schedv1.WorkflowRunning, Steps: []schedv1.StepStatus{
		{Name: "build", TaskName: "nightly-0-build", Phase: schedv1.StepRunning}, {Name: "train", Phase: schedv1.StepPending}}}
	env.CreateWithStatus(t, wf)
	step := builders.MakeAgentTask("nightly-0-build", ns).Spec(func(s *schedv1.AgentTaskSpec) { *s = wf.Spec.Steps[0].Task }).Obj()
	step.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(wf, schedv1.GroupVersion.WithKind("Workflow"))}
	step.Status = schedv1.AgentTaskStatus{Phase: schedv1.TaskRunning}
	env.CreateWithStatus(t, step)
	env.CreateWithStatus(t, pod(ns, "nightly-0-build-a1", map[string]string{schedv1.LabelAgentTask: "nightly-0-build"}, "general-a", corev1.PodRunning, ""))

	res = env.Run("placement", "explain", "wf", "nightly", "-n", ns)
	if res.Code != 0 || res.Stderr != "" {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", res.Code, res.Stdout, res.Stderr)
	}
	plugintest.Golden(t, "workflow", res.Stdout)

	// One step, by name or by index.
	for _, stepArg := range []string{"train", "1"} {
		res = env.Run("placement", "explain", "wf", "nightly", stepArg, "-n", ns, "--no-headers")
		first, _, _ := strings.Cut(res.Stdout, "\n")
		if res.Code != 0 || strings.Join(strings.Fields(first), " ") != "wf/nightly/train 1 of 8 fits gpu-c" || strings.Contains(res.Stdout, "build") {
			t.Errorf("step %s: exit %d\nstdout:\n%s\nstderr:\n%s", stepArg, res.Code, res.Stdout, res.Stderr)
		}
	}
	res = env.Run("placement", "explain", "wf", "nightly", "deploy", "-n", ns)
	if res.Code != cmdutil.ExitNotFound || !strings.Contains(res.Stderr, `workflow nightly has no step "deploy"`) || !strings.Contains(res.Stderr, "Its steps: build, train") {
		t.Errorf("unknown step: exit %d, stderr %q", res.Code, res.Stderr)
	}

	// Completion: kinds, names, then a workflow's steps.
	for args, want := range map[string][]string{
		"":           {"ud", "at", "wf", "cwf"},
		"wf":         {"nightly"},
		"wf nightly": {"build", "train"},
	} {
		line := append([]string{"__complete", "placement", "explain", "-n", ns, "--kubeconfig", env.Kubeconfig}, strings.Fields(args)...)
		res := plugintest.RunWithInput("", append(line, "")...)
		var got []string
		for _, l := range strings.Split(res.Stdout, "\n") {
			if l != "" && !strings.HasPrefix(l, ":") && !strings.HasPrefix(l, "Completion") {
				name, _, _ := strings.Cut(l, "\t")
				got = append(got, name)
			}
		}
		if !slices.Equal(got, want) {
			t.Errorf("complete %q: got %q, want %q", args, got, want)
		}
	}
}

// A CronWorkflow's steps are explained from its workflowSpec, as each run
// makes them: by name, by index, from a file; a suspended one wants no pod.
func TestExplainCronWorkflow(t *testing.T) {
	createNodes(t)
	ns := namespace(t, "explain-cron")
	cw := builders.MakeCronWorkflow("nightly", ns, "0 2 * * *").
		StepTask("build", schedv1.AgentTaskSpec{Image: "busybox:1.36", Placement: &schedv1.Placement{CPUScheduler: "scx_lavd"}}).
		StepTask("train", schedv1.AgentTaskSpec{Image: "busybox:1.36", Placement: &schedv1.Placement{WorkloadType: schedv1.WorkloadGPU, NodePools: []string{"general"}}}).Obj()
	next := metav1.Date(2026, 11, 29, 2, 0, 0, 0, time.UTC)
	cw.Status = schedv1.CronWorkflowStatus{NextScheduleTime: &next, ActiveCount: 1, Active: []schedv1.CronWorkflowRun{{Name: "nightly-29400000"}}}
	env.CreateWithStatus(t, cw)

	res := env.Run("placement", "explain", "cwf", "nightly", "-n", ns)
	if res.Code != cmdutil.ExitNoNode {
		t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", res.Code, cmdutil.ExitNoNode, res.Stdout, res.Stderr)
	}
	plugintest.Golden(t, "cronworkflow", res.Stdout)
	if want := "error: cwf/nightly/train has no node it may use: no node fits\n"; !strings.HasPrefix(res.Stderr, want) {
		t.Errorf("stderr:\n%s\nwant it to start with:\n%s", res.Stderr, want)
	}

	for _, stepArg := range []string{"build", "0"} {
		res = env.Run("placement", "explain", "cronworkflow/nightly", stepArg, "-n", ns, "--no-headers")
		first, _, _ := strings.Cut(res.Stdout, "\n")
		if res.Code != 0 || strings.Join(strings.Fields(first), " ") != "cwf/nightly/build 1 of 8 fits general-a" || strings.Contains(res.Stdout, "train") {
			t.Errorf("step %s: exit %d\nstdout:\n%s\nstderr:\n%s", stepArg, res.Code, res.Stdout, res.Stderr)
		}
	}
	res = env.Run("placement", "explain", "cwf", "nightly", "deploy", "-n", ns)
	if res.Code != cmdutil.ExitNotFound || !strings.Contains(res.Stderr, `cronworkflow nightly has no step "deploy"`) || !strings.Contains(res.Stderr, "Its steps: build, train") {
		t.Errorf("unknown step: exit %d, stderr %q", res.Code, res.Stderr)
	}

	// Suspended: no run starts, so its steps want no pod.
	cw.Spec.Suspend = true
	if err := env.Client.Update(context.Background(), cw); err != nil {
		t.Fatal(err)
	}
	res = env.Run("placement", "explain", "cwf", "nightly", "-n", ns, "-o", "json")
	var r placement.Report
	if err := json.Unmarshal([]byte(res.Stdout), &r); err != nil {
		t.Fatalf("exit %d, %v\nstdout:\n%s\nstderr:\n%s", res.Code, err, res.Stdout, res.Stderr)
	}
	for _, p := range r.Pods {
		if p.Wanted != 0 || p.Created || p.Object != "cronworkflow/nightly" || !strings.Contains(p.Summary, "suspended: no run starts") {
			t.Errorf("%s: wanted %d, created %v, object %q, summary %q", p.Name, p.Wanted, p.Created, p.Object, p.Summary)
		}
	}

	// From a file, before it exists.
	path := writeFile(t, `apiVersion: sched.kubectl-sched.dev/v1alpha1
kind: CronWorkflow
metadata:
  name: weekly
spec:
  schedule: "0 3 * * 0"
  workflowSpec:
    steps:
      - name: report
        task: {image: busybox:1.36, placement: {nodePools: [highmem]}}
`)
	res = env.Run("placement", "explain", "-f", path, "-n", ns, "--no-headers")
	if res.Code != 0 || !strings.HasSuffix(res.Stdout, "\ncwf/weekly/report: may use 1 of 8 nodes; not created yet\n") {
		t.Errorf("-f: exit %d\nstdout:\n%s\nstderr:\n%s", res.Code, res.Stdout, res.Stderr)
	}

	// Completion of a cronworkflow's steps.
	line := []string{"__complete", "placement", "explain", "-n", ns, "--kubeconfig", env.Kubeconfig, "cwf", "nightly", ""}
	res = plugintest.RunWithInput("", line...)
	if !strings.HasPrefix(res.Stdout, "build\ntrain\n:") {
		t.Errorf("complete cwf nightly: %q", res.Stdout)
	}
}

func TestExplainQuota(t *testing.T) {
	createNodes(t)
	ns := namespace(t, "explain-quota")
	q := &corev1.ResourceQuota{
		ObjectMeta: metav1.ObjectMeta{Name: schedv1.TierObjectName, Namespace: ns},
		Spec:       corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{corev1.ResourceRequestsCPU: resource.MustParse("1"), corev1.ResourcePods: resource.MustParse("10")}},
		Status: corev1.ResourceQuotaStatus{
			Hard: corev1.ResourceList{corev1.ResourceRequestsCPU: resource.MustParse("1"), corev1.ResourcePods: resource.MustParse("10")},
			Used: corev1.ResourceList{corev1.ResourceRequestsCPU: resource.MustParse("700m"), corev1.ResourcePods: resource.MustParse("3")},
		},
	}
	env.CreateWithStatus(t, q)
	lr := &corev1.LimitRange{ObjectMeta: metav1.ObjectMeta{Name: schedv1.TierObjectName, Namespace: ns}, Spec: corev1.LimitRangeSpec{Limits: []corev1.LimitRangeItem{{
		Type: corev1.LimitTypeContainer, DefaultRequest: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("200m")},
	}}}}
	if err := env.Client.Create(context.Background(), lr); err != nil {
		t.Fatal(err)
	}
	// One pod of 200m (the LimitRange's default) fits in the 300m left; two do not.
	app := func(replicas int) string {
		return `{"apiVersion":"sched.kubectl-sched.dev/v1alpha1","kind":"UserDeployment","metadata":{"name":"shop"},` +
			`"spec":{"placement":{"nodePools":["general"]},"services":[{"name":"web","image":"web:1","replicas":` + string(rune('0'+replicas)) + `}]}}`
	}
	res := plugintest.RunWithInput(app(1), "placement", "explain", "-f", "-", "-n", ns, "--kubeconfig", env.Kubeconfig)
	if res.Code != 0 {
		t.Errorf("one replica: exit %d\nstdout:\n%s\nstderr:\n%s", res.Code, res.Stdout, res.Stderr)
	}
	res = plugintest.RunWithInput(app(2), "placement", "explain", "-f", "-", "-n", ns, "--kubeconfig", env.Kubeconfig)
	if res.Code != cmdutil.ExitNoNode || res.Stderr != "error: ud/shop/web has no node it may use: a quota refuses its pods\nThe reasons are above (-o wide lists every node): change the placement, or ask a cluster admin about the nodes or the quota.\n" {
		t.Errorf("two replicas: exit %d\nstderr:\n%s", res.Code, res.Stderr)
	}
	plugintest.Golden(t, "quota", res.Stdout)
}

func TestExplainErrors(t *testing.T) {
	createNodes(t)
	nobody, err := env.UserKubeconfig("nobody")
	if err != nil {
		t.Fatal(err)
	}
	bad := writeFile(t, "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\n")
	unknown := writeFile(t, "apiVersion: sched.kubectl-sched.dev/v1alpha1\nkind: AgentTask\nmetadata:\n  name: t\nspec:\n  image: x\n  placment: {}\n")
	other := writeFile(t, "apiVersion: sched.kubectl-sched.dev/v1alpha1\nkind: AgentTask\nmetadata:\n  name: t\n  namespace: a\nspec:\n  image: x\n")
	cases := map[string]plugintest.ErrorCase{
		"nothing named":       {Args: []string{"placement", "explain"}, Code: cmdutil.ExitUsage, Stderr: []string{"placement explain needs an object (ud, at, wf or cwf and a NAME) or -f FILE"}},
		"a kind without pods": {Args: []string{"placement", "explain", "scx", "lavd"}, Code: cmdutil.ExitUsage, Stderr: []string{`takes a UserDeployment (ud), AgentTask (at), Workflow (wf) or CronWorkflow (cwf), got "scx"`}},
		"no name":             {Args: []string{"placement", "explain", "ud"}, Code: cmdutil.ExitUsage, Stderr: []string{"placement explain ud needs the name of the UserDeployment"}},
		"a step of a task":    {Args: []string{"placement", "explain", "at", "t", "s"}, Code: cmdutil.ExitUsage, Stderr: []string{"Only a workflow or a cronworkflow takes a STEP."}},
		"both":                {Args: []string{"placement", "explain", "at", "t", "-f", bad}, Code: cmdutil.ExitUsage, Stderr: []string{"not both"}},
		"bad output":          {Args: []string{"placement", "explain", "at", "t", "-o", "name"}, Code: cmdutil.ExitUsage, Stderr: []string{`--output must be wide, json or yaml, got "name"`}},
		"not found":           {Args: []string{"placement", "explain", "at", "missing"}, Code: cmdutil.ExitNotFound, Stderr: []string{`agenttasks.sched.kubectl-sched.dev "missing" not found`}},
		"no file":             {Args: []string{"placement", "explain", "-f", "/nonexistent.yaml"}, Code: cmdutil.ExitUsage, Stderr: []string{"cannot read /nonexistent.yaml: no such file or directory"}},
		"another kind":        {Args: []string{"placement", "explain", "-f", bad}, Code: cmdutil.ExitInvalid, Stderr: []string{`object 1 is a "Pod" "v1", which placement explain does not take`}},
		"an unknown field":    {Args: []string{"placement", "explain", "-f", unknown}, Code: cmdutil.ExitInvalid, Stderr: []string{`unknown field "spec.placment"`}},
		"another namespace":   {Args: []string{"placement", "explain", "-f", other, "-n", "b"}, Code: cmdutil.ExitUsage, Stderr: []string{`the namespace of AgentTask "t" in ` + other + ` (a) does not match -n b`}},
		"nodes forbidden":     {Args: []string{"placement", "explain", "-f", other}, As: nobody, Code: cmdutil.ExitForbidden, Stderr: []string{`forbidden: user "nobody" may not list nodes at the cluster scope`}},
	}
	env.RunErrorCases(t, cases, nil)
}

// What the cluster wrote (here the scheduler's message on a pod) reaches
// the terminal escaped.
func TestExplainShowsClusterTextEscaped(t *testing.T) {
	createNodes(t)
	ns := namespace(t, "explain-escaped")
	task := builders.MakeAgentTask("odd", ns).Image("busybox:1.36").Obj()
	env.CreateWithStatus(t, task)
	env.CreateWithStatus(t, pod(ns, "odd-1", map[string]string{schedv1.LabelAgentTask: "odd"}, "", corev1.PodPending, "0/8 nodes\x1b[2J\rFAKE\u009b31m"))
	for _, output := range []string{"", "wide", "json"} {
		res := env.Run("placement", "explain", "at", "odd", "-n", ns, "-o", output)
		if res.Code != 0 || strings.ContainsAny(res.Stdout+res.Stderr, "\x1b\r\u009b") || !strings.Contains(res.Stdout, "0/8 nodes^[[2J") && output != "json" {
			t.Errorf("-o %q: exit %d\nstdout:\n%q\nstderr:\n%q", output, res.Code, res.Stdout, res.Stderr)
		}
	}
}

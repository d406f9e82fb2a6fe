package schedext_test

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubectl-sched/kubectl-sched/api/builders"
	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
	"github.com/kubectl-sched/kubectl-sched/hack/testenv/plugintest"
	"github.com/kubectl-sched/kubectl-sched/plugin/cmd/schedext"
	"github.com/kubectl-sched/kubectl-sched/plugin/internal/cmdutil"
)

var env *plugintest.Env

func TestMain(m *testing.M) { plugintest.Main(m, &env) }

func get(t *testing.T, name string) (*schedv1.SchedExt, bool) {
	t.Helper()
	scx := &schedv1.SchedExt{}
	err := env.Client.Get(context.Background(), client.ObjectKey{Name: name}, scx)
	if apierrors.IsNotFound(err) {
		return nil, false
	}
	if err != nil {
		t.Fatal(err)
	}
	return scx, true
}

func TestSetDryRunClientPrintsTheObject(t *testing.T) {
	// No cluster is contacted: no kubeconfig at all.
	res := plugintest.RunWithInput("", "schedext", "set", "lavd", "--sched", "scx_lavd", "--nodes", "node.kubectl-sched.dev/pool=batch,zone=a",
		"--args", `--performance --slice-us '5000'`, "--arg", "--log level=debug", "--dry-run=client", "-o", "yaml")
	if res.Code != 0 {
		t.Fatalf("exit %d: %s", res.Code, res.Stderr)
	}
	plugintest.Golden(t, "set-dry-run", res.Stdout)
}

func TestSet(t *testing.T) {
	res := env.Run("schedext", "set", "mine", "--sched", "registry.example.com/mysched:1.2", "--ops-name", "mysched", "--nodes", "pool=batch", "--args", "-v")
	want := "schedext.sched.kubectl-sched.dev/mine serverside-applied\nSee where it is attached: kubectl sched schedext status mine\n"
	if res.Code != 0 || res.Stdout != want {
		t.Fatalf("exit %d, stdout %q, stderr %q", res.Code, res.Stdout, res.Stderr)
	}
	scx, ok := get(t, "mine")
	if !ok {
		t.Fatal("not created")
	}
	wantSpec := schedv1.SchedExtSpec{
		Scheduler:    schedv1.SchedulerSource{Image: "registry.example.com/mysched:1.2", OpsName: "mysched"},
		NodeSelector: map[string]string{"pool": "batch"},
		Args:         []string{"-v"},
	}
	if diff := cmp.Diff(wantSpec, scx.Spec); diff != "" {
		t.Errorf("spec (-want +got):\n%s", diff)
	}
	if len(scx.ManagedFields) == 0 || scx.ManagedFields[0].Manager != "kubectl-sched" || scx.ManagedFields[0].Operation != metav1.ManagedFieldsOperationApply {
		t.Errorf("want a server-side apply by kubectl-sched, got %+v", scx.ManagedFields)
	}

	// set declares the whole object: what is left out goes.
	res = env.Run("schedext", "set", "mine", "--sched", "scx_rusty", "-o", "name")
	if res.Code != 0 || res.Stdout != "schedext.sched.kubectl-sched.dev/mine\n" {
		t.Fatalf("exit %d, stdout %q, stderr %q", res.Code, res.Stdout, res.Stderr)
	}
	scx, _ = get(t, "mine")
	if diff := cmp.Diff(schedv1.SchedExtSpec{Scheduler: schedv1.SchedulerSource{Name: "scx_rusty"}}, scx.Spec); diff != "" {
		t.Errorf("spec after the second set (-want +got):\n%s", diff)
	}

	// A well-known scheduler from another image than the operator's.
	res = env.Run("schedext", "set", "mine", "--sched", "scx_rusty", "--image", "registry.example.com/scx:v1.0.13")
	if res.Code != 0 {
		t.Fatalf("exit %d, stderr %q", res.Code, res.Stderr)
	}
	scx, _ = get(t, "mine")
	if diff := cmp.Diff(schedv1.SchedulerSource{Name: "scx_rusty", Image: "registry.example.com/scx:v1.0.13"}, scx.Spec.Scheduler); diff != "" {
		t.Errorf("scheduler with --image (-want +got):\n%s", diff)
	}

	// A server dry run is checked but not stored.
	res = env.Run("schedext", "set", "dry", "--sched", "scx_lavd", "--dry-run=server")
	if res.Code != 0 || res.Stdout != "schedext.sched.kubectl-sched.dev/dry serverside-applied (server dry run)\n" {
		t.Errorf("exit %d, stdout %q, stderr %q", res.Code, res.Stdout, res.Stderr)
	}
	if _, ok := get(t, "dry"); ok {
		t.Error("--dry-run=server created the SchedExt")
	}

	res = env.Run("schedext", "unset", "mine")
	if res.Code != 0 || res.Stdout != "schedext.sched.kubectl-sched.dev \"mine\" deleted\n" {
		t.Errorf("unset: exit %d, stdout %q, stderr %q", res.Code, res.Stdout, res.Stderr)
	}
	if _, ok := get(t, "mine"); ok {
		t.Error("unset left the SchedExt")
	}
}

func TestSetAndUnsetErrors(t *testing.T) {
	nobody, err := env.UserKubeconfig("nobody")
	if err != nil {
		t.Fatal(err)
	}
	cases := map[string]plugintest.ErrorCase{
		"no scheduler":         {Args: []string{"schedext", "set", "x"}, Code: cmdutil.ExitUsage, Stderr: []string{"--sched is required"}},
		"bad well-known name":  {Args: []string{"schedext", "set", "x", "--sched", "scx_Lavd"}, Code: cmdutil.ExitUsage, Stderr: []string{`bad scheduler name "scx_Lavd"`}},
		"ops name with a name": {Args: []string{"schedext", "set", "x", "--sched", "scx_lavd", "--ops-name", "lavd"}, Code: cmdutil.ExitUsage, Stderr: []string{"--ops-name only applies to an image"}},
		"image with an image":  {Args: []string{"schedext", "set", "x", "--sched", "r/x:1", "--image", "r/y:1"}, Code: cmdutil.ExitUsage, Stderr: []string{"--image only applies to a well-known --sched"}},
		"bad nodes":            {Args: []string{"schedext", "set", "x", "--sched", "scx_lavd", "--nodes", "pool"}, Code: cmdutil.ExitUsage, Stderr: []string{`bad --nodes "pool"`}},
		"unclosed quote":       {Args: []string{"schedext", "set", "x", "--sched", "scx_lavd", "--args", "'a"}, Code: cmdutil.ExitUsage, Stderr: []string{"unclosed ' quote"}},
		"name too long":        {Args: []string{"schedext", "set", strings.Repeat("a", 51), "--sched", "scx_lavd"}, Code: cmdutil.ExitUsage, Stderr: []string{"bad SchedExt name"}},
		"forbidden":            {Args: []string{"schedext", "set", "x", "--sched", "scx_lavd"}, As: nobody, Code: cmdutil.ExitForbidden, Stderr: []string{`forbidden: user "nobody" may not patch schedexts.sched.kubectl-sched.dev "x" at the cluster scope`}},
		"unset not found":      {Args: []string{"schedext", "unset", "missing"}, Code: cmdutil.ExitNotFound, Stderr: []string{`schedexts.sched.kubectl-sched.dev "missing" not found`}},
		"status not found":     {Args: []string{"schedext", "status", "missing"}, Code: cmdutil.ExitNotFound, Stderr: []string{`schedexts.sched.kubectl-sched.dev "missing" not found`}},
		"status forbidden":     {Args: []string{"schedext", "status"}, As: nobody, Code: cmdutil.ExitForbidden, Stderr: []string{`forbidden: user "nobody" may not list schedexts.sched.kubectl-sched.dev at the cluster scope`}},
	}
	env.RunErrorCases(t, cases, nil)
}

const schedNS = schedv1.DefaultSchedulerNamespace

// schedulerPod is a DaemonSet pod of scx on node; ready is the attach check.
func schedulerPod(scx, name, node string, ready bool, mutate func(*corev1.Pod)) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: schedNS,
			Labels: map[string]string{schedv1.LabelManagedBy: schedv1.ManagedByValue, schedv1.LabelSchedExt: scx}},
		Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "scheduler", Image: "scx"}, {Name: "attach-check", Image: "busybox"}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{
			{Type: corev1.PodReady, Status: corev1.ConditionFalse}}},
	}
	if ready {
		p.Status.Conditions[0].Status = corev1.ConditionTrue
	}
	if mutate != nil {
		mutate(p)
	}
	return p
}

func TestStatus(t *testing.T) {
	if err := env.Client.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: schedNS}}); err != nil {
		t.Fatal(err)
	}
	lavd := builders.MakeSchedExt("lavd").Scheduler("scx_lavd").NodeSelector("pool", "batch").Obj()
	lavd.Status = schedv1.SchedExtStatus{DaemonSetName: "scx-lavd", DesiredNodes: 4, ReadyNodes: 1,
		ConflictingNodes: []string{"node-3"}, UnsupportedNodes: []string{"node-4"},
		Conditions: []metav1.Condition{{Type: schedv1.ConditionReady, Status: metav1.ConditionFalse, Reason: schedv1.ReasonNotAttached,
			Message: "attached on 1 of 4 nodes", LastTransitionTime: metav1.Now()}}}
	rusty := builders.MakeSchedExt("rusty").Scheduler("scx_rusty").Obj()
	rusty.Status = schedv1.SchedExtStatus{DaemonSetName: "scx-rusty", DesiredNodes: 1, ReadyNodes: 1,
		Conditions: []metav1.Condition{{Type: schedv1.ConditionReady, Status: metav1.ConditionTrue, Reason: schedv1.ReasonAttached,
			Message: "attached on all 1 nodes", LastTransitionTime: metav1.Now()}}}
	ds := func(name, scx string) *appsv1.DaemonSet {
		sel := map[string]string{schedv1.LabelSchedExt: scx}
		return &appsv1.DaemonSet{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: schedNS},
			Spec: appsv1.DaemonSetSpec{Selector: &metav1.LabelSelector{MatchLabels: sel},
				Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: sel},
					Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "scheduler", Image: "scx"}}}}},
		}
	}
	crashing := func(p *corev1.Pod) {
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "scheduler", Image: "scx", ImageID: "scx@sha256:0",
			State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}}}}
	}
	unscheduled := func(p *corev1.Pod) {
		// Before binding, the DaemonSet controller's affinity names the node.
		p.Spec.NodeName = ""
		p.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
			NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchFields: []corev1.NodeSelectorRequirement{{Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{"node-5"}}}}}}}}
		p.Status = corev1.PodStatus{Phase: corev1.PodPending}
	}
	env.CreateWithStatus(t, lavd, rusty, ds("scx-lavd", "lavd"), ds("scx-rusty", "rusty"),
		schedulerPod("lavd", "scx-lavd-aaaaa", "node-1", true, nil),
		schedulerPod("lavd", "scx-lavd-bbbbb", "node-2", false, crashing),
		schedulerPod("lavd", "scx-lavd-ccccc", "node-4", false, nil),
		schedulerPod("lavd", "scx-lavd-ddddd", "", false, unscheduled),
		schedulerPod("rusty", "scx-rusty-zzzzz", "node-3", true, nil),
	)

	cases := map[string]struct {
		args   []string
		golden string
	}{
		"every schedext": {args: []string{"schedext", "status"}, golden: "status"},
		"one, wide":      {args: []string{"scx", "status", "lavd", "-o", "wide"}, golden: "status-lavd-wide"},
		"json":           {args: []string{"schedext", "status", "rusty", "-o", "json"}, golden: "status-rusty-json"},
		"no headers":     {args: []string{"schedext", "status", "rusty", "--no-headers"}, golden: "status-rusty-no-headers"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			res := env.Run(tc.args...)
			if res.Code != 0 || res.Stderr != "" {
				t.Fatalf("exit %d: %s", res.Code, res.Stderr)
			}
			plugintest.Golden(t, tc.golden, res.Stdout)
		})
	}

	t.Run("pods unreadable", func(t *testing.T) {
		// A user who may read SchedExts but not the scheduler pods still
		// sees conflicts and unsupported nodes, with a warning.
		reader := "schedext-reader"
		kc, err := env.UserKubeconfig(reader)
		if err != nil {
			t.Fatal(err)
		}
		grantSchedExtRead(t, reader)
		res := plugintest.RunWithInput("", "schedext", "status", "lavd", "--kubeconfig", kc)
		if res.Code != 0 || !strings.Contains(res.Stderr, `Warning: forbidden: user "schedext-reader" may not list pods in namespace "kubectl-sched-schedulers"; pod states are unknown.`) ||
			!strings.Contains(res.Stdout, "node-3   lavd       conflict") || !strings.Contains(res.Stdout, "node-4   lavd       unsupported") {
			t.Errorf("exit %d\nstdout:\n%s\nstderr:\n%s", res.Code, res.Stdout, res.Stderr)
		}
	})
}

// grantSchedExtRead lets user read SchedExts and nothing else.
func grantSchedExtRead(t *testing.T, user string) {
	t.Helper()
	role := &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: user},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{schedv1.GroupName}, Resources: []string{"schedexts"}, Verbs: []string{"get", "list"}}},
	}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: user},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: user},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}},
	}
	for _, o := range []client.Object{role, binding} {
		if err := env.Client.Create(context.Background(), o); err != nil {
			t.Fatal(err)
		}
	}
	env.WaitAllowed(t, user, authorizationv1.ResourceAttributes{Group: schedv1.GroupName, Resource: "schedexts", Verb: "get"})
}

func TestBuildReport(t *testing.T) {
	scx := builders.MakeSchedExt("a").Scheduler("scx_lavd").Obj()
	scx.Status.UnsupportedNodes = []string{"n3"}
	scx.Status.ConflictingNodes = []string{"n4"}
	deleting := schedulerPod("a", "p-old", "n1", true, nil)
	deleting.DeletionTimestamp = &metav1.Time{}
	got := schedext.BuildReport(scx, []corev1.Pod{
		*schedulerPod("a", "p2", "n2", false, nil),
		*schedulerPod("a", "p1", "n1", true, nil),
		*deleting,
		*schedulerPod("a", "p3", "n3", false, nil),
	})
	want := schedext.Report{SchedExt: "a", Scheduler: "scx_lavd", Attached: 1, Pending: 1, Conflict: 1, Unsupported: 1, Nodes: []schedext.NodeStatus{
		{Node: "n1", SchedExt: "a", State: schedext.StateAttached, Pod: "p1"},
		{Node: "n2", SchedExt: "a", State: schedext.StatePending, Pod: "p2", Reason: "not attached yet"},
		{Node: "n3", SchedExt: "a", State: schedext.StateUnsupported, Pod: "p3", Reason: "the kernel has no sched_ext"},
		{Node: "n4", SchedExt: "a", State: schedext.StateConflict, Reason: "an older SchedExt runs its scheduler there"},
	}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

package get_test

import (
	"context"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

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
	"github.com/kubectl-sched/kubectl-sched/hack/testenv/watchtest"
	"github.com/kubectl-sched/kubectl-sched/plugin/internal/cmdutil"
	"github.com/kubectl-sched/kubectl-sched/plugin/internal/kinds"
)

var env *plugintest.Env

func TestMain(m *testing.M) { plugintest.Main(m, &env) }

// ageRE matches an AGE cell at the end of a table line (5s, 3m2s, 10d).
var ageRE = regexp.MustCompile(`(?m) \d+[smhdy](\d+[smhd])?$`)

// normalise replaces ages, the only cells that depend on the clock.
func normalise(s string) string { return ageRE.ReplaceAllString(s, " <age>") }

func namespace(t *testing.T, name string) {
	t.Helper()
	if err := env.Client.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}); err != nil {
		t.Fatal(err)
	}
}

func task(name, ns string, phase schedv1.AgentTaskPhase, exit int32, labels map[string]string) *schedv1.AgentTask {
	at := builders.MakeAgentTask(name, ns).Image("busybox:1.37").Args("echo", "hi").Obj()
	at.Labels = labels
	at.Status = schedv1.AgentTaskStatus{Phase: phase, Attempts: 1, JobName: name, Reason: string(phase)}
	if phase.Finished() {
		at.Status.ExitCode = ptr.To(exit)
	}
	return at
}

var seedOnce sync.Once

// seed creates one object of each kind in get-test, and a task elsewhere,
// once for the tests that read them.
func seed(t *testing.T) {
	t.Helper()
	seedOnce.Do(func() { seedObjects(t) })
}

func seedObjects(t *testing.T) {
	namespace(t, "get-test")
	namespace(t, "get-other")
	ud := builders.MakeUserDeployment("web", "get-test").Service("web", "nginx:1.27", 80, schedv1.ExposurePublic).Obj()
	ud.Status = schedv1.UserDeploymentStatus{Phase: schedv1.UserDeploymentRunning, Ready: "1/1", URLs: []string{"http://web-get-test.apps.example.com/"},
		Conditions: []metav1.Condition{{Type: schedv1.ConditionReady, Status: metav1.ConditionTrue, Reason: schedv1.ReasonAvailable, Message: "all services ready", LastTransitionTime: metav1.Now()}}}
	wf := builders.MakeWorkflow("nightly", "get-test").Step("fetch", "busybox").Step("build", "busybox").Step("ship", "busybox").Obj()
	wf.Status = schedv1.WorkflowStatus{Phase: schedv1.WorkflowRunning, Progress: "1/3", CurrentStep: 1, Reason: schedv1.ReasonRunning, Message: "step 1 (build) is running"}
	scx := builders.MakeSchedExt("lavd").Scheduler("scx_lavd").NodeSelector("pool", "batch").Obj()
	scx.Status = schedv1.SchedExtStatus{ResolvedImage: "ghcr.io/sched-ext/scx_lavd:1.0", DesiredNodes: 3, ReadyNodes: 2, AvailableNodes: 2, UnavailableNodes: 1,
		Conditions: []metav1.Condition{{Type: schedv1.ConditionReady, Status: metav1.ConditionFalse, Reason: schedv1.ReasonNotAttached, Message: "attached on 2 of 3 nodes", LastTransitionTime: metav1.Now()}}}
	cw := builders.MakeCronWorkflow("nightly", "get-test", "0 2 * * *").TimeZone("Europe/Berlin").Step("build", "busybox").Obj()
	cw.Status = schedv1.CronWorkflowStatus{ActiveCount: 1, LastScheduleTime: &metav1.Time{Time: time.Now().Add(-3 * time.Hour)},
		NextScheduleTime: &metav1.Time{Time: time.Date(2031, 11, 27, 1, 0, 0, 0, time.UTC)},
		Conditions:       []metav1.Condition{{Type: schedv1.ConditionReady, Status: metav1.ConditionTrue, Reason: schedv1.ReasonScheduled, Message: "runs start on schedule", LastTransitionTime: metav1.Now()}}}
	env.CreateWithStatus(t,
		ud, wf, cw, scx,
		task("hello", "get-test", schedv1.TaskSucceeded, 0, map[string]string{"team": "a"}),
		task("fail", "get-test", schedv1.TaskFailed, 3, map[string]string{"team": "b"}),
		task("other", "get-other", schedv1.TaskRunning, 0, map[string]string{"team": "a"}),
	)
}

func TestGet(t *testing.T) {
	seed(t)
	cases := map[string]struct {
		args   []string
		golden string
		stderr string
	}{
		"one kind by short name":           {args: []string{"get", "at", "-n", "get-test"}, golden: "tasks"},
		"one kind by plural":               {args: []string{"get", "agenttasks", "-n", "get-test"}, golden: "tasks"},
		"one kind by kind and group":       {args: []string{"get", "AgentTask.sched.kubectl-sched.dev", "-n", "get-test"}, golden: "tasks"},
		"names":                            {args: []string{"get", "at", "hello", "fail", "-n", "get-test"}, golden: "tasks-named"},
		"kind/name":                        {args: []string{"get", "at/hello", "wf/nightly", "-n", "get-test"}, golden: "kind-slash-name"},
		"every kind":                       {args: []string{"get", "-n", "get-test"}, golden: "all"},
		"every kind, no headers":           {args: []string{"get", "all", "-n", "get-test", "--no-headers"}, golden: "all-no-headers"},
		"wide":                             {args: []string{"get", "at", "-n", "get-test", "-o", "wide"}, golden: "tasks-wide"},
		"all namespaces with selector":     {args: []string{"get", "at", "-A", "-l", "team=a"}, golden: "tasks-all-namespaces"},
		"selector":                         {args: []string{"get", "at", "-n", "get-test", "-l", "team=b"}, golden: "tasks-selector"},
		"names only":                       {args: []string{"get", "-n", "get-test", "-o", "name"}, golden: "all-names"},
		"jsonpath of one":                  {args: []string{"get", "at", "hello", "-n", "get-test", "-o", "jsonpath={.status.phase}"}, golden: "jsonpath-one"},
		"jsonpath of a list":               {args: []string{"get", "at", "-n", "get-test", "-o", `jsonpath={range .items[*]}{.metadata.name}={.status.exitCode}{"\n"}{end}`}, golden: "jsonpath-list"},
		"go-template":                      {args: []string{"get", "wf", "nightly", "-n", "get-test", "-o", "go-template={{.status.progress}}"}, golden: "go-template"},
		"schedext is cluster-scoped":       {args: []string{"get", "scx", "-n", "get-test", "-o", "wide"}, golden: "schedexts-wide"},
		"cronworkflows: last and next run": {args: []string{"get", "cwf", "-n", "get-test", "-o", "wide"}, golden: "cronworkflows-wide"},
		"schedext with -A has no NS":       {args: []string{"get", "scx", "-A"}, golden: "schedexts"},
		"userdeployments":                  {args: []string{"get", "ud", "-n", "get-test"}, golden: "userdeployments"},
		"nothing found":                    {args: []string{"get", "wf", "-n", "get-other"}, golden: "empty", stderr: "No resources found in get-other namespace.\n"},
		"nothing found across the board":   {args: []string{"get", "wf", "-A", "-l", "nothing=here"}, golden: "empty", stderr: "No resources found\n"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			res := env.Run(tc.args...)
			if res.Code != 0 {
				t.Fatalf("exit %d: %s", res.Code, res.Stderr)
			}
			if diff := cmp.Diff(tc.stderr, res.Stderr); diff != "" {
				t.Errorf("stderr (-want +got):\n%s", diff)
			}
			plugintest.Golden(t, tc.golden, normalise(res.Stdout))
		})
	}
}

func TestGetJSON(t *testing.T) {
	seed(t)
	// One named object prints as itself, several as a v1 List.
	res := env.Run("get", "at", "hello", "-n", "get-test", "-o", "json")
	if res.Code != 0 || !strings.Contains(res.Stdout, `"kind": "AgentTask"`) || strings.Contains(res.Stdout, `"kind": "List"`) {
		t.Errorf("exit %d, want the AgentTask itself:\n%s%s", res.Code, res.Stdout, res.Stderr)
	}
	res = env.Run("get", "at", "-n", "get-test", "-o", "yaml")
	if res.Code != 0 || !strings.Contains(res.Stdout, "kind: List") || strings.Count(res.Stdout, "kind: AgentTask") != 2 {
		t.Errorf("exit %d, want a List of two AgentTasks:\n%s%s", res.Code, res.Stdout, res.Stderr)
	}
}

func TestGetErrors(t *testing.T) {
	seed(t)
	nobody, err := env.UserKubeconfig("nobody")
	if err != nil {
		t.Fatal(err)
	}
	cases := map[string]struct {
		args     []string
		admin    bool
		wantCode int
		wantErr  []string
	}{
		"unknown kind lists the kinds": {
			args: []string{"get", "pods"}, admin: true, wantCode: cmdutil.ExitUsage,
			wantErr: []string{`unknown kind "pods"`, "userdeployment (ud), agenttask (at), workflow (wf), cronworkflow (cwf), workflowtemplate (wft), clusterworkflowtemplate (cwft), schedext (scx)"},
		},
		"not found": {
			args: []string{"get", "at", "missing", "-n", "get-test"}, admin: true, wantCode: cmdutil.ExitNotFound,
			wantErr: []string{`agenttasks.sched.kubectl-sched.dev "missing" not found`},
		},
		"forbidden names verb and resource": {
			args: []string{"get", "at", "-n", "get-test", "--kubeconfig", nobody}, wantCode: cmdutil.ExitForbidden,
			wantErr: []string{`forbidden: user "nobody" may not list agenttasks.sched.kubectl-sched.dev in namespace "get-test"`, "'kubectl auth can-i list agenttasks.sched.kubectl-sched.dev -n get-test' checks."},
		},
		"unreachable": {
			args: []string{"get", "at", "--server", "https://127.0.0.1:1", "--request-timeout", "2s"}, wantCode: cmdutil.ExitUnreachable,
			wantErr: []string{"cannot reach the cluster"},
		},
		"watch needs one kind": {
			args: []string{"get", "-w"}, admin: true, wantCode: cmdutil.ExitUsage, wantErr: []string{"--watch needs a single kind"},
		},
		"bad output": {
			args: []string{"get", "at", "-o", "xml"}, admin: true, wantCode: cmdutil.ExitUsage, wantErr: []string{"xml"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var res plugintest.Result
			if tc.admin {
				res = env.Run(tc.args...)
			} else {
				res = plugintest.RunWithInput("", tc.args...)
			}
			if res.Code != tc.wantCode {
				t.Errorf("exit %d, want %d; stderr:\n%s", res.Code, tc.wantCode, res.Stderr)
			}
			for _, want := range tc.wantErr {
				if !strings.Contains(res.Stderr, want) {
					t.Errorf("stderr lacks %q:\n%s", want, res.Stderr)
				}
			}
		})
	}
}

func TestGetPartlyNotFound(t *testing.T) {
	seed(t)
	// As kubectl: the objects that exist print, and the exit code says one did not.
	res := env.Run("get", "at", "hello", "missing", "-n", "get-test", "--no-headers")
	if res.Code != cmdutil.ExitNotFound || !strings.HasPrefix(res.Stdout, "hello ") || !strings.Contains(res.Stderr, `"missing" not found`) {
		t.Errorf("exit %d\nstdout:\n%s\nstderr:\n%s", res.Code, res.Stdout, res.Stderr)
	}
	res = env.Run("get", "at", "missing", "-n", "get-test", "--ignore-not-found")
	if res.Code != 0 || res.Stdout != "" {
		t.Errorf("--ignore-not-found: exit %d, stdout %q, stderr %q", res.Code, res.Stdout, res.Stderr)
	}
}

func TestGetEveryKindSkipsForbiddenKinds(t *testing.T) {
	seed(t)
	// A user who may list the namespaced kinds in get-test, but not the
	// cluster-scoped SchedExts.
	user := "get-test-user"
	kc, err := env.UserKubeconfig(user)
	if err != nil {
		t.Fatal(err)
	}
	role := &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Name: user, Namespace: "get-test"},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{schedv1.GroupName}, Resources: []string{"userdeployments", "agenttasks", "workflows", "cronworkflows", "workflowtemplates"}, Verbs: []string{"list"}}},
	}
	binding := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: user, Namespace: "get-test"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: user},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}},
	}
	for _, o := range []client.Object{role, binding} {
		if err := env.Client.Create(context.Background(), o); err != nil {
			t.Fatal(err)
		}
	}
	env.WaitAllowed(t, user, authorizationv1.ResourceAttributes{Namespace: "get-test", Group: schedv1.GroupName, Resource: "workflows", Verb: "list"})
	res := plugintest.RunWithInput("", "get", "-n", "get-test", "-o", "name", "--kubeconfig", kc)
	wantOut := "userdeployment.sched.kubectl-sched.dev/web\nagenttask.sched.kubectl-sched.dev/fail\nagenttask.sched.kubectl-sched.dev/hello\nworkflow.sched.kubectl-sched.dev/nightly\ncronworkflow.sched.kubectl-sched.dev/nightly\n"
	wantErr := "Warning: forbidden: user \"get-test-user\" may not list schedexts.sched.kubectl-sched.dev at the cluster scope; skipped.\n"
	if res.Code != 0 || res.Stdout != wantOut || res.Stderr != wantErr {
		t.Errorf("exit %d\nstdout:\n%s\nstderr:\n%s", res.Code, res.Stdout, res.Stderr)
	}
	// Asked for by name, the kind is an error.
	res = plugintest.RunWithInput("", "get", "scx", "--kubeconfig", kc)
	if res.Code != cmdutil.ExitForbidden {
		t.Errorf("get scx: exit %d, stderr:\n%s", res.Code, res.Stderr)
	}
}

func TestGetWatch(t *testing.T) {
	namespace(t, "get-watch")
	at := task("w1", "get-watch", schedv1.TaskPending, 0, nil)
	env.CreateWithStatus(t, at)

	// --request-timeout bounds the watch should the test go wrong.
	r := watchtest.Start(env.Kubeconfig, "get", "at", "-n", "get-watch", "-w", "--output-watch-events", "--request-timeout", "2m")
	watchtest.Eventually(t, "the initial row", func() bool { return strings.Contains(r.Stdout(), "Pending") })
	// The watch starts from the list's resourceVersion, so this change is
	// seen even if the watch request is not open yet.
	at.Status.Phase = schedv1.TaskRunning
	at.Status.Reason = "Running"
	if err := env.Client.Status().Update(context.Background(), at); err != nil {
		t.Fatal(err)
	}
	watchtest.Eventually(t, "a row for the change", func() bool { return strings.Contains(r.Stdout(), "Running") })
	if code := r.Stop(t); code != 0 {
		t.Fatalf("exit %d: %s", code, r.Stderr())
	}
	plugintest.Golden(t, "watch", normalise(r.Stdout()))
}

func TestCompletion(t *testing.T) {
	seed(t)
	// __complete completes its last argument, so the kubeconfig goes first.
	complete := func(args ...string) plugintest.Result {
		return plugintest.RunWithInput("", append([]string{"__complete", "--kubeconfig", env.Kubeconfig}, args...)...)
	}
	res := complete("get", "")
	for _, want := range []string{"userdeployment\t", "agenttask\t", "workflow\t", "cronworkflow\t", "schedext\t", ":4"} {
		if !strings.Contains(res.Stdout, want) {
			t.Errorf("kind completion lacks %q:\n%s", want, res.Stdout)
		}
	}
	res = complete("get", "at", "-n", "get-test", "h")
	if !strings.Contains(res.Stdout, "hello\n") || strings.Contains(res.Stdout, "fail") {
		t.Errorf("name completion:\n%s", res.Stdout)
	}
	res = complete("get", "scx", "")
	if !strings.Contains(res.Stdout, "lavd\n") {
		t.Errorf("schedext completion:\n%s", res.Stdout)
	}
}

func TestParseArgs(t *testing.T) {
	at, _ := kinds.Lookup("at")
	wf, _ := kinds.Lookup("wf")
	cases := map[string]struct {
		args     []string
		want     []kinds.Target
		wantCode int
	}{
		"kind and names":    {args: []string{"AgentTasks", "a", "b"}, want: []kinds.Target{{Kind: at, Names: []string{"a", "b"}}}},
		"kinds with commas": {args: []string{"at,wf"}, want: []kinds.Target{{Kind: at}, {Kind: wf}}},
		"kind/name":         {args: []string{"at/a", "workflow/b", "at/c"}, want: []kinds.Target{{Kind: at, Names: []string{"a", "c"}}, {Kind: wf, Names: []string{"b"}}}},
		"mixed forms":       {args: []string{"at/a", "b"}, wantCode: cmdutil.ExitUsage},
		"names need a kind": {args: []string{"at,wf", "a"}, wantCode: cmdutil.ExitUsage},
		"unknown":           {args: []string{"deployments"}, wantCode: cmdutil.ExitUsage},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := kinds.ParseArgs(tc.args, true)
			if code := cmdutil.ExitCode(err); code != tc.wantCode {
				t.Fatalf("exit code %d (%v), want %d", code, err, tc.wantCode)
			}
			// Kinds are equal by name (their constructors are funcs).
			byName := cmp.Comparer(func(a, b kinds.Kind) bool { return a.Kind == b.Kind })
			if diff := cmp.Diff(tc.want, got, byName); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

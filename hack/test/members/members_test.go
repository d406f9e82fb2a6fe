package members_test

import (
	"context"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
	"github.com/kubectl-sched/kubectl-sched/hack/cluster"
	"github.com/kubectl-sched/kubectl-sched/hack/testenv"
	"github.com/kubectl-sched/kubectl-sched/hack/testenv/plugintest"
	"github.com/kubectl-sched/kubectl-sched/hack/testenv/watchtest"
)

// Exit codes as scripts see them (docs/reference/exit-codes.md): numbers,
// so a renumbering fails here as it would break a script.
const (
	exitForbidden = 5
	exitNoLogs    = 8
	exitFailed    = 10
)

var (
	sim *testenv.Sim
	// kubeconfig reaches the cluster through the recording proxy as its
	// admin; commands run with --as the member.
	kubeconfig string
)

// A simulated cluster (pods run, the quota controller counts) with the
// shipped tiers, the operator with its generated RBAC, and a proxy in
// front of the API server that records each request the plugin makes.
func TestMain(m *testing.M) {
	testenv.Main(m, testenv.MainOptions{
		Sim: &sim,
		// The quota controller counts the CRDs only from its discovery
		// resync (30s after they are installed), then recounts a quota
		// only on its full resync (5m by default).
		SimOptions: cluster.Options{ExtraControllerManagerArgs: []string{"--resource-quota-sync-period=5s"}},
		AfterOperator: func(ctx context.Context, cfg *rest.Config, c client.Client) error {
			if err := testenv.ApplyTiers(ctx, c); err != nil {
				return err
			}
			var err error
			kubeconfig, err = startProxy(cfg)
			return err
		},
	})
}

// access is one request as RBAC sees it.
type access struct{ verb, group, resource string }

func (a access) String() string {
	if a.group == "" {
		return a.verb + " " + a.resource
	}
	return a.verb + " " + a.resource + "." + a.group
}

// call is one request the plugin made.
type call struct {
	cmd, user, namespace string
	access               access
	code                 int
}

var calls struct {
	sync.Mutex
	cmd string // the command running
	log []call
}

func running(cmd string) {
	calls.Lock()
	calls.cmd = cmd
	calls.Unlock()
}

// startProxy serves the API server on a local port, recording every
// request with the user it impersonates and the answer's status, and
// writes a kubeconfig for it with the admin's token.
func startProxy(cfg *rest.Config) (string, error) {
	target, err := url.Parse(cfg.Host)
	if err != nil {
		return "", err
	}
	tlsConfig, err := rest.TLSConfigFor(cfg)
	if err != nil {
		return "", err
	}
	infos := &request.RequestInfoFactory{APIPrefixes: sets.NewString("api", "apis"), GrouplessAPIPrefixes: sets.NewString("api")}
	proxy := &httputil.ReverseProxy{
		Rewrite:       func(r *httputil.ProxyRequest) { r.SetURL(target) },
		Transport:     &http.Transport{TLSClientConfig: tlsConfig},
		FlushInterval: -1, // watches and followed logs stream
		ModifyResponse: func(resp *http.Response) error {
			info, err := infos.NewRequestInfo(resp.Request)
			if err != nil || !info.IsResourceRequest {
				return nil
			}
			resource := info.Resource
			if info.Subresource != "" {
				resource += "/" + info.Subresource
			}
			verbs := []string{info.Verb}
			if info.Verb == "patch" && resp.StatusCode == http.StatusCreated {
				// A server-side apply that made the object: the API server
				// checked create too.
				verbs = append(verbs, "create")
			}
			calls.Lock()
			for _, v := range verbs {
				calls.log = append(calls.log, call{cmd: calls.cmd, user: resp.Request.Header.Get("Impersonate-User"), namespace: info.Namespace,
					access: access{verb: v, group: info.APIGroup, resource: resource}, code: resp.StatusCode})
			}
			calls.Unlock()
			return nil
		},
	}
	// TLS: kubeconfigs send credentials only to an https server.
	srv := httptest.NewTLSServer(proxy)
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	// The admin's kubeconfig, pointed at the proxy.
	kc, err := clientcmd.LoadFromFile(sim.Kubeconfig)
	if err != nil {
		return "", err
	}
	for _, c := range kc.Clusters {
		c.Server, c.CertificateAuthorityData, c.InsecureSkipTLSVerify = srv.URL, ca, false
	}
	// In the cluster's folder, removed with it.
	path := filepath.Join(sim.Dir, "proxy.kubeconfig")
	return path, clientcmd.WriteToFile(*kc, path)
}

// args puts -n and --as before any "--" (after it they would be words of
// a task's command).
func args(user, ns string, words ...string) []string {
	i := slices.Index(words, "--")
	if i < 0 {
		i = len(words)
	}
	return slices.Concat(words[:i], []string{"-n", ns, "--as", user}, words[i:])
}

// as runs `kubectl sched WORDS -n NS --as USER` through the proxy.
func as(user, ns string, words ...string) plugintest.Result {
	running(user + ": " + strings.Join(words, " "))
	return plugintest.RunWithInput("", watchtest.WithKubeconfig(kubeconfig, args(user, ns, words...)...)...)
}

// admin runs a command as the cluster admin.
func admin(t *testing.T, words ...string) {
	t.Helper()
	running("admin: " + strings.Join(words, " "))
	if r := plugintest.RunWithInput("", watchtest.WithKubeconfig(kubeconfig, words...)...); r.Code != 0 {
		t.Fatalf("kubectl sched %s: exit %d\n%s%s", strings.Join(words, " "), r.Code, r.Stdout, r.Stderr)
	}
}

var forbiddenWord = regexp.MustCompile(`(?i)forbidden`)

// succeeds requires exit code want and no word of a refusal in the
// output, but for the lines that hold one of allowed (what a member may
// not see by design: the cluster-scoped SchedExts, the shared templates).
func succeeds(t *testing.T, r plugintest.Result, want int, allowed ...string) {
	t.Helper()
	if r.Code != want {
		t.Errorf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", r.Code, want, r.Stdout, r.Stderr)
	}
	for _, line := range strings.Split(r.Stdout+r.Stderr, "\n") {
		if forbiddenWord.MatchString(line) && !slices.ContainsFunc(allowed, func(a string) bool { return strings.Contains(line, a) }) {
			t.Errorf("refused: %s", line)
		}
	}
}

const (
	schedExtsHidden = "may not list schedexts.sched.kubectl-sched.dev at the cluster scope; skipped."
	sharedTemplates = "not searching template ConfigMaps in namespace " + schedv1.DefaultOperatorNamespace + ": forbidden"
)

// tierReady waits until the namespace's tier quotas exist and count
// everything they limit: until then admission refuses what they count.
func tierReady(t *testing.T, ns string) {
	t.Helper()
	var last error
	err := wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		last = nil
		for _, name := range []string{schedv1.TierObjectName, schedv1.TierPriorityQuotaName} {
			q := &corev1.ResourceQuota{}
			if last = sim.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, q); last != nil {
				return false, nil
			}
			for r := range q.Spec.Hard {
				if _, ok := q.Status.Used[r]; !ok {
					last = fmt.Errorf("quota %s does not count %s yet", name, r)
					return false, nil
				}
			}
		}
		return true, nil
	})
	if err != nil {
		t.Fatalf("the tier's quotas in %s: %v", ns, last)
	}
}

func phaseOf[T client.Object](t *testing.T, obj T, phase func(T) string, want string) {
	t.Helper()
	watchtest.Eventually(t, fmt.Sprintf("%T %s to be %s", obj, obj.GetName(), want), func() bool {
		return sim.Client.Get(context.Background(), client.ObjectKeyFromObject(obj), obj) == nil && phase(obj) == want
	})
}

// TestMembers: alice, a member of tenant payments, runs every command in
// it and each succeeds with nothing refused; bob, a member of tenant
// other, runs the same against payments and each exits 5 naming the
// permission he lacks. Their requests show that kubectl-sched-tenant
// grants what the commands use, and nothing more.
func TestMembers(t *testing.T) {
	const ns, alice, bob = "payments", "alice", "bob"
	admin(t, "tenant", "create", ns, "--tier", "free", "--user", alice)
	admin(t, "tenant", "create", "other", "--tier", "free", "--user", bob)
	tierReady(t, ns)
	for user, in := range map[string]string{alice: ns, bob: "other"} {
		if err := testenv.WaitAllowed(context.Background(), sim.Client, user, authorizationv1.ResourceAttributes{Namespace: in, Verb: "create", Group: schedv1.GroupName, Resource: "agenttasks"}); err != nil {
			t.Fatal(err)
		}
	}
	td := func(f string) string { return filepath.Join("testdata", f) }

	t.Run("a member runs every command", func(t *testing.T) {
		run := func(want int, words []string, allowed ...string) plugintest.Result {
			t.Helper()
			r := as(alice, ns, words...)
			succeeds(t, r, want, allowed...)
			return r
		}
		// Apps, with a Secret.
		r := run(0, []string{"deploy", "shop", "--template", td("app.yaml"), "--secret", "TOKEN=s3cret", "--wait", "--timeout", "2m"})
		if !strings.Contains(r.Stdout, "secret/shop-secrets applied") || strings.Contains(r.Stdout+r.Stderr, "s3cret") {
			t.Errorf("deploy --secret:\n%s%s", r.Stdout, r.Stderr)
		}
		run(0, []string{"deploy", "shop", "--template", td("app.yaml"), "--wait", "--timeout", "2m"}) // keeps the Secret's value
		run(0, []string{"deploy", "db", "--template", td("db.yaml")})
		run(0, []string{"stop", "shop", "--wait", "--timeout", "2m"})
		run(0, []string{"start", "shop", "--wait", "--timeout", "2m"})
		run(0, []string{"restart", "shop", "web", "--wait", "--timeout", "2m"})
		// Revisions: a new API image, the history, and back.
		run(0, []string{"deploy", "shop", "--template", td("app-v2.yaml"), "--wait", "--timeout", "2m"})
		r = run(0, []string{"history", "shop"})
		if !strings.Contains(r.Stdout, "api: image ghcr.io/example/api:1.0 → ghcr.io/example/api:1.1") {
			t.Errorf("history:\n%s", r.Stdout)
		}
		r = run(0, []string{"rollback", "shop", "--wait", "--timeout", "2m"})
		if !strings.Contains(r.Stdout, "api: image ghcr.io/example/api:1.1 → ghcr.io/example/api:1.0") {
			t.Errorf("rollback:\n%s", r.Stdout)
		}
		run(0, []string{"scale", "shop", "web", "--replicas", "2", "--wait", "--timeout", "2m"})
		run(0, []string{"set", "image", "shop", "api=ghcr.io/example/api:1.1"})
		run(0, []string{"set", "env", "shop", "api", "LOG=debug", "--wait", "--timeout", "2m"})
		// The tier allows two apps: shop becomes one image (its Secret kept).
		r = run(0, []string{"deploy", "shop", "--image", "nginx:1.27", "--port", "80", "--wait", "--timeout", "2m"})
		if !strings.Contains(r.Stdout, "URL: ") || !strings.Contains(r.Stdout, "secret/shop-secrets applied") {
			t.Errorf("deploy --image:\n%s", r.Stdout)
		}

		// Tasks.
		r = run(0, []string{"task", "run", "hello", "--image", "busybox:1.36", "--annotation", "sim.kubectl-sched.dev/termination-message=greeting=hi", "--wait", "--", "echo", "hi"})
		if !strings.Contains(r.Stdout, "greeting=hi") {
			t.Errorf("task run --wait printed no outputs:\n%s", r.Stdout)
		}
		run(0, []string{"task", "run", "followed", "--image", "busybox:1.36", "--annotation", "sim.kubectl-sched.dev/run-seconds=2", "-f", "--", "echo", "hi"})
		run(0, []string{"task", "run", "long", "--image", "busybox:1.36", "--annotation", "sim.kubectl-sched.dev/run-seconds=3", "--", "sleep", "3"})
		run(0, []string{"logs", "agenttask/long", "-f"}) // until the task ends
		run(0, []string{"task", "run", "longer", "--image", "busybox:1.36", "--annotation", "sim.kubectl-sched.dev/run-seconds=3", "--", "sleep", "3"})
		run(0, []string{"task", "logs", "longer", "-f"})
		// kwok's pods have no logs (exit 8): pods/log was allowed, the
		// kubelet is what is missing. A member may not read nodes, so the
		// message names both cases.
		for _, words := range [][]string{{"task", "logs", "hello"}, {"logs", "agenttask/hello"}, {"logs", "shop"}, {"logs", "shop", "web"}} {
			r := run(exitNoLogs, words)
			if !strings.Contains(r.Stderr, "it is a simulated (kwok) node, whose pods have no logs, or its kubelet cannot be reached") {
				t.Errorf("%v: not the kubelet's answer:\n%s", words, r.Stderr)
			}
		}
		run(0, []string{"task", "run", "sleeper", "--image", "busybox:1.36", "--annotation", "sim.kubectl-sched.dev/run-seconds=600", "--", "sleep", "600"})
		run(0, []string{"task", "cancel", "sleeper"})
		phaseOf(t, &schedv1.AgentTask{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "sleeper"}},
			func(t *schedv1.AgentTask) string { return string(t.Status.Phase) }, string(schedv1.TaskCancelled))

		// Workflows.
		run(0, []string{"workflow", "run", "-f", td("release.yaml"), "--watch", "--logs"})
		run(0, []string{"workflow", "watch", "release", "--logs"})
		run(0, []string{"logs", "workflow/release", "-f"})
		run(exitFailed, []string{"workflow", "run", "-f", td("failing.yaml"), "--watch"})
		r = run(0, []string{"workflow", "retry", "failing"})
		if !strings.Contains(r.Stdout, "a retry of failing from step test") {
			t.Errorf("workflow retry:\n%s", r.Stdout)
		}
		run(0, []string{"workflow", "run", "-f", td("gated.yaml")})
		phaseOf(t, &schedv1.Workflow{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "gated"}},
			func(w *schedv1.Workflow) string { return string(w.Status.Reason) }, schedv1.ReasonWaitingForApproval)
		run(0, []string{"workflow", "suspend", "gated"})
		r = run(0, []string{"workflow", "approve", "gated", "gate"})
		if !strings.Contains(r.Stdout, "step gate approved by alice") {
			t.Errorf("workflow approve:\n%s", r.Stdout)
		}
		run(0, []string{"workflow", "resume", "gated"})
		phaseOf(t, &schedv1.Workflow{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "gated"}},
			func(w *schedv1.Workflow) string { return string(w.Status.Phase) }, string(schedv1.WorkflowSucceeded))
		run(0, []string{"workflow", "run", "-f", td("slow.yaml")})
		run(0, []string{"workflow", "stop", "slow"})
		phaseOf(t, &schedv1.Workflow{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "slow"}},
			func(w *schedv1.Workflow) string { return string(w.Status.Phase) }, string(schedv1.WorkflowCancelled))

		// Schedules: the tier counts 5 workflows; deleting gated leaves room
		// for the triggered run.
		run(0, []string{"delete", "wf", "gated", "--wait"})
		r = run(0, []string{"workflow", "schedule", "nightly", "--cron", "0 2 * * *", "--time-zone", "Europe/Berlin", "-f", td("release.yaml")})
		if !strings.Contains(r.Stdout, "Next run: ") {
			t.Errorf("workflow schedule:\n%s", r.Stdout)
		}
		run(0, []string{"workflow", "trigger", "nightly", "--watch"})
		run(0, []string{"get", "cwf"})

		// Views.
		for _, words := range [][]string{{"describe", "ud", "shop"}, {"describe", "ud", "db"}, {"describe", "at", "hello"}, {"describe", "wf", "release"}, {"describe", "wf", "failing"}, {"describe", "cwf", "nightly"}} {
			r := run(0, words)
			if !strings.Contains(r.Stdout, "Events:") {
				t.Errorf("%v shows no events:\n%s", words, r.Stdout)
			}
		}
		run(0, []string{"get"}, schedExtsHidden)
		run(0, []string{"get", "ud", "shop", "-o", "yaml"})
		run(0, []string{"get", "at"})
		run(0, []string{"template", "list"}, sharedTemplates)
		run(0, []string{"template", "render", "web-app", "x", "--set", "apiImage=api:1"}, sharedTemplates)
		r = run(0, []string{"tenant", "list"})
		if !regexp.MustCompile(`(?m)^payments\s+free\s+\d+/20\s+\d+/5\s`).MatchString(r.Stdout) {
			t.Errorf("tenant list shows no usage of payments:\n%s", r.Stdout)
		}
	})
	if t.Failed() {
		t.FailNow()
	}

	t.Run("a member of another tenant is refused, told what is missing", func(t *testing.T) {
		for _, words := range [][]string{
			{"deploy", "shop", "--template", td("app.yaml"), "--secret", "TOKEN=x", "--wait"},
			{"deploy", "intruder", "--template", "web-app", "--set", "apiImage=api:1"},
			{"stop", "shop", "--wait"}, {"start", "shop"}, {"restart", "shop", "web"},
			{"deploy", "intruder", "--image", "nginx:1.27"}, {"scale", "shop", "web", "--replicas", "3"},
			{"set", "image", "shop", "web=nginx:1.28"}, {"set", "env", "shop", "web", "X=1"},
			{"history", "shop"}, {"rollback", "shop", "--wait"},
			{"task", "run", "intruder", "--image", "busybox:1.36", "--wait", "--", "echo", "hi"},
			{"task", "logs", "hello", "-f"}, {"task", "cancel", "sleeper"},
			{"logs", "shop"}, {"logs", "agenttask/hello", "-f"}, {"logs", "workflow/release", "-f"},
			{"workflow", "run", "-f", td("release.yaml"), "--name", "intruder", "--watch", "--logs"},
			{"workflow", "watch", "release", "--logs"}, {"workflow", "stop", "slow"}, {"workflow", "retry", "failing"},
			{"workflow", "approve", "gated", "gate"}, {"workflow", "deny", "gated", "gate"}, {"workflow", "suspend", "gated"}, {"workflow", "resume", "gated"},
			{"workflow", "schedule", "intruder", "--cron", "@hourly", "-f", td("release.yaml")}, {"workflow", "trigger", "nightly", "--watch"},
			{"describe", "cwf", "nightly"}, {"get", "cwf"},
			{"describe", "ud", "shop"}, {"describe", "at", "hello"}, {"describe", "wf", "release"},
			{"get"}, {"get", "ud", "shop"}, {"get", "wf", "-w"},
			{"delete", "ud", "shop"}, {"delete", "at", "hello", "--wait"},
			{"tenant", "list"},
		} {
			r := as(bob, ns, words...)
			first, _, _ := strings.Cut(r.Stderr, "\n")
			if r.Code != exitForbidden ||
				!regexp.MustCompile(`forbidden: user "bob" may not (get|list|watch|create|patch|delete) \S+.* in namespace "payments"`).MatchString(r.Stderr) ||
				!strings.Contains(r.Stderr, "'kubectl auth can-i ") || !strings.Contains(r.Stderr, "-n payments' checks.") {
				t.Errorf("%v: exit %d (want %d), stderr:\n%s", words, r.Code, exitForbidden, r.Stderr)
			} else {
				t.Logf("%v: %s", words, first)
			}
		}
	})

	t.Run("a member deletes", func(t *testing.T) {
		for _, words := range [][]string{{"delete", "ud", "db", "--wait"}, {"delete", "at", "hello", "--wait"}, {"delete", "wf", "release", "--wait"}, {"delete", "cwf", "nightly", "--wait"}} {
			succeeds(t, as(alice, ns, words...), 0)
		}
	})

	t.Run("the role grants what the commands use", func(t *testing.T) {
		roleIsWhatMembersUse(t, alice)
	})
}

// readVerbs may all be granted once a command uses one of them on a
// resource: reading is reading, and kubectl's own get -w needs all three.
// Not on Secrets, which a command reads only by name.
var readVerbs = []string{"get", "list", "watch"}

// grantedUnused is what the role grants though no command uses it here:
// the kinds exactly as kubectl-sched-edit grants them (update,
// deletecollection, status reads: what plain kubectl does with them), and
// LimitRanges, which tenant describe shows.
var grantedUnused = map[access]string{
	{"update", schedv1.GroupName, "agenttasks"}:                "kubectl-sched-edit",
	{"update", schedv1.GroupName, "workflows"}:                 "kubectl-sched-edit",
	{"update", schedv1.GroupName, "cronworkflows"}:             "kubectl-sched-edit",
	{"deletecollection", schedv1.GroupName, "cronworkflows"}:   "kubectl-sched-edit",
	{"get", schedv1.GroupName, "cronworkflows/status"}:         "kubectl-sched-edit",
	{"update", schedv1.GroupName, "userdeployments"}:           "kubectl-sched-edit",
	{"deletecollection", schedv1.GroupName, "agenttasks"}:      "kubectl-sched-edit",
	{"deletecollection", schedv1.GroupName, "workflows"}:       "kubectl-sched-edit",
	{"deletecollection", schedv1.GroupName, "userdeployments"}: "kubectl-sched-edit",
	{"get", schedv1.GroupName, "agenttasks/status"}:            "kubectl-sched-edit",
	{"get", schedv1.GroupName, "workflows/status"}:             "kubectl-sched-edit",
	{"get", schedv1.GroupName, "userdeployments/status"}:       "kubectl-sched-edit",
	// Members write templates with kubectl apply; no command of the
	// plugin writes one.
	{"create", schedv1.GroupName, "workflowtemplates"}:           "kubectl-sched-edit",
	{"update", schedv1.GroupName, "workflowtemplates"}:           "kubectl-sched-edit",
	{"patch", schedv1.GroupName, "workflowtemplates"}:            "kubectl-sched-edit",
	{"delete", schedv1.GroupName, "workflowtemplates"}:           "kubectl-sched-edit",
	{"deletecollection", schedv1.GroupName, "workflowtemplates"}: "kubectl-sched-edit",
	{"get", "", "limitranges"}:                                   "tenant describe",
	{"list", "", "limitranges"}:                                  "tenant describe",
	{"watch", "", "limitranges"}:                                 "tenant describe",
}

// refusedByDesign are the requests a member's commands make that RBAC
// refuses, and which the commands do without: the node of a pod whose
// logs cannot be read (to tell a kwok node), the cluster's shared
// templates, the cluster-scoped SchedExts that get lists with the other
// kinds, and every tenant's namespace (tenant list then shows the
// member's own).
var refusedByDesign = []struct {
	access    access
	namespace string
}{
	{access{"get", "", "nodes"}, ""},
	{access{"list", "", "configmaps"}, schedv1.DefaultOperatorNamespace},
	{access{"list", schedv1.GroupName, "schedexts"}, ""},
	{access{"list", "", "namespaces"}, ""},
}

// everyoneMay is what Kubernetes lets every authenticated user do
// (system:basic-user), which no role of ours need grant: workflow approve
// and deny ask the API server who the user is.
var everyoneMay = map[access]bool{
	{"create", "authentication.k8s.io", "selfsubjectreviews"}: true,
	// kubectl-sched-cluster-templates, bound to system:authenticated.
	{"get", schedv1.GroupName, "clusterworkflowtemplates"}:   true,
	{"list", schedv1.GroupName, "clusterworkflowtemplates"}:  true,
	{"watch", schedv1.GroupName, "clusterworkflowtemplates"}: true,
}

// roleIsWhatMembersUse derives from the requests user's commands made what
// they use, and holds kubectl-sched-tenant to it: every request was
// allowed (or is refused by design), and every right the role grants was
// used (or is listed above, with why).
func roleIsWhatMembersUse(t *testing.T, user string) {
	calls.Lock()
	log := slices.Clone(calls.log)
	calls.Unlock()
	used := map[access]bool{}
	readsUsed := map[string]bool{} // group/resource
	for _, c := range log {
		if c.user != user || everyoneMay[c.access] {
			continue
		}
		if c.code == http.StatusForbidden {
			if !slices.ContainsFunc(refusedByDesign, func(r struct {
				access    access
				namespace string
			}) bool {
				return r.access == c.access && r.namespace == c.namespace
			}) {
				t.Errorf("%s: %s in %q was refused", c.cmd, c.access, c.namespace)
			}
			continue
		}
		used[c.access] = true
		if slices.Contains(readVerbs, c.access.verb) && c.access.resource != "secrets" {
			readsUsed[c.access.group+"/"+c.access.resource] = true
		}
	}
	if len(used) == 0 {
		t.Fatal("no request of the member was recorded")
	}

	role := &rbacv1.ClusterRole{}
	if err := sim.Client.Get(context.Background(), client.ObjectKey{Name: schedv1.TenantMemberRole}, role); err != nil {
		t.Fatal(err)
	}
	granted := map[access]bool{}
	for _, r := range role.Rules {
		for _, g := range r.APIGroups {
			for _, res := range r.Resources {
				for _, v := range r.Verbs {
					granted[access{v, g, res}] = true
				}
			}
		}
	}
	for a := range used {
		if !granted[a] {
			t.Errorf("the member's commands used %s, which %s does not grant", a, schedv1.TenantMemberRole)
		}
	}
	for a := range granted {
		switch {
		case used[a]:
		case slices.Contains(readVerbs, a.verb) && readsUsed[a.group+"/"+a.resource]:
		case grantedUnused[a] != "":
		default:
			t.Errorf("%s grants %s, which no command of the member used", schedv1.TenantMemberRole, a)
		}
	}
	var names []string
	for a := range used {
		names = append(names, a.String())
	}
	slices.Sort(names)
	t.Logf("the member's commands used:\n  %s", strings.Join(names, "\n  "))
}

package scale_test

import (
	"context"
	"strings"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
	"github.com/kubectl-sched/kubectl-sched/hack/testenv/plugintest"
	"github.com/kubectl-sched/kubectl-sched/plugin/internal/cmdutil"
)

var env *plugintest.Env

func TestMain(m *testing.M) { plugintest.Main(m, &env) }

var ctx = context.Background()

// apps makes namespace ns with apps shop (services web and api, 2
// replicas each) and hello (service web).
func apps(t *testing.T, ns string) {
	t.Helper()
	env.Shop(t, ns)
	env.Hello(t, ns)
}

func replicas(t *testing.T, ns, app, svc string) int32 {
	t.Helper()
	return ptr.Deref(env.Service(t, ns, app, svc).Replicas, -1)
}

func TestScale(t *testing.T) {
	const ns = "scale-basic"
	apps(t, ns)

	r := env.MustRun(t, "scale", "shop", "web", "--replicas", "5", "-n", ns)
	if want := "userdeployment.sched.kubectl-sched.dev/shop service web scaled to 5\n"; r.Stdout != want || r.Stderr != "" {
		t.Errorf("stdout %q, want %q; stderr %q", r.Stdout, want, r.Stderr)
	}
	if w, a := replicas(t, ns, "shop", "web"), replicas(t, ns, "shop", "api"); w != 5 || a != 2 {
		t.Errorf("replicas web %d, api %d; want 5 and 2", w, a)
	}
	r = env.MustRun(t, "scale", "shop", "web", "--replicas", "5", "-n", ns)
	if want := "userdeployment.sched.kubectl-sched.dev/shop service web already has 5 replicas\n"; r.Stdout != want {
		t.Errorf("stdout %q, want %q", r.Stdout, want)
	}

	// An app of one service needs no SERVICE; 0 is a number of replicas.
	env.MustRun(t, "scale", "hello", "--replicas", "0", "-n", ns)
	if got := replicas(t, ns, "hello", "web"); got != 0 {
		t.Errorf("replicas %d, want 0", got)
	}

	// -o name prints only the app, as kubectl does.
	r = env.MustRun(t, "scale", "hello", "--replicas", "2", "-n", ns, "-o", "name")
	if r.Stdout != "userdeployment.sched.kubectl-sched.dev/hello\n" {
		t.Errorf("-o name: %q", r.Stdout)
	}
}

func TestScaleDryRun(t *testing.T) {
	const ns = "scale-dry"
	apps(t, ns)
	r := env.MustRun(t, "scale", "shop", "api", "--replicas", "7", "-n", ns, "--dry-run=client", "-o", "yaml")
	for _, want := range []string{"kind: UserDeployment", "name: shop", "replicas: 7", "image: api:1"} {
		if !strings.Contains(r.Stdout, want) {
			t.Errorf("stdout lacks %q:\n%s", want, r.Stdout)
		}
	}
	r = env.MustRun(t, "scale", "shop", "api", "--replicas", "7", "-n", ns, "--dry-run=server")
	if want := "userdeployment.sched.kubectl-sched.dev/shop service api scaled to 7 (server dry run)\n"; r.Stdout != want {
		t.Errorf("stdout %q, want %q", r.Stdout, want)
	}
	r = env.MustRun(t, "scale", "shop", "api", "--replicas", "7", "-n", ns, "--dry-run")
	if want := "userdeployment.sched.kubectl-sched.dev/shop service api scaled to 7 (dry run)\n"; r.Stdout != want {
		t.Errorf("stdout %q, want %q", r.Stdout, want)
	}
	if got := replicas(t, ns, "shop", "api"); got != 2 {
		t.Errorf("replicas %d after dry runs, want 2", got)
	}
	// The server's validation runs in a server dry run.
	r = env.Run("scale", "shop", "api", "--replicas", "1000", "-n", ns, "--dry-run=server")
	if r.Code != cmdutil.ExitInvalid || !strings.Contains(r.Stderr, "spec.services[1].replicas") {
		t.Errorf("exit %d:\n%s", r.Code, r.Stderr)
	}
}

func TestScaleWait(t *testing.T) {
	const ns = "scale-wait"
	apps(t, ns)
	done := make(chan plugintest.Result)
	go func() { done <- env.Run("scale", "hello", "--replicas", "3", "-n", ns, "--wait", "--timeout", "30s") }()
	// The operator's status, once it has seen the new spec.
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		ud := &schedv1.UserDeployment{}
		if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "hello"}, ud); err == nil && ud.Generation == 2 {
			ud.Status = schedv1.UserDeploymentStatus{ObservedGeneration: 2, Phase: schedv1.UserDeploymentRunning, Ready: "1/1"}
			if err := env.Client.Status().Update(ctx, ud); err == nil {
				break
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	r := <-done
	if r.Code != 0 || !strings.Contains(r.Stdout, "scaled to 3\nWaiting for userdeployment \"hello\" to be Running...\n") ||
		!strings.Contains(r.Stdout, "Running (1/1 services ready)") {
		t.Errorf("exit %d\nstdout:\n%s\nstderr:\n%s", r.Code, r.Stdout, r.Stderr)
	}
}

func TestScaleErrors(t *testing.T) {
	const ns = "scale-errors"
	apps(t, ns)
	env.Namespace(t, "scale-empty")
	nobody, err := env.UserKubeconfig("nobody")
	if err != nil {
		t.Fatal(err)
	}
	cases := map[string]plugintest.ErrorCase{
		"no --replicas": {Args: []string{"scale", "shop", "web", "-n", ns}, Code: cmdutil.ExitUsage,
			Stderr: []string{"--replicas is required", "--replicas 3"}},
		"negative": {Args: []string{"scale", "shop", "web", "--replicas", "-1", "-n", ns}, Code: cmdutil.ExitUsage,
			Stderr: []string{"--replicas must not be negative, got -1"}},
		"no app": {Args: []string{"scale"}, Code: cmdutil.ExitUsage, Stderr: []string{"scale takes APP [SERVICE], got 0 arguments"}},
		"unknown app": {Args: []string{"scale", "shopp", "--replicas", "1", "-n", ns}, Code: cmdutil.ExitNotFound,
			Stderr: []string{`userdeployment "shopp" not found in namespace "scale-errors"`, "Apps in namespace scale-errors: hello, shop."}},
		"no apps": {Args: []string{"scale", "shop", "--replicas", "1", "-n", "scale-empty"}, Code: cmdutil.ExitNotFound,
			Stderr: []string{`userdeployment "shop" not found in namespace "scale-empty"`, "Namespace scale-empty has no apps; 'kubectl sched deploy NAME --image IMAGE' makes one"}},
		"unknown service": {Args: []string{"scale", "shop", "db", "--replicas", "1", "-n", ns}, Code: cmdutil.ExitNotFound,
			Stderr: []string{`userdeployment "shop" has no service "db"`, "Its services: web, api."}},
		"which service": {Args: []string{"scale", "shop", "--replicas", "1", "-n", ns}, Code: cmdutil.ExitUsage,
			Stderr: []string{`userdeployment "shop" has 2 services: say which one`, "Name one of its services: web, api."}},
		"--wait with --dry-run": {Args: []string{"scale", "shop", "web", "--replicas", "1", "--dry-run=server", "--wait", "-n", ns}, Code: cmdutil.ExitUsage,
			Stderr: []string{"--wait cannot follow a --dry-run"}},
		"bad --dry-run": {Args: []string{"scale", "shop", "web", "--replicas", "1", "--dry-run=maybe", "-n", ns}, Code: cmdutil.ExitUsage,
			Stderr: []string{`--dry-run must be client, server or none, got "maybe"`}},
		"bad output": {Args: []string{"scale", "shop", "web", "--replicas", "1", "-o", "wide", "-n", ns}, Code: cmdutil.ExitUsage,
			Stderr: []string{`unable to match a printer suitable for the output format "wide"`}},
		"forbidden": {Args: []string{"scale", "shop", "web", "--replicas", "1", "-n", ns, "--kubeconfig", nobody}, NoKubeconfig: true, Code: cmdutil.ExitForbidden,
			Stderr: []string{`forbidden: user "nobody" may not get userdeployments.sched.kubectl-sched.dev "shop" in namespace "scale-errors"`}},
	}
	env.RunErrorCases(t, cases, func(t *testing.T, r plugintest.Result) {
		if n := strings.Count(strings.TrimSpace(r.Stderr), "\n"); n > 1 {
			t.Errorf("want one line and a hint, got:\n%s", r.Stderr)
		}
	})
}

func TestCompletion(t *testing.T) {
	const ns = "scale-complete"
	apps(t, ns)
	complete := func(args ...string) string {
		return plugintest.RunWithInput("", append([]string{"__complete", "--kubeconfig", env.Kubeconfig, "-n", ns}, args...)...).Stdout
	}
	if got, want := complete("scale", ""), "hello\nshop\n:4\n"; !strings.HasPrefix(got, want) {
		t.Errorf("apps: %q, want %q", got, want)
	}
	if got, want := complete("scale", "shop", ""), "web\napi\n:4\n"; !strings.HasPrefix(got, want) {
		t.Errorf("services: %q, want %q", got, want)
	}
	if got, want := complete("scale", "shop", "a"), "api\n:4\n"; !strings.HasPrefix(got, want) {
		t.Errorf("services from a: %q, want %q", got, want)
	}
	if got, want := complete("scale", "shop", "web", ""), ":4\n"; !strings.HasPrefix(got, want) {
		t.Errorf("after the service: %q, want %q", got, want)
	}
}

// A service a HorizontalPodAutoscaler scales is refused, naming it (the
// operator leaves its replicas to the autoscaler), unless --force; one who
// may not list autoscalers is not stopped.
func TestScaleAutoscaled(t *testing.T) {
	const ns = "scale-hpa"
	apps(t, ns)
	hpa := &autoscalingv2.HorizontalPodAutoscaler{
		ObjectMeta: metav1.ObjectMeta{Name: "web-cpu", Namespace: ns},
		Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
			ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "shop-web"},
			MinReplicas:    ptr.To[int32](2),
			MaxReplicas:    10,
		},
	}
	if err := env.Client.Create(ctx, hpa); err != nil {
		t.Fatal(err)
	}

	for _, more := range [][]string{nil, {"--dry-run=server"}} {
		r := env.Run(append([]string{"scale", "shop", "web", "--replicas", "5", "-n", ns}, more...)...)
		wantErr := "error: service web of app shop is scaled by HorizontalPodAutoscaler web-cpu (2 to 10 replicas), not by spec.services[].replicas\n" +
			"Change the autoscaler's minReplicas and maxReplicas (kubectl edit hpa web-cpu -n scale-hpa), or delete it; --force sets the replicas anyway, which the service runs once no autoscaler scales it.\n"
		if r.Code != cmdutil.ExitError || r.Stdout != "" || r.Stderr != wantErr {
			t.Errorf("%q: exit %d, stdout %q\nstderr:\n%s\nwant:\n%s", more, r.Code, r.Stdout, r.Stderr, wantErr)
		}
	}
	if got := replicas(t, ns, "shop", "web"); got != 2 {
		t.Errorf("replicas %d after a refused scale, want 2", got)
	}

	// The other service, which no autoscaler scales, scales as before.
	if r := env.MustRun(t, "scale", "shop", "api", "--replicas", "3", "-n", ns); r.Stderr != "" {
		t.Errorf("api: stderr %q", r.Stderr)
	}

	r := env.MustRun(t, "scale", "shop", "web", "--replicas", "5", "-n", ns, "--force")
	if want := "note: HorizontalPodAutoscaler web-cpu scales service web: it runs 2 to 10 pods until the autoscaler is removed.\n"; r.Stderr != want {
		t.Errorf("--force: stderr %q, want %q", r.Stderr, want)
	}
	if got := replicas(t, ns, "shop", "web"); got != 5 {
		t.Errorf("replicas %d after --force, want 5", got)
	}

	// A user who may change apps but not list autoscalers.
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "apps-only", Namespace: ns}, Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{schedv1.GroupName}, Resources: []string{"userdeployments"}, Verbs: []string{"get", "list", "patch"}},
	}}
	binding := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "apps-only", Namespace: ns},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "apps-only"},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "appsonly"}}}
	for _, obj := range []client.Object{role, binding} {
		if err := env.Client.Create(ctx, obj); err != nil {
			t.Fatal(err)
		}
	}
	env.WaitAllowed(t, "appsonly", authorizationv1.ResourceAttributes{Namespace: ns, Verb: "patch", Group: schedv1.GroupName, Resource: "userdeployments"})
	kc, err := env.UserKubeconfig("appsonly")
	if err != nil {
		t.Fatal(err)
	}
	r = plugintest.RunWithInput("", "scale", "shop", "web", "--replicas", "4", "-n", ns, "--kubeconfig", kc)
	if r.Code != 0 {
		t.Fatalf("as appsonly: exit %d\nstderr:\n%s", r.Code, r.Stderr)
	}
	if got := replicas(t, ns, "shop", "web"); got != 4 {
		t.Errorf("replicas %d after appsonly's scale, want 4", got)
	}
}

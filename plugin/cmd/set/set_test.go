package set_test

import (
	"fmt"
	"strings"
	"testing"

	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
	"github.com/kubectl-sched/kubectl-sched/hack/testenv/plugintest"
	"github.com/kubectl-sched/kubectl-sched/plugin/internal/cmdutil"
)

var env *plugintest.Env

func TestMain(m *testing.M) { plugintest.Main(m, &env) }

// apps makes namespace ns with apps shop (services web and api) and
// hello (service web, env A=1).
func apps(t *testing.T, ns string) {
	t.Helper()
	env.Shop(t, ns)
	env.Hello(t, ns, "--env", "A=1")
}

func envOf(s schedv1.ServiceSpec) string {
	var out []string
	for _, e := range s.Env {
		out = append(out, e.Name+"="+e.Value)
	}
	return strings.Join(out, " ")
}

func TestSetImage(t *testing.T) {
	const ns = "set-image"
	apps(t, ns)
	r := env.MustRun(t, "set", "image", "shop", "web=nginx:1.28", "api=ghcr.io/example/api:2", "-n", ns)
	want := "userdeployment.sched.kubectl-sched.dev/shop service web image updated to nginx:1.28\n" +
		"userdeployment.sched.kubectl-sched.dev/shop service api image updated to ghcr.io/example/api:2\n"
	if r.Stdout != want || r.Stderr != "" {
		t.Errorf("stdout:\n%s\nwant:\n%s\nstderr: %s", r.Stdout, want, r.Stderr)
	}
	if w, a := env.Service(t, ns, "shop", "web"), env.Service(t, ns, "shop", "api"); w.Image != "nginx:1.28" || a.Image != "ghcr.io/example/api:2" || envOf(w) != "API_URL=http://shop-api:8080" {
		t.Errorf("web %+v\napi %+v", w, a)
	}
	r = env.MustRun(t, "set", "image", "shop", "web=nginx:1.28", "-n", ns)
	if want := "userdeployment.sched.kubectl-sched.dev/shop service web already runs nginx:1.28\n"; r.Stdout != want {
		t.Errorf("stdout %q, want %q", r.Stdout, want)
	}

	r = env.MustRun(t, "set", "image", "hello", "web=nginx:1.29", "-n", ns, "--dry-run=client", "-o", "yaml")
	if !strings.Contains(r.Stdout, "image: nginx:1.29") || !strings.Contains(r.Stdout, "name: A") {
		t.Errorf("client dry run:\n%s", r.Stdout)
	}
	r = env.MustRun(t, "set", "image", "hello", "web=nginx:1.29", "-n", ns, "--dry-run=server", "-o", "json")
	if !strings.Contains(r.Stdout, `"image": "nginx:1.29"`) {
		t.Errorf("server dry run:\n%s", r.Stdout)
	}
	if got := env.Service(t, ns, "hello", "web").Image; got != "nginx:1.27" {
		t.Errorf("image %s after dry runs", got)
	}
}

func TestSetEnv(t *testing.T) {
	const ns = "set-env"
	apps(t, ns)
	steps := []struct {
		args    []string
		stdout  string
		stderr  string
		wantEnv string
	}{
		{args: []string{"hello", "B=2", "A=3"}, stdout: "env updated", wantEnv: "A=3 B=2"},
		{args: []string{"hello", "web", "C=", "A-"}, stdout: "env updated", wantEnv: "B=2 C="},
		{args: []string{"hello", "NOPE-"}, stdout: "env unchanged", stderr: "warning: service web has no env NOPE: nothing to remove\n", wantEnv: "B=2 C="},
		{args: []string{"hello", "B-", "C-"}, stdout: "env updated"},
	}
	for i, s := range steps {
		r := env.MustRun(t, append([]string{"set", "env", "-n", ns}, s.args...)...)
		if want := "userdeployment.sched.kubectl-sched.dev/hello service web " + s.stdout + "\n"; r.Stdout != want || r.Stderr != s.stderr {
			t.Errorf("step %d: stdout %q, want %q; stderr %q, want %q", i, r.Stdout, want, r.Stderr, s.stderr)
		}
		if got := envOf(env.Service(t, ns, "hello", "web")); got != s.wantEnv {
			t.Errorf("step %d: env %q, want %q", i, got, s.wantEnv)
		}
	}

	// A variable of the app's config is not the service's to remove.
	env.MustRun(t, "deploy", "orders", "-n", ns, "--template", "api-postgres", "--set", "image=api:1", "--secret", "POSTGRES_PASSWORD=x")
	r := env.MustRun(t, "set", "env", "orders", "api", "POSTGRES_DB-", "-n", ns)
	if !strings.Contains(r.Stderr, "warning: service api has no env POSTGRES_DB: it comes from the app's config (spec.config), which set env does not change") {
		t.Errorf("stderr:\n%s", r.Stderr)
	}

	r = env.MustRun(t, "set", "env", "shop", "web", "X=1", "-n", ns, "--dry-run=client", "-o", "name")
	if r.Stdout != "userdeployment.sched.kubectl-sched.dev/shop\n" || envOf(env.Service(t, ns, "shop", "web")) != "API_URL=http://shop-api:8080" {
		t.Errorf("client dry run: %q", r.Stdout)
	}
}

func TestErrors(t *testing.T) {
	const ns = "set-errors"
	apps(t, ns)
	in := func(args ...string) []string { return append(args, "-n", ns) }
	cases := map[string]plugintest.ErrorCase{
		"image without =": {Args: in("set", "image", "shop", "nginx:1.28"), Code: cmdutil.ExitUsage,
			Stderr: []string{`bad argument "nginx:1.28": want SERVICE=IMAGE`, "web=nginx:1.28"}},
		"image empty": {Args: in("set", "image", "shop", "web="), Code: cmdutil.ExitUsage,
			Stderr: []string{`bad argument "web=": both the service and the image are needed`}},
		"image with a space": {Args: in("set", "image", "shop", "web=nginx 1"), Code: cmdutil.ExitUsage, Stderr: []string{`bad image "nginx 1"`}},
		"a service twice":    {Args: in("set", "image", "shop", "web=a:1", "web=b:1"), Code: cmdutil.ExitUsage, Stderr: []string{`service "web" is given twice`}},
		"image of an unknown service": {Args: in("set", "image", "shop", "db=postgres:17"), Code: cmdutil.ExitNotFound,
			Stderr: []string{`userdeployment "shop" has no service "db"`, "Its services: web, api."}},
		"image of an unknown app": {Args: in("set", "image", "shoop", "web=nginx:1.28"), Code: cmdutil.ExitNotFound,
			Stderr: []string{`userdeployment "shoop" not found in namespace "set-errors"`, "Apps in namespace set-errors: hello, shop."}},
		"image without images": {Args: in("set", "image", "shop"), Code: cmdutil.ExitUsage, Stderr: []string{"takes APP SERVICE=IMAGE..., got 1 arguments"}},
		"env without variables": {Args: in("set", "env", "shop", "web"), Code: cmdutil.ExitUsage,
			Stderr: []string{`no variable to set or remove after service "web"`, "NAME=VALUE to set a variable, NAME- to remove one"}},
		"env bad argument": {Args: in("set", "env", "shop", "web", "X=1", "Y"), Code: cmdutil.ExitUsage, Stderr: []string{`bad argument "Y": want NAME=VALUE or NAME-`}},
		"env bad name":     {Args: in("set", "env", "hello", "1X=1"), Code: cmdutil.ExitUsage, Stderr: []string{`bad variable name "1X"`}},
		"env set and removed": {Args: in("set", "env", "hello", "X=1", "X-"), Code: cmdutil.ExitUsage,
			Stderr: []string{"variable X is both set and removed"}},
		"env of which service": {Args: in("set", "env", "shop", "X=1"), Code: cmdutil.ExitUsage,
			Stderr: []string{`userdeployment "shop" has 2 services: say which one`, "Name one of its services: web, api."}},
		"env of an unknown service": {Args: in("set", "env", "shop", "db", "X=1"), Code: cmdutil.ExitNotFound,
			Stderr: []string{`userdeployment "shop" has no service "db"`}},
		"group without a command": {Args: in("set", "replicas", "shop"), Code: cmdutil.ExitUsage},
	}
	env.RunErrorCases(t, cases, func(t *testing.T, r plugintest.Result) {
		if n := strings.Count(strings.TrimSpace(r.Stderr), "\n"); n > 1 {
			t.Errorf("want one line and a hint, got:\n%s", r.Stderr)
		}
	})
}

func TestCompletion(t *testing.T) {
	const ns = "set-complete"
	apps(t, ns)
	complete := func(args ...string) string {
		return plugintest.RunWithInput("", append([]string{"__complete", "--kubeconfig", env.Kubeconfig, "-n", ns}, args...)...).Stdout
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"set", "image", ""}, "hello\nshop\n:4\n"},
		// SERVICE= with no space after it, and each service once.
		{[]string{"set", "image", "shop", ""}, "web=\napi=\n:6\n"},
		{[]string{"set", "image", "shop", "web=nginx:1.28", ""}, "api=\n:6\n"},
		{[]string{"set", "image", "shop", "web=ngi"}, ":6\n"},
		{[]string{"set", "env", "shop", ""}, "web\napi\n:4\n"},
		{[]string{"set", "env", "shop", "web", ""}, ":4\n"},
		{[]string{"set", "env", "shop", "X="}, ":4\n"},
	} {
		if got := complete(c.args...); !strings.HasPrefix(got, c.want) {
			t.Errorf("%s: %q, want %q", fmt.Sprint(c.args), got, c.want)
		}
	}
}

package template_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubectl-sched/kubectl-sched/hack/testenv"
	"github.com/kubectl-sched/kubectl-sched/hack/testenv/plugintest"
	"github.com/kubectl-sched/kubectl-sched/plugin/internal/cmdutil"
	"github.com/kubectl-sched/kubectl-sched/plugin/internal/templates"
)

var env *plugintest.Env

func TestMain(m *testing.M) { plugintest.Main(m, &env) }

const teamTemplate = `apiVersion: templates.kubectl-sched.dev/v1
kind: Template
metadata:
  name: team-app
description: The team's standard app.
parameters:
  - name: image
    required: true
object:
  kind: UserDeployment
  spec:
    services:
      - name: app
        image: ${{ image }}
        exposure: None
`

// workerOverride replaces the catalog's worker for the whole cluster.
const workerOverride = `apiVersion: templates.kubectl-sched.dev/v1
kind: Template
metadata:
  name: worker
description: The cluster's own worker, replacing the catalog's.
parameters: []
object:
  kind: UserDeployment
  spec:
    services:
      - name: worker
        image: registry.internal/worker:7
        exposure: None
`

// shareTemplate stores a template in the cluster, as a team would.
func shareTemplate(t *testing.T, ns, name, text string) {
	t.Helper()
	env.Namespace(t, ns)
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{templates.LabelTemplate: "true"}},
		Data:       map[string]string{templates.ConfigMapKey: text},
	}
	if err := env.Client.Create(context.Background(), cm); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), cm) })
}

func TestList(t *testing.T) {
	shareTemplate(t, "team-a", "team-app", teamTemplate)
	shareTemplate(t, templates.SystemNamespace, "worker", workerOverride)
	shareTemplate(t, "team-a", "broken", "apiVersion: templates.kubectl-sched.dev/v1\nkind: Template\n")

	r := env.MustRun(t, "template", "list", "-n", "team-a", "--template-dir", "testdata/templates")
	plugintest.Golden(t, "list", r.Stdout)
	if want := "warning: skipped broken: invalid template configmap:team-a/broken"; !strings.Contains(r.Stderr, want) {
		t.Errorf("stderr lacks %q:\n%s", want, r.Stderr)
	}

	r = env.MustRun(t, "template", "list", "-n", "team-a", "-o", "wide")
	plugintest.Golden(t, "list-wide", r.Stdout)

	r = env.MustRun(t, "template", "list", "-n", "team-a", "--template-dir", "testdata/templates", "--no-headers")
	if lines := strings.Split(r.Stdout, "\n"); len(lines) != 10 || !strings.HasPrefix(lines[0], "agent-task         AgentTask ") {
		t.Errorf("--no-headers: want the 9 rows of the list golden, got:\n%s", r.Stdout)
	}

	r = env.MustRun(t, "template", "list", "-o", "name", "--no-headers")
	plugintest.Golden(t, "list-name", r.Stdout)

	r = env.MustRun(t, "template", "list", "-o", "json")
	var list struct {
		Kind  string
		Items []struct {
			Metadata struct {
				Name        string
				Annotations map[string]string
			}
			Parameters []templates.Parameter
		}
	}
	if err := json.Unmarshal([]byte(r.Stdout), &list); err != nil {
		t.Fatalf("%v:\n%s", err, r.Stdout)
	}
	if list.Kind != "List" || len(list.Items) != 6 || list.Items[0].Metadata.Name != "agent-task" ||
		list.Items[0].Metadata.Annotations["templates.kubectl-sched.dev/source"] != "catalog" {
		t.Errorf("json list = %+v", list)
	}
}

func TestListWithoutCluster(t *testing.T) {
	r := plugintest.RunWithInput("", "template", "list", "--server", "https://127.0.0.1:1", "--request-timeout", "2s")
	if r.Code != 0 {
		t.Fatalf("exit %d: %s", r.Code, r.Stderr)
	}
	if !strings.Contains(r.Stdout, "web-app") || !strings.Contains(r.Stderr, "warning: not searching templates in the cluster") {
		t.Errorf("want the catalog and a warning; stdout:\n%s\nstderr:\n%s", r.Stdout, r.Stderr)
	}
}

// A user who may not list ConfigMaps still gets the other templates.
func TestListForbidden(t *testing.T) {
	nobody, err := env.UserKubeconfig("nobody")
	if err != nil {
		t.Fatal(err)
	}
	r := plugintest.RunWithInput("", "template", "list", "--kubeconfig", nobody, "-o", "name")
	if r.Code != 0 || !strings.Contains(r.Stdout, "template.templates.kubectl-sched.dev/web-app") {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", r.Code, r.Stdout, r.Stderr)
	}
	for _, want := range []string{
		"warning: not searching template ConfigMaps in namespace default: forbidden",
		"warning: not searching template ConfigMaps in namespace kubectl-sched-system: forbidden",
	} {
		if !strings.Contains(r.Stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, r.Stderr)
		}
	}
}

func TestShow(t *testing.T) {
	for _, name := range []string{"web-app", "api-postgres", "scx-lavd", "release-workflow", "agent-task"} {
		t.Run(name, func(t *testing.T) {
			r := env.MustRun(t, "template", "show", name)
			plugintest.Golden(t, "show-"+name, r.Stdout)
		})
	}

	t.Run("-o yaml is the template as written", func(t *testing.T) {
		r := env.MustRun(t, "template", "show", "api-postgres", "-o", "yaml")
		want, err := os.ReadFile(filepath.Join("..", "..", "internal", "templates", "catalog", "api-postgres.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		if r.Stdout != string(want) {
			t.Errorf("show -o yaml differs from the catalog file:\n%s", r.Stdout)
		}
	})

	t.Run("-o json", func(t *testing.T) {
		r := env.MustRun(t, "template", "show", "worker", "-o", "json")
		var tmpl templates.Template
		if err := json.Unmarshal([]byte(r.Stdout), &tmpl); err != nil || tmpl.Name() != "worker" || tmpl.ObjectKind() != "UserDeployment" {
			t.Errorf("%v: %+v", err, tmpl)
		}
	})

	t.Run("a local file", func(t *testing.T) {
		r := env.MustRun(t, "template", "show", "testdata/templates/batch.yaml")
		plugintest.Golden(t, "show-file", r.Stdout)
	})

	t.Run("the cluster's shared template replaces the catalog's", func(t *testing.T) {
		shareTemplate(t, templates.SystemNamespace, "worker", workerOverride)
		r := env.MustRun(t, "template", "show", "worker")
		if !strings.Contains(r.Stdout, "Source:       ConfigMap kubectl-sched-system/worker (the cluster's shared templates)") {
			t.Errorf("want the cluster's worker:\n%s", r.Stdout)
		}
	})
}

func TestRender(t *testing.T) {
	r := env.MustRun(t, "template", "render", "scx-lavd", "lavd", "--set", "nodes=node.kubectl-sched.dev/pool=batch", "--set", "mode=--performance")
	plugintest.Golden(t, "render-scx-lavd", r.Stdout)

	r = env.MustRun(t, "template", "render", "api-postgres", "orders", "-n", "shop", "--set", "image=orders:2", "--secret", "POSTGRES_PASSWORD=tiger-lily-42", "-o", "json")
	if strings.Contains(r.Stdout+r.Stderr, "tiger-lily-42") {
		t.Fatalf("the secret value was printed:\n%s\n%s", r.Stdout, r.Stderr)
	}
	if !strings.Contains(r.Stdout, `"secretName": "orders-secrets"`) || !strings.Contains(r.Stdout, `"namespace": "shop"`) {
		t.Errorf("want the reference to orders-secrets in namespace shop:\n%s", r.Stdout)
	}
	if want := `note: Secret "orders-secrets" (keys POSTGRES_PASSWORD) is not printed`; !strings.Contains(r.Stderr, want) {
		t.Errorf("stderr lacks %q:\n%s", want, r.Stderr)
	}
}

// Every catalog template, rendered with its defaults and sample values for
// required parameters, is an object the API server accepts: the CRDs'
// schemas and CEL rules agree with the catalog.
func TestCatalogPassesServerValidation(t *testing.T) {
	ts, err := templates.Catalog()
	if err != nil {
		t.Fatal(err)
	}
	env.Namespace(t, "catalog")
	for _, tmpl := range ts {
		t.Run(tmpl.Name(), func(t *testing.T) {
			in := templates.Input{Name: "sample", Namespace: "catalog", Params: map[string]string{}, Secrets: map[string][]byte{}}
			for _, p := range tmpl.Parameters {
				switch {
				case p.Secret:
					in.Secrets[p.Name] = []byte("sample")
				case p.Required:
					in.Params[p.Name] = "https://example.com/repo.git"
					if strings.Contains(strings.ToLower(p.Name), "image") {
						in.Params[p.Name] = "registry.example.com/app:1"
					}
				}
			}
			obj, _, err := tmpl.Render(in)
			if err != nil {
				t.Fatal(err)
			}
			if err := env.Client.Create(context.Background(), obj, client.DryRunAll); err != nil {
				t.Errorf("the API server refuses %s rendered with defaults: %v", tmpl.Name(), err)
			}
		})
	}
}

func TestErrors(t *testing.T) {
	cases := map[string]struct {
		args     []string
		wantCode int
		wantErr  []string
	}{
		"unknown template": {
			args: []string{"template", "show", "wep-app"}, wantCode: cmdutil.ExitUsage,
			wantErr: []string{`unknown template "wep-app"`, "Available templates: agent-task, api-postgres, release-workflow, scx-lavd, web-app, worker."},
		},
		"missing file": {
			args: []string{"template", "show", "./nope.yaml"}, wantCode: cmdutil.ExitUsage, wantErr: []string{"template file ./nope.yaml does not exist"},
		},
		"folder with several templates": {
			args: []string{"template", "show", "testdata/templates"}, wantCode: cmdutil.ExitUsage,
			wantErr: []string{"folder testdata/templates holds 2 templates: batch, team-cache", "--template-dir testdata/templates --template NAME"},
		},
		"invalid template file": {
			args: []string{"template", "show", "testdata/invalid.yaml"}, wantCode: cmdutil.ExitInvalid,
			wantErr: []string{`invalid template file:testdata/invalid.yaml: parameter "image" is declared but the object never uses ${{ image }}`},
		},
		"bad output": {
			args: []string{"template", "show", "web-app", "-o", "wide"}, wantCode: cmdutil.ExitUsage, wantErr: []string{`--output must be yaml or json, got "wide"`},
		},
		"render: missing required parameter": {
			args: []string{"template", "render", "web-app", "shop"}, wantCode: cmdutil.ExitUsage,
			wantErr: []string{`template web-app: missing required parameter "apiImage"`, "Template web-app expects: --set webImage"},
		},
		"render: bad --set": {
			args: []string{"template", "render", "web-app", "shop", "--set", "apiImage"}, wantCode: cmdutil.ExitUsage,
			wantErr: []string{`bad --set "apiImage": want NAME=VALUE`, "Write --set NAME=VALUE"},
		},
		"render: bad name": {
			args: []string{"template", "render", "web-app", "Shop"}, wantCode: cmdutil.ExitUsage, wantErr: []string{`invalid name "Shop"`},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			r := env.Run(tc.args...)
			if r.Code != tc.wantCode {
				t.Errorf("exit %d, want %d\nstderr: %s", r.Code, tc.wantCode, r.Stderr)
			}
			for _, want := range tc.wantErr {
				if !strings.Contains(r.Stderr, want) {
					t.Errorf("stderr lacks %q:\n%s", want, r.Stderr)
				}
			}
			if n := strings.Count(strings.TrimSpace(r.Stderr), "\n"); n > 1 {
				t.Errorf("want one line and a hint, got:\n%s", r.Stderr)
			}
		})
	}
}

// evilLavd is what a namespace user shares as "scx-lavd": the catalog's
// name, their own image, in a privileged DaemonSet once applied.
const evilLavd = `apiVersion: templates.kubectl-sched.dev/v1
kind: Template
metadata:
  name: scx-lavd
description: Looks like the catalog's.
parameters:
  - name: nodes
    type: labels
    default: ""
object:
  kind: SchedExt
  spec:
    scheduler:
      image: evil.example/steal:1
    nodeSelector: ${{ nodes }}
`

// evilTemplate is a template named name making kind with a marker the
// catalog's never holds.
func evilTemplate(name, kind string) string {
	spec := map[string]string{
		"UserDeployment": "services:\n      - name: app\n        image: evil.example/steal:1\n        exposure: None\n",
		"Workflow":       "steps:\n      - name: steal\n        task:\n          image: evil.example/steal:1\n",
	}[kind]
	return "apiVersion: templates.kubectl-sched.dev/v1\nkind: Template\nmetadata:\n  name: " + name +
		"\ndescription: Looks like the real one.\nparameters: []\nobject:\n  kind: " + kind + "\n  spec:\n    " + spec
}

// TestNamespaceTemplatesNeverShadow is the attack: a namespace user (only
// edit in their namespace) shares templates named like the catalog's and
// like the cluster's shared ones. Whoever works in that namespace, they
// included, still gets the real ones, and every command says where its
// template came from.
func TestNamespaceTemplatesNeverShadow(t *testing.T) {
	const ns, user = "evil-team", "mallory"
	ctx := context.Background()
	env.Namespace(t, ns)
	// edit's own rules: the aggregation controller that fills edit and
	// view does not run beside envtest's API server.
	if _, err := testenv.BindUser(ctx, env.Client, env.Config, ns, user, "system:aggregate-to-view",
		authorizationv1.ResourceAttributes{Verb: "list", Resource: "configmaps"}); err != nil {
		t.Fatal(err)
	}
	mallory, err := testenv.BindUser(ctx, env.Client, env.Config, ns, user, "system:aggregate-to-edit",
		authorizationv1.ResourceAttributes{Verb: "create", Resource: "configmaps"})
	if err != nil {
		t.Fatal(err)
	}
	shareAs := func(c client.Client, ns, cmName, text string) {
		t.Helper()
		cm := &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: cmName, Namespace: ns, Labels: map[string]string{templates.LabelTemplate: "true"}},
			Data:       map[string]string{templates.ConfigMapKey: text},
		}
		if err := c.Create(ctx, cm); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = env.Client.Delete(context.Background(), cm) })
	}
	// The cluster's own shared template, which the admin wrote.
	shareTemplate(t, templates.SystemNamespace, "team-standard", strings.Replace(teamTemplate, "name: team-app", "name: team-standard", 1))
	// The attack, as mallory.
	shareAs(mallory, ns, "scx-lavd", evilLavd)
	shareAs(mallory, ns, "innocent-name", evilTemplate("web-app", "UserDeployment"))
	shareAs(mallory, ns, "release-workflow", evilTemplate("release-workflow", "Workflow"))
	shareAs(mallory, ns, "team-standard", evilTemplate("team-standard", "UserDeployment"))
	shareAs(mallory, ns, "api-postgres", "apiVersion: templates.kubectl-sched.dev/v1\nkind: Template\n") // broken
	shareAs(mallory, ns, "team-app", teamTemplate)                                                       // a new name: allowed

	notEvil := func(t *testing.T, r plugintest.Result) {
		t.Helper()
		if strings.Contains(r.Stdout, "evil.example") {
			t.Errorf("the namespace's template was used:\n%s", r.Stdout)
		}
	}
	for _, who := range []struct{ name, as string }{{"a colleague (admin)", ""}, {"mallory herself", user}} {
		t.Run(who.name, func(t *testing.T) {
			run := func(args ...string) plugintest.Result {
				t.Helper()
				args = append(args, "-n", ns)
				if who.as != "" {
					args = append(args, "--as", who.as)
				}
				return env.MustRun(t, args...)
			}
			r := run("template", "render", "scx-lavd", "lavd", "--set", "nodes=node.kubectl-sched.dev/pool=batch")
			notEvil(t, r)
			if !strings.HasPrefix(r.Stdout, "# Source: built-in catalog (template scx-lavd)\n") || !strings.Contains(r.Stdout, "name: scx_lavd") {
				t.Errorf("want the catalog's scx-lavd, saying so:\n%s", r.Stdout)
			}
			for _, want := range []string{"template scx-lavd: built-in catalog\n", "warning: ignored template scx-lavd from ConfigMap evil-team/scx-lavd (shared in namespace evil-team): the name is taken by the built-in catalog"} {
				if !strings.Contains(r.Stderr, want) {
					t.Errorf("stderr lacks %q:\n%s", want, r.Stderr)
				}
			}

			r = run("deploy", "shop", "--template", "web-app", "--set", "apiImage=registry.example.com/api:1", "--dry-run=client", "-o", "yaml")
			notEvil(t, r)
			if !strings.Contains(r.Stderr, "template web-app: built-in catalog\n") || !strings.Contains(r.Stderr, "ignored template web-app from ConfigMap evil-team/innocent-name") {
				t.Errorf("deploy: stderr:\n%s", r.Stderr)
			}

			r = run("workflow", "run", "--template", "release-workflow", "--set", "repo=https://example.com/r.git", "--dry-run=client", "-o", "yaml")
			notEvil(t, r)
			if !strings.Contains(r.Stderr, "template release-workflow: built-in catalog\n") {
				t.Errorf("workflow run: stderr:\n%s", r.Stderr)
			}

			// A broken ConfigMap named like a catalog template breaks nothing.
			r = run("template", "render", "api-postgres", "orders", "--set", "image=orders:2", "--secret", "POSTGRES_PASSWORD=x")
			if !strings.Contains(r.Stderr, "template api-postgres: built-in catalog\n") {
				t.Errorf("api-postgres: stderr:\n%s", r.Stderr)
			}

			// A name nobody else has is the namespace's to use.
			r = run("template", "render", "team-app", "a", "--set", "image=team:1")
			if !strings.HasPrefix(r.Stdout, "# Source: ConfigMap evil-team/team-app (shared in namespace evil-team) (template team-app)\n") {
				t.Errorf("team-app:\n%s\n%s", r.Stdout, r.Stderr)
			}
		})
	}

	// The cluster's shared template wins over the namespace's, for whoever
	// can read the cluster's. The list names every winner's source and
	// warns of each namespace template it ignored.
	r := env.MustRun(t, "template", "render", "team-standard", "a", "--set", "image=team:1", "-n", ns)
	notEvil(t, r)
	if !strings.Contains(r.Stderr, "template team-standard: ConfigMap kubectl-sched-system/team-standard (the cluster's shared templates)\n") ||
		!strings.Contains(r.Stderr, "ignored template team-standard from ConfigMap evil-team/team-standard") {
		t.Errorf("team-standard: stderr:\n%s", r.Stderr)
	}
	r = env.MustRun(t, "template", "list", "-n", ns)
	for _, want := range []string{"\nscx-lavd           SchedExt         catalog ", "\nteam-standard      UserDeployment   configmap:kubectl-sched-system/team-standard ", "\nteam-app           UserDeployment   configmap:evil-team/team-app "} {
		if !strings.Contains(r.Stdout, want) {
			t.Errorf("list lacks %q:\n%s", want, r.Stdout)
		}
	}
	for _, name := range []string{"scx-lavd", "web-app", "release-workflow", "team-standard"} {
		if !strings.Contains(r.Stderr, "warning: ignored template "+name+" from ConfigMap evil-team/") {
			t.Errorf("list does not warn of %s:\n%s", name, r.Stderr)
		}
	}
}

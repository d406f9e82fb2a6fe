package templates

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubectl-sched/kubectl-sched/api/substitution"
	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
	"github.com/kubectl-sched/kubectl-sched/plugin/internal/cmdutil"
)

func catalogTemplate(t *testing.T, name string) *Template {
	t.Helper()
	ts, err := Catalog()
	if err != nil {
		t.Fatal(err)
	}
	for _, tmpl := range ts {
		if tmpl.Name() == name {
			return tmpl
		}
	}
	t.Fatalf("no catalog template %s", name)
	return nil
}

func TestCatalog(t *testing.T) {
	ts, err := Catalog()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, tmpl := range ts {
		got[tmpl.Name()] = tmpl.ObjectKind()
	}
	want := map[string]string{
		"web-app": "UserDeployment", "api-postgres": "UserDeployment", "worker": "UserDeployment",
		"agent-task": "AgentTask", "release-workflow": "Workflow", "scx-lavd": "SchedExt",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("catalog (-want +got):\n%s", diff)
	}
}

// parse builds a template around params and object YAML (indented by the
// caller as under "parameters:" and "object:").
func parse(t *testing.T, params, object string) *Template {
	t.Helper()
	tmpl, err := Parse([]byte(doc(params, object)), "test")
	if err != nil {
		t.Fatal(err)
	}
	return tmpl
}

func doc(params, object string) string {
	return "apiVersion: templates.kubectl-sched.dev/v1\nkind: Template\nmetadata:\n  name: t\ndescription: test\n" +
		"parameters:\n" + params + "\nobject:\n" + object + "\n"
}

const taskObject = `  kind: AgentTask
  spec:
    image: ${{ image }}`

func TestRender(t *testing.T) {
	cases := map[string]struct {
		template string // catalog name
		params   map[string]string
		secrets  map[string]string
		// check inspects the object and Secret.
		check func(t *testing.T, obj client.Object, secret *corev1.Secret)
	}{
		"web-app with defaults and the required image": {
			template: "web-app",
			params:   map[string]string{"apiImage": "ghcr.io/example/api:1"},
			check: func(t *testing.T, obj client.Object, secret *corev1.Secret) {
				ud := obj.(*schedv1.UserDeployment)
				want := []schedv1.ServiceSpec{
					{Name: "web", Image: "nginx:1.27", Replicas: ptr.To[int32](2), Exposure: schedv1.ExposurePublic,
						Ports: []schedv1.ServicePort{{Name: "http", Port: 80}},
						Env:   []schedv1.EnvVar{{Name: "API_URL", Value: "http://shop-api:8080"}}},
					{Name: "api", Image: "ghcr.io/example/api:1", Replicas: ptr.To[int32](2), Exposure: schedv1.ExposureInternal,
						Ports: []schedv1.ServicePort{{Name: "http", Port: 8080}}},
				}
				if diff := cmp.Diff(want, ud.Spec.Services); diff != "" {
					t.Errorf("services (-want +got):\n%s", diff)
				}
				if ud.Name != "shop" || ud.Namespace != "team-a" || ud.Annotations[AnnotationTemplate] != "web-app" {
					t.Errorf("metadata = %+v", ud.ObjectMeta)
				}
				if secret != nil || len(ud.Spec.Secrets) != 0 {
					t.Errorf("want no Secret and no reference, got %v and %v", secret, ud.Spec.Secrets)
				}
			},
		},
		"typed integers come from --set text": {
			template: "web-app",
			params:   map[string]string{"apiImage": "api:1", "replicas": "5", "apiPort": "9000"},
			check: func(t *testing.T, obj client.Object, _ *corev1.Secret) {
				s := obj.(*schedv1.UserDeployment).Spec.Services
				if *s[0].Replicas != 5 || *s[1].Replicas != 5 || s[1].Ports[0].Port != 9000 || s[0].Env[0].Value != "http://shop-api:9000" {
					t.Errorf("services = %+v", s)
				}
			},
		},
		"a secret parameter goes into the Secret and the reference, never the object": {
			template: "api-postgres",
			params:   map[string]string{"image": "orders:2"},
			secrets:  map[string]string{"POSTGRES_PASSWORD": "hunter2"},
			check: func(t *testing.T, obj client.Object, secret *corev1.Secret) {
				ud := obj.(*schedv1.UserDeployment)
				if diff := cmp.Diff([]schedv1.SecretReference{{Name: "params", SecretName: "shop-secrets"}}, ud.Spec.Secrets); diff != "" {
					t.Errorf("secret references (-want +got):\n%s", diff)
				}
				if secret == nil || secret.Name != "shop-secrets" || secret.Namespace != "team-a" || string(secret.Data["POSTGRES_PASSWORD"]) != "hunter2" {
					t.Fatalf("secret = %+v", secret)
				}
				// The user writes it: none of the operator's reserved labels.
				if diff := cmp.Diff(map[string]string{LabelPartOf: "kubectl-sched", LabelInstance: "shop"}, secret.Labels); diff != "" {
					t.Errorf("secret labels (-want +got):\n%s", diff)
				}
				b, _ := json.Marshal(ud)
				if strings.Contains(string(b), "hunter2") {
					t.Errorf("the password is in the UserDeployment: %s", b)
				}
				if ud.Spec.Services[0].Env[0].Value != "shop-postgres" || ud.Spec.Config["POSTGRES_DB"] != "app" {
					t.Errorf("spec = %+v", ud.Spec)
				}
			},
		},
		"labels become a node selector": {
			template: "scx-lavd",
			params:   map[string]string{"nodes": "pool=fast,zone=a"},
			check: func(t *testing.T, obj client.Object, _ *corev1.Secret) {
				sx := obj.(*schedv1.SchedExt)
				if diff := cmp.Diff(map[string]string{"pool": "fast", "zone": "a"}, sx.Spec.NodeSelector); diff != "" {
					t.Errorf("nodeSelector (-want +got):\n%s", diff)
				}
				if sx.Namespace != "" || sx.Spec.Scheduler.Name != "scx_lavd" {
					t.Errorf("schedext = %+v", sx)
				}
			},
		},
		"empty labels select every node": {
			template: "scx-lavd",
			params:   map[string]string{"nodes": ""},
			check: func(t *testing.T, obj client.Object, _ *corev1.Secret) {
				if sel := obj.(*schedv1.SchedExt).Spec.NodeSelector; len(sel) != 0 {
					t.Errorf("nodeSelector = %v, want none", sel)
				}
			},
		},
		"workflow step strings escape values; params do not": {
			template: "release-workflow",
			params:   map[string]string{"repo": "https://x/${steps.0.output.sha}", "registry": "r.io/${steps.fetch.output.sha}"},
			check: func(t *testing.T, obj client.Object, _ *corev1.Secret) {
				wf := obj.(*schedv1.Workflow)
				if got := wf.Spec.Params[0].Value; got != "https://x/${steps.0.output.sha}" {
					t.Errorf("param value = %q", got)
				}
				want := []schedv1.EnvVar{{Name: "REGISTRY", Value: "r.io/$${steps.fetch.output.sha}"}, {Name: "NAME", Value: "shop"}, {Name: "SHA", Value: "${steps.0.output.sha}"}}
				if diff := cmp.Diff(want, wf.Spec.Steps[1].Task.Env); diff != "" {
					t.Errorf("build env (-want +got):\n%s", diff)
				}
				if wf.Spec.Timeout.Duration.String() != "30m0s" {
					t.Errorf("timeout = %v", wf.Spec.Timeout)
				}
			},
		},
		"agent task defaults": {
			template: "agent-task",
			check: func(t *testing.T, obj client.Object, _ *corev1.Secret) {
				at := obj.(*schedv1.AgentTask)
				if at.Spec.Image != "busybox:1.36" || *at.Spec.Retries != 0 || at.Spec.Timeout.Duration.String() != "10m0s" || len(at.Spec.Args) != 1 {
					t.Errorf("spec = %+v", at.Spec)
				}
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			in := Input{Name: "shop", Namespace: "team-a", Params: tc.params, Secrets: map[string][]byte{}}
			for k, v := range tc.secrets {
				in.Secrets[k] = []byte(v)
			}
			obj, secret, err := catalogTemplate(t, tc.template).Render(in)
			if err != nil {
				t.Fatal(err)
			}
			tc.check(t, obj, secret)
		})
	}
}

func TestRenderErrors(t *testing.T) {
	cases := map[string]struct {
		template string
		params   map[string]string
		secrets  map[string]string
		wantCode int
		wantErr  []string // substrings of the error, hint included
	}{
		"unknown parameter lists the expected ones": {
			template: "web-app", params: map[string]string{"apiImage": "a", "replica": "3"},
			wantCode: cmdutil.ExitUsage,
			wantErr: []string{`unknown parameter "replica" (did you mean "replicas"?)`,
				`Template web-app expects: --set webImage (default "nginx:1.27"), webPort (integer, default "80"), apiImage (required)`},
		},
		"missing required parameter": {
			template: "web-app", wantCode: cmdutil.ExitUsage,
			wantErr: []string{`template web-app: missing required parameter "apiImage"`, "apiImage (required)"},
		},
		"a required parameter cannot be empty": {
			template: "web-app", params: map[string]string{"apiImage": ""}, wantCode: cmdutil.ExitUsage,
			wantErr: []string{`missing required parameter "apiImage"`},
		},
		"not an integer": {
			template: "web-app", params: map[string]string{"apiImage": "a", "replicas": "three"}, wantCode: cmdutil.ExitUsage,
			wantErr: []string{`parameter "replicas": want an integer, got "three"`},
		},
		"bad labels": {
			template: "scx-lavd", params: map[string]string{"nodes": "pool"}, wantCode: cmdutil.ExitUsage,
			wantErr: []string{`parameter "nodes": want key=value pairs`},
		},
		"missing secret": {
			template: "api-postgres", params: map[string]string{"image": "a"}, wantCode: cmdutil.ExitUsage,
			wantErr: []string{`missing required secret parameter "POSTGRES_PASSWORD"`, "--secret POSTGRES_PASSWORD (required)"},
		},
		"a secret given with --set": {
			template: "api-postgres", params: map[string]string{"image": "a", "POSTGRES_PASSWORD": "x"}, secrets: map[string]string{"POSTGRES_PASSWORD": "y"},
			wantCode: cmdutil.ExitUsage, wantErr: []string{`"POSTGRES_PASSWORD" is a secret parameter: give it with --secret`},
		},
		"a parameter given with --secret": {
			template: "api-postgres", params: map[string]string{"image": "a"}, secrets: map[string]string{"POSTGRES_PASSWORD": "y", "port": "zz9"},
			wantCode: cmdutil.ExitUsage, wantErr: []string{`"port" is not a secret parameter: give it with --set port=VALUE`},
		},
		"every problem at once": {
			template: "web-app", params: map[string]string{"nope": "1", "webPort": "x"}, wantCode: cmdutil.ExitUsage,
			wantErr: []string{`unknown parameter "nope"`, `parameter "webPort": want an integer`, `missing required parameter "apiImage"`},
		},
		"a value that breaks the kind is a template error": {
			template: "agent-task", params: map[string]string{"timeout": "soon"}, wantCode: cmdutil.ExitError,
			wantErr: []string{"invalid template catalog: the object does not decode into a AgentTask"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			in := Input{Name: "shop", Namespace: "default", Params: tc.params, Secrets: map[string][]byte{}}
			for k, v := range tc.secrets {
				in.Secrets[k] = []byte(v)
			}
			_, _, err := catalogTemplate(t, tc.template).Render(in)
			if err == nil {
				t.Fatal("want an error")
			}
			if code := cmdutil.ExitCode(err); code != tc.wantCode {
				t.Errorf("exit code %d, want %d (%v)", code, tc.wantCode, err)
			}
			for _, want := range tc.wantErr {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error lacks %q:\n%v", want, err)
				}
			}
			for _, v := range tc.secrets {
				if strings.Contains(err.Error(), v) {
					t.Errorf("error holds a secret value: %v", err)
				}
			}
		})
	}
}

func TestPlaceholders(t *testing.T) {
	tmpl := parse(t, `  - name: a
    default: A
  - name: count
    type: integer
    default: 7
  - name: b
    type: boolean
    default: true`, `  kind: UserDeployment
  spec:
    config:
      plain: ${{a}}
      spaced: "${{   a }}"
      twice: ${{ a }}-${{ a }}
      escaped: $${{ a }} is ${{ a }}
      dollars: $$ and $ and ${ and ${a}
      built-in: ${{ name }}.${{ namespace }}
      number-in-text: n=${{ count }}
      empty: ""
    state: Running
    services:
      - name: web
        image: x
        replicas: ${{ count }}
        exposure: None
    placement:
      multiZone: ${{ b }}`)
	obj, _, err := tmpl.Render(Input{Name: "app", Namespace: "ns", Params: map[string]string{"a": "v"}})
	if err != nil {
		t.Fatal(err)
	}
	ud := obj.(*schedv1.UserDeployment)
	want := map[string]string{
		"plain": "v", "spaced": "v", "twice": "v-v", "escaped": "${{ a }} is v", "dollars": "$$ and $ and ${ and ${a}",
		"built-in": "app.ns", "number-in-text": "n=7", "empty": "",
	}
	if diff := cmp.Diff(want, ud.Spec.Config); diff != "" {
		t.Errorf("config (-want +got):\n%s", diff)
	}
	if *ud.Spec.Services[0].Replicas != 7 || !ud.Spec.Placement.MultiZone {
		t.Errorf("typed values: replicas %d, multiZone %v", *ud.Spec.Services[0].Replicas, ud.Spec.Placement.MultiZone)
	}
	// A value is data, never YAML: it cannot add fields.
	obj, _, err = tmpl.Render(Input{Name: "app", Namespace: "ns", Params: map[string]string{"a": "v\n    injected: true"}})
	if err != nil {
		t.Fatal(err)
	}
	if got := obj.(*schedv1.UserDeployment).Spec.Config["plain"]; got != "v\n    injected: true" {
		t.Errorf("plain = %q", got)
	}
}

func TestParseErrors(t *testing.T) {
	const imageParam = "  - name: image\n    default: busybox"
	cases := map[string]struct {
		text    string
		wantErr string
	}{
		"wrong apiVersion": {
			text:    strings.Replace(doc(imageParam, taskObject), "templates.kubectl-sched.dev/v1", "v2", 1),
			wantErr: `apiVersion must be templates.kubectl-sched.dev/v1, got "v2"`,
		},
		"unknown top-level field": {
			text: doc(imageParam, taskObject) + "parameter: []\n", wantErr: `unknown field "parameter"`,
		},
		"bad template name": {
			text: strings.Replace(doc(imageParam, taskObject), "name: t\n", "name: Web_App\n", 1), wantErr: `metadata.name "Web_App"`,
		},
		"no description": {
			text: strings.Replace(doc(imageParam, taskObject), "description: test\n", "", 1), wantErr: "description is required",
		},
		"undeclared placeholder": {
			text: doc(imageParam, taskObject+"\n    args:\n      - ${{ imag }}"), wantErr: "object.spec.args.0: ${{ imag }} names no declared parameter",
		},
		"unused parameter": {
			text: doc(imageParam+"\n  - name: extra\n    default: x", taskObject), wantErr: `parameter "extra" is declared but the object never uses ${{ extra }}`,
		},
		"secret in the object": {
			text:    doc(imageParam+"\n  - name: TOKEN\n    secret: true", taskObject+"\n    args:\n      - ${{ TOKEN }}"),
			wantErr: "${{ TOKEN }} is a secret parameter",
		},
		"reserved name": {
			text: doc(imageParam+"\n  - name: name\n    default: x", taskObject), wantErr: "the name is built in",
		},
		"duplicate parameter": {
			text: doc(imageParam+"\n"+imageParam, taskObject), wantErr: `parameter "image" is declared twice`,
		},
		"required with a default": {
			text: doc(imageParam+"\n    required: true", taskObject), wantErr: "a required parameter has no default",
		},
		"secret with a default": {
			text: doc(imageParam+"\n  - name: T\n    secret: true\n    default: x", taskObject), wantErr: "a secret parameter has no default",
		},
		"default of the wrong type": {
			text: doc(imageParam+"\n  - name: n\n    type: integer\n    default: many", taskObject+"\n    retries: ${{ n }}"), wantErr: `default: want an integer, got "many"`,
		},
		"optional integer without default": {
			text: doc(imageParam+"\n  - name: n\n    type: integer", taskObject+"\n    retries: ${{ n }}"), wantErr: "an optional integer parameter needs a default",
		},
		"unknown type": {
			text: doc(imageParam+"\n  - name: n\n    type: float\n    default: 1", taskObject), wantErr: `type must be string, integer, boolean or labels, got "float"`,
		},
		"object kind": {
			text: doc(imageParam, "  kind: Deployment\n  spec:\n    image: ${{ image }}"), wantErr: `object.kind must be one of UserDeployment, AgentTask, Workflow, SchedExt, got "Deployment"`,
		},
		"a CronWorkflow": {
			text:    doc(imageParam, "  kind: CronWorkflow\n  spec:\n    schedule: '0 2 * * *'\n    workflowSpec:\n      steps:\n      - name: a\n        task:\n          image: ${{ image }}"),
			wantErr: "make the template a Workflow and put it on a schedule with 'kubectl sched workflow schedule NAME --cron ... --template T'",
		},
		"object name set": {
			text: doc(imageParam, taskObject+"\n  metadata:\n    name: fixed"), wantErr: "object.metadata.name is set by the command",
		},
		"unknown field in the object": {
			text: doc(imageParam, taskObject+"\n    retryCount: 3"), wantErr: `the object does not decode into a AgentTask: unknown field "spec.retryCount"`,
		},
		"string placeholder in an integer field": {
			text: doc(imageParam, taskObject+"\n    retries: ${{ image }}"), wantErr: "the object does not decode into a AgentTask",
		},
		"malformed placeholder": {
			text: doc(imageParam, taskObject+"\n    args:\n      - ${{ image"), wantErr: `"${{" at offset 0 has no closing "}}"`,
		},
		"placeholder that is not a name": {
			text: doc(imageParam, taskObject+"\n    args:\n      - ${{ .image }}"), wantErr: "is not a placeholder",
		},
		"placeholder in a key": {
			text:    doc(imageParam, "  kind: SchedExt\n  spec:\n    scheduler:\n      image: ${{ image }}\n    nodeSelector:\n      ${{ image }}: x"),
			wantErr: "placeholders are only allowed in values, not in keys",
		},
		"secret parameters on a SchedExt": {
			text:    doc(imageParam+"\n  - name: T\n    secret: true", "  kind: SchedExt\n  spec:\n    scheduler:\n      image: ${{ image }}"),
			wantErr: "a SchedExt is cluster scoped",
		},
		"workflow with a forward reference": {
			text: doc(imageParam, `  kind: Workflow
  spec:
    steps:
      - name: a
        task:
          image: ${{ image }}
          args:
            - ${steps.b.output.x}
      - name: b
        task:
          image: x`), wantErr: "steps",
		},
		"not YAML": {
			text: "apiVersion: [", wantErr: "invalid template test",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := Parse([]byte(tc.text), "test")
			if err == nil {
				t.Fatalf("want an error with %q", tc.wantErr)
			}
			if !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("error lacks %q:\n%v", tc.wantErr, err)
			}
		})
	}
}

func TestScan(t *testing.T) {
	cases := map[string]struct {
		in      string
		want    string // names shown as <NAME>
		wantErr string
	}{
		"no placeholder":        {in: "plain $x ${y} {{z}}", want: "plain $x ${y} {{z}}"},
		"one":                   {in: "a${{ b }}c", want: "a<b>c"},
		"no spaces":             {in: "${{b}}", want: "<b>"},
		"escaped":               {in: "$${{ b }}", want: "${{ b }}"},
		"escaped then real":     {in: "$${{b}}${{c}}", want: "${{b}}<c>"},
		"dollar before escape":  {in: "$$${{b}}", want: "$${{b}}"},
		"unclosed":              {in: "x ${{ b", wantErr: `"${{" at offset 2 has no closing "}}"`},
		"empty":                 {in: "${{}}", wantErr: "is not a placeholder"},
		"expression":            {in: "${{ a + b }}", wantErr: "is not a placeholder"},
		"close braces in text":  {in: "}} ${{a}} }}", want: "}} <a> }}"},
		"adjacent":              {in: "${{a}}${{b}}", want: "<a><b>"},
		"hyphen and underscore": {in: "${{ _a-b }}", want: "<_a-b>"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var b strings.Builder
			err := scan(tc.in, func(l string) { b.WriteString(l) }, func(n string, _ int) error { b.WriteString("<" + n + ">"); return nil })
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if b.String() != tc.want {
				t.Errorf("got %q, want %q", b.String(), tc.want)
			}
		})
	}
}

// TestRenderEscapesReferenceStrings: a value inserted wherever the operator
// reads ${...} references (the task strings of steps and finally steps, and
// forEach.from) arrives literally when the step is resolved: a parameter
// cannot read another step's outputs, a param or ${item}. forEach.items are
// text the operator never reads, and stay as given.
func TestRenderEscapesReferenceStrings(t *testing.T) {
	const params = `  - name: v
    required: true
  - name: src
    default: list`
	tmpl := parse(t, params, `  kind: Workflow
  spec:
    steps:
      - name: secret
        task:
          image: busybox
      - name: loop
        forEach:
          items:
            - ${{ v }}
        task:
          image: busybox
          args:
            - ${item}/${{ v }}
      - name: from
        dependsOn: [secret]
        forEach:
          from: ${steps.secret.output.${{ src }}}
        task:
          image: busybox
          args:
            - ${{ v }}
    finally:
      - name: report
        task:
          image: busybox${{ v }}
          command:
            - ${{ v }}
          args:
            - ${workflow.phase} ${{ v }}
          env:
            - name: V
              value: ${{ v }}
      - name: each
        forEach:
          from: ${steps.secret.output.${{ src }}}
        task:
          image: busybox
          args:
            - ${{ v }}`)
	for _, v := range []string{"${steps.secret.output.token}", "${steps.0.output.token}", "${params.p}", "${item}", "${workflow.phase}", "$${x}"} {
		t.Run(v, func(t *testing.T) {
			obj, _, err := tmpl.Render(Input{Name: "wf", Namespace: "ns", Params: map[string]string{"v": v}})
			if err != nil {
				t.Fatal(err)
			}
			spec := obj.(*schedv1.Workflow).Spec
			values := substitution.Values{
				Params:    map[string]string{"p": "param"},
				StepNames: []string{"secret", "loop", "from", "report", "each"},
				Outputs:   []map[string]string{{"token": "hunter2", "list": `["a"]`}},
				MainSteps: 3,
			}
			resolve := func(i int, task schedv1.AgentTaskSpec, v substitution.Values) schedv1.AgentTaskSpec {
				t.Helper()
				out, err := substitution.ResolveTask(i, task, v)
				if err != nil {
					t.Fatal(err)
				}
				return out
			}

			// A loop's items are text: as given, and ${item} inserts them
			// as they are.
			if diff := cmp.Diff([]string{v}, spec.Steps[1].ForEach.Items); diff != "" {
				t.Errorf("forEach.items (-want +got):\n%s", diff)
			}
			loop := values
			loop.Loop, loop.Item = true, spec.Steps[1].ForEach.Items[0]
			if got := resolve(1, spec.Steps[1].Task, loop).Args; !cmp.Equal(got, []string{v + "/" + v}) {
				t.Errorf("loop step args = %q, want %q", got, v+"/"+v)
			}
			loop.Item = "a"
			if got := resolve(2, spec.Steps[2].Task, loop).Args; !cmp.Equal(got, []string{v}) {
				t.Errorf("forEach.from step args = %q, want %q", got, v)
			}

			fin := values
			fin.Phase = "Failed"
			want := schedv1.AgentTaskSpec{
				Image: "busybox" + v, Command: []string{v}, Args: []string{"Failed " + v},
				Env: []schedv1.EnvVar{{Name: "V", Value: v}},
			}
			if diff := cmp.Diff(want, resolve(fin.FinallyIndex(0), spec.Finally[0].Task, fin)); diff != "" {
				t.Errorf("finally step (-want +got):\n%s", diff)
			}
			fin.Loop, fin.Item = true, "a"
			if got := resolve(fin.FinallyIndex(1), spec.Finally[1].Task, fin).Args; !cmp.Equal(got, []string{v}) {
				t.Errorf("finally forEach step args = %q, want %q", got, v)
			}
		})
	}

	// forEach.from: a value can name a key in the template's reference, but
	// cannot be the reference.
	whole := doc("  - name: src\n    default: ${steps.a.output.list}", `  kind: Workflow
  spec:
    steps:
      - name: a
        task:
          image: busybox
      - name: b
        forEach:
          from: ${{ src }}
        task:
          image: busybox`)
	if _, err := Parse([]byte(whole), "test"); err == nil || !strings.Contains(err.Error(), "forEach.from must be one reference") {
		t.Errorf("a template whose forEach.from is a value: error %v, want forEach.from refused", err)
	}
	obj, _, err := tmpl.Render(Input{Name: "wf", Namespace: "ns", Params: map[string]string{"v": "x", "src": "token"}})
	if err != nil {
		t.Fatal(err)
	}
	if got := obj.(*schedv1.Workflow).Spec.Finally[1].ForEach.From; got != "${steps.secret.output.token}" {
		t.Errorf("finally forEach.from = %q", got)
	}
}

// TestWhenTakesNoPlaceholders: a when is CEL, which no escaping makes text.
func TestWhenTakesNoPlaceholders(t *testing.T) {
	const b = `
      - name: b
        when: params.x == '${{ env }}'
        task:
          image: busybox`
	for list, rest := range map[string]string{"steps": b, "finally": "\n    finally:" + b} {
		text := doc("  - name: env\n    default: prod", `  kind: Workflow
  spec:
    steps:
      - name: a
        task:
          image: busybox`+rest)
		_, err := Parse([]byte(text), "test")
		at := map[string]string{"steps": "steps.1", "finally": "finally.0"}[list]
		if want := "object.spec." + at + ".when: ${{ env }} in a when would be CEL"; err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %v, want %q", list, err, want)
		}
	}
}

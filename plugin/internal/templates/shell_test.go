package templates

import (
	"path"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kubectl-sched/kubectl-sched/api/substitution"
	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
)

// taskSpecs are the container specs a catalog template's object runs: the
// AgentTask's own, or each Workflow step's, by where they are.
func taskSpecs(t *testing.T, tmpl *Template) map[string]schedv1.AgentTaskSpec {
	t.Helper()
	obj, _, err := tmpl.Render(exampleInput(tmpl))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]schedv1.AgentTaskSpec{}
	switch o := obj.(type) {
	case *schedv1.AgentTask:
		out["spec"] = o.Spec
	case *schedv1.Workflow:
		for _, s := range o.Spec.Steps {
			out["step "+s.Name] = s.Task
		}
	}
	return out
}

func exampleInput(tmpl *Template) Input {
	in := Input{Name: "example", Namespace: "default", Params: map[string]string{}, Secrets: map[string][]byte{}}
	for _, p := range tmpl.Parameters {
		switch {
		case p.Secret:
			in.Secrets[p.Name] = []byte("example")
		case p.Required:
			in.Params[p.Name] = exampleValue(p)
		}
	}
	return in
}

// script is the shell script a task runs with sh -c, if it runs one.
func script(spec schedv1.AgentTaskSpec) (string, bool) {
	words := slices.Concat(spec.Command, spec.Args)
	for i := 0; i+2 < len(words); i++ {
		switch path.Base(words[i]) {
		case "sh", "bash", "ash", "dash", "zsh":
			if words[i+1] == "-c" {
				return words[i+2], true
			}
		}
	}
	return "", false
}

var placeholderOrRef = regexp.MustCompile(`\$\{\{|\$\{(params|steps)\.`)

// Every shell script in the catalog is constant text: values reach it as
// environment variables, never inside it, where they would be shell. The
// agent-task template's script parameter is the one exception: the whole
// script is the user's, not a value put into one.
func TestCatalogScriptsHoldNoValues(t *testing.T) {
	ts, err := Catalog()
	if err != nil {
		t.Fatal(err)
	}
	for _, tmpl := range ts {
		for where, spec := range taskSpecs(t, tmpl) {
			s, ok := script(spec)
			if !ok {
				continue
			}
			if tmpl.Name() == "agent-task" {
				continue // checked below: the script is the parameter itself
			}
			if placeholderOrRef.MatchString(rawScript(t, tmpl, where)) || placeholderOrRef.MatchString(s) {
				t.Errorf("%s, %s: a value is put inside the shell script %q; pass it in env and use \"$VAR\"", tmpl.Name(), where, s)
			}
		}
	}
	// agent-task: the script is exactly the parameter, nothing around it.
	at := catalogTemplate(t, "agent-task")
	if args := at.Object["spec"].(map[string]any)["args"].([]any); len(args) != 1 || strings.TrimSpace(args[0].(string)) != "${{ script }}" {
		t.Errorf("agent-task's script argument is %v, want exactly ${{ script }}", args)
	}
}

// rawScript is the script as the template writes it, before rendering
// fills ${{ }} placeholders.
func rawScript(t *testing.T, tmpl *Template, where string) string {
	t.Helper()
	spec := tmpl.Object["spec"].(map[string]any)
	task := spec
	if name, ok := strings.CutPrefix(where, "step "); ok {
		for _, s := range spec["steps"].([]any) {
			if s.(map[string]any)["name"] == name {
				task = s.(map[string]any)["task"].(map[string]any)
			}
		}
	}
	var words []string
	for _, k := range []string{"command", "args"} {
		for _, w := range toSlice(task[k]) {
			words = append(words, w.(string))
		}
	}
	return strings.Join(words, " ")
}

func toSlice(v any) []any {
	s, _ := v.([]any)
	return s
}

// The release workflow rendered with hostile values, and then resolved as
// the operator resolves each step with hostile params and outputs: the
// commands and scripts are the same text as with harmless values; the
// hostile values are only ever environment variables.
func TestReleaseWorkflowScriptsAreConstant(t *testing.T) {
	const hostile = `x"; touch /tmp/pwned; echo "$(id)` + "`id`\n--upload-pack=touch /tmp/pwned"
	tmpl := catalogTemplate(t, "release-workflow")
	resolve := func(repo, registry, output string) []schedv1.AgentTaskSpec {
		t.Helper()
		obj, _, err := tmpl.Render(Input{Name: "rel", Namespace: "default", Params: map[string]string{"repo": repo, "registry": registry}})
		if err != nil {
			t.Fatal(err)
		}
		wf := obj.(*schedv1.Workflow)
		v := substitution.Values{Params: map[string]string{}}
		for _, p := range wf.Spec.Params {
			v.Params[p.Name] = p.Value
		}
		for _, s := range wf.Spec.Steps {
			v.StepNames = append(v.StepNames, s.Name)
			v.Outputs = append(v.Outputs, map[string]string{"sha": output, "image": output})
		}
		var specs []schedv1.AgentTaskSpec
		for i, s := range wf.Spec.Steps {
			spec, err := substitution.ResolveTask(i, s.Task, v)
			if err != nil {
				t.Fatal(err)
			}
			specs = append(specs, spec)
		}
		return specs
	}
	harmless := resolve("https://example.com/shop.git", "registry.example.com", "0a8beffc2418")
	evil := resolve(hostile, hostile, hostile)
	if len(harmless) != 3 {
		t.Fatalf("want 3 steps, got %d", len(harmless))
	}
	for i := range harmless {
		if diff := cmp.Diff(slices.Concat(harmless[i].Command, harmless[i].Args), slices.Concat(evil[i].Command, evil[i].Args)); diff != "" {
			t.Errorf("step %d: hostile values changed what runs (-harmless +hostile):\n%s", i, diff)
		}
		if strings.Contains(strings.Join(slices.Concat(evil[i].Command, evil[i].Args), " "), "pwned") {
			t.Errorf("step %d: a hostile value is in the command line: %q", i, evil[i].Args)
		}
		inEnv := false
		for _, e := range evil[i].Env {
			inEnv = inEnv || strings.Contains(e.Value, "pwned")
		}
		if !inEnv {
			t.Errorf("step %d: want the hostile value passed as an environment variable, env %v", i, evil[i].Env)
		}
	}
}

package substitution

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
)

// goodWorkflow uses every form: index, name, param, escape.
func goodWorkflow() *v1alpha1.WorkflowSpec {
	return &v1alpha1.WorkflowSpec{
		Params: []v1alpha1.WorkflowParam{{Name: "tag", Value: "v1"}, {Name: "registry", Value: "r.example"}},
		Steps: []v1alpha1.WorkflowStep{
			{Name: "fetch", Task: v1alpha1.AgentTaskSpec{
				Image: "alpine:${params.tag}",
				Args:  []string{"--out", "$HOME/src", "literal $${steps.9.output.x}"},
			}},
			{Name: "build", Task: v1alpha1.AgentTaskSpec{
				Image:   "${params.registry}/builder",
				Command: []string{"build", "--src=${steps.0.output.src}"},
				Env: []v1alpha1.EnvVar{
					{Name: "REV", Value: "${steps.fetch.output.rev}"},
					{Name: "FROM", ValueFrom: nil},
				},
			}},
			{Name: "report", Task: v1alpha1.AgentTaskSpec{
				Image: "reporter",
				Args:  []string{"${steps.build.output.digest}@${steps.1.output.image.tag}", "${steps.0.output.src}", "${params.tag}"},
			}},
		},
	}
}

func invalid(path, detail string) *field.Error {
	return &field.Error{Type: field.ErrorTypeInvalid, Field: path, BadValue: field.OmitValueType{}, Detail: detail}
}

func notFoundErr(path, detail string) *field.Error {
	return &field.Error{Type: field.ErrorTypeNotFound, Field: path, BadValue: field.OmitValueType{}, Detail: detail}
}

func TestValidateWorkflow(t *testing.T) {
	const rule = "a step can only use outputs of earlier steps"
	tests := map[string]struct {
		edit func(*v1alpha1.WorkflowSpec)
		want field.ErrorList
	}{
		"good": {edit: func(*v1alpha1.WorkflowSpec) {}},
		"syntax error in image": {
			edit: func(s *v1alpha1.WorkflowSpec) { s.Steps[0].Task.Image = "alpine:${params.tag" },
			want: field.ErrorList{invalid("spec.steps[0].task.image",
				`step "fetch": "${params.tag" at byte 7 has no closing "}"; `+SyntaxHint)},
		},
		"syntax error in command": {
			edit: func(s *v1alpha1.WorkflowSpec) { s.Steps[1].Task.Command[1] = "${steps.fetch.outputs.src}" },
			want: field.ErrorList{invalid("spec.steps[1].task.command[1]",
				`step "build": "${steps.fetch.outputs.src}" at byte 0 says "outputs" where it should say "output"; `+SyntaxHint)},
		},
		"later step by name": {
			edit: func(s *v1alpha1.WorkflowSpec) { s.Steps[1].Task.Command[1] = "${steps.report.output.x}" },
			want: field.ErrorList{invalid("spec.steps[1].task.command[1]",
				`step "build" uses ${steps.report.output.x}, but step "report" runs after it; `+rule)},
		},
		"later step by index": {
			edit: func(s *v1alpha1.WorkflowSpec) { s.Steps[0].Task.Args[0] = "${steps.2.output.x}" },
			want: field.ErrorList{invalid("spec.steps[0].task.args[0]",
				`step "fetch" uses ${steps.2.output.x}, but step 2 ("report") runs after it; `+rule)},
		},
		"own step by name": {
			edit: func(s *v1alpha1.WorkflowSpec) { s.Steps[2].Task.Args[1] = "${steps.report.output.x}" },
			want: field.ErrorList{invalid("spec.steps[2].task.args[1]",
				`step "report" uses ${steps.report.output.x}, its own output; `+rule)},
		},
		"own step by index": {
			edit: func(s *v1alpha1.WorkflowSpec) { s.Steps[1].Task.Env[0].Value = "${steps.1.output.x}" },
			want: field.ErrorList{invalid("spec.steps[1].task.env[0].value",
				`step "build" uses ${steps.1.output.x}, its own output; `+rule)},
		},
		"unknown index": {
			edit: func(s *v1alpha1.WorkflowSpec) { s.Steps[2].Task.Args[1] = "${steps.3.output.x}" },
			want: field.ErrorList{notFoundErr("spec.steps[2].task.args[1]",
				`step "report" uses ${steps.3.output.x}, but there is no step 3: the workflow has 3 steps, 0 to 2`)},
		},
		"unknown name": {
			edit: func(s *v1alpha1.WorkflowSpec) { s.Steps[2].Task.Args[1] = "${steps.deploy.output.x}" },
			want: field.ErrorList{notFoundErr("spec.steps[2].task.args[1]",
				`step "report" uses ${steps.deploy.output.x}, but no step is named "deploy"; the steps before it are: fetch, build`)},
		},
		"unknown name in first step": {
			edit: func(s *v1alpha1.WorkflowSpec) { s.Steps[0].Task.Args[0] = "${steps.deploy.output.x}" },
			want: field.ErrorList{notFoundErr("spec.steps[0].task.args[0]",
				`step "fetch" uses ${steps.deploy.output.x}, but no step is named "deploy"; it is the first step, so it can use no outputs`)},
		},
		"unknown param": {
			//nolint:misspell // a misspelled param is the case
			edit: func(s *v1alpha1.WorkflowSpec) { s.Steps[1].Task.Image = "${params.regsitry}/builder" },
			want: field.ErrorList{notFoundErr("spec.steps[1].task.image",
				`step "build" uses ${params.regsitry}, but spec.params has no param "regsitry"; params are: tag, registry`)}, //nolint:misspell // as above
		},
		"no params at all": {
			edit: func(s *v1alpha1.WorkflowSpec) {
				s.Params = nil
				s.Steps[0].Task.Image = "alpine"
				s.Steps[1].Task.Image = "b"
			},
			want: field.ErrorList{notFoundErr("spec.steps[2].task.args[2]",
				`step "report" uses ${params.tag}, but spec.params has no param "tag"; spec.params is empty`)},
		},
		"step without a name yet": {
			edit: func(s *v1alpha1.WorkflowSpec) { s.Steps[0].Name = ""; s.Steps[0].Task.Args[0] = "${steps.0.output.x}" },
			want: field.ErrorList{
				invalid("spec.steps[0].task.args[0]", `step 0 uses ${steps.0.output.x}, its own output; `+rule),
				notFoundErr("spec.steps[1].task.env[0].value",
					`step "build" uses ${steps.fetch.output.rev}, but no step is named "fetch"; the steps before it are: step 0`),
			},
		},
		"same reference twice reported once": {
			edit: func(s *v1alpha1.WorkflowSpec) { s.Steps[0].Task.Args[0] = "${params.x}-${params.x}-${params.y}" },
			want: field.ErrorList{
				notFoundErr("spec.steps[0].task.args[0]", `step "fetch" uses ${params.x}, but spec.params has no param "x"; params are: tag, registry`),
				notFoundErr("spec.steps[0].task.args[0]", `step "fetch" uses ${params.y}, but spec.params has no param "y"; params are: tag, registry`),
			},
		},
		"escaped references are not checked": {
			edit: func(s *v1alpha1.WorkflowSpec) {
				s.Steps[0].Task.Args[0] = "$${steps.7.output.x} $${params.nope} $${foo"
			},
		},
		"errors in several fields": {
			edit: func(s *v1alpha1.WorkflowSpec) {
				s.Steps[0].Task.Image = "${foo}"
				s.Steps[2].Task.Args = []string{"ok", "${steps.9.output.a}"}
			},
			want: field.ErrorList{
				invalid("spec.steps[0].task.image", `step "fetch": "${foo}" at byte 0 starts with "foo"; a reference starts with "steps.", "params." or "workflow.", or is ${item}; `+SyntaxHint),
				notFoundErr("spec.steps[2].task.args[1]", `step "report" uses ${steps.9.output.a}, but there is no step 9: the workflow has 3 steps, 0 to 2`),
			},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			spec := goodWorkflow()
			tc.edit(spec)
			got := ValidateWorkflow(spec)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("ValidateWorkflow (-want +got):\n%s", diff)
			}
		})
	}
}

func TestValidateWorkflowNil(t *testing.T) {
	if errs := ValidateWorkflow(nil); errs != nil {
		t.Errorf("ValidateWorkflow(nil) = %v", errs)
	}
}

func TestValidateWorkflowErrorText(t *testing.T) {
	spec := goodWorkflow()
	spec.Steps[1].Task.Command[1] = "${steps.report.output.x}"
	got := ValidateWorkflow(spec).ToAggregate().Error()
	want := `spec.steps[1].task.command[1]: Invalid value: step "build" uses ${steps.report.output.x}, ` +
		`but step "report" runs after it; a step can only use outputs of earlier steps`
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

// TestValidateForEach: ${item} only in a forEach step's task; forEach
// with one of items and from, within bounds, not on an approval; from one
// reference to an output the step may use, or a declared param.
func TestValidateForEach(t *testing.T) {
	loop := func(fe v1alpha1.ForEach, args ...string) func(*v1alpha1.WorkflowSpec) {
		return func(s *v1alpha1.WorkflowSpec) {
			s.Steps[2].ForEach = &fe
			s.Steps[2].Task.Args = append(s.Steps[2].Task.Args, args...)
		}
	}
	many := make([]string, 101)
	for i := range many {
		many[i] = "x"
	}
	tests := map[string]struct {
		edit func(*v1alpha1.WorkflowSpec)
		want field.ErrorList
	}{
		"items and ${item}":                {edit: loop(v1alpha1.ForEach{Items: []string{"eu", "us"}, MaxParallel: 1}, "--region=${item}")},
		"from an earlier step's output":    {edit: loop(v1alpha1.ForEach{From: "${steps.fetch.output.regions}"}, "${item}")},
		"from an earlier step by index":    {edit: loop(v1alpha1.ForEach{From: "${steps.1.output.regions}"}, "${item}")},
		"from a param":                     {edit: loop(v1alpha1.ForEach{From: "${params.tag}", MaxParallel: 100})},
		"a literal $${item} outside loops": {edit: func(s *v1alpha1.WorkflowSpec) { s.Steps[0].Task.Args[0] = "$${item}" }},
		"${item} in a step without forEach": {
			edit: func(s *v1alpha1.WorkflowSpec) { s.Steps[1].Task.Image = "${item}" },
			want: field.ErrorList{invalid("spec.steps[1].task.image", `step "build" uses ${item}, which only the task of a forEach step may use (the item it runs for); add forEach to the step, or write $${item} for the text`)},
		},
		"${item} in a finally step without forEach": {
			edit: func(s *v1alpha1.WorkflowSpec) {
				s.Finally = []v1alpha1.WorkflowStep{{Name: "notify", Task: v1alpha1.AgentTaskSpec{Image: "x", Args: []string{"${item}"}}}}
			},
			want: field.ErrorList{invalid("spec.finally[0].task.args[0]", `finally step "notify" uses ${item}, which only the task of a forEach step may use (the item it runs for); add forEach to the step, or write $${item} for the text`)},
		},
		"a finally step may loop over a step's output": {
			edit: func(s *v1alpha1.WorkflowSpec) {
				s.Finally = []v1alpha1.WorkflowStep{{Name: "notify", ForEach: &v1alpha1.ForEach{From: "${steps.report.output.to}"}, Task: v1alpha1.AgentTaskSpec{Image: "x", Args: []string{"${item}"}}}}
			},
		},
		"items and from": {
			edit: loop(v1alpha1.ForEach{Items: []string{"a"}, From: "${params.tag}"}),
			want: field.ErrorList{invalid("spec.steps[2].forEach", `step "report": forEach has both items and from; set one: items written out, or from, a reference to an output or param holding a JSON array of strings`)},
		},
		"no list": {
			edit: loop(v1alpha1.ForEach{MaxParallel: 2}),
			want: field.ErrorList{field.Required(field.NewPath("spec", "steps").Index(2).Child("forEach"), `step "report": forEach needs a list: items written out (1 to 100), or from, a reference to an output or param holding a JSON array of strings`)},
		},
		"101 items, one too long, maxParallel past 100": {
			edit: func(s *v1alpha1.WorkflowSpec) {
				items := append([]string{}, many...)
				items[3] = strings.Repeat("x", 1025)
				loop(v1alpha1.ForEach{Items: items, MaxParallel: 101})(s)
			},
			want: field.ErrorList{
				field.TooMany(field.NewPath("spec", "steps").Index(2).Child("forEach", "items"), 101, 100),
				field.TooLong(field.NewPath("spec", "steps").Index(2).Child("forEach", "items").Index(3), field.OmitValueType{}, 1024),
				field.Invalid(field.NewPath("spec", "steps").Index(2).Child("forEach", "maxParallel"), int32(101), `step "report": maxParallel must be between 1 and 100 (unset: every item at once)`),
			},
		},
		"an approval": {
			edit: func(s *v1alpha1.WorkflowSpec) {
				s.Steps[2] = v1alpha1.WorkflowStep{Name: "report", Approval: &v1alpha1.StepApproval{}, ForEach: &v1alpha1.ForEach{Items: []string{"a"}}}
			},
			want: field.ErrorList{invalid("spec.steps[2].forEach", `step "report": a forEach step runs its task once per item; it cannot be an approval: put the approval in a step of its own before it`)},
		},
		"from with text around the reference": {
			edit: loop(v1alpha1.ForEach{From: `["${params.tag}"]`}),
			want: field.ErrorList{field.Invalid(field.NewPath("spec", "steps").Index(2).Child("forEach", "from"), `["${params.tag}"]`, `step "report": forEach.from must be one reference and nothing else, to an output (${steps.NAME.output.KEY}) or a param (${params.NAME}) holding a JSON array of strings; for items written out, use forEach.items`)},
		},
		"from ${item}": {
			edit: loop(v1alpha1.ForEach{From: "${item}"}),
			want: field.ErrorList{field.Invalid(field.NewPath("spec", "steps").Index(2).Child("forEach", "from"), "${item}", `step "report": forEach.from must be one reference and nothing else, to an output (${steps.NAME.output.KEY}) or a param (${params.NAME}) holding a JSON array of strings; for items written out, use forEach.items`)},
		},
		"from a malformed reference": {
			edit: loop(v1alpha1.ForEach{From: "${steps.fetch.outputs.x}"}),
			want: field.ErrorList{field.Invalid(field.NewPath("spec", "steps").Index(2).Child("forEach", "from"), "${steps.fetch.outputs.x}", `step "report": "${steps.fetch.outputs.x}" at byte 0 says "outputs" where it should say "output"; `+SyntaxHint)},
		},
		"from its own output": {
			edit: loop(v1alpha1.ForEach{From: "${steps.report.output.x}"}),
			want: field.ErrorList{invalid("spec.steps[2].forEach.from", `step "report" uses ${steps.report.output.x}, its own output; a step can only use outputs of earlier steps`)},
		},
		"from an undeclared param": {
			edit: loop(v1alpha1.ForEach{From: "${params.regions}"}),
			want: field.ErrorList{notFoundErr("spec.steps[2].forEach.from", `step "report" uses ${params.regions}, but spec.params has no param "regions"; params are: tag, registry`)},
		},
		"from a step it does not depend on": {
			edit: func(s *v1alpha1.WorkflowSpec) {
				s.Steps[1].DependsOn = []string{"fetch"}
				s.Steps[2].DependsOn = []string{"fetch"}
				s.Steps[2].Task.Args = []string{"${steps.0.output.src}"}
				loop(v1alpha1.ForEach{From: "${steps.build.output.list}"})(s)
			},
			want: field.ErrorList{invalid("spec.steps[2].forEach.from", `step "report" uses ${steps.build.output.list}, but it does not depend on step "build", directly or through other steps; add "build" to its dependsOn`)},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			spec := goodWorkflow()
			tc.edit(spec)
			if diff := cmp.Diff(tc.want, ValidateWorkflow(spec)); diff != "" {
				t.Errorf("ValidateWorkflow (-want +got):\n%s", diff)
			}
		})
	}
}

// TestValidateWorkflowDAG: with dependsOn, a step may use the outputs of
// the steps it depends on, directly or through others, and no others.
func TestValidateWorkflowDAG(t *testing.T) {
	step := func(name string, deps []string, args ...string) v1alpha1.WorkflowStep {
		return v1alpha1.WorkflowStep{Name: name, DependsOn: deps, Task: v1alpha1.AgentTaskSpec{Image: "busybox", Args: args}}
	}
	spec := &v1alpha1.WorkflowSpec{Steps: []v1alpha1.WorkflowStep{
		step("fetch", nil),
		step("lint", []string{"fetch"}, "${steps.fetch.output.dir}"),
		step("test", []string{"fetch"}, "${steps.lint.output.ok}"),
		step("ship", []string{"lint", "test"}, "${steps.fetch.output.dir}", "${steps.0.output.dir}", "${steps.test.output.ok}"),
	}}
	errs := ValidateWorkflow(spec)
	if len(errs) != 1 {
		t.Fatalf("errors %v, want one: test uses lint, which it does not depend on", errs)
	}
	if want := `step "test" uses ${steps.lint.output.ok}, but it does not depend on step "lint", directly or through other steps; add "lint" to its dependsOn`; !strings.Contains(errs[0].Error(), want) || errs[0].Field != "spec.steps[2].task.args[0]" {
		t.Errorf("error %q at %s, want %q at spec.steps[2].task.args[0]", errs[0].Error(), errs[0].Field, want)
	}
}

func TestValidateDependsOn(t *testing.T) {
	spec := &v1alpha1.WorkflowSpec{Steps: []v1alpha1.WorkflowStep{
		{Name: "a", DependsOn: []string{"b"}, Task: v1alpha1.AgentTaskSpec{Image: "x"}},
		{Name: "b", DependsOn: []string{"a", "nope"}, Task: v1alpha1.AgentTaskSpec{Image: "x"}},
	}}
	errs := ValidateWorkflow(spec)
	var got []string
	for _, e := range errs {
		got = append(got, e.Field)
	}
	if diff := cmp.Diff([]string{"spec.steps[0].dependsOn[0]", "spec.steps[1].dependsOn[1]"}, got); diff != "" {
		t.Errorf("fields (-want +got):\n%s\n%v", diff, errs)
	}
	if !strings.Contains(errs[0].Error(), `may only depend on steps listed before it (which rules out cycles); move "b" above it`) {
		t.Errorf("error %q", errs[0])
	}
}

// TestValidateWorkflowFinally: a finally step may use ${workflow.phase},
// any step of spec.steps (by index or name) and the finally steps it
// depends on; a main step may use neither ${workflow.phase} nor a finally
// step's outputs.
func TestValidateWorkflowFinally(t *testing.T) {
	task := func(args ...string) v1alpha1.AgentTaskSpec {
		return v1alpha1.AgentTaskSpec{Image: "busybox", Args: args}
	}
	spec := func() *v1alpha1.WorkflowSpec {
		return &v1alpha1.WorkflowSpec{
			Params: []v1alpha1.WorkflowParam{{Name: "to", Value: "ops"}},
			Steps:  []v1alpha1.WorkflowStep{{Name: "build", Task: task()}, {Name: "test", Task: task()}},
			Finally: []v1alpha1.WorkflowStep{
				{Name: "collect", Task: task("${steps.1.output.report}", "${workflow.phase}")},
				{Name: "notify", DependsOn: []string{"collect"}, Task: task("${steps.build.output.image}", "${steps.collect.output.url}", "${params.to}")},
				{Name: "cleanup", Task: task()},
			},
		}
	}
	if errs := ValidateWorkflow(spec()); len(errs) != 0 {
		t.Fatalf("a good workflow: %v", errs)
	}
	tests := map[string]struct {
		edit       func(*v1alpha1.WorkflowSpec)
		wantField  string
		wantDetail string
	}{
		"a main step uses workflow.phase": {
			edit:      func(s *v1alpha1.WorkflowSpec) { s.Steps[1].Task.Args = []string{"${workflow.phase}"} },
			wantField: "spec.steps[1].task.args[0]", wantDetail: `step "test" uses ${workflow.phase}, which only finally steps may use`,
		},
		"a main step uses a finally step": {
			edit:      func(s *v1alpha1.WorkflowSpec) { s.Steps[1].Task.Args = []string{"${steps.notify.output.x}"} },
			wantField: "spec.steps[1].task.args[0]", wantDetail: `"notify" is a finally step, which runs after every step of spec.steps`,
		},
		"a finally step uses one it does not depend on": {
			edit:      func(s *v1alpha1.WorkflowSpec) { s.Finally[2].Task.Args = []string{"${steps.collect.output.url}"} },
			wantField: "spec.finally[2].task.args[0]", wantDetail: `finally step "cleanup" uses ${steps.collect.output.url}, but it does not depend on finally step "collect", directly or through others (finally steps run side by side); add "collect" to its dependsOn`,
		},
		"a finally step uses a later one": {
			edit:      func(s *v1alpha1.WorkflowSpec) { s.Finally[0].Task.Args = []string{"${steps.notify.output.x}"} },
			wantField: "spec.finally[0].task.args[0]", wantDetail: `finally step "notify" is listed after it`,
		},
		"a finally step uses itself": {
			edit:      func(s *v1alpha1.WorkflowSpec) { s.Finally[0].Task.Args = []string{"${steps.collect.output.x}"} },
			wantField: "spec.finally[0].task.args[0]", wantDetail: "its own output",
		},
		"an index past spec.steps": {
			edit:      func(s *v1alpha1.WorkflowSpec) { s.Finally[0].Task.Args = []string{"${steps.2.output.x}"} },
			wantField: "spec.finally[0].task.args[0]", wantDetail: "there is no step 2: spec.steps has 2 steps, 0 to 1 (an index counts spec.steps only; name a finally step)",
		},
		"an unknown name": {
			edit:      func(s *v1alpha1.WorkflowSpec) { s.Finally[0].Task.Image = "${steps.nope.output.x}" },
			wantField: "spec.finally[0].task.image", wantDetail: `no step or finally step is named "nope"`,
		},
		"a syntax error": {
			edit: func(s *v1alpha1.WorkflowSpec) {
				s.Finally[1].Task.Env = []v1alpha1.EnvVar{{Name: "P", Value: "${workflow.name}"}}
			},
			wantField: "spec.finally[1].task.env[0].value", wantDetail: `finally step "notify": "${workflow.name}" at byte 0 names something of the workflow other than its phase`,
		},
		"dependsOn a main step": {
			edit:      func(s *v1alpha1.WorkflowSpec) { s.Finally[2].DependsOn = []string{"build"} },
			wantField: "spec.finally[2].dependsOn[0]", wantDetail: `depends on "build", a step of spec.steps; a finally step may only depend on finally steps listed before it`,
		},
		"dependsOn a later finally step": {
			edit:      func(s *v1alpha1.WorkflowSpec) { s.Finally[0].DependsOn = []string{"cleanup"} },
			wantField: "spec.finally[0].dependsOn[0]", wantDetail: `may only depend on finally steps listed before it (which rules out cycles); move "cleanup" above it`,
		},
		"dependsOn an unknown step": {
			edit:      func(s *v1alpha1.WorkflowSpec) { s.Finally[1].DependsOn = []string{"collect", "nope"} },
			wantField: "spec.finally[1].dependsOn[1]", wantDetail: `depends on "nope", but no finally step is named so; the finally steps before it are: collect`,
		},
		"too large with its params": {
			edit: func(s *v1alpha1.WorkflowSpec) {
				s.Params[0].Value = strings.Repeat("v", 4096)
				s.Finally[2].Task.Args = []string{strings.Repeat("${params.to}", 4096/len("${params.to}"))}
				s.Finally[2].Task.Command = []string{strings.Repeat("${params.to}", 4096/len("${params.to}"))}
			},
			wantField: "spec.finally[2].task", wantDetail: `finally step 2 ("cleanup") renders to 2.7 MiB`,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			s := spec()
			tc.edit(s)
			errs := ValidateWorkflow(s)
			if len(errs) != 1 || errs[0].Field != tc.wantField || !strings.Contains(errs[0].Detail, tc.wantDetail) {
				t.Errorf("errors %v; want one at %s with %q", errs, tc.wantField, tc.wantDetail)
			}
		})
	}
}

// TestResolveFinallyTask: a finally step gets ${workflow.phase} and, by
// name, a finally step's outputs; an index counts spec.steps only.
func TestResolveFinallyTask(t *testing.T) {
	v := Values{
		StepNames: []string{"build", "collect", "notify"},
		Outputs:   []map[string]string{{"image": "app:1"}, {"url": "https://x"}},
		MainSteps: 1,
		Phase:     "Failed",
	}
	got, err := ResolveTask(v.FinallyIndex(1), v1alpha1.AgentTaskSpec{Image: "i", Args: []string{"${workflow.phase}", "${steps.0.output.image}", "${steps.collect.output.url}"}}, v)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"Failed", "app:1", "https://x"}, got.Args); diff != "" {
		t.Errorf("args (-want +got):\n%s", diff)
	}
	if _, err := ResolveTask(v.FinallyIndex(1), v1alpha1.AgentTaskSpec{Image: "${steps.1.output.url}"}, v); err == nil || !strings.Contains(err.Error(), "an index counts the steps of spec.steps only") {
		t.Errorf("an index past the main steps: %v", err)
	}
	v.Phase = ""
	if _, err := ResolveTask(0, v1alpha1.AgentTaskSpec{Image: "${workflow.phase}"}, v); err == nil || !strings.Contains(err.Error(), "which only finally steps may use") {
		t.Errorf("workflow.phase in a main step: %v", err)
	}
}

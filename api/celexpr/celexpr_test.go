package celexpr

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
)

func input() Input {
	return Input{
		Steps: map[string]Step{
			"test":      {Phase: "Succeeded", Outputs: map[string]string{"result": "passed", "image.tag": "v1", "count": "42"}},
			"unit-test": {Phase: "Failed", Outputs: map[string]string{}},
		},
		Params: map[string]string{"env": "prod"},
		Phase:  "Failed",
	}
}

func TestEval(t *testing.T) {
	cases := map[string]struct {
		expr  string
		scope Scope
		want  bool
	}{
		"an output":                   {expr: "steps.test.outputs.result == 'passed'", want: true},
		"a param":                     {expr: "params.env == 'staging'", want: false},
		"a phase, by index for a '-'": {expr: "steps['unit-test'].phase == 'Failed'", want: true},
		"a dotted key":                {expr: "steps.test.outputs['image.tag'].startsWith('v')", want: true},
		"has() on a missing key":      {expr: "has(steps.test.outputs.missing)", want: false},
		"an optional with a default":  {expr: "steps.test.outputs.?missing.orValue('x') == 'x'", want: true},
		"the strings extension":       {expr: "'ok,passed'.split(',').exists(s, s == steps.test.outputs.result)", want: true},
		"a number from a string":      {expr: "int(steps.test.outputs['count']) > 40", want: true},
		"a loop over the outputs":     {expr: "steps.test.outputs.exists(k, steps.test.outputs[k] == '42')", want: true},
		"workflow.phase when finally": {expr: "workflow.phase == 'Failed'", scope: Finally, want: true},
		"steps in finally too":        {expr: "steps.test.phase == 'Succeeded' && workflow.phase != 'Succeeded'", scope: Finally, want: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			x, err := Compile(tc.expr, tc.scope)
			if err != nil {
				t.Fatal(err)
			}
			got, err := x.Eval(input())
			if err != nil || got != tc.want {
				t.Errorf("Eval = %v, %v; want %v", got, err, tc.want)
			}
		})
	}
}

func TestCompileErrors(t *testing.T) {
	cases := map[string]struct {
		expr  string
		scope Scope
		want  []string
	}{
		"not a bool":         {expr: "steps.test.outputs.result", want: []string{"the expression is a string; it must be true or false (a bool)"}},
		"a type error":       {expr: "steps.test.outputs.result > 3", want: []string{"found no matching overload for '_>_' applied to '(string, int)'"}},
		"an unknown field":   {expr: "steps.test.output.result == 'x'", want: []string{"undefined field 'output'"}},
		"a syntax error":     {expr: "steps.test.outputs.result = 'x'", want: []string{"Syntax error"}},
		"workflow in a step": {expr: "workflow.phase == 'Failed'", want: []string{"undeclared reference to 'workflow'", "workflow.phase is for finally steps"}},
		"the item":           {expr: "item == 'eu'", want: []string{"undeclared reference to 'item'", "a when has no item: a forEach step's when is decided once"}},
		"an unknown name":    {expr: "stepz.test.phase == 'x'", want: []string{"undeclared reference to 'stepz'"}},
		"steps by a variable": {expr: "steps[params.env].phase == 'x'",
			want: []string{"steps may only be used with a name written out, as steps.NAME or steps['NAME']"}},
		"steps as a whole":    {expr: "size(steps) > 1", want: []string{"steps may only be used with a name written out"}},
		"params as a whole":   {expr: "'env' in params", want: []string{"params may only be used with a name written out"}},
		"a loop called steps": {expr: "[1].all(steps, steps > 0)", want: []string{"a loop variable may not be called steps"}},
		"empty":               {expr: "  ", want: []string{"the expression is empty"}},
		"too long":            {expr: strings.Repeat("true && ", 128) + "true", want: []string{"the expression is 1028 characters; at most 1024 are allowed"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := Compile(tc.expr, tc.scope)
			if err == nil {
				t.Fatal("compiled")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}

func TestEvalErrors(t *testing.T) {
	x, err := Compile("steps.test.outputs.nope == 'x'", Main)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := x.Eval(input()); err == nil || err.Error() != "no such key: nope" {
		t.Errorf("a missing output: %v", err)
	}
	x, err = Compile("steps.gone.phase == 'x'", Main)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := x.Eval(input()); err == nil || !strings.Contains(err.Error(), "no such key: gone") {
		t.Errorf("a missing step: %v", err)
	}
}

// TestCostLimit: an expression that would loop over the product of two
// 4 KiB outputs stops at the cost limit instead of spending the
// operator's CPU, with an error that says so.
func TestCostLimit(t *testing.T) {
	x, err := Compile("steps.test.outputs.big.split('').all(a, steps.test.outputs.big.split('').all(b, a == b || true))", Main)
	if err != nil {
		t.Fatal(err)
	}
	in := input()
	in.Steps["test"].Outputs["big"] = strings.Repeat("x", 4096)
	_, err = x.Eval(in)
	if err == nil || !strings.Contains(err.Error(), "it cost more than the limit of 1000000") {
		t.Errorf("want the cost limit, got %v", err)
	}
	// Small inputs stay well within it.
	in.Steps["test"].Outputs["big"] = "abc"
	if ok, err := x.Eval(in); err != nil || !ok {
		t.Errorf("small input: %v, %v", ok, err)
	}
}

func TestNamesRead(t *testing.T) {
	x, err := Compile("steps.a.phase == 'x' || steps['b-c'].outputs.?k.orValue('') == params.p || has(steps.a.outputs.z) || steps.?d.hasValue() || params['q'] == ''", Main)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"a", "b-c", "d"}, x.Steps); diff != "" {
		t.Errorf("steps (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"p", "q"}, x.Params); diff != "" {
		t.Errorf("params (-want +got):\n%s", diff)
	}
}

func task() v1alpha1.AgentTaskSpec { return v1alpha1.AgentTaskSpec{Image: "busybox"} }

// TestValidateWorkflow: a when may read the steps its step depends on,
// directly or through others (in a sequence, those before it), and
// declared params; a finally step's, any main step and the finally steps
// it depends on.
func TestValidateWorkflow(t *testing.T) {
	spec := func() *v1alpha1.WorkflowSpec {
		return &v1alpha1.WorkflowSpec{
			Params: []v1alpha1.WorkflowParam{{Name: "env"}},
			Steps: []v1alpha1.WorkflowStep{
				{Name: "fetch", Task: task()},
				{Name: "lint", DependsOn: []string{"fetch"}, Task: task()},
				{Name: "test", DependsOn: []string{"fetch"}, Task: task()},
				{Name: "ship", DependsOn: []string{"test"}, When: "steps.test.outputs.ok == 'yes' && steps.fetch.phase == 'Succeeded' && params.env == 'prod'", Task: task()},
			},
			Finally: []v1alpha1.WorkflowStep{
				{Name: "notify", When: "workflow.phase == 'Failed' && steps.lint.phase == 'Failed'", Task: task()},
				{Name: "cleanup", DependsOn: []string{"notify"}, When: "steps.notify.outputs.sent == 'yes'", Task: task()},
			},
		}
	}
	if errs := ValidateWorkflow(spec()); len(errs) != 0 {
		t.Fatalf("a good workflow: %v", errs)
	}
	cases := map[string]struct {
		edit   func(*v1alpha1.WorkflowSpec)
		field  string
		detail string
	}{
		"a step beside it": {
			edit:  func(s *v1alpha1.WorkflowSpec) { s.Steps[3].When = "steps.lint.phase == 'Succeeded'" },
			field: "spec.steps[3].when", detail: `step "ship": it reads steps["lint"], but it does not depend on step "lint", directly or through other steps, so that step may not have finished; add "lint" to its dependsOn`,
		},
		"a later step": {
			edit:  func(s *v1alpha1.WorkflowSpec) { s.Steps[1].When = "steps.ship.phase == 'Succeeded'" },
			field: "spec.steps[1].when", detail: `step "lint": it reads steps["ship"], but step "ship" runs after it`,
		},
		"itself": {
			edit:  func(s *v1alpha1.WorkflowSpec) { s.Steps[1].When = "steps.lint.phase == 'Succeeded'" },
			field: "spec.steps[1].when", detail: `step "lint": it reads steps["lint"], itself`,
		},
		"a finally step from a step": {
			edit:  func(s *v1alpha1.WorkflowSpec) { s.Steps[1].When = "steps.notify.phase == 'x'" },
			field: "spec.steps[1].when", detail: `it reads steps["notify"], a finally step, which runs after every step of spec.steps`,
		},
		"an unknown step": {
			edit:  func(s *v1alpha1.WorkflowSpec) { s.Steps[1].When = "steps.nope.phase == 'x'" },
			field: "spec.steps[1].when", detail: `there is no step "nope": the steps are fetch, lint, test, ship, notify (finally), cleanup (finally)`,
		},
		"an undeclared param": {
			edit:  func(s *v1alpha1.WorkflowSpec) { s.Steps[1].When = "params.region == 'eu'" },
			field: "spec.steps[1].when", detail: `it reads params.region, but spec.params has no param "region"; params are: env`,
		},
		"a finally step it does not depend on": {
			edit:  func(s *v1alpha1.WorkflowSpec) { s.Finally[1].DependsOn = nil },
			field: "spec.finally[1].when", detail: `finally step "cleanup": it reads steps["notify"], but it does not depend on finally step "notify", which may not have finished (finally steps run side by side)`,
		},
		"a type error in a finally step": {
			edit:  func(s *v1alpha1.WorkflowSpec) { s.Finally[0].When = "workflow.phase" },
			field: "spec.finally[0].when", detail: `finally step "notify": when is not a valid CEL expression: the expression is a string`,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			s := spec()
			tc.edit(s)
			errs := ValidateWorkflow(s)
			if len(errs) != 1 || errs[0].Field != tc.field || !strings.Contains(errs[0].Detail, tc.detail) {
				t.Errorf("errors %v; want one at %s with %q", errs, tc.field, tc.detail)
			}
		})
	}
	// A sequence: every step before it.
	seq := &v1alpha1.WorkflowSpec{Steps: []v1alpha1.WorkflowStep{
		{Name: "a", Task: task()}, {Name: "b", Task: task()}, {Name: "c", When: "steps.a.phase == 'Succeeded'", Task: task()},
	}}
	if errs := ValidateWorkflow(seq); len(errs) != 0 {
		t.Errorf("a sequence: %v", errs)
	}
}

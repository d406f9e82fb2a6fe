package celexpr

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

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
		// The guarded calls (cost.go) give what CEL's give.
		"replace":               {expr: "steps.test.outputs.result.replace('ss', 'S') == 'paSed'", want: true},
		"replace with a count":  {expr: "'aaa'.replace('a', 'b', 2) == 'bba' && 'aaa'.replace('', '-') == '-a-a-a-'", want: true},
		"split":                 {expr: "'a,b,,c'.split(',') == ['a', 'b', '', 'c'] && 'a,b,c'.split(',', 2) == ['a', 'b,c']", want: true},
		"split into characters": {expr: "'héj'.split('') == ['h', 'é', 'j'] && ''.split('').size() == 0", want: true},
		"join":                  {expr: "['a', 'b'].join('-') == 'a-b' && ['a', 'b'].join() == 'ab' && [].join(',') == ''", want: true},
		"concatenation":         {expr: "params.env + '-1' == 'prod-1' && b'a' + b'b' == b'ab' && 1 + 2 == 3 && ([1] + [2]).size() == 2", want: true},
		"a pattern":             {expr: "steps.test.outputs.result.matches('^pass') && !matches(params.env, '^dev')", want: true},
		"an object compared":    {expr: "steps.test == steps.test && steps.test != steps['unit-test']", want: true},
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
		"a list of lists":     {expr: "[[1], [2]].size() > 0", want: []string{"a list of lists or maps is not allowed"}},
		"a map of lists":      {expr: "{'a': [1]}.size() > 0", want: []string{"a map of lists or maps is not allowed"}},
		"lists of lists in a loop": {expr: "steps.test.outputs.a.split(',').map(x, [x]).size() > 0",
			want: []string{"a list of lists or maps is not allowed"}},
		"dyn":          {expr: "dyn(params.env) == 'x'", want: []string{"a value whose type is only known when it runs (dyn"}},
		"a mixed list": {expr: "[1, 'a'].size() > 0", want: []string{"a value whose type is only known when it runs"}},
		"format": {expr: "'%s'.format([params.env]) == 'x'",
			want: []string{"format and strings.quote are not available in a when"}},
		"quote": {expr: "strings.quote(params.env) == 'x'", want: []string{"format and strings.quote are not available in a when"}},
		"a pattern read from an output": {expr: "params.env.matches(steps.test.outputs.re)",
			want: []string{"the pattern of matches must be written out, as in s.matches('^v[0-9]+$')"}},
		"a bad pattern": {expr: "params.env.matches('(')", want: []string{"missing closing )"}},
		"too long":      {expr: strings.Repeat("true && ", 128) + "true", want: []string{"the expression is 1028 characters; at most 1024 are allowed"}},
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

// TestEstimate: an expression whose cost, with what it reads at its
// largest, could pass EstimatedCostLimit does not compile, and the error
// says so and what to do; everyday expressions stay well within it, over
// a task's outputs (4 KiB) and, but for a loop that searches each part of
// a split, a forEach step's (32 KiB).
func TestEstimate(t *testing.T) {
	everyday := []string{
		"steps.test.outputs.result == 'passed'",
		"steps.test.outputs.?tag.orValue('latest').startsWith('v')",
		"int(steps.test.outputs.count) > 40",
		"steps.test.outputs.result.matches('^pass(ed)?$')",
		"params.env in ['prod', 'staging'] && steps.test.phase == 'Succeeded'",
		"steps.test.outputs.exists(k, k.startsWith('image') && steps.test.outputs[k].endsWith(':latest'))",
		"steps.test.outputs.image.lowerAscii().endsWith(':latest')",
		"steps.test.outputs.list.split(',').size() > 3",
		"steps.test.outputs.list.split(',', 100).exists(x, x.trim() == params.env)",
		"steps.test.outputs.list.replace(' ', '').split(',').all(x, x != 'failed')",
		"(steps.test.outputs.registry + '/' + steps.test.outputs.image).size() < 200",
	}
	spec := func(forEach bool) *v1alpha1.WorkflowSpec {
		s := &v1alpha1.WorkflowSpec{Params: []v1alpha1.WorkflowParam{{Name: "env"}},
			Steps: []v1alpha1.WorkflowStep{{Name: "test", Task: task()}, {Name: "next", Task: task()}}}
		if forEach {
			s.Steps[0].ForEach = &v1alpha1.ForEach{Items: []string{"a"}}
		}
		return s
	}
	for _, expr := range everyday {
		for _, forEach := range []bool{false, true} {
			s := spec(forEach)
			s.Steps[1].When = expr
			x, err := CompileStep(s, 1, Main)
			if err != nil {
				t.Errorf("%s (forEach %v): %v", expr, forEach, err)
				continue
			}
			if x.Cost > EstimatedCostLimit/10 {
				t.Errorf("%s (forEach %v): estimated %d, more than a tenth of the limit", expr, forEach, x.Cost)
			}
		}
	}
	// Comparing each part of a split of a forEach step's output with a
	// param could cost 32,769 x 410: split(',', 100) bounds the parts.
	for _, forEach := range []bool{false, true} {
		s := spec(forEach)
		s.Steps[1].When = "steps.test.outputs.list.split(',').exists(x, x == params.env)"
		if _, err := CompileStep(s, 1, Main); (err != nil) != forEach {
			t.Errorf("a loop over the parts of the output of a step with forEach %v: %v", forEach, err)
		}
	}

	refused := map[string]string{
		"a loop in a loop over an output":       "steps.test.outputs.big.split('').all(a, steps.test.outputs.big.split('').all(b, a == b || true))",
		"replace chained 16 times":              "'aaaa'" + strings.Repeat(".replace('a','aaaa')", 16) + " != ''",
		"an output joined by itself, ten times": "[1, 2, 3, 4, 5, 6, 7, 8, 9, 10].all(i, steps.test.outputs.big.split('').join(steps.test.outputs.big) != '')",
		"concatenation in a loop":               "steps.test.outputs.big.split('').exists(x, (x + steps.test.outputs.big).size() == 0)",
	}
	for name, expr := range refused {
		_, err := Compile(expr, Main)
		if err == nil {
			t.Errorf("%s: compiled", name)
			continue
		}
		for _, want := range []string{"the expression could cost", "with what it reads at its largest (outputs of 32768 bytes, params of 4096, 64 outputs a step); at most 10000000 are allowed", "loop over fewer items"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("%s: error %q lacks %q", name, err, want)
			}
		}
	}
}

// TestCostLimit: an expression the estimate lets through (40 splits of
// a 32 KiB output, about 1,450,000) costs more than CostLimit when it
// runs with such an output, and stops there with an error that says so;
// small inputs stay within it.
func TestCostLimit(t *testing.T) {
	x, err := Compile("["+strings.Repeat("0, ", 39)+"0].all(i, steps.test.outputs.big.split('').size() > 0)", Main)
	if err != nil {
		t.Fatal(err)
	}
	in := input()
	in.Steps["test"].Outputs["big"] = strings.Repeat("x", 32<<10)
	_, err = x.Eval(in)
	if err == nil || !strings.Contains(err.Error(), "it cost more than the limit of 1000000") {
		t.Errorf("want the cost limit, got %v", err)
	}
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

// TestBoundsAreTheCRDs: the sizes the estimate takes are the ones the
// Workflow CRD enforces (its generated schema), so raising a bound there
// without here fails.
func TestBoundsAreTheCRDs(t *testing.T) {
	raw, err := os.ReadFile("../../config/crd/bases/sched.kubectl-sched.dev_workflows.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var crd apiextensionsv1.CustomResourceDefinition
	if err := yaml.Unmarshal(raw, &crd); err != nil {
		t.Fatal(err)
	}
	root := crd.Spec.Versions[0].Schema.OpenAPIV3Schema
	spec, status := root.Properties["spec"], root.Properties["status"]
	params := spec.Properties["params"]
	when := spec.Properties["steps"].Items.Schema.Properties["when"]
	outputs := status.Properties["steps"].Items.Schema
	got := map[string]int64{
		"spec.params maxItems":         ptr.Deref(params.MaxItems, 0),
		"params[].value maxLength":     ptr.Deref(params.Items.Schema.Properties["value"].MaxLength, 0),
		"spec.steps maxItems":          ptr.Deref(spec.Properties["steps"].MaxItems, 0),
		"spec.finally maxItems":        ptr.Deref(spec.Properties["finally"].MaxItems, 0),
		"when maxLength":               ptr.Deref(when.MaxLength, 0),
		"status outputs maxProperties": ptr.Deref(outputs.Properties["outputs"].MaxProperties, 0),
	}
	want := map[string]int64{
		"spec.params maxItems":         MaxParams,
		"params[].value maxLength":     MaxParamBytes,
		"spec.steps maxItems":          32,
		"spec.finally maxItems":        MaxSteps - 32,
		"when maxLength":               MaxLength,
		"status outputs maxProperties": MaxOutputs,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("bounds (-celexpr +CRD):\n%s", diff)
	}
	rule := fmt.Sprintf("size(self.outputs[k]) <= (has(self.forEach) ? %d : %d)", MaxForEachOutputBytes, MaxOutputBytes)
	found := false
	for _, r := range outputs.XValidations {
		found = found || strings.Contains(r.Rule, rule)
	}
	if !found {
		t.Errorf("status.steps[] has no rule with %q: %+v", rule, outputs.XValidations)
	}
}

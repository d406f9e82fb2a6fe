package substitution

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	"github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
)

func testValues() Values {
	return Values{
		Params:    map[string]string{"tag": "v1", "registry": "r.example"},
		StepNames: []string{"fetch", "build", "report"},
		Outputs: []map[string]string{
			{"src": "/work/src", "rev": "abc123"},
			{"digest": "sha256:${steps.0.output.src}", "image.tag": "$${x} ✓\n\"q\""},
		},
	}
}

func TestResolveTask(t *testing.T) {
	tests := map[string]struct {
		step    int
		task    v1alpha1.AgentTaskSpec
		want    v1alpha1.AgentTaskSpec
		wantErr string
	}{
		"no references": {
			step: 1,
			task: v1alpha1.AgentTaskSpec{Image: "alpine", Args: []string{"$HOME", "a$$b"}},
			want: v1alpha1.AgentTaskSpec{Image: "alpine", Args: []string{"$HOME", "a$$b"}},
		},
		"every field and form": {
			step: 2,
			task: v1alpha1.AgentTaskSpec{
				Image:   "${params.registry}/report:${params.tag}",
				Command: []string{"report", "--rev=${steps.fetch.output.rev}"},
				Args:    []string{"${steps.0.output.src}", "$${steps.0.output.src}"},
				Env: []v1alpha1.EnvVar{
					{Name: "TAG", Value: "${steps.build.output.image.tag}"},
					{Name: "POD", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
				},
			},
			want: v1alpha1.AgentTaskSpec{
				Image:   "r.example/report:v1",
				Command: []string{"report", "--rev=abc123"},
				Args:    []string{"/work/src", "${steps.0.output.src}"},
				Env: []v1alpha1.EnvVar{
					{Name: "TAG", Value: "$${x} ✓\n\"q\""},
					{Name: "POD", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
				},
			},
		},
		"outputs are not expanded again": {
			step: 2,
			task: v1alpha1.AgentTaskSpec{Image: "i", Args: []string{"${steps.1.output.digest}"}},
			want: v1alpha1.AgentTaskSpec{Image: "i", Args: []string{"sha256:${steps.0.output.src}"}},
		},
		"missing output": {
			step:    2,
			task:    v1alpha1.AgentTaskSpec{Image: "i", Args: []string{"ok", "${steps.build.output.digets}"}},
			wantErr: `args[1] uses ${steps.build.output.digets}, but step 1 ("build") did not output "digets"; its outputs are: digest, image.tag`,
		},
		"missing output in env": {
			step:    1,
			task:    v1alpha1.AgentTaskSpec{Image: "i", Env: []v1alpha1.EnvVar{{Name: "A", Value: "${steps.0.output.x}"}}},
			wantErr: `env[0].value uses ${steps.0.output.x}, but step 0 ("fetch") did not output "x"; its outputs are: rev, src`,
		},
		"unknown param": {
			step:    1,
			task:    v1alpha1.AgentTaskSpec{Image: "${params.nope}"},
			wantErr: `image uses ${params.nope}, but the workflow has no param "nope"`,
		},
		"unknown step name": {
			step:    1,
			task:    v1alpha1.AgentTaskSpec{Image: "i", Command: []string{"${steps.deploy.output.x}"}},
			wantErr: `command[0] uses ${steps.deploy.output.x}, but the workflow has no step "deploy"`,
		},
		"later step": {
			step:    1,
			task:    v1alpha1.AgentTaskSpec{Image: "i", Args: []string{"${steps.report.output.x}"}},
			wantErr: `args[0] uses ${steps.report.output.x}, but step 2 ("report") does not run before step 1 ("build"); a step can only use outputs of earlier steps`,
		},
		"own step": {
			step:    1,
			task:    v1alpha1.AgentTaskSpec{Image: "i", Args: []string{"${steps.1.output.digest}"}},
			wantErr: `args[0] uses ${steps.1.output.digest}, but step 1 ("build") does not run before step 1 ("build"); a step can only use outputs of earlier steps`,
		},
		"syntax error": {
			step:    1,
			task:    v1alpha1.AgentTaskSpec{Image: "i", Args: []string{"${steps.0.output}"}},
			wantErr: `args[0]: "${steps.0.output}" at byte 0 names no output key; ` + SyntaxHint,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			orig := *tc.task.DeepCopy()
			got, err := ResolveTask(tc.step, tc.task, testValues())
			if diff := cmp.Diff(tc.wantErr, errString(err)); diff != "" {
				t.Fatalf("error (-want +got):\n%s", diff)
			}
			if err == nil {
				if diff := cmp.Diff(tc.want, got); diff != "" {
					t.Errorf("ResolveTask (-want +got):\n%s", diff)
				}
			}
			if diff := cmp.Diff(orig, tc.task); diff != "" {
				t.Errorf("ResolveTask changed its input (-before +after):\n%s", diff)
			}
		})
	}
}

func TestResolveTaskMissingOutputError(t *testing.T) {
	v := testValues()
	v.Outputs = v.Outputs[:1] // step 1 finished without outputs
	_, err := ResolveTask(2, v1alpha1.AgentTaskSpec{Image: "x:${steps.build.output.digest}"}, v)
	want := &MissingOutputError{Field: "image", Raw: "${steps.build.output.digest}", Step: "build", StepIndex: 1, Key: "digest"}
	got, ok := err.(*MissingOutputError)
	if !ok {
		t.Fatalf("error %T %v, want *MissingOutputError", err, err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	const msg = `image uses ${steps.build.output.digest}, but step 1 ("build") did not output "digest"; it has no outputs`
	if diff := cmp.Diff(msg, err.Error()); diff != "" {
		t.Errorf("message (-want +got):\n%s", diff)
	}
	var target *MissingOutputError
	if !errors.As(err, &target) {
		t.Error("errors.As does not find the *MissingOutputError")
	}
}

func TestResolveTaskItem(t *testing.T) {
	v := testValues()
	v.Loop, v.Item = true, `eu ${params.tag} "west"`
	got, err := ResolveTask(2, v1alpha1.AgentTaskSpec{Image: "i", Args: []string{"--region=${item}", "$${item}", "${params.tag}"}}, v)
	if err != nil {
		t.Fatal(err)
	}
	// The item is text: inserted as written, never expanded again.
	if diff := cmp.Diff([]string{`--region=eu ${params.tag} "west"`, "${item}", "v1"}, got.Args); diff != "" {
		t.Errorf("args (-want +got):\n%s", diff)
	}
	_, err = ResolveTask(2, v1alpha1.AgentTaskSpec{Image: "i", Args: []string{"${item}"}}, testValues())
	if want := "args[0] uses ${item}, which only a forEach step's task may use"; errString(err) != want {
		t.Errorf("outside a loop: %v, want %q", err, want)
	}
}

func TestResolveTaskEmptyLoop(t *testing.T) {
	v := testValues()
	v.NoItems = map[int]bool{1: true}
	v.Outputs[1] = nil
	got, err := ResolveTask(2, v1alpha1.AgentTaskSpec{Image: "i", Args: []string{"${steps.build.output.urls}"}}, v)
	if err != nil || got.Args[0] != "[]" {
		t.Errorf("an output of a loop that ran no items: %q, %v; want []", got.Args, err)
	}
}

func TestResolveItems(t *testing.T) {
	v := testValues()
	v.StepNames = append(v.StepNames, "deploy")
	v.Params["regions"] = `["eu", "us", "a\"p\u00e9", "${params.tag}"]`
	v.Params["empty"] = "[ ]"
	v.Outputs[1]["list"] = "[" + strings.Repeat(`"x",`, 100) + `"x"]`
	v.Outputs[1]["nulls"] = `["a",null]`
	v.Outputs[1]["notjson"] = "eu,us"
	v.Outputs[1]["object"] = `{"a":"b"}`
	v.Outputs[1]["numbers"] = `["a",1]`
	v.Outputs[1]["broken"] = `["a"`
	v.Outputs[1]["long"] = strings.Repeat("x", 100)
	tests := map[string]struct {
		from    string
		want    []string
		wantErr string
	}{
		"a param":           {from: "${params.regions}", want: []string{"eu", "us", `a"pé`, "${params.tag}"}},
		"an empty list":     {from: "${params.empty}", want: []string{}},
		"101 items":         {from: "${steps.build.output.list}", wantErr: "step deploy: forEach.from ${steps.build.output.list} holds 101 items, more than the 100 a forEach step may run over"},
		"a null item":       {from: "${steps.build.output.nulls}", wantErr: `step deploy: forEach.from ${steps.build.output.nulls} is not a JSON array of strings: item 1 is "null", not a string; its value is "[\"a\",null]"`},
		"not JSON":          {from: "${steps.1.output.notjson}", wantErr: `step deploy: forEach.from ${steps.1.output.notjson} is not a JSON array of strings: it does not start with [; its value is "eu,us"`},
		"an object":         {from: "${steps.build.output.object}", wantErr: `step deploy: forEach.from ${steps.build.output.object} is not a JSON array of strings: it does not start with [; its value is "{\"a\":\"b\"}"`},
		"a number":          {from: "${steps.build.output.numbers}", wantErr: `step deploy: forEach.from ${steps.build.output.numbers} is not a JSON array of strings: item 1 is "1", not a string; its value is "[\"a\",1]"`},
		"cut short":         {from: "${steps.build.output.broken}", wantErr: `step deploy: forEach.from ${steps.build.output.broken} is not a JSON array of strings: unexpected end of JSON input; its value is "[\"a\""`},
		"a long value":      {from: "${steps.build.output.long}", wantErr: `step deploy: forEach.from ${steps.build.output.long} is not a JSON array of strings: it does not start with [; its value is "` + strings.Repeat("x", 64) + `" (100 bytes in all)`},
		"a missing output":  {from: "${steps.build.output.nope}", wantErr: `forEach.from uses ${steps.build.output.nope}, but step 1 ("build") did not output "nope"; its outputs are: broken, digest, image.tag, list, long, notjson, nulls, numbers, object`},
		"not one reference": {from: "[${params.tag}]", wantErr: `step deploy: forEach.from "[${params.tag}]" is not one reference to an output or a param`},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, err := ResolveItems(3, tc.from, v)
			if diff := cmp.Diff(tc.wantErr, errString(err)); diff != "" {
				t.Fatalf("error (-want +got):\n%s", diff)
			}
			var ie *ItemsError
			if err != nil && !strings.Contains(name, "missing") && !errors.As(err, &ie) {
				t.Errorf("error %T, want an *ItemsError", err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("items (-want +got):\n%s", diff)
			}
		})
	}
}

// The resolved spec must not share slices with the input: the operator
// keeps the workflow's copy and writes the resolved one into a new object.
func TestResolveTaskDeepCopies(t *testing.T) {
	task := v1alpha1.AgentTaskSpec{Image: "i", Args: []string{"a"}, Command: []string{"c"}, Env: []v1alpha1.EnvVar{{Name: "E", Value: "v"}}}
	got, err := ResolveTask(0, task, Values{})
	if err != nil {
		t.Fatal(err)
	}
	got.Args[0], got.Command[0], got.Env[0].Value = "x", "x", "x"
	if task.Args[0] != "a" || task.Command[0] != "c" || task.Env[0].Value != "v" {
		t.Errorf("ResolveTask's result shares memory with its input: %+v", task)
	}
}

package substitution

import (
	"errors"
	"os"
	"runtime"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
)

// TestResolveTaskTooLarge: outputs repeated in a step's strings cannot
// make the operator build more than an AgentTask holds; a step at the cap
// still resolves.
func TestResolveTaskTooLarge(t *testing.T) {
	out := strings.Repeat("o", 4000)
	v := Values{StepNames: []string{"a", "b"}, Outputs: []map[string]string{{"big": out}}}
	ref := "${steps.a.output.big}"
	arg := strings.Repeat(ref, 4096/len(ref)) // 195 references in a 4096-byte arg
	task := v1alpha1.AgentTaskSpec{Image: "busybox"}
	for range 64 {
		task.Args = append(task.Args, arg)
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err := ResolveTask(1, task, v)
	runtime.ReadMemStats(&after)
	var tl *TooLargeError
	if !errors.As(err, &tl) {
		t.Fatalf("err = %v, want a *TooLargeError", err)
	}
	want := len("busybox") + 64*195*4000
	if tl.Size != want || tl.StepIndex != 1 || tl.Step != "b" || tl.Largest != "args[0]" || tl.LargestSize != 195*4000 {
		t.Errorf("error = %+v, want %d bytes for step 1 (b), largest args[0]", tl, want)
	}
	for _, s := range []string{`step 1 ("b") renders to 47.6 MiB`, "640.5 KiB (655872 bytes)", "args[0] alone renders to 761.7 KiB"} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("message %q lacks %q", err, s)
		}
	}
	// 47.6 MiB were never built.
	if n := after.TotalAlloc - before.TotalAlloc; n > 1<<20 {
		t.Errorf("refusing the step allocated %d bytes; it should count, not build", n)
	}

	// Exactly at the cap: every field at its bound, outputs filling the args.
	v.Outputs[0]["big"] = strings.Repeat("o", 4096)
	full := v1alpha1.AgentTaskSpec{Image: strings.Repeat("i", 512)}
	for range 32 {
		full.Command = append(full.Command, strings.Repeat("c", 4096))
	}
	for range 64 {
		full.Args = append(full.Args, ref)
		full.Env = append(full.Env, v1alpha1.EnvVar{Name: "E", Value: strings.Repeat("e", 4096)})
	}
	got, err := ResolveTask(1, full, v)
	if err != nil || got.Args[63] != v.Outputs[0]["big"] {
		t.Fatalf("a step at the cap: err = %v", err)
	}
	full.Image += "x"
	if _, err := ResolveTask(1, full, v); !errors.As(err, &tl) || tl.Size != MaxRenderedStepBytes+1 {
		t.Errorf("one byte over the cap: err = %v", err)
	}
}

// TestValidateWorkflowTooLarge: params are known before the workflow runs,
// so the plugin (and the operator, when it starts the workflow) refuses a
// step they alone make too large, naming the step and the sizes.
func TestValidateWorkflowTooLarge(t *testing.T) {
	ref := "${params.p}"
	spec := &v1alpha1.WorkflowSpec{
		Params: []v1alpha1.WorkflowParam{{Name: "p", Value: strings.Repeat("v", 4096)}},
		Steps: []v1alpha1.WorkflowStep{
			{Name: "ok", Task: v1alpha1.AgentTaskSpec{Image: "busybox", Args: []string{ref}}},
			// An output counts as empty here: it is checked when the step starts.
			{Name: "later", Task: v1alpha1.AgentTaskSpec{Image: "busybox", Args: []string{strings.Repeat("${steps.ok.output.x}", 200)}}},
			{Name: "big", Task: v1alpha1.AgentTaskSpec{Image: "busybox", Args: []string{strings.Repeat(ref, 4096/len(ref))}}},
		},
	}
	errs := ValidateWorkflow(spec)
	if len(errs) != 1 {
		t.Fatalf("errors = %v, want one, for step big", errs)
	}
	e := errs[0]
	if e.Field != "spec.steps[2].task" {
		t.Errorf("field = %s, want spec.steps[2].task", e.Field)
	}
	for _, s := range []string{`step 2 ("big") renders to 1.5 MiB (1523719 bytes) with its params alone`, "more than the 640.5 KiB (655872 bytes)", "args[0] alone"} {
		if !strings.Contains(e.Detail, s) {
			t.Errorf("detail %q lacks %q", e.Detail, s)
		}
	}
}

// TestCapMatchesTheAgentTaskBounds: the cap is what the AgentTask CRD lets
// its image, command, args and env values hold.
func TestCapMatchesTheAgentTaskBounds(t *testing.T) {
	data, err := os.ReadFile("../../config/crd/bases/sched.kubectl-sched.dev_agenttasks.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var crd struct {
		Spec struct {
			Versions []struct {
				Schema struct {
					OpenAPIV3Schema struct {
						Properties map[string]struct {
							Properties map[string]schema `json:"properties"`
						} `json:"properties"`
					} `json:"openAPIV3Schema"`
				} `json:"schema"`
			} `json:"versions"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal(data, &crd); err != nil {
		t.Fatal(err)
	}
	spec := crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"].Properties
	env := spec["env"]
	got := spec["image"].MaxLength +
		spec["command"].MaxItems*spec["command"].Items.MaxLength +
		spec["args"].MaxItems*spec["args"].Items.MaxLength +
		env.MaxItems*env.Items.Properties["value"].MaxLength
	if got != MaxRenderedStepBytes {
		t.Errorf("the AgentTask CRD's bounds hold %d bytes in the substituted fields; MaxRenderedStepBytes is %d", got, MaxRenderedStepBytes)
	}
}

type schema struct {
	MaxLength  int               `json:"maxLength"`
	MaxItems   int               `json:"maxItems"`
	Items      *schema           `json:"items"`
	Properties map[string]schema `json:"properties"`
}

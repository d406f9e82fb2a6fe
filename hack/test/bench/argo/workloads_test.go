package argo

import (
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	. "github.com/kubectl-sched/kubectl-sched/api/builders"
	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
	"github.com/kubectl-sched/kubectl-sched/hack/cluster"
)

// Labels the benchmark puts on every workflow (run) and on every step's
// pod (workflow, step), through either system's pod metadata, so one
// observer reads both.
const (
	labelRun      = "bench.kubectl-sched.dev/run"
	labelWorkflow = "bench.kubectl-sched.dev/workflow"
	labelStep     = "bench.kubectl-sched.dev/step"
	// annotationOutput is what the emulated executor reports as the step's
	// output parameter "out" (Argo pods only; a pod without it declares no
	// outputs).
	annotationOutput = "bench.kubectl-sched.dev/output"
)

// Every step's container image and command; kwok pulls nothing. The
// command is explicit: without it Argo's controller asks the image's
// registry for its entrypoint (the emissary executor needs it), which
// nothing here can answer, and it must not try.
const stepImage = "registry.example.com/step:1"

var stepCommand = []string{"/bin/step"}

var argoWorkflowGVR = schema.GroupVersionResource{Group: "argoproj.io", Version: "v1alpha1", Resource: "workflows"}

// step is one step of a shape: it runs after the steps in after and reads
// each one's output "out".
type step struct {
	name  string
	after []string
}

// shape is a workflow as both systems run it. Every step of a shape of
// more than one step declares the output "out" (ok).
type shape struct {
	name, run string
	steps     []step
}

func (s shape) outputs() bool { return len(s.steps) > 1 }

// chain is n steps, each reading the one before it.
func chain(name, run string, n int) shape {
	s := shape{name: name, run: run}
	for i := range n {
		st := step{name: fmt.Sprintf("s%d", i)}
		if i > 0 {
			st.after = []string{fmt.Sprintf("s%d", i-1)}
		}
		s.steps = append(s.steps, st)
	}
	return s
}

// fan is a root, width branches reading it, and a join reading them all.
func fan(name, run string, width int) shape {
	s := shape{name: name, run: run, steps: []step{{name: "root"}}}
	var branches []string
	for i := range width {
		b := fmt.Sprintf("b%d", i)
		branches = append(branches, b)
		s.steps = append(s.steps, step{name: b, after: []string{"root"}})
	}
	s.steps = append(s.steps, step{name: "join", after: branches})
	return s
}

// threeStep is build, test and ship, each reading the one before it.
func threeStep(name, run string) shape {
	return shape{name: name, run: run, steps: []step{{name: "build"}, {name: "test", after: []string{"build"}}, {name: "ship", after: []string{"test"}}}}
}

// oneStep is one step that passes nothing on.
func oneStep(name, run string) shape {
	return shape{name: name, run: run, steps: []step{{name: "run"}}}
}

// quick ends a simulated pod at once with out=ok (our operator's steps:
// kwok ends the pod as soon as it runs).
var quick = map[string]string{cluster.AnnotationRunSeconds: "0", cluster.AnnotationExitCode: "0", cluster.AnnotationTerminationMessage: "out=ok"}

// schedWorkflow is s as a kubectl-sched Workflow: one task per step, its
// inputs the steps it depends on.
func (s shape) schedWorkflow(ns string) client.Object {
	wf := MakeWorkflow(s.name, ns)
	for _, st := range s.steps {
		var args []string
		for _, from := range st.after {
			args = append(args, fmt.Sprintf("${steps.%s.output.out}", from))
		}
		wf.StepTask(st.name, schedv1.AgentTaskSpec{Image: stepImage, Command: stepCommand, Args: args, PodMetadata: &schedv1.PodMetadata{
			Labels:      map[string]string{labelWorkflow: s.name, labelStep: st.name},
			Annotations: quick,
		}})
		if len(st.after) > 0 {
			wf.DependsOn(st.after...)
		}
	}
	o := wf.Obj()
	o.Labels = map[string]string{labelRun: s.run}
	return o
}

// argoWorkflow is s as an Argo Workflow: a DAG of one task per step, each
// its own container template (a one-step shape is its container template
// alone, as an Argo user writes one). Its pods carry no simulation
// annotations: the executor emulation lets kwok end each pod once it has
// written what the wait container would (see emulator_test.go).
func (s shape) argoWorkflow(ns string) *unstructured.Unstructured {
	var templates, tasks []any
	for _, st := range s.steps {
		annotations := map[string]any{}
		tmpl := map[string]any{"name": st.name}
		var inputs, taskArgs, args []any
		for j, from := range st.after {
			in := fmt.Sprintf("in%d", j)
			inputs = append(inputs, map[string]any{"name": in})
			taskArgs = append(taskArgs, map[string]any{"name": in, "value": fmt.Sprintf("{{tasks.%s.outputs.parameters.out}}", from)})
			args = append(args, fmt.Sprintf("{{inputs.parameters.%s}}", in))
		}
		container := map[string]any{"image": stepImage, "command": []any{stepCommand[0]}}
		if len(args) > 0 {
			container["args"] = args
			tmpl["inputs"] = map[string]any{"parameters": inputs}
		}
		tmpl["container"] = container
		if s.outputs() {
			tmpl["outputs"] = map[string]any{"parameters": []any{map[string]any{"name": "out", "valueFrom": map[string]any{"path": "/tmp/out"}}}}
			annotations[annotationOutput] = "ok"
		}
		tmpl["metadata"] = map[string]any{
			"labels":      map[string]any{labelWorkflow: s.name, labelStep: st.name},
			"annotations": annotations,
		}
		templates = append(templates, tmpl)
		task := map[string]any{"name": st.name, "template": st.name}
		if len(st.after) > 0 {
			deps := make([]any, len(st.after))
			for j, d := range st.after {
				deps[j] = d
			}
			task["dependencies"] = deps
			task["arguments"] = map[string]any{"parameters": taskArgs}
		}
		tasks = append(tasks, task)
	}
	entry := s.steps[0].name
	if len(s.steps) > 1 {
		entry = "main"
		templates = append([]any{map[string]any{"name": "main", "dag": map[string]any{"tasks": tasks}}}, templates...)
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "argoproj.io/v1alpha1",
		"kind":       "Workflow",
		"metadata":   map[string]any{"name": s.name, "namespace": ns, "labels": map[string]any{labelRun: s.run}},
		"spec":       map[string]any{"entrypoint": entry, "templates": templates},
	}}
}

package placement

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubectl-sched/kubectl-sched/api/names"
	podplacement "github.com/kubectl-sched/kubectl-sched/api/placement"
	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
	"github.com/kubectl-sched/kubectl-sched/plugin/internal/cmdutil"
	"github.com/kubectl-sched/kubectl-sched/plugin/internal/kinds"
)

// Unit is one pod an object makes (a service's pods, a task's pod, a
// step's task's pod), as explain judges it.
type Unit struct {
	// Name is how the report names it: ud/shop/web, at/hello,
	// wf/release/build, cwf/nightly/build.
	Name string
	// Object is kind/name of the object it belongs to.
	Object    string
	Namespace string
	Service   string
	Step      string
	// Pod carries the scheduling fields to judge.
	Pod *corev1.Pod
	// From is where Pod comes from: the object's spec (through the
	// operator's translation) or the pod template the operator made.
	From string
	// Created is false before the object (or a workflow's step task) exists.
	Created bool
	// Wanted is how many pods it should have now.
	Wanted int
	// Pods are its pods that exist.
	Pods []corev1.Pod
	// State says why it wants no pods, or that it is not created yet.
	State string
}

var (
	taskKind     = kinds.AgentTask
	workflowKind = kinds.Workflow
	cronKind     = kinds.CronWorkflow
)

// fromSpec is Unit.From for a pod computed from the object's spec.
const fromSpec = "spec.placement"

// servicePod is the pod of one service as the operator makes it, for
// what scheduling and quota read: its container's resources, and the node
// affinity, tolerations and priority class of the app's placement.
func servicePod(ns string, ud *schedv1.UserDeployment, svc *schedv1.ServiceSpec) *corev1.Pod {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns}, Spec: corev1.PodSpec{
		Containers: []corev1.Container{{Name: svc.Name, Resources: svc.Resources.Core()}},
	}}
	podplacement.Apply(&pod.Spec, ud.Spec.Placement, map[string]string{schedv1.LabelUserDeployment: ud.Name, schedv1.LabelService: svc.Name}, nil)
	return pod
}

// taskPod is a task's pod as the operator makes it, for what scheduling
// and quota read.
func taskPod(ns string, spec *schedv1.AgentTaskSpec) *corev1.Pod {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns}, Spec: corev1.PodSpec{
		RestartPolicy: corev1.RestartPolicyNever,
		Containers:    []corev1.Container{{Name: "task", Resources: spec.Resources.Core()}},
	}}
	podplacement.Apply(&pod.Spec, spec.Placement, nil, nil)
	return pod
}

func replicas(svc *schedv1.ServiceSpec) int { return int(ptr.Deref(svc.Replicas, 1)) }

// units are the pods of the object named on the command line, or of the
// objects in -f.
func (o *ExplainOptions) units(ctx context.Context) ([]Unit, error) {
	if o.File != "" {
		objs, err := o.readFile()
		if err != nil {
			return nil, err
		}
		var out []Unit
		for _, obj := range objs {
			out = append(out, fileUnits(obj)...)
		}
		return out, nil
	}
	ns := o.Clients.Namespace
	obj := o.kind.New()
	if err := o.Clients.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: o.name}, obj); err != nil {
		return nil, cmdutil.API(err, "get", o.kind.What(ns, o.name))
	}
	switch t := obj.(type) {
	case *schedv1.UserDeployment:
		return o.appUnits(ctx, t), nil
	case *schedv1.AgentTask:
		return []Unit{o.taskUnit(ctx, t, "at/"+t.Name, "agenttask/"+t.Name, "")}, nil
	case *schedv1.Workflow:
		return o.workflowUnits(ctx, t)
	case *schedv1.CronWorkflow:
		return o.cronUnits(t)
	}
	return nil, fmt.Errorf("unexpected kind %T", obj)
}

// fileUnits are the pods of an object not created yet.
func fileUnits(obj client.Object) []Unit {
	ns := obj.GetNamespace()
	name := obj.GetName()
	if name == "" {
		name = obj.GetGenerateName() + "*"
	}
	var out []Unit
	switch t := obj.(type) {
	case *schedv1.UserDeployment:
		for i := range t.Spec.Services {
			svc := &t.Spec.Services[i]
			u := Unit{Name: "ud/" + name + "/" + svc.Name, Object: "userdeployment/" + name, Namespace: ns, Service: svc.Name,
				Pod: servicePod(ns, t, svc), From: fromSpec, Wanted: replicas(svc), State: "not created yet"}
			if t.Spec.State == schedv1.StateStopped {
				u.Wanted = 0
			}
			out = append(out, u)
		}
	case *schedv1.AgentTask:
		out = append(out, Unit{Name: "at/" + name, Object: "agenttask/" + name, Namespace: ns,
			Pod: taskPod(ns, &t.Spec), From: fromSpec, Wanted: 1, State: "not created yet"})
	case *schedv1.Workflow, *schedv1.CronWorkflow:
		k := workflowKind
		if _, ok := obj.(*schedv1.CronWorkflow); ok {
			k = cronKind
		}
		for i := range workflowSpec(obj).Steps {
			out = append(out, specStepUnit(k, name, ns, &workflowSpec(obj).Steps[i], 1, "not created yet"))
		}
	}
	return out
}

// workflowSpec is the spec of a Workflow's steps, or of a CronWorkflow's
// runs'.
func workflowSpec(obj client.Object) *schedv1.WorkflowSpec {
	switch t := obj.(type) {
	case *schedv1.Workflow:
		return &t.Spec
	case *schedv1.CronWorkflow:
		return &t.Spec.WorkflowSpec
	}
	return &schedv1.WorkflowSpec{}
}

// specStepUnit is the pod of step s of the Workflow or CronWorkflow (k)
// name, from the step's spec: its task does not exist.
func specStepUnit(k kinds.Kind, name, ns string, s *schedv1.WorkflowStep, wanted int, state string) Unit {
	return Unit{Name: k.Short + "/" + name + "/" + s.Name, Object: k.Singular + "/" + name, Namespace: ns, Step: s.Name,
		Pod: taskPod(ns, &s.Task), From: fromSpec, Wanted: wanted, State: state}
}

// wantsStep reports whether step i, named name, is one to explain: every
// step, or the one STEP names by name or index.
func (o *ExplainOptions) wantsStep(name string, i int) bool {
	return o.step == "" || o.step == name || o.step == strconv.Itoa(i)
}

// noStep is the error for a STEP that names none of spec's steps.
func (o *ExplainOptions) noStep(k kinds.Kind, name string, spec *schedv1.WorkflowSpec) error {
	steps := make([]string, len(spec.Steps))
	for i, s := range spec.Steps {
		steps[i] = s.Name
	}
	return cmdutil.Errorf(cmdutil.ExitNotFound, "Its steps: "+strings.Join(steps, ", ")+" (or their index from 0).",
		"%s %s has no step %q", k.Singular, name, o.step)
}

// cronUnits are the steps of the runs a CronWorkflow starts (or the one
// STEP names), from its workflowSpec: no task of theirs exists until a run
// does, and a run's own are 'placement explain wf RUN'.
func (o *ExplainOptions) cronUnits(cw *schedv1.CronWorkflow) ([]Unit, error) {
	wanted, state := 1, "made by each run"
	if t := cw.Status.NextScheduleTime; t != nil {
		state += ", the next at " + t.UTC().Format(time.RFC3339)
	}
	if cw.Spec.Suspend {
		wanted, state = 0, "suspended: no run starts"
	}
	switch active := cw.Status.Active; len(active) {
	case 0:
	case 1:
		state += fmt.Sprintf("; run %s is active (placement explain wf %s)", active[0].Name, active[0].Name)
	default:
		runs := make([]string, len(active))
		for i, r := range active {
			runs[i] = r.Name
		}
		state += fmt.Sprintf("; runs %s are active (placement explain wf RUN)", strings.Join(runs, ", "))
	}
	var out []Unit
	for i := range cw.Spec.WorkflowSpec.Steps {
		s := &cw.Spec.WorkflowSpec.Steps[i]
		if o.wantsStep(s.Name, i) {
			out = append(out, specStepUnit(o.kind, cw.Name, cw.Namespace, s, wanted, state))
		}
	}
	if len(out) == 0 {
		return nil, o.noStep(o.kind, cw.Name, &cw.Spec.WorkflowSpec)
	}
	return out, nil
}

// appUnits are an app's services, with the pod template of the
// Deployment (or StatefulSet) the operator made when there is one.
func (o *ExplainOptions) appUnits(ctx context.Context, ud *schedv1.UserDeployment) []Unit {
	var out []Unit
	for i := range ud.Spec.Services {
		svc := &ud.Spec.Services[i]
		u := Unit{Name: "ud/" + ud.Name + "/" + svc.Name, Object: "userdeployment/" + ud.Name, Namespace: ud.Namespace, Service: svc.Name,
			Pod: servicePod(ud.Namespace, ud, svc), From: fromSpec, Created: true, Wanted: replicas(svc)}
		if ud.Spec.State == schedv1.StateStopped {
			u.Wanted, u.State = 0, "stopped"
		}
		name := names.ServiceObject(ud.Name, svc.Name)
		var dep appsv1.Deployment
		var sts appsv1.StatefulSet
		if err := o.Clients.Client.Get(ctx, client.ObjectKey{Namespace: ud.Namespace, Name: name}, &dep); err == nil {
			u.Pod, u.From = templatePod(ud.Namespace, &dep.Spec.Template), "Deployment/"+name
		} else if err := o.Clients.Client.Get(ctx, client.ObjectKey{Namespace: ud.Namespace, Name: name}, &sts); err == nil {
			u.Pod, u.From = templatePod(ud.Namespace, &sts.Spec.Template), "StatefulSet/"+name
		}
		u.Pods = o.pods(ctx, ud.Namespace, client.MatchingLabels{schedv1.LabelUserDeployment: ud.Name, schedv1.LabelService: svc.Name})
		out = append(out, u)
	}
	return out
}

// taskUnit is a task's pod, from its Job's template when the Job exists.
func (o *ExplainOptions) taskUnit(ctx context.Context, t *schedv1.AgentTask, unitName, object, step string) Unit {
	u := Unit{Name: unitName, Object: object, Namespace: t.Namespace, Step: step,
		Pod: taskPod(t.Namespace, &t.Spec), From: fromSpec, Created: true, Wanted: 1}
	if t.Status.Phase.Finished() {
		u.Wanted, u.State = 0, "finished ("+string(t.Status.Phase)+")"
	}
	jobName := names.Job(t.Name)
	var job batchv1.Job
	if err := o.Clients.Client.Get(ctx, client.ObjectKey{Namespace: t.Namespace, Name: jobName}, &job); err == nil && metav1.IsControlledBy(&job, t) {
		u.Pod, u.From = templatePod(t.Namespace, &job.Spec.Template), "Job/"+jobName
	}
	u.Pods = o.pods(ctx, t.Namespace, client.MatchingLabels{schedv1.LabelAgentTask: jobName})
	return u
}

// workflowUnits are the steps of a workflow (or the one STEP names): the
// step's task where it exists, else the step's spec.
func (o *ExplainOptions) workflowUnits(ctx context.Context, wf *schedv1.Workflow) ([]Unit, error) {
	var out []Unit
	for i := range wf.Spec.Steps {
		s := &wf.Spec.Steps[i]
		if !o.wantsStep(s.Name, i) {
			continue
		}
		unitName, object := "wf/"+wf.Name+"/"+s.Name, "workflow/"+wf.Name
		taskName := names.StepTask(wf.Name, i, s.Name)
		var phase schedv1.StepPhase
		if i < len(wf.Status.Steps) {
			phase = wf.Status.Steps[i].Phase
			if n := wf.Status.Steps[i].TaskName; n != "" {
				taskName = n
			}
		}
		var t schedv1.AgentTask
		err := o.Clients.Client.Get(ctx, client.ObjectKey{Namespace: wf.Namespace, Name: taskName}, &t)
		if err == nil && metav1.IsControlledBy(&t, wf) {
			out = append(out, o.taskUnit(ctx, &t, unitName, object, s.Name))
			continue
		}
		if err != nil && !isGone(err) {
			return nil, cmdutil.API(err, "get", taskKind.What(wf.Namespace, taskName))
		}
		u := Unit{Name: unitName, Object: object, Namespace: wf.Namespace, Step: s.Name,
			Pod: taskPod(wf.Namespace, &s.Task), From: fromSpec, Wanted: 1, State: "step not started yet"}
		var loop *schedv1.ForEachStatus
		if i < len(wf.Status.Steps) {
			loop = wf.Status.Steps[i].ForEach
		}
		switch {
		case phase.Finished():
			u.Wanted, u.State = 0, "step "+strings.ToLower(string(phase))
		case wf.Status.Phase.Finished():
			u.Wanted, u.State = 0, "workflow "+strings.ToLower(string(wf.Status.Phase))
		case s.ForEach != nil && loop != nil:
			// Each item is a task of its own, placed as this spec says.
			u.Wanted, u.State = int(loop.Running), fmt.Sprintf("a forEach step: %d of %d items running, %d succeeded", loop.Running, loop.Total, loop.Succeeded)
		}
		out = append(out, u)
	}
	if len(out) == 0 {
		return nil, o.noStep(o.kind, wf.Name, &wf.Spec)
	}
	return out, nil
}

// templatePod is the pod a template makes, for what scheduling and quota
// read.
func templatePod(ns string, t *corev1.PodTemplateSpec) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Labels: t.Labels}, Spec: *t.Spec.DeepCopy()}
}

// pods lists the pods a selector picks; what may not be read is left out
// with a warning (where the pods run is then unknown).
func (o *ExplainOptions) pods(ctx context.Context, ns string, sel client.MatchingLabels) []corev1.Pod {
	var list corev1.PodList
	if err := o.Clients.Client.List(ctx, &list, client.InNamespace(ns), sel); err != nil {
		if !o.podsWarned {
			o.podsWarned = true
			o.warn(err, "list", "pods in namespace "+ns, "where the pods run is not shown")
		}
		return nil
	}
	return list.Items
}

// readFile reads -f: UserDeployments, AgentTasks, Workflows and
// CronWorkflows, YAML or JSON, one or more, unknown fields refused. An
// object without a namespace takes -n's (or the context's); one with
// another namespace than -n is refused, as kubectl apply refuses it.
func (o *ExplainOptions) readFile() ([]client.Object, error) {
	data, source, err := cmdutil.ReadFile(o.File, o.In)
	if err != nil {
		return nil, err
	}
	docs, err := kinds.Documents(data, source)
	if err != nil {
		return nil, err
	}
	var out []client.Object
	for i, raw := range docs {
		var tm metav1.TypeMeta
		if err := json.Unmarshal(raw, &tm); err != nil {
			return nil, cmdutil.Errorf(cmdutil.ExitInvalid, "Check the YAML syntax.", "%s, object %d: %v", source, i+1, err)
		}
		k, ok := kinds.ByKind(tm.Kind)
		if !ok || !explainable(k) || tm.APIVersion != schedv1.GroupVersion.String() {
			return nil, cmdutil.Errorf(cmdutil.ExitInvalid, fmt.Sprintf("Each object needs apiVersion: %s and kind UserDeployment, AgentTask, Workflow or CronWorkflow.", schedv1.GroupVersion),
				"%s, object %d is a %q %q, which placement explain does not take", source, i+1, tm.Kind, tm.APIVersion)
		}
		obj := k.New()
		if err := kinds.DecodeStrict(raw, obj); err != nil {
			return nil, cmdutil.Errorf(cmdutil.ExitInvalid, fmt.Sprintf("'kubectl explain %s.spec' lists the fields (with the CRDs installed).", k.Plural),
				"%s, %s %q: %v", source, k.Kind, obj.GetName(), err)
		}
		switch ns := obj.GetNamespace(); {
		case ns == "":
			obj.SetNamespace(o.Clients.Namespace)
		case o.namespaceFlag && ns != o.Clients.Namespace:
			return nil, cmdutil.Usage("Drop -n, or make them agree.", "the namespace of %s %q in %s (%s) does not match -n %s", k.Kind, obj.GetName(), source, ns, o.Clients.Namespace)
		}
		out = append(out, obj)
	}
	if len(out) == 0 {
		return nil, cmdutil.Errorf(cmdutil.ExitInvalid, "Put a UserDeployment, AgentTask, Workflow or CronWorkflow in the file.", "%s holds no objects", source)
	}
	return out, nil
}

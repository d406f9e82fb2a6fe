// Package builders holds fluent builders for the API kinds, in the style of
// kueue's wrappers, so tests read as the object they build:
//
//	MakeAgentTask("hello", "default").Image("busybox").Args("echo", "hi").Obj()
package builders

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
)

// AgentTaskWrapper builds an AgentTask.
type AgentTaskWrapper struct{ schedv1.AgentTask }

// MakeAgentTask starts an AgentTask with an empty spec.
func MakeAgentTask(name, ns string) *AgentTaskWrapper {
	return &AgentTaskWrapper{schedv1.AgentTask{
		TypeMeta:   metav1.TypeMeta{APIVersion: schedv1.GroupVersion.String(), Kind: "AgentTask"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
	}}
}

// Obj returns the AgentTask.
func (w *AgentTaskWrapper) Obj() *schedv1.AgentTask { return &w.AgentTask }

// Spec edits the spec in place, for fields without a builder method.
func (w *AgentTaskWrapper) Spec(f func(*schedv1.AgentTaskSpec)) *AgentTaskWrapper {
	f(&w.AgentTask.Spec)
	return w
}

// Image sets spec.image.
func (w *AgentTaskWrapper) Image(img string) *AgentTaskWrapper {
	w.AgentTask.Spec.Image = img
	return w
}

// Command sets spec.command.
func (w *AgentTaskWrapper) Command(c ...string) *AgentTaskWrapper {
	w.AgentTask.Spec.Command = c
	return w
}

// Args sets spec.args.
func (w *AgentTaskWrapper) Args(a ...string) *AgentTaskWrapper { w.AgentTask.Spec.Args = a; return w }

// Env adds an environment variable.
func (w *AgentTaskWrapper) Env(name, value string) *AgentTaskWrapper {
	w.AgentTask.Spec.Env = append(w.AgentTask.Spec.Env, schedv1.EnvVar{Name: name, Value: value})
	return w
}

// Timeout sets spec.timeout.
func (w *AgentTaskWrapper) Timeout(d time.Duration) *AgentTaskWrapper {
	w.AgentTask.Spec.Timeout = &metav1.Duration{Duration: d}
	return w
}

// Retries sets spec.retries.
func (w *AgentTaskWrapper) Retries(n int32) *AgentTaskWrapper {
	w.AgentTask.Spec.Retries = ptr.To(n)
	return w
}

// Retry sets spec.retry: limit retries, backoff (none when 0) and the exit
// codes worth a retry (every one when none).
func (w *AgentTaskWrapper) Retry(limit int32, backoff time.Duration, onExitCodes ...int32) *AgentTaskWrapper {
	r := &schedv1.RetryPolicy{Limit: limit, OnExitCodes: onExitCodes}
	if backoff > 0 {
		r.Backoff = &metav1.Duration{Duration: backoff}
	}
	w.AgentTask.Spec.Retry = r
	return w
}

// TTL sets spec.ttlAfterFinished and spec.cleanup.
func (w *AgentTaskWrapper) TTL(d time.Duration, cleanup schedv1.CleanupPolicy) *AgentTaskWrapper {
	w.AgentTask.Spec.TTLAfterFinished = &metav1.Duration{Duration: d}
	w.AgentTask.Spec.Cleanup = cleanup
	return w
}

// Placement sets spec.placement.
func (w *AgentTaskWrapper) Placement(p schedv1.Placement) *AgentTaskWrapper {
	w.AgentTask.Spec.Placement = &p
	return w
}

// PodAnnotation passes an annotation through to the pod; the simulated
// cluster reads exit codes and termination messages from these.
func (w *AgentTaskWrapper) PodAnnotation(k, v string) *AgentTaskWrapper {
	if w.AgentTask.Spec.PodMetadata == nil {
		w.AgentTask.Spec.PodMetadata = &schedv1.PodMetadata{}
	}
	if w.AgentTask.Spec.PodMetadata.Annotations == nil {
		w.AgentTask.Spec.PodMetadata.Annotations = map[string]string{}
	}
	w.AgentTask.Spec.PodMetadata.Annotations[k] = v
	return w
}

// SecurityContext sets the task container's security context.
func (w *AgentTaskWrapper) SecurityContext(sc *schedv1.SecurityContext) *AgentTaskWrapper {
	w.AgentTask.Spec.SecurityContext = sc
	return w
}

// Workspace mounts the claim at path.
func (w *AgentTaskWrapper) Workspace(name, path, claim string) *AgentTaskWrapper {
	w.AgentTask.Spec.Workspaces = append(w.AgentTask.Spec.Workspaces, schedv1.WorkspaceMount{Name: name, MountPath: path, ClaimName: claim})
	return w
}

// Repo adds a repository to clone.
func (w *AgentTaskWrapper) Repo(r schedv1.Repo) *AgentTaskWrapper {
	w.AgentTask.Spec.Repos = append(w.AgentTask.Spec.Repos, r)
	return w
}

// Cancel sets spec.cancel.
func (w *AgentTaskWrapper) Cancel() *AgentTaskWrapper { w.AgentTask.Spec.Cancel = true; return w }

// UserDeploymentWrapper builds a UserDeployment.
type UserDeploymentWrapper struct{ schedv1.UserDeployment }

// MakeUserDeployment starts a UserDeployment with no services.
func MakeUserDeployment(name, ns string) *UserDeploymentWrapper {
	return &UserDeploymentWrapper{schedv1.UserDeployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: schedv1.GroupVersion.String(), Kind: "UserDeployment"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
	}}
}

// Obj returns the UserDeployment.
func (w *UserDeploymentWrapper) Obj() *schedv1.UserDeployment { return &w.UserDeployment }

// Service adds a service listening on port (0 for none) with the given exposure.
func (w *UserDeploymentWrapper) Service(name, image string, port int32, exposure schedv1.Exposure) *UserDeploymentWrapper {
	s := schedv1.ServiceSpec{Name: name, Image: image, Exposure: exposure}
	if port != 0 {
		s.Ports = []schedv1.ServicePort{{Port: port}}
	}
	w.UserDeployment.Spec.Services = append(w.UserDeployment.Spec.Services, s)
	return w
}

// Spec edits the spec in place, for fields without a builder method.
func (w *UserDeploymentWrapper) Spec(f func(*schedv1.UserDeploymentSpec)) *UserDeploymentWrapper {
	f(&w.UserDeployment.Spec)
	return w
}

// Config adds a config value.
func (w *UserDeploymentWrapper) Config(k, v string) *UserDeploymentWrapper {
	if w.UserDeployment.Spec.Config == nil {
		w.UserDeployment.Spec.Config = map[string]string{}
	}
	w.UserDeployment.Spec.Config[k] = v
	return w
}

// SecretRef adds a reference to a Secret of the namespace.
func (w *UserDeploymentWrapper) SecretRef(name, secretName string) *UserDeploymentWrapper {
	w.UserDeployment.Spec.Secrets = append(w.UserDeployment.Spec.Secrets, schedv1.SecretReference{Name: name, SecretName: secretName})
	return w
}

// Ingress exposes the app at host.
func (w *UserDeploymentWrapper) Ingress(host string) *UserDeploymentWrapper {
	w.UserDeployment.Spec.Ingress = &schedv1.IngressSpec{Host: host}
	return w
}

// Placement sets spec.placement.
func (w *UserDeploymentWrapper) Placement(p schedv1.Placement) *UserDeploymentWrapper {
	w.UserDeployment.Spec.Placement = &p
	return w
}

// State sets spec.state.
func (w *UserDeploymentWrapper) State(s schedv1.DesiredState) *UserDeploymentWrapper {
	w.UserDeployment.Spec.State = s
	return w
}

// Isolation sets the network isolation.
func (w *UserDeploymentWrapper) Isolation(i schedv1.NetworkIsolation) *UserDeploymentWrapper {
	w.UserDeployment.Spec.NetworkIsolation = i
	return w
}

// TLS terminates HTTPS at the ingress with the certificate in secretName.
func (w *UserDeploymentWrapper) TLS(secretName string) *UserDeploymentWrapper {
	if w.UserDeployment.Spec.Ingress == nil {
		w.UserDeployment.Spec.Ingress = &schedv1.IngressSpec{}
	}
	w.UserDeployment.Spec.Ingress.TLS = &schedv1.IngressTLS{SecretName: secretName}
	return w
}

// ExternalSecretRef adds a reference to key in the external store.
func (w *UserDeploymentWrapper) ExternalSecretRef(name, key string, services ...string) *UserDeploymentWrapper {
	w.UserDeployment.Spec.Secrets = append(w.UserDeployment.Spec.Secrets, schedv1.SecretReference{
		Name: name, External: &schedv1.ExternalSecretSource{Key: key}, Services: services,
	})
	return w
}

// EditService edits the named service in place.
func (w *UserDeploymentWrapper) EditService(name string, f func(*schedv1.ServiceSpec)) *UserDeploymentWrapper {
	for i := range w.UserDeployment.Spec.Services {
		if w.UserDeployment.Spec.Services[i].Name == name {
			f(&w.UserDeployment.Spec.Services[i])
		}
	}
	return w
}

// Replicas sets a service's replicas.
func (w *UserDeploymentWrapper) Replicas(service string, n int32) *UserDeploymentWrapper {
	return w.EditService(service, func(s *schedv1.ServiceSpec) { s.Replicas = ptr.To(n) })
}

// ServicePodAnnotation annotates a service's pods; the simulated cluster
// reads image pull errors and readiness from these.
func (w *UserDeploymentWrapper) ServicePodAnnotation(service, k, v string) *UserDeploymentWrapper {
	return w.EditService(service, func(s *schedv1.ServiceSpec) {
		if s.PodMetadata == nil {
			s.PodMetadata = &schedv1.PodMetadata{}
		}
		if s.PodMetadata.Annotations == nil {
			s.PodMetadata.Annotations = map[string]string{}
		}
		s.PodMetadata.Annotations[k] = v
	})
}

// Meta edits the object's metadata, for pure tests (UID, generation).
func (w *UserDeploymentWrapper) Meta(f func(*metav1.ObjectMeta)) *UserDeploymentWrapper {
	f(&w.ObjectMeta)
	return w
}

// WorkflowWrapper builds a Workflow.
type WorkflowWrapper struct {
	schedv1.Workflow
	// finally: the last step added is a finally step.
	finally bool
}

// MakeWorkflow starts a Workflow with no steps.
func MakeWorkflow(name, ns string) *WorkflowWrapper {
	return &WorkflowWrapper{Workflow: schedv1.Workflow{
		TypeMeta:   metav1.TypeMeta{APIVersion: schedv1.GroupVersion.String(), Kind: "Workflow"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
	}}
}

// Obj returns the Workflow.
func (w *WorkflowWrapper) Obj() *schedv1.Workflow { return &w.Workflow }

// Param adds a param.
func (w *WorkflowWrapper) Param(name, value string) *WorkflowWrapper {
	w.Workflow.Spec.Params = append(w.Workflow.Spec.Params, schedv1.WorkflowParam{Name: name, Value: value})
	return w
}

// Step adds a step running image with args.
func (w *WorkflowWrapper) Step(name, image string, args ...string) *WorkflowWrapper {
	return w.StepTask(name, schedv1.AgentTaskSpec{Image: image, Args: args})
}

// StepTask adds a step with a whole task spec.
func (w *WorkflowWrapper) StepTask(name string, task schedv1.AgentTaskSpec) *WorkflowWrapper {
	w.Workflow.Spec.Steps = append(w.Workflow.Spec.Steps, schedv1.WorkflowStep{Name: name, Task: task})
	w.finally = false
	return w
}

// Approval adds a step that waits for approval, with message.
func (w *WorkflowWrapper) Approval(name, message string) *WorkflowWrapper {
	w.Workflow.Spec.Steps = append(w.Workflow.Spec.Steps, schedv1.WorkflowStep{Name: name, Approval: &schedv1.StepApproval{Message: message}})
	w.finally = false
	return w
}

// Finally adds a finally step with a whole task spec.
func (w *WorkflowWrapper) Finally(name string, task schedv1.AgentTaskSpec) *WorkflowWrapper {
	w.Workflow.Spec.Finally = append(w.Workflow.Spec.Finally, schedv1.WorkflowStep{Name: name, Task: task})
	w.finally = true
	return w
}

// last is the last step added, of spec.steps or spec.finally.
func (w *WorkflowWrapper) last() *schedv1.WorkflowStep {
	if w.finally {
		return &w.Workflow.Spec.Finally[len(w.Workflow.Spec.Finally)-1]
	}
	return &w.Workflow.Spec.Steps[len(w.Workflow.Spec.Steps)-1]
}

// Workspace declares a ReadWriteOnce workspace of size.
func (w *WorkflowWrapper) Workspace(name, size string) *WorkflowWrapper {
	w.Workflow.Spec.Workspaces = append(w.Workflow.Spec.Workspaces, schedv1.Workspace{Name: name, Size: resource.MustParse(size)})
	return w
}

// Mount mounts workspace name at path in the last step's task.
func (w *WorkflowWrapper) Mount(name, path string, readOnly bool) *WorkflowWrapper {
	t := &w.last().Task
	t.Workspaces = append(t.Workspaces, schedv1.WorkspaceMount{Name: name, MountPath: path, ReadOnly: readOnly})
	return w
}

// DependsOn sets the dependsOn of the last step added.
func (w *WorkflowWrapper) DependsOn(steps ...string) *WorkflowWrapper {
	w.last().DependsOn = steps
	return w
}

// ForEach makes the last step added run its task once per item of items
// (literal) or of the list from names; maxParallel 0 leaves it unset.
func (w *WorkflowWrapper) ForEach(items []string, from string, maxParallel int32) *WorkflowWrapper {
	w.last().ForEach = &schedv1.ForEach{Items: items, From: from, MaxParallel: maxParallel}
	return w
}

// When sets the when of the last step added.
func (w *WorkflowWrapper) When(expr string) *WorkflowWrapper {
	w.last().When = expr
	return w
}

// Approvers sets who may decide on the last step added, an approval.
func (w *WorkflowWrapper) Approvers(users, groups []string) *WorkflowWrapper {
	w.last().Approval.Approvers = &schedv1.Approvers{Users: users, Groups: groups}
	return w
}

// RequestedBy sets spec.requestedBy, as `workflow run` does.
func (w *WorkflowWrapper) RequestedBy(user string) *WorkflowWrapper {
	w.Workflow.Spec.RequestedBy = user
	return w
}

// Decide records a decision on an approval step, as `workflow approve`
// or `deny` does.
func (w *WorkflowWrapper) Decide(step string, d schedv1.Decision, user, reason string) *WorkflowWrapper {
	w.Workflow.Spec.Approvals = append(w.Workflow.Spec.Approvals, schedv1.StepDecision{Step: step, Decision: d, User: user, Reason: reason})
	return w
}

// Suspend sets spec.suspend.
func (w *WorkflowWrapper) Suspend(on bool) *WorkflowWrapper {
	w.Workflow.Spec.Suspend = on
	return w
}

// FailFast stops the workflow at its first failed step.
func (w *WorkflowWrapper) FailFast() *WorkflowWrapper {
	w.Workflow.Spec.FailFast = true
	return w
}

// Timeout sets spec.timeout.
func (w *WorkflowWrapper) Timeout(d time.Duration) *WorkflowWrapper {
	w.Workflow.Spec.Timeout = &metav1.Duration{Duration: d}
	return w
}

// SchedExtWrapper builds a SchedExt.
type SchedExtWrapper struct{ schedv1.SchedExt }

// MakeSchedExt starts a SchedExt with an empty scheduler.
func MakeSchedExt(name string) *SchedExtWrapper {
	return &SchedExtWrapper{schedv1.SchedExt{
		TypeMeta:   metav1.TypeMeta{APIVersion: schedv1.GroupVersion.String(), Kind: "SchedExt"},
		ObjectMeta: metav1.ObjectMeta{Name: name},
	}}
}

// Obj returns the SchedExt.
func (w *SchedExtWrapper) Obj() *schedv1.SchedExt { return &w.SchedExt }

// Scheduler sets spec.scheduler.
func (w *SchedExtWrapper) Scheduler(name string) *SchedExtWrapper {
	w.SchedExt.Spec.Scheduler.Name = name
	return w
}

// Image sets the loader image and the scheduler's name in sched_ext.
func (w *SchedExtWrapper) Image(image, opsName string) *SchedExtWrapper {
	w.SchedExt.Spec.Scheduler.Image = image
	w.SchedExt.Spec.Scheduler.OpsName = opsName
	return w
}

// NodeSelector adds a node selector label.
func (w *SchedExtWrapper) NodeSelector(k, v string) *SchedExtWrapper {
	if w.SchedExt.Spec.NodeSelector == nil {
		w.SchedExt.Spec.NodeSelector = map[string]string{}
	}
	w.SchedExt.Spec.NodeSelector[k] = v
	return w
}

// Toleration adds a toleration.
func (w *SchedExtWrapper) Toleration(t corev1.Toleration) *SchedExtWrapper {
	w.SchedExt.Spec.Tolerations = append(w.SchedExt.Spec.Tolerations, t)
	return w
}

// Args sets spec.args.
func (w *SchedExtWrapper) Args(a ...string) *SchedExtWrapper { w.SchedExt.Spec.Args = a; return w }

// Env adds an environment variable.
func (w *SchedExtWrapper) Env(name, value string) *SchedExtWrapper {
	w.SchedExt.Spec.Env = append(w.SchedExt.Spec.Env, schedv1.EnvVar{Name: name, Value: value})
	return w
}

// PodAnnotation annotates the scheduler pods; tests use it to steer the
// simulated cluster (sim.kubectl-sched.dev/ready: "false").
func (w *SchedExtWrapper) PodAnnotation(k, v string) *SchedExtWrapper {
	if w.SchedExt.Spec.PodMetadata == nil {
		w.SchedExt.Spec.PodMetadata = &schedv1.PodMetadata{}
	}
	if w.SchedExt.Spec.PodMetadata.Annotations == nil {
		w.SchedExt.Spec.PodMetadata.Annotations = map[string]string{}
	}
	w.SchedExt.Spec.PodMetadata.Annotations[k] = v
	return w
}

// Created sets the creation time, for pure tests of arbitration.
func (w *SchedExtWrapper) Created(t time.Time) *SchedExtWrapper {
	w.CreationTimestamp = metav1.NewTime(t)
	return w
}

// FromTemplate takes the steps from the template of that kind and name
// (spec.workflowTemplateRef).
func (w *WorkflowWrapper) FromTemplate(kind, name string) *WorkflowWrapper {
	w.Workflow.Spec.WorkflowTemplateRef = &schedv1.WorkflowTemplateRef{Kind: kind, Name: name}
	return w
}

// Spec edits the spec in place, for fields without a builder method.
func (w *WorkflowWrapper) Spec(f func(*schedv1.WorkflowSpec)) *WorkflowWrapper {
	f(&w.Workflow.Spec)
	return w
}

// Spec edits the spec in place, for fields without a builder method.
func (w *SchedExtWrapper) Spec(f func(*schedv1.SchedExtSpec)) *SchedExtWrapper {
	f(&w.SchedExt.Spec)
	return w
}

// CronWorkflowWrapper builds a CronWorkflow.
type CronWorkflowWrapper struct{ schedv1.CronWorkflow }

// MakeCronWorkflow starts a CronWorkflow on schedule with no steps.
func MakeCronWorkflow(name, ns, schedule string) *CronWorkflowWrapper {
	return &CronWorkflowWrapper{schedv1.CronWorkflow{
		TypeMeta:   metav1.TypeMeta{APIVersion: schedv1.GroupVersion.String(), Kind: "CronWorkflow"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec:       schedv1.CronWorkflowSpec{Schedule: schedule},
	}}
}

// Obj returns the CronWorkflow.
func (w *CronWorkflowWrapper) Obj() *schedv1.CronWorkflow { return &w.CronWorkflow }

// Step adds a step of the workflow running image with args.
func (w *CronWorkflowWrapper) Step(name, image string, args ...string) *CronWorkflowWrapper {
	return w.StepTask(name, schedv1.AgentTaskSpec{Image: image, Args: args})
}

// StepTask adds a step of the workflow with a whole task spec.
func (w *CronWorkflowWrapper) StepTask(name string, task schedv1.AgentTaskSpec) *CronWorkflowWrapper {
	s := &w.CronWorkflow.Spec.WorkflowSpec
	s.Steps = append(s.Steps, schedv1.WorkflowStep{Name: name, Task: task})
	return w
}

// TimeZone sets spec.timeZone.
func (w *CronWorkflowWrapper) TimeZone(tz string) *CronWorkflowWrapper {
	w.CronWorkflow.Spec.TimeZone = tz
	return w
}

// Concurrency sets spec.concurrencyPolicy.
func (w *CronWorkflowWrapper) Concurrency(p schedv1.ConcurrencyPolicy) *CronWorkflowWrapper {
	w.CronWorkflow.Spec.ConcurrencyPolicy = p
	return w
}

// Deadline sets spec.startingDeadlineSeconds.
func (w *CronWorkflowWrapper) Deadline(seconds int64) *CronWorkflowWrapper {
	w.CronWorkflow.Spec.StartingDeadlineSeconds = ptr.To(seconds)
	return w
}

// History sets how many succeeded and failed runs are kept.
func (w *CronWorkflowWrapper) History(succeeded, failed int32) *CronWorkflowWrapper {
	w.CronWorkflow.Spec.SuccessfulRunsHistoryLimit = ptr.To(succeeded)
	w.CronWorkflow.Spec.FailedRunsHistoryLimit = ptr.To(failed)
	return w
}

// Suspend sets spec.suspend.
func (w *CronWorkflowWrapper) Suspend(s bool) *CronWorkflowWrapper {
	w.CronWorkflow.Spec.Suspend = s
	return w
}

// Created sets the creation time, for pure tests of the schedule.
func (w *CronWorkflowWrapper) Created(t time.Time) *CronWorkflowWrapper {
	w.CreationTimestamp = metav1.NewTime(t)
	return w
}

// Spec edits the spec in place, for fields without a builder method.
func (w *CronWorkflowWrapper) Spec(f func(*schedv1.CronWorkflowSpec)) *CronWorkflowWrapper {
	f(&w.CronWorkflow.Spec)
	return w
}

// Package accounts is the operator's validating webhook that holds the
// pods it makes to the service account the object they are for names: a
// Job an AgentTask controls runs as that task's account
// (taskjob.ServiceAccount), an AgentTask a Workflow controls as its
// step's (workflow.StepServiceAccount), and a Workflow a CronWorkflow
// controls as its schedule's workflowSpec (workflow.StepAccounts). The webhook configuration
// (api/accounts.Configuration) sends it only the operator's own requests, so it guards
// against the operator's token, not against tenants, whom RBAC and the
// admission policies hold.
package accounts

import (
	"context"
	"fmt"
	"net/http"
	"slices"

	admissionv1 "k8s.io/api/admission/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
	"github.com/kubectl-sched/kubectl-sched/operator/taskjob"
	"github.com/kubectl-sched/kubectl-sched/operator/workflow"
)

// defaultAccount is the account a pod naming none runs as.
const defaultAccount = "default"

// Validator checks the operator's creates and updates of Jobs,
// AgentTasks and Workflows, reading their owners from Cache, the operator's own cache,
// and nothing else: a request costs no API server read, whoever sends
// it. An owner the cache does not hold with the UID the reference names
// (one that does not exist, or was created or re-created a moment ago) is
// refused as retryable (503): the operator's create fails as a transient
// error and is tried again, and a token claiming an owner that does not
// exist is refused every time.
type Validator struct {
	Cache   client.Reader
	Decoder admission.Decoder
}

// NewValidator is a Validator decoding with scheme.
func NewValidator(cache client.Reader, scheme *runtime.Scheme) *Validator {
	return &Validator{Cache: cache, Decoder: admission.NewDecoder(scheme)}
}

// Handle implements admission.Handler.
func (v *Validator) Handle(ctx context.Context, req admission.Request) admission.Response {
	switch req.Kind.Group + "/" + req.Kind.Kind {
	case "batch/Job":
		return v.job(ctx, req)
	case schedv1.GroupVersion.Group + "/AgentTask":
		return v.task(ctx, req)
	case schedv1.GroupVersion.Group + "/Workflow":
		return v.run(ctx, req)
	}
	return admission.Allowed("not a kind this webhook checks")
}

func (v *Validator) job(ctx context.Context, req admission.Request) admission.Response {
	job := &batchv1.Job{}
	if err := v.Decoder.Decode(req, job); err != nil {
		return admission.Errored(http.StatusBadRequest, err)
	}
	pod := &job.Spec.Template.Spec
	if unchanged, resp := v.sameAccount(req, &batchv1.Job{}, pod, func(o runtime.Object) *corev1.PodSpec { return &o.(*batchv1.Job).Spec.Template.Spec }); unchanged {
		return resp
	}
	ref := metav1.GetControllerOf(job)
	if ref == nil || ref.Kind != "AgentTask" || ref.APIVersion != schedv1.GroupVersion.String() {
		return admission.Denied(fmt.Sprintf("Job %s/%s has no AgentTask as its controller: the operator makes Jobs only for AgentTasks, each running as the account its task names", job.Namespace, job.Name))
	}
	task := &schedv1.AgentTask{}
	if resp, ok := v.owner(ctx, job.Namespace, ref, task); !ok {
		return resp
	}
	want := accountOrDefault(taskjob.ServiceAccount(task))
	return check(pod, want, fmt.Sprintf("Job %s/%s", job.Namespace, job.Name),
		fmt.Sprintf("its AgentTask %s runs as %q (spec.serviceAccountName)", task.Name, want))
}

func (v *Validator) task(ctx context.Context, req admission.Request) admission.Response {
	task := &schedv1.AgentTask{}
	if err := v.Decoder.Decode(req, task); err != nil {
		return admission.Errored(http.StatusBadRequest, err)
	}
	pod := &corev1.PodSpec{ServiceAccountName: task.Spec.ServiceAccountName}
	if unchanged, resp := v.sameAccount(req, &schedv1.AgentTask{}, pod, func(o runtime.Object) *corev1.PodSpec {
		return &corev1.PodSpec{ServiceAccountName: o.(*schedv1.AgentTask).Spec.ServiceAccountName}
	}); unchanged {
		return resp
	}
	ref := metav1.GetControllerOf(task)
	if ref == nil || ref.Kind != "Workflow" || ref.APIVersion != schedv1.GroupVersion.String() {
		return admission.Denied(fmt.Sprintf("AgentTask %s/%s has no Workflow as its controller: the operator makes AgentTasks only for workflow steps, each running as the account its step names", task.Namespace, task.Name))
	}
	wf := &schedv1.Workflow{}
	if resp, ok := v.owner(ctx, task.Namespace, ref, wf); !ok {
		return resp
	}
	label := task.Labels[schedv1.LabelWorkflowStep]
	i, ok := workflow.StepOfLabel(wf, label)
	if !ok {
		return admission.Denied(fmt.Sprintf("AgentTask %s/%s names step %q (label %s), which Workflow %s does not have", task.Namespace, task.Name, label, schedv1.LabelWorkflowStep, wf.Name))
	}
	want := accountOrDefault(workflow.StepServiceAccount(wf, i))
	return check(pod, want, fmt.Sprintf("AgentTask %s/%s", task.Namespace, task.Name),
		fmt.Sprintf("its step %q of Workflow %s runs as %q (task.serviceAccountName)", stepName(wf, i), wf.Name, want))
}

func (v *Validator) run(ctx context.Context, req admission.Request) admission.Response {
	wf := &schedv1.Workflow{}
	if err := v.Decoder.Decode(req, wf); err != nil {
		return admission.Errored(http.StatusBadRequest, err)
	}
	got := workflow.StepAccounts(&wf.Spec)
	if req.Operation == "UPDATE" {
		old := &schedv1.Workflow{}
		if err := v.Decoder.DecodeRaw(req.OldObject, old); err != nil {
			return admission.Errored(http.StatusBadRequest, err)
		}
		if slices.Equal(workflow.StepAccounts(&old.Spec), got) {
			return admission.Allowed("")
		}
	}
	what := fmt.Sprintf("Workflow %s/%s", wf.Namespace, wf.Name)
	ref := metav1.GetControllerOf(wf)
	if ref == nil || ref.Kind != "CronWorkflow" || ref.APIVersion != schedv1.GroupVersion.String() {
		return admission.Denied(what + " has no CronWorkflow as its controller: the operator makes Workflows only as a schedule's runs, each running as its schedule's workflowSpec names")
	}
	cw := &schedv1.CronWorkflow{}
	if resp, ok := v.owner(ctx, wf.Namespace, ref, cw); !ok {
		return resp
	}
	want := workflow.StepAccounts(&cw.Spec.WorkflowSpec)
	if len(got) != len(want) {
		return admission.Denied(fmt.Sprintf("%s has %d steps and finally steps but its CronWorkflow %s's workflowSpec has %d: the operator starts a schedule's run only as its workflowSpec says", what, len(got), cw.Name, len(want)))
	}
	for i := range got {
		if accountOrDefault(got[i]) != accountOrDefault(want[i]) {
			return admission.Denied(fmt.Sprintf("%s step %q would run as service account %q but its CronWorkflow %s's workflowSpec runs it as %q: the operator runs a pod only as the account the object it is for names",
				what, stepName(wf, i), accountOrDefault(got[i]), cw.Name, accountOrDefault(want[i])))
		}
	}
	return admission.Allowed("")
}

// sameAccount lets an update through that leaves the pod's account as it
// was (the operator cancels tasks and removes finalizers, also once the
// owner is gone); unchanged is false for a create or a changed account.
func (v *Validator) sameAccount(req admission.Request, old runtime.Object, pod *corev1.PodSpec, spec func(runtime.Object) *corev1.PodSpec) (unchanged bool, resp admission.Response) {
	if req.Operation != "UPDATE" {
		return false, resp
	}
	if err := v.Decoder.DecodeRaw(req.OldObject, old); err != nil {
		return true, admission.Errored(http.StatusBadRequest, err)
	}
	o := spec(old)
	if o.DeprecatedServiceAccount == pod.DeprecatedServiceAccount && o.ServiceAccountName == pod.ServiceAccountName {
		return true, admission.Allowed("")
	}
	return false, resp
}

// owner reads the owner ref names into obj from the cache; ok is false
// with the refusal when the cache does not hold it with that UID.
func (v *Validator) owner(ctx context.Context, ns string, ref *metav1.OwnerReference, obj client.Object) (admission.Response, bool) {
	err := v.Cache.Get(ctx, types.NamespacedName{Namespace: ns, Name: ref.Name}, obj)
	switch {
	case err == nil && obj.GetUID() == ref.UID:
		return admission.Response{}, true
	case err == nil, apierrors.IsNotFound(err):
		return retryable(fmt.Sprintf("its controller %s %s/%s (uid %s) is not in the operator's cache: it does not exist, or was created a moment ago (the operator tries again)", ref.Kind, ns, ref.Name, ref.UID)), false
	}
	return retryable(fmt.Sprintf("cannot read its controller %s %s/%s from the operator's cache: %v; the operator tries again", ref.Kind, ns, ref.Name, err)), false
}

// check allows pod only if every account field it sets is want, and its
// account is want.
func check(pod *corev1.PodSpec, want, what, why string) admission.Response {
	got := podAccount(pod)
	if got != want || (pod.DeprecatedServiceAccount != "" && pod.DeprecatedServiceAccount != want) {
		if pod.DeprecatedServiceAccount != "" && pod.DeprecatedServiceAccount != want {
			got = pod.DeprecatedServiceAccount
		}
		return admission.Denied(fmt.Sprintf("%s would run as service account %q but %s: the operator runs a pod only as the account the object it is for names", what, got, why))
	}
	return admission.Allowed("")
}

// podAccount is the account pod runs as: serviceAccountName, else the
// deprecated serviceAccount, else the namespace's default.
func podAccount(pod *corev1.PodSpec) string {
	if pod.ServiceAccountName != "" {
		return pod.ServiceAccountName
	}
	return accountOrDefault(pod.DeprecatedServiceAccount)
}

func accountOrDefault(sa string) string {
	if sa == "" {
		return defaultAccount
	}
	return sa
}

// retryable refuses with 503 Service Unavailable, which the operator's
// refusal.Classify counts as transient: the create is tried again.
func retryable(msg string) admission.Response {
	return admission.Response{AdmissionResponse: admissionv1.AdmissionResponse{
		Allowed: false,
		Result:  &metav1.Status{Status: metav1.StatusFailure, Code: http.StatusServiceUnavailable, Reason: metav1.StatusReasonServiceUnavailable, Message: msg},
	}}
}

// stepName is the name of step i, counted as workflow.StepServiceAccount
// counts.
func stepName(wf *schedv1.Workflow, i int) string {
	if n := len(wf.Spec.Steps); i >= n {
		return wf.Spec.Finally[i-n].Name
	}
	return wf.Spec.Steps[i].Name
}

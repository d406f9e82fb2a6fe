package agenttask_test

import (
	"context"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubectl-sched/kubectl-sched/api/names"
	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
	"github.com/kubectl-sched/kubectl-sched/hack/testenv"
)

// A Job the API server refuses for good fails the task with the server's
// message, once, instead of being retried forever.
func TestRefusedJobFailsTheTask(t *testing.T) {
	t.Parallel()
	ns := namespace(t)
	denyJobsIn(t, ns, "jobs are not allowed in this namespace")

	create(t, task("refused", ns, 0, "").Obj())
	got := waitTask(t, ns, "refused", "finished", finished)
	if got.Status.Phase != schedv1.TaskFailed || got.Status.Reason != schedv1.ReasonRejected {
		t.Fatalf("phase %s reason %s, want Failed Rejected; status %+v", got.Status.Phase, got.Status.Reason, got.Status)
	}
	if !strings.Contains(got.Status.Message, "jobs are not allowed in this namespace") {
		t.Errorf("message %q does not carry the server's", got.Status.Message)
	}
	if c := findCond(got.Status.Conditions, schedv1.ConditionSucceeded); c == nil || c.Status != metav1.ConditionFalse || c.Reason != schedv1.ReasonRejected {
		t.Errorf("Succeeded condition %+v, want False Rejected", c)
	}
}

// A full quota keeps the task Pending, naming the quota, and the Job comes
// once the quota has room.
func TestFullQuotaWaitsAndNamesIt(t *testing.T) {
	t.Parallel()
	ns := namespace(t)
	quota := &corev1.ResourceQuota{
		ObjectMeta: metav1.ObjectMeta{Name: "no-jobs", Namespace: ns},
		Spec:       corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{"count/jobs.batch": resource.MustParse("0")}},
	}
	create(t, quota)
	// The API server's quota admission learns of a new quota from its
	// informer: wait until it refuses a dry-run Job.
	testenv.Poll(t, testenv.Timeout, "the quota to be enforced", func(ctx context.Context) (bool, error) {
		job := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "probe", Namespace: ns}, Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{{Name: "c", Image: "x"}},
		}}}}
		err := sim.Client.Create(ctx, job, client.DryRunAll)
		return err != nil && strings.Contains(err.Error(), "no-jobs"), nil
	})

	create(t, task("waits", ns, 0, "").Obj())
	got := waitTask(t, ns, "waits", "waiting on the quota", func(at *schedv1.AgentTask) bool {
		return at.Status.Reason == schedv1.ReasonQuotaExceeded
	})
	if got.Status.Phase != schedv1.TaskPending || !strings.Contains(got.Status.Message, "no-jobs") {
		t.Errorf("phase %s message %q, want Pending naming quota no-jobs", got.Status.Phase, got.Status.Message)
	}

	if err := sim.Client.Get(t.Context(), client.ObjectKeyFromObject(quota), quota); err != nil {
		t.Fatal(err)
	}
	quota.Spec.Hard["count/jobs.batch"] = resource.MustParse("1")
	if err := sim.Client.Update(t.Context(), quota); err != nil {
		t.Fatal(err)
	}
	got = waitTask(t, ns, "waits", "finished", finished)
	if got.Status.Phase != schedv1.TaskSucceeded || got.Status.JobName != names.Job("waits") {
		t.Errorf("after the quota grew: phase %s job %q, want Succeeded with its Job", got.Status.Phase, got.Status.JobName)
	}
}

// denyJobsIn makes admission refuse every Job created in ns.
func denyJobsIn(t *testing.T, ns, message string) {
	t.Helper()
	policy := &admissionregistrationv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "deny-jobs-" + ns},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			MatchConstraints: &admissionregistrationv1.MatchResources{
				NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{corev1.LabelMetadataName: ns}},
				ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{RuleWithOperations: admissionregistrationv1.RuleWithOperations{
					Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
					Rule:       admissionregistrationv1.Rule{APIGroups: []string{"batch"}, APIVersions: []string{"v1"}, Resources: []string{"jobs"}},
				}}},
			},
			Validations: []admissionregistrationv1.Validation{{Expression: "false", Message: message}},
		},
	}
	binding := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: policy.Name},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName:        policy.Name,
			ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny},
		},
	}
	create(t, policy)
	create(t, binding)
	t.Cleanup(func() {
		_ = sim.Client.Delete(t.Context(), binding)
		_ = sim.Client.Delete(t.Context(), policy)
	})
	// Policies take effect asynchronously: wait until a dry-run Job is refused.
	testenv.Poll(t, testenv.Timeout, "the policy to be enforced", func(ctx context.Context) (bool, error) {
		job := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "probe", Namespace: ns}, Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{{Name: "c", Image: "x"}},
		}}}}
		err := sim.Client.Create(ctx, job, client.DryRunAll)
		return err != nil && strings.Contains(err.Error(), message), nil
	})
}

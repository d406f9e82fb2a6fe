package taskjob

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	. "github.com/kubectl-sched/kubectl-sched/api/builders"
	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
)

// TestPodFailurePolicy: disruptions are ignored before any exit code is
// looked at; onExitCodes become a FailJob rule on the others, sorted as
// the Job's API wants them.
func TestPodFailurePolicy(t *testing.T) {
	ignore := batchv1.PodFailurePolicyRule{Action: batchv1.PodFailurePolicyActionIgnore,
		OnPodConditions: []batchv1.PodFailurePolicyOnPodConditionsPattern{{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue}}}
	for name, tc := range map[string]struct {
		task *schedv1.AgentTask
		want []batchv1.PodFailurePolicyRule
	}{
		"retries":             {MakeAgentTask("t", "ns").Retries(2).Obj(), []batchv1.PodFailurePolicyRule{ignore}},
		"retry without codes": {MakeAgentTask("t", "ns").Retry(2, 0).Obj(), []batchv1.PodFailurePolicyRule{ignore}},
		"retry with exit codes": {MakeAgentTask("t", "ns").Retry(2, 0, 75, 2).Obj(), []batchv1.PodFailurePolicyRule{ignore, {
			Action: batchv1.PodFailurePolicyActionFailJob,
			OnExitCodes: &batchv1.PodFailurePolicyOnExitCodesRequirement{ContainerName: ptr.To(ContainerName),
				Operator: batchv1.PodFailurePolicyOnExitCodesOpNotIn, Values: []int32{2, 75}},
		}}},
	} {
		t.Run(name, func(t *testing.T) {
			job := buildJob(tc.task, nil)
			if diff := cmp.Diff(tc.want, job.Spec.PodFailurePolicy.Rules); diff != "" {
				t.Errorf("rules (-want +got):\n%s", diff)
			}
			if got := *job.Spec.BackoffLimit; got != tc.task.Spec.RetryLimit() {
				t.Errorf("backoffLimit %d, want %d", got, tc.task.Spec.RetryLimit())
			}
		})
	}
}

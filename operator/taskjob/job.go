// Package taskjob builds and creates an AgentTask's Job, for the AgentTask
// controller, which creates a task's Job, and the Workflow controller,
// which creates a step's (or a loop item's) task and its Job in one
// reconcile (Starter): the same checks, the same Job, and never two Jobs
// for one task. Neither controller imports the other.
package taskjob

import (
	"maps"
	"slices"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/kubectl-sched/kubectl-sched/api/names"
	"github.com/kubectl-sched/kubectl-sched/api/placement"
	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
	"github.com/kubectl-sched/kubectl-sched/operator/podsecurity"
)

const (
	// ContainerName is the task's container in the pod.
	ContainerName = "task"

	// OutputsFinalizer keeps a finished pod until its termination message is
	// recorded in the task's status, so a fast TTL or pod garbage collection
	// cannot lose outputs. The controller removes it once the status holds them.
	OutputsFinalizer = schedv1.FinalizerOutputs
)

// Labels on the Job and its pods. The task label value is the Job name:
// task names may be longer than a label value can be.
func jobLabels(task *schedv1.AgentTask) map[string]string {
	l := map[string]string{
		schedv1.LabelManagedBy: schedv1.ManagedByValue,
		schedv1.LabelAgentTask: names.Job(task.Name),
	}
	for _, k := range []string{schedv1.LabelWorkflow, schedv1.LabelWorkflowStep, schedv1.LabelWorkflowItem} {
		if v, ok := task.Labels[k]; ok {
			l[k] = v
		}
	}
	return l
}

// buildJob is the Job that runs task: one pod at a time, never restarted in
// place, retried by the Job up to the retry limit (a disrupted pod is
// replaced without counting; an exit code not in retry.onExitCodes fails
// the Job at once), ended by the Job at spec.timeout.
func buildJob(task *schedv1.AgentTask, priorityClasses map[string]string) *batchv1.Job {
	spec := task.Spec
	labels := jobLabels(task)

	podLabels := map[string]string{}
	annotations := map[string]string{}
	if spec.PodMetadata != nil {
		maps.Copy(podLabels, spec.PodMetadata.Labels)
		maps.Copy(annotations, spec.PodMetadata.Annotations)
	}
	// Ours last: a pass-through label must not hide the pod from the operator.
	maps.Copy(podLabels, labels)

	container := corev1.Container{
		Name:      ContainerName,
		Image:     spec.Image,
		Command:   spec.Command,
		Args:      spec.Args,
		Env:       EnvVars(spec.Env),
		Resources: spec.Resources.Core(),
		// A crashing container that wrote no outputs still explains itself
		// with the tail of its log.
		TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
		SecurityContext:          podsecurity.Container(spec.SecurityContext.Core()),
	}

	pod := corev1.PodSpec{
		RestartPolicy:      corev1.RestartPolicyNever,
		ServiceAccountName: spec.ServiceAccountName,
		SecurityContext:    podsecurity.Pod(),
		Containers:         []corev1.Container{container},
	}
	placement.Apply(&pod, spec.Placement, labels, priorityClasses)
	mountWorkspaces(&pod, spec.Workspaces)

	job := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{
			Name:      names.Job(task.Name),
			Namespace: task.Namespace,
			Labels:    labels,
		},
		Spec: batchv1.JobSpec{
			BackoffLimit: ptr.To(spec.RetryLimit()),
			// Replace a pod only once it has fully terminated, so two attempts never run at once.
			PodReplacementPolicy: ptr.To(batchv1.Failed),
			PodFailurePolicy:     podFailurePolicy(spec.Retry),
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{
					Labels:      podLabels,
					Annotations: annotations,
					Finalizers:  []string{OutputsFinalizer},
				},
				Spec: pod,
			},
		},
	}
	if spec.Timeout != nil {
		job.Spec.ActiveDeadlineSeconds = ptr.To(int64(max(spec.Timeout.Seconds(), 1)))
	}
	return job
}

// podFailurePolicy: a pod preempted, evicted or drained did not fail, so
// the Job replaces it without using a retry; then, with
// retry.onExitCodes, an exit code not among them fails the Job at once.
// Rules apply in order, so a disrupted pod is never failed by its exit
// code (a killed container exits 137).
func podFailurePolicy(retry *schedv1.RetryPolicy) *batchv1.PodFailurePolicy {
	rules := []batchv1.PodFailurePolicyRule{{
		Action: batchv1.PodFailurePolicyActionIgnore,
		OnPodConditions: []batchv1.PodFailurePolicyOnPodConditionsPattern{{
			Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue,
		}},
	}}
	if retry != nil && len(retry.OnExitCodes) > 0 {
		codes := slices.Clone(retry.OnExitCodes)
		// The Job's API wants them sorted.
		slices.Sort(codes)
		rules = append(rules, batchv1.PodFailurePolicyRule{
			Action: batchv1.PodFailurePolicyActionFailJob,
			OnExitCodes: &batchv1.PodFailurePolicyOnExitCodesRequirement{
				ContainerName: ptr.To(ContainerName),
				Operator:      batchv1.PodFailurePolicyOnExitCodesOpNotIn,
				Values:        codes,
			},
		})
	}
	return &batchv1.PodFailurePolicy{Rules: rules}
}

// PrivilegeAsked lists the fields of task's spec that ask for what Pod
// Security "restricted" refuses (podsecurity.Violations).
func PrivilegeAsked(task *schedv1.AgentTask) []string {
	s := podsecurity.Spec{SecurityContext: task.Spec.SecurityContext.Core()}
	if task.Spec.PodMetadata != nil {
		s.Annotations = task.Spec.PodMetadata.Annotations
	}
	return podsecurity.Violations("spec", s)
}

// EnvVars converts the API's bounded env vars to core ones.
func EnvVars(in []schedv1.EnvVar) []corev1.EnvVar {
	if len(in) == 0 {
		return nil
	}
	out := make([]corev1.EnvVar, 0, len(in))
	for _, e := range in {
		out = append(out, corev1.EnvVar{Name: e.Name, Value: e.Value, ValueFrom: e.ValueFrom})
	}
	return out
}

// WorkspaceVolume is the pod volume of a task's workspace mount: the
// prefix keeps it apart from the volumes Kubernetes adds (kube-api-access-).
func WorkspaceVolume(mount string) string { return "ws-" + mount }

// mountWorkspaces mounts each workspace's claim into the task's container
// and, for a claim whose volume is on a known node, keeps the pod there:
// every required term gets the node, so placement's own requirements
// still hold beside it.
func mountWorkspaces(pod *corev1.PodSpec, mounts []schedv1.WorkspaceMount) {
	if len(mounts) == 0 {
		return
	}
	c := &pod.Containers[0]
	node := ""
	for _, m := range mounts {
		pod.Volumes = append(pod.Volumes, corev1.Volume{
			Name: WorkspaceVolume(m.Name),
			VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{
				ClaimName: m.ClaimName, ReadOnly: m.ReadOnly,
			}},
		})
		c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: WorkspaceVolume(m.Name), MountPath: m.MountPath, ReadOnly: m.ReadOnly})
		if node == "" {
			node = m.Node
		}
	}
	// The non-root default user can write the volumes.
	pod.SecurityContext.FSGroup = ptr.To[int64](podsecurity.NonRootUID)
	if node != "" {
		placement.OnNode(pod, node)
	}
}

package agenttask

import (
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
	"github.com/kubectl-sched/kubectl-sched/operator/cachetrim"
	"github.com/kubectl-sched/kubectl-sched/operator/podsecurity"
)

// TrimJob is the cache transform for the tasks' Jobs. The controller reads
// a Job's identity, labels and owner (whose task it is), whether it is
// suspended (a cancelled task), and its status; it never writes one from
// the cache but by a patch of spec.suspend. The pod template, a copy of
// the task's spec and most of a Job's size, and the managed fields are
// dropped.
func TrimJob(obj any) (any, error) {
	job, ok := obj.(*batchv1.Job)
	if !ok {
		return obj, nil
	}
	return &batchv1.Job{
		ObjectMeta: identity(job.ObjectMeta),
		Spec:       batchv1.JobSpec{Suspend: job.Spec.Suspend},
		Status:     job.Status,
	}, nil
}

// TrimEvent is the cache transform for the Job controller's FailedCreate
// events: the controller reads which object an event is about, its reason,
// message and when it last happened.
func TrimEvent(obj any) (any, error) {
	ev, ok := obj.(*corev1.Event)
	if !ok {
		return obj, nil
	}
	return &corev1.Event{
		ObjectMeta: metav1.ObjectMeta{Name: ev.Name, Namespace: ev.Namespace, UID: ev.UID, ResourceVersion: ev.ResourceVersion},
		InvolvedObject: corev1.ObjectReference{
			Kind: ev.InvolvedObject.Kind, Namespace: ev.InvolvedObject.Namespace, Name: ev.InvolvedObject.Name, UID: ev.InvolvedObject.UID,
		},
		Reason:        ev.Reason,
		Message:       ev.Message,
		LastTimestamp: ev.LastTimestamp,
		EventTime:     ev.EventTime,
	}, nil
}

func identity(m metav1.ObjectMeta) metav1.ObjectMeta {
	return metav1.ObjectMeta{
		Name: m.Name, Namespace: m.Namespace, UID: m.UID, ResourceVersion: m.ResourceVersion, Generation: m.Generation,
		Labels: m.Labels, OwnerReferences: m.OwnerReferences,
		CreationTimestamp: m.CreationTimestamp, DeletionTimestamp: m.DeletionTimestamp,
	}
}

// TrimTask is the cache transform for AgentTasks. Its status's kept logs
// lose their text (trimLogs). A task's spec holds up
// to 0.95 MiB, nearly all of it its command, args, env and pod metadata,
// which only its Job reads: past cachetrim.TrimAbove, the cache keeps the rest of
// the spec (and of the pod's annotations those that loosen Pod Security,
// which taskjob.PrivilegeAsked reads), marked cachetrim.AnnotationTrimmed, and the
// controller reads the task whole, past the cache, in the one place it
// builds a Job (Reconciler.createJob). The metadata is trimmed as cachetrim.TrimMeta
// does. No controller writes a task from the cache but by patches of what
// it changed, so what was dropped is never written back.
func TrimTask(obj any) (any, error) {
	task, ok := obj.(*schedv1.AgentTask)
	if !ok {
		return obj, nil
	}
	cachetrim.TrimMeta(&task.ObjectMeta)
	trimLogs(task.Status.Logs)
	// File outputs (up to 1 MiB a task) are cached only when they are as
	// small as a termination message's: those the Workflow controller
	// passes on to later steps (schedv1.PassedFileOutputs). The status
	// write that adds them finishes the task, computed before they were
	// cached, and no later write touches them.
	if !schedv1.PassedFileOutputs(task.Status.FileOutputs) {
		// Their keys and sizes stay, for a workflow to say a reference
		// to one is to an output too big to pass on.
		cachetrim.MarkHeldOutputs(&task.ObjectMeta, task.Status.FileOutputs)
		task.Status.FileOutputs = nil
	}
	if cachetrim.TaskBulk(&task.Spec) <= cachetrim.TrimAbove {
		return task, nil
	}
	s := &task.Spec
	s.Command, s.Args, s.Env = nil, nil, nil
	if pm := s.PodMetadata; pm != nil {
		kept := map[string]string{}
		for k, v := range pm.Annotations {
			if podsecurity.LoosensPodSecurity(k, v) {
				kept[k] = v
			}
		}
		s.PodMetadata = &schedv1.PodMetadata{Annotations: kept}
	}
	cachetrim.MarkTrimmed(&task.ObjectMeta)
	return task, nil
}

// trimLogs drops the text of a cached task's kept logs (up to
// KeptLogTaskBytes a task), keeping which pods' logs are kept and how: no
// controller reads the text, and the status write that adds a log is
// computed from the task read whole (readLogs), so the merge patch of any
// other write leaves status.logs as it is.
func trimLogs(logs []schedv1.KeptLog) {
	for i := range logs {
		logs[i].Log, logs[i].Message = "", ""
	}
}

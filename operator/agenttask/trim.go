package agenttask

import (
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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

package podstatus

import corev1 "k8s.io/api/core/v1"

// Trim is the operator's cache transform for pods. The controllers read a
// pod's metadata (labels, finalizers, timestamps), where it runs or is
// pinned to (spec.nodeName and spec.affinity, for SchedExt), its restart
// policy (a crash loop reads differently with Always), and what its
// status says about it starting, running and ending: phase, conditions,
// start time and per container its name, image, state, last state, restart
// count and readiness. Everything else, most of a pod's size (containers,
// volumes, tolerations, IPs, image and container IDs, resources), is dropped
// before caching, with the managed fields and the annotations, which no
// controller reads and anyone who may edit pods could fill (256 KiB a
// pod). No controller writes a pod from
// the cache: the only write, the AgentTask outputs finalizer's release, is
// a patch by name.
func Trim(obj any) (any, error) {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return obj, nil
	}
	pod.ManagedFields, pod.Annotations = nil, nil
	pod.Spec = corev1.PodSpec{NodeName: pod.Spec.NodeName, Affinity: pod.Spec.Affinity, RestartPolicy: pod.Spec.RestartPolicy}
	pod.Status = corev1.PodStatus{
		Phase:                 pod.Status.Phase,
		Conditions:            pod.Status.Conditions,
		Message:               pod.Status.Message,
		Reason:                pod.Status.Reason,
		StartTime:             pod.Status.StartTime,
		InitContainerStatuses: trimContainers(pod.Status.InitContainerStatuses),
		ContainerStatuses:     trimContainers(pod.Status.ContainerStatuses),
	}
	return pod, nil
}

func trimContainers(in []corev1.ContainerStatus) []corev1.ContainerStatus {
	if len(in) == 0 {
		return nil
	}
	out := make([]corev1.ContainerStatus, len(in))
	for i, cs := range in {
		out[i] = corev1.ContainerStatus{
			Name:                 cs.Name,
			State:                cs.State,
			LastTerminationState: cs.LastTerminationState,
			Ready:                cs.Ready,
			RestartCount:         cs.RestartCount,
			Image:                cs.Image,
			Started:              cs.Started,
		}
	}
	return out
}

// Package podstatus explains, from a pod's status, why it does not run: the
// scheduler's verdict or the kubelet's reason for a waiting container. The
// controllers copy these causes into their conditions, so users see the real
// problem without reading pods.
package podstatus

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"

	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
)

// MaxMessage bounds the messages copied from pods into a status.
const MaxMessage = 1024

// Cause returns a condition reason and message for a pod that cannot run, or
// empty strings when the pod shows no problem (it may still be starting).
func Cause(pod *corev1.Pod) (reason, message string) {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable {
			return schedv1.ReasonUnschedulable, "no node can run the pod: " + Clip(c.Message)
		}
	}
	statuses := append(append([]corev1.ContainerStatus{}, pod.Status.InitContainerStatuses...), pod.Status.ContainerStatuses...)
	for i, cs := range statuses {
		w := cs.State.Waiting
		if w == nil {
			// An init container that ended is normal; only app containers loop.
			main := i >= len(pod.Status.InitContainerStatuses)
			if t := cs.State.Terminated; t != nil && main && restartsAlways(pod) && cs.RestartCount > 0 {
				// The kubelet may keep a crashed container's terminated
				// state through the back-off instead of waiting with
				// CrashLoopBackOff (1.36 does): it has ended, and ended
				// before, so it is crashing.
				return schedv1.ReasonCrashLoop, crashMessage(cs, t)
			}
			continue
		}
		switch w.Reason {
		case "ErrImagePull", "ImagePullBackOff", "InvalidImageName", "ErrImageNeverPull":
			return schedv1.ReasonImagePull, fmt.Sprintf("cannot pull image %s: %s: %s", cs.Image, w.Reason, Clip(w.Message))
		case "CrashLoopBackOff":
			return schedv1.ReasonCrashLoop, crashMessage(cs, cs.LastTerminationState.Terminated)
		case "CreateContainerConfigError":
			return schedv1.ReasonMissingRef, "the container cannot be configured: " + Clip(w.Message)
		case "CreateContainerError", "RunContainerError":
			return schedv1.ReasonCreateFailed, fmt.Sprintf("%s: %s", w.Reason, Clip(w.Message))
		}
	}
	return "", ""
}

// crashMessage says how often a container restarted and how it last ended.
func crashMessage(cs corev1.ContainerStatus, last *corev1.ContainerStateTerminated) string {
	msg := fmt.Sprintf("container %s keeps crashing (%d restarts)", cs.Name, cs.RestartCount)
	if last != nil {
		msg += fmt.Sprintf(", last exit code %d", last.ExitCode)
		if m := strings.TrimSpace(last.Message); m != "" {
			msg += ": " + Clip(m)
		}
	}
	return msg
}

// restartsAlways: a Deployment's or DaemonSet's pod, whose containers are
// restarted whenever they end (the API server defaults the policy to
// Always, so an empty one is too).
func restartsAlways(pod *corev1.Pod) bool {
	return pod.Spec.RestartPolicy == corev1.RestartPolicyAlways || pod.Spec.RestartPolicy == ""
}

// Clip shortens s to MaxMessage bytes, on a rune boundary so the status
// stays valid UTF-8.
func Clip(s string) string {
	if len(s) <= MaxMessage {
		return s
	}
	return strings.ToValidUTF8(s[:MaxMessage], "") + "…"
}

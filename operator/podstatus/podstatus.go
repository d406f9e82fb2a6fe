// Package podstatus explains, from a pod's status, why it does not run: the
// scheduler's verdict or the kubelet's reason for a waiting container. The
// controllers copy these causes into their conditions, so users see the real
// problem without reading pods.
package podstatus

import (
	"fmt"
	"strings"
	"unicode/utf8"

	corev1 "k8s.io/api/core/v1"

	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
)

// MaxMessage bounds the messages copied into a status (ClipMessage).
const MaxMessage = 1024

// Cause returns a condition reason and message for a pod that cannot run, or
// empty strings when the pod shows no problem (it may still be starting).
func Cause(pod *corev1.Pod) (reason, message string) {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable {
			return schedv1.ReasonUnschedulable, "no node can run the pod: " + ClipMessage(c.Message)
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
			return schedv1.ReasonImagePull, fmt.Sprintf("cannot pull image %s: %s: %s", cs.Image, w.Reason, ClipMessage(w.Message))
		case "CrashLoopBackOff":
			return schedv1.ReasonCrashLoop, crashMessage(cs, cs.LastTerminationState.Terminated)
		case "CreateContainerConfigError":
			return schedv1.ReasonMissingRef, "the container cannot be configured: " + ClipMessage(w.Message)
		case "CreateContainerError", "RunContainerError":
			return schedv1.ReasonCreateFailed, fmt.Sprintf("%s: %s", w.Reason, ClipMessage(w.Message))
		}
	}
	return "", ""
}

// Unschedulable says whether the scheduler reported that no node can run
// the pod.
func Unschedulable(pod *corev1.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable {
			return true
		}
	}
	return false
}

// Starting says what a pod that is not running yet waits for when it is
// no problem yet: its containers being created (images pulled, volumes
// mounted) or its init containers running. Empty when it waits for none of
// these; Cause comes first.
func Starting(pod *corev1.Pod) (reason, message string) {
	statuses := append(append([]corev1.ContainerStatus{}, pod.Status.InitContainerStatuses...), pod.Status.ContainerStatuses...)
	for _, cs := range statuses {
		if w := cs.State.Waiting; w != nil && (w.Reason == "ContainerCreating" || w.Reason == "PodInitializing") {
			msg := fmt.Sprintf("container %s is starting (%s)", cs.Name, w.Reason)
			if m := strings.TrimSpace(w.Message); m != "" {
				msg += ": " + ClipMessage(m)
			}
			return schedv1.ReasonContainersStarting, msg
		}
	}
	return "", ""
}

// Transient reports whether a cause may clear without anyone acting: a pod
// that no node can run now (the scheduler's verdict: no room yet, a claim
// still binding, a node an autoscaler may add, a rolling update's surge
// pod waiting for the old one to go, a CPU scheduler not attached yet) or
// whose containers are being created.
// An app waits these out until its progress deadline. Every other cause
// needs someone to act (an image that cannot be pulled or does not exist, a
// crash loop, a missing Secret or ConfigMap, a container the runtime
// refuses, a quota's or admission's refusal, an invalid spec), so it shows
// at once.
func Transient(reason string) bool {
	switch reason {
	case schedv1.ReasonUnschedulable, schedv1.ReasonCPUSchedulerUnavailable, schedv1.ReasonContainersStarting:
		return true
	}
	return false
}

// crashMessage says how often a container restarted and how it last ended:
// its termination message, which for a container that writes none is the
// end of its log (terminationMessagePolicy FallbackToLogsOnError), so the
// end is what is kept.
func crashMessage(cs corev1.ContainerStatus, last *corev1.ContainerStateTerminated) string {
	msg := fmt.Sprintf("container %s keeps crashing (%d restarts)", cs.Name, cs.RestartCount)
	if last != nil {
		msg += fmt.Sprintf(", last exit code %d", last.ExitCode)
		if m := strings.TrimSpace(last.Message); m != "" {
			msg += ": " + ClipMessageTail(m)
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

// ClipMessage shortens any message bound for a status (a pod's, the API
// server's, another controller's) to its first MaxMessage bytes, on a rune
// boundary, as valid UTF-8 (see validUTF8).
func ClipMessage(s string) string {
	s = validUTF8(s)
	if len(s) <= MaxMessage {
		return s
	}
	cut := MaxMessage
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

// ClipMessageTail is ClipMessage keeping the last MaxMessage bytes: the
// end of a log says why a container ended.
func ClipMessageTail(s string) string {
	s = validUTF8(s)
	if len(s) <= MaxMessage {
		return s
	}
	cut := len(s) - MaxMessage
	for cut < len(s) && !utf8.RuneStart(s[cut]) {
		cut++
	}
	return "…" + s[cut:]
}

// validUTF8 replaces each byte of s that is not UTF-8 with U+FFFD, as the
// JSON encoder does on the way to the API server: a status computed from a
// container's bytes then equals the one read back, and is not written
// again on every reconcile.
func validUTF8(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	return string([]rune(s))
}

package agenttask

import (
	"fmt"
	"maps"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// cloneTerminated is the clone init container's final state, nil when it
// has not ended or the pod has none.
func cloneTerminated(pod *corev1.Pod) *corev1.ContainerStateTerminated {
	if pod == nil {
		return nil
	}
	for i := range pod.Status.InitContainerStatuses {
		cs := &pod.Status.InitContainerStatuses[i]
		if cs.Name == CloneContainerName && cs.State.Terminated != nil {
			return cs.State.Terminated
		}
	}
	return nil
}

// withRepoCommits adds the commits the clone wrote (repo.<name>.commit)
// to the container's outputs; they win over an output of the same key the
// task wrote itself, since they say what the task ran on. The pod's
// outputs finalizer keeps the clone's termination message until the
// status holds it, as it does the container's.
func withRepoCommits(outputs map[string]string, pod *corev1.Pod) (map[string]string, *OutputsError) {
	term := cloneTerminated(pod)
	if term == nil || term.ExitCode != 0 {
		return outputs, nil
	}
	commits, perr := ParseOutputs(term.Message)
	if perr != nil {
		return nil, &OutputsError{Reason: perr.Reason, Message: "the clone's commits: " + perr.Message}
	}
	if len(commits) == 0 {
		return outputs, nil
	}
	out := make(map[string]string, len(outputs)+len(commits))
	maps.Copy(out, outputs)
	maps.Copy(out, commits)
	return out, nil
}

// attemptEnd is how a pod's attempt ended: its task container's end, or
// the clone's when the clone failed and the container never ran; nil while
// it runs.
func attemptEnd(p *corev1.Pod) *corev1.ContainerStateTerminated {
	if t := terminatedState(p); t != nil {
		return t
	}
	if t := cloneTerminated(p); t != nil && t.ExitCode != 0 {
		return t
	}
	return nil
}

// cloneFailure explains a pod whose clone failed, "" otherwise.
func cloneFailure(pod *corev1.Pod) string {
	term := cloneTerminated(pod)
	if term == nil || term.ExitCode == 0 {
		return ""
	}
	msg := strings.TrimSpace(term.Message)
	if msg == "" {
		msg = fmt.Sprintf("exit code %d", term.ExitCode)
	}
	return "cloning spec.repos failed: " + msg
}

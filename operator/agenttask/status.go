package agenttask

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
	"github.com/kubectl-sched/kubectl-sched/operator/podstatus"
	"github.com/kubectl-sched/kubectl-sched/operator/refusal"
	"github.com/kubectl-sched/kubectl-sched/operator/status"
)

// observed is what the controller saw of a task's Job and pods.
type observed struct {
	job  *batchv1.Job // nil when not created yet or deleted by the TTL
	pods []corev1.Pod
	// foreignJob is a Job of the task's Job name that the task does not
	// control (by UID): never taken as the task's.
	foreignJob *batchv1.Job
	// createFailure is the Job controller's latest FailedCreate message, for
	// a Job that cannot create its pod (forbidden, quota).
	createFailure string
	// createErr is the API server's refusal of the Job, when it refused it
	// for good (refusal.Final) or for a full quota (refusal.Quota).
	createErr error
	// notAllowed says why the task may not run as its spec asks, for
	// notAllowedReason: it asks for privilege its namespace does not allow
	// (any more), or passes pod annotations of a domain not allowed.
	notAllowed, notAllowedReason string
	// noCPUScheduler explains an unschedulable pod whose
	// placement.cpuScheduler no node it may run on has attached
	// (placement.CPUSchedulerCause); "" otherwise.
	noCPUScheduler string
}

// computeStatus derives the task's status from what was observed. It is pure:
// the same input gives the same status, so a reconcile that sees nothing
// new writes nothing. A finished status never changes.
func computeStatus(task *schedv1.AgentTask, o observed, now metav1.Time) (st schedv1.AgentTaskStatus) {
	st = *task.Status.DeepCopy()
	st.ObservedGeneration = task.Generation
	if st.Phase.Finished() {
		return st
	}
	if o.job != nil {
		st.JobName = o.job.Name
	}
	// Set again below only while the task waits to retry.
	st.NextAttemptTime = nil

	// The pods pruned count in st.Pruned only.
	pods := sortedPods(unpruned(o.pods, st.Pruned))
	before := priorOf(st.Pruned)
	countAttempts(&st, pods, before)
	latest := latestPod(pods)
	if latest != nil && podStarted(latest) {
		st.PodName = latest.Name
		if st.StartTime == nil {
			st.StartTime = podStartTime(latest)
		}
	}
	if !withoutJob(&st, task, o, now) && !withJob(&st, task, o, pods, before, now) {
		return st // halted: the status waits for news, and is returned as it was
	}
	// Whatever ended it, the pods that may go are named.
	st.Pruned = prune(st.Pruned, pods, st.Logs)
	return st
}

// countAttempts counts the started and the disrupted pods, with those
// pruned before.
func countAttempts(st *schedv1.AgentTaskStatus, pods []corev1.Pod, before prior) {
	started, disrupted := before.attempts, before.disrupted
	for i := range pods {
		// A disrupted pod's attempt is not counted: the Job replaces it
		// without using a retry.
		switch {
		case disruption(&pods[i]) != nil:
			disrupted++
		case podStarted(&pods[i]):
			started++
		}
	}
	st.Attempts = max(st.Attempts, int32(started))
	st.Disruptions = max(st.Disruptions, int32(disrupted))
}

// withoutJob settles the status of a task that has no Job of its own, or
// may not run as its spec asks, and reports whether it did.
func withoutJob(st *schedv1.AgentTaskStatus, task *schedv1.AgentTask, o observed, now metav1.Time) bool {
	switch {
	case o.job == nil && task.Spec.Cancel:
		finish(st, schedv1.TaskCancelled, schedv1.ReasonCancelled, "cancelled before it started (spec.cancel)", now)
	case o.notAllowed != "":
		finish(st, schedv1.TaskFailed, o.notAllowedReason, o.notAllowed, now)
	case o.job == nil && o.foreignJob != nil:
		j := o.foreignJob
		owner := "it has no controller"
		if ref := metav1.GetControllerOf(j); ref != nil {
			owner = fmt.Sprintf("its controller is %s %s", ref.Kind, ref.Name)
		}
		finish(st, schedv1.TaskFailed, schedv1.ReasonNameTaken, fmt.Sprintf(
			"Job %s already exists and is not this task's (%s); the operator never takes it over: delete it (kubectl delete job %s -n %s) and create the task again, or create it under another name",
			j.Name, owner, j.Name, j.Namespace), now)
	case o.job == nil && o.createErr != nil && refusal.Classify(o.createErr) == refusal.Final:
		finish(st, schedv1.TaskFailed, schedv1.ReasonRejected, "the API server refused the task's Job: "+refusal.Message(o.createErr)+"; change the task's spec and create it again", now)
	case o.job == nil && o.createErr != nil:
		setPending(st, schedv1.ReasonQuotaExceeded, "waiting for quota to create the Job: "+refusal.Message(o.createErr))
	case o.job == nil:
		setPending(st, schedv1.ReasonPending, "creating the Job")
	default:
		return false
	}
	return true
}

// withJob settles the status of a task from its Job and pods. False: the
// Job's news came before its pod's, and the status waits for the pod's.
func withJob(st *schedv1.AgentTaskStatus, task *schedv1.AgentTask, o observed, pods []corev1.Pod, before prior, now metav1.Time) bool {
	latest := latestPod(pods)
	wait := waitingToRetry(&task.Spec, o.job, pods, before)
	unretried := notRetried(&task.Spec, o.job, pods)
	end := deadline(&task.Spec, o.job)
	switch {
	case jobFailed(o.job) != nil:
		c := jobFailed(o.job)
		pod := latestTerminated(pods)
		if pod == nil && c.Reason == batchv1.JobReasonBackoffLimitExceeded && len(pods) > 0 {
			return false // wait for its exit code
		}
		failed(st, task, c, pod, now)
	case jobCondition(o.job, batchv1.JobComplete) != nil || jobCondition(o.job, batchv1.JobSuccessCriteriaMet) != nil || successfulPod(pods) != nil:
		// A Succeeded pod settles it: the Job runs one pod to one
		// completion, and the Job controller reports it only after its
		// batching delay (about a second), which would slow every
		// workflow hand-off.
		pod := successfulPod(pods)
		if terminatedState(pod) == nil && len(pods) > 0 {
			// The pod is held by our finalizer: wait for it rather than
			// lose its outputs.
			return false
		}
		succeeded(st, pod, now)
	case before.failed+failedAttempts(pods) > int(task.Spec.RetryLimit()):
		// Every attempt the Job allows has failed; as above, do not wait
		// for the Job controller to say so.
		failed(st, task, &batchv1.JobCondition{Reason: batchv1.JobReasonBackoffLimitExceeded}, latestTerminated(pods), now)
	case unretried != nil:
		// Its exit code is not in retry.onExitCodes: the Job's
		// podFailurePolicy fails the Job, which need not be waited for.
		failed(st, task, &batchv1.JobCondition{Reason: batchv1.JobReasonPodFailurePolicy}, unretried, now)
	case st.Disruptions > schedv1.MaxDisruptions:
		// The Job would replace the pod again; the operator stops it
		// (Reconcile).
		tooManyDisruptions(st, pods, now)
	case task.Spec.Cancel && ptr.Deref(o.job.Spec.Suspend, false):
		// The spec says whether a suspended Job was cancelled or is held
		// for a backoff: a cancel during a backoff ends here too.
		cancelled(st, &task.Spec, wait, pods, now)
	case held(&task.Spec, o.job) && !end.IsZero() && !now.Before(&metav1.Time{Time: end}):
		// The Job controller does not count a suspended Job's time: the
		// operator ends the task at its deadline itself.
		msg := fmt.Sprintf("ran past spec.timeout %s while it waited to retry", task.Spec.Timeout.Duration)
		if wait != nil {
			msg += ": " + attemptFailed(&task.Spec, wait)
		}
		finish(st, schedv1.TaskTimeout, schedv1.ReasonDeadlineExceeded, msg, now)
		setExitCode(st, latestTerminated(pods))
	case wait != nil:
		backingOff(st, &task.Spec, wait, end)
	case latest != nil && disruption(latest) != nil && !podRunning(latest):
		c := disruption(latest)
		setPending(st, schedv1.ReasonDisrupted, fmt.Sprintf("pod %s was disrupted (%s: %s); the Job starts another, which does not count against the retry limit (disruption %d of at most %d)",
			latest.Name, c.Reason, podstatus.ClipMessage(c.Message), st.Disruptions, schedv1.MaxDisruptions))
	case latest != nil && podRunning(latest):
		running(st, &task.Spec, latest)
	default:
		reason, msg := whyPending(latest, o.createFailure, o.noCPUScheduler)
		setPending(st, reason, msg)
	}
	return true
}

// cancelled ends a task whose Job a cancel suspended, during an attempt
// or while it waited to retry.
func cancelled(st *schedv1.AgentTaskStatus, spec *schedv1.AgentTaskSpec, wait *retryWait, pods []corev1.Pod, now metav1.Time) {
	msg := "cancelled (spec.cancel): the pod was stopped"
	if wait != nil {
		msg = "cancelled (spec.cancel) while it waited to retry: " + attemptFailed(spec, wait)
	}
	finish(st, schedv1.TaskCancelled, schedv1.ReasonCancelled, msg, now)
	if p := latestTerminated(pods); p != nil && p.DeletionTimestamp != nil {
		// The pod the cancel stopped: it ended the task.
		setExit(st, p)
	} else {
		// Cancelled between attempts: the last one's exit code stays.
		setExitCode(st, p)
	}
}

// running is the status of a task whose pod runs.
func running(st *schedv1.AgentTaskStatus, spec *schedv1.AgentTaskSpec, pod *corev1.Pod) {
	st.Phase = schedv1.TaskRunning
	attempt := strconv.Itoa(int(st.Attempts))
	if limit := spec.RetryLimit(); limit > 0 {
		attempt += fmt.Sprintf(" of %d", limit+1)
	}
	st.Reason, st.Message = schedv1.ReasonRunning, fmt.Sprintf("pod %s is running (attempt %s)", pod.Name, attempt)
	status.SetCondition(&st.Conditions, st.ObservedGeneration, metav1.Condition{Type: schedv1.ConditionReady, Status: metav1.ConditionTrue, Reason: schedv1.ReasonRunning, Message: st.Message})
	status.SetCondition(&st.Conditions, st.ObservedGeneration, metav1.Condition{Type: schedv1.ConditionSucceeded, Status: metav1.ConditionUnknown, Reason: schedv1.ReasonRunning, Message: "the task has not finished"})
}

// tooManyDisruptions fails a task more of whose pods were disrupted than
// a task is replaced after: the eviction of a container over its
// ephemeral-storage limit, say, would come again with every replacement.
func tooManyDisruptions(st *schedv1.AgentTaskStatus, sorted []corev1.Pod, now metav1.Time) {
	msg := fmt.Sprintf("%d of its pods were disrupted (preempted, evicted or drained), more than the %d a task is replaced after without using a retry; its Job was stopped",
		st.Disruptions, schedv1.MaxDisruptions)
	for i := len(sorted) - 1; i >= 0; i-- {
		if c := disruption(&sorted[i]); c != nil {
			msg += fmt.Sprintf("; the latest, pod %s: %s: %s", sorted[i].Name, c.Reason, podstatus.ClipMessage(c.Message))
			break
		}
	}
	msg += ". A container evicted for its ephemeral storage wrote more to its disk than resources.limits.ephemeral-storage (its tier's default when unset): raise the limit or write less, and create the task again"
	setExitCode(st, latestTerminated(sorted))
	finish(st, schedv1.TaskFailed, schedv1.ReasonTooManyDisruptions, msg, now)
}

func setPending(st *schedv1.AgentTaskStatus, reason, msg string) {
	st.Phase = schedv1.TaskPending
	st.Reason, st.Message = reason, msg
	setNotReady(st, reason, msg)
}

// setNotReady sets the conditions of an unfinished task whose pod does not
// run.
func setNotReady(st *schedv1.AgentTaskStatus, reason, msg string) {
	status.SetCondition(&st.Conditions, st.ObservedGeneration, metav1.Condition{Type: schedv1.ConditionReady, Status: metav1.ConditionFalse, Reason: reason, Message: msg})
	status.SetCondition(&st.Conditions, st.ObservedGeneration, metav1.Condition{Type: schedv1.ConditionSucceeded, Status: metav1.ConditionUnknown, Reason: reason, Message: "the task has not finished"})
}

// whyPending explains a pod that does not run yet, from the most specific
// signal Kubernetes gives: the scheduler's verdict (narrowed to the CPU
// scheduler no allowed node runs, noCPUScheduler), the kubelet's waiting
// reason, or the Job controller's failure to create the pod.
func whyPending(pod *corev1.Pod, createFailure, noCPUScheduler string) (reason, msg string) {
	if pod == nil {
		if createFailure != "" {
			return schedv1.ReasonForbidden, "the Job cannot create its pod: " + podstatus.ClipMessage(createFailure)
		}
		return schedv1.ReasonPending, "waiting for the pod to start"
	}
	if reason, msg := podstatus.Cause(pod); reason != "" {
		if reason == schedv1.ReasonUnschedulable && noCPUScheduler != "" {
			return schedv1.ReasonCPUSchedulerUnavailable, noCPUScheduler
		}
		return reason, msg
	}
	return schedv1.ReasonPending, "waiting for the pod to start"
}

func succeeded(st *schedv1.AgentTaskStatus, pod *corev1.Pod, now metav1.Time) {
	term := terminatedState(pod)
	setExit(st, pod)
	if term == nil {
		// The pod is gone without us reading it, which the outputs finalizer
		// prevents; say so rather than report empty outputs as real.
		finish(st, schedv1.TaskSucceeded, schedv1.ReasonSucceeded, "succeeded; its pod was removed before its outputs could be read", now)
		return
	}
	outputs, perr := ParseOutputs(term.Message)
	if perr == nil {
		outputs, perr = withRepoCommits(outputs, pod)
	}
	if perr != nil {
		finish(st, schedv1.TaskFailed, perr.Reason, "the container exited 0 but its outputs are unusable: "+perr.Message, now)
		return
	}
	st.Outputs = outputs
	msg := "succeeded"
	if n := len(outputs); n > 0 {
		msg = fmt.Sprintf("succeeded with %d output(s)", n)
	}
	finish(st, schedv1.TaskSucceeded, schedv1.ReasonSucceeded, msg, now)
}

func failed(st *schedv1.AgentTaskStatus, task *schedv1.AgentTask, c *batchv1.JobCondition, pod *corev1.Pod, now metav1.Time) {
	if c.Reason == batchv1.JobReasonDeadlineExceeded {
		// It ended at its deadline, when the Job controller said so, not
		// when an attempt did: a retried task's last one may have ended
		// long before, or still be stopping.
		setExitCode(st, pod)
		if !c.LastTransitionTime.IsZero() {
			now = c.LastTransitionTime
		}
		limit := "its deadline"
		if task.Spec.Timeout != nil {
			limit = "spec.timeout " + task.Spec.Timeout.Duration.String()
		}
		finish(st, schedv1.TaskTimeout, schedv1.ReasonDeadlineExceeded, fmt.Sprintf("ran past %s and was stopped", limit), now)
		return
	}
	setExit(st, pod)
	switch {
	case st.ExitCode != nil && *st.ExitCode != 0:
		msg := fmt.Sprintf("exited with code %d after %d attempt(s)", *st.ExitCode, st.Attempts)
		if r := task.Spec.Retry; r != nil && !retried(r, *st.ExitCode) {
			msg = fmt.Sprintf("exit code %d is not in retry.onExitCodes %v: not retried (attempt %d of %d)", *st.ExitCode, r.OnExitCodes, st.Attempts, r.Limit+1)
		}
		if term := terminatedState(pod); term != nil && strings.TrimSpace(term.Message) != "" {
			msg += ": " + podstatus.ClipMessage(strings.TrimSpace(term.Message))
		}
		finish(st, schedv1.TaskFailed, schedv1.ReasonNonZeroExit, msg, now)
	case cloneFailure(pod) != "":
		finish(st, schedv1.TaskFailed, schedv1.ReasonCloneFailed, podstatus.ClipMessage(cloneFailure(pod)), now)
	default:
		finish(st, schedv1.TaskFailed, schedv1.ReasonFailed, fmt.Sprintf("the Job failed (%s): %s", c.Reason, podstatus.ClipMessage(c.Message)), now)
	}
}

// finish moves the status to a final phase. CompletionTime comes from now
// only once: the status is never recomputed after this.
func finish(st *schedv1.AgentTaskStatus, phase schedv1.AgentTaskPhase, reason, msg string, now metav1.Time) {
	st.Phase, st.Reason, st.Message = phase, reason, msg
	if st.CompletionTime == nil {
		st.CompletionTime = &now
	}
	if phase == schedv1.TaskSucceeded {
		status.SetCondition(&st.Conditions, st.ObservedGeneration, metav1.Condition{Type: schedv1.ConditionReady, Status: metav1.ConditionTrue, Reason: reason, Message: msg})
		status.SetCondition(&st.Conditions, st.ObservedGeneration, metav1.Condition{Type: schedv1.ConditionSucceeded, Status: metav1.ConditionTrue, Reason: reason, Message: msg})
		return
	}
	status.SetCondition(&st.Conditions, st.ObservedGeneration, metav1.Condition{Type: schedv1.ConditionReady, Status: metav1.ConditionFalse, Reason: reason, Message: msg})
	status.SetCondition(&st.Conditions, st.ObservedGeneration, metav1.Condition{Type: schedv1.ConditionSucceeded, Status: metav1.ConditionFalse, Reason: reason, Message: msg})
}

// setExitCode records the pod's exit code, when it has one.
func setExitCode(st *schedv1.AgentTaskStatus, pod *corev1.Pod) {
	if term := terminatedState(pod); term != nil {
		st.ExitCode = &term.ExitCode
	}
}

// setExit records the pod's exit code and, the task having ended with it,
// its end as the task's.
func setExit(st *schedv1.AgentTaskStatus, pod *corev1.Pod) {
	if term := terminatedState(pod); term != nil {
		st.ExitCode = &term.ExitCode
		if !term.FinishedAt.IsZero() {
			t := term.FinishedAt
			st.CompletionTime = &t
		}
	}
}

func jobCondition(job *batchv1.Job, t batchv1.JobConditionType) *batchv1.JobCondition {
	for i := range job.Status.Conditions {
		if c := &job.Status.Conditions[i]; c.Type == t && c.Status == corev1.ConditionTrue {
			return c
		}
	}
	return nil
}

// jobFailed is the Job's failure, including FailureTarget: the Job controller
// sets it as soon as the Job is doomed, before its pods finish terminating.
func jobFailed(job *batchv1.Job) *batchv1.JobCondition {
	if c := jobCondition(job, batchv1.JobFailed); c != nil {
		return c
	}
	return jobCondition(job, batchv1.JobFailureTarget)
}

func terminatedState(pod *corev1.Pod) *corev1.ContainerStateTerminated {
	if pod == nil {
		return nil
	}
	for i := range pod.Status.ContainerStatuses {
		cs := &pod.Status.ContainerStatuses[i]
		if cs.Name == ContainerName && cs.State.Terminated != nil {
			return cs.State.Terminated
		}
	}
	return nil
}

func podStarted(p *corev1.Pod) bool {
	return p.Status.Phase == corev1.PodRunning || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed && attemptEnd(p) != nil
}

func podRunning(p *corev1.Pod) bool {
	return p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil
}

func podStartTime(p *corev1.Pod) *metav1.Time {
	for _, cs := range p.Status.ContainerStatuses {
		if cs.State.Running != nil {
			t := cs.State.Running.StartedAt
			return &t
		}
		if cs.State.Terminated != nil && !cs.State.Terminated.StartedAt.IsZero() {
			t := cs.State.Terminated.StartedAt
			return &t
		}
	}
	if p.Status.StartTime != nil {
		t := *p.Status.StartTime
		return &t
	}
	return nil
}

// sortedPods orders pods by creation; in the same second, a disrupted pod
// comes before the one that replaced it.
func sortedPods(pods []corev1.Pod) []corev1.Pod {
	out := append([]corev1.Pod(nil), pods...)
	sort.SliceStable(out, func(i, j int) bool {
		a, b := out[i].CreationTimestamp, out[j].CreationTimestamp
		if a.Equal(&b) {
			if di, dj := disruption(&out[i]) != nil, disruption(&out[j]) != nil; di != dj {
				return di
			}
			return out[i].Name < out[j].Name
		}
		return a.Before(&b)
	})
	return out
}

// disruption is the pod's DisruptionTarget condition when it was preempted,
// evicted or drained, which the Job's podFailurePolicy ignores.
func disruption(p *corev1.Pod) *corev1.PodCondition {
	for i := range p.Status.Conditions {
		if c := &p.Status.Conditions[i]; c.Type == corev1.DisruptionTarget && c.Status == corev1.ConditionTrue {
			return c
		}
	}
	return nil
}

func latestPod(sorted []corev1.Pod) *corev1.Pod {
	if len(sorted) == 0 {
		return nil
	}
	return &sorted[len(sorted)-1]
}

func successfulPod(sorted []corev1.Pod) *corev1.Pod {
	for i := len(sorted) - 1; i >= 0; i-- {
		if sorted[i].Status.Phase == corev1.PodSucceeded {
			return &sorted[i]
		}
	}
	return nil
}

func latestTerminated(sorted []corev1.Pod) *corev1.Pod {
	for i := len(sorted) - 1; i >= 0; i-- {
		if attemptEnd(&sorted[i]) != nil {
			return &sorted[i]
		}
	}
	return nil
}

// notRetried is the task's latest attempt when it failed with an exit code
// retry.onExitCodes does not list, nil otherwise.
func notRetried(spec *schedv1.AgentTaskSpec, job *batchv1.Job, sorted []corev1.Pod) *corev1.Pod {
	p := latestAttempt(job, sorted)
	if p == nil || !failedAttempt(p) || cloneFailure(p) != "" || retried(spec.Retry, attemptEnd(p).ExitCode) {
		return nil
	}
	return p
}

// failedAttempts counts pods that ran and failed on their own; pods the
// Job controller deleted (deadline, suspend) and disrupted pods are not
// attempts that failed.
func failedAttempts(pods []corev1.Pod) int {
	n := 0
	for i := range pods {
		if pods[i].Status.Phase == corev1.PodFailed && pods[i].DeletionTimestamp == nil && attemptEnd(&pods[i]) != nil && disruption(&pods[i]) == nil {
			n++
		}
	}
	return n
}

// ttlExpiry is when a finished task's TTL runs out, or zero without a TTL.
func ttlExpiry(task *schedv1.AgentTask) time.Time {
	if task.Spec.TTLAfterFinished == nil || task.Status.CompletionTime == nil {
		return time.Time{}
	}
	return task.Status.CompletionTime.Add(task.Spec.TTLAfterFinished.Duration)
}

package agenttask

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/kubectl-sched/kubectl-sched/api/tiers"
	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
	"github.com/kubectl-sched/kubectl-sched/operator/podstatus"
)

// The Job controller's own wait before it replaces a failed pod: 10s,
// doubled for each failed pod, at most 10m (k8s.io/kubernetes
// pkg/controller/job: DefaultJobPodFailureBackOff, MaxJobPodFailureBackOff).
// It cannot be set per Job, and it still applies after the operator resumes
// a Job it held, so retry.backoff is at least jobControllerBackoff (a CRD
// rule) and is capped at the same maxBackoff: the wait asked for is then
// the one that happens.
const (
	jobControllerBackoff = 10 * time.Second
	maxBackoff           = 10 * time.Minute
)

// doubled is base * 2^(n-1), at most maxBackoff.
func doubled(base time.Duration, n int) time.Duration {
	d := base
	for i := 1; i < n && d < maxBackoff; i++ {
		d *= 2
	}
	return min(d, maxBackoff)
}

// retryWait is where a task stands between a failed attempt and the next.
type retryWait struct {
	// pod is the failed attempt, the task's latest.
	pod *corev1.Pod
	// failed counts the failed attempts so far: the next attempt is retry
	// number failed.
	failed int
	// exitCode is the failed attempt's.
	exitCode int32
	// resumeAt is when the operator lets the Job start the next attempt:
	// the attempt's end plus retry.backoff doubled failed-1 times. Zero
	// without retry.backoff: the operator holds nothing.
	resumeAt time.Time
	// next is when the next attempt starts: the later of resumeAt and the
	// Job controller's own wait, which counts jobFailed pods.
	next      time.Time
	jobFailed int
}

// waitingToRetry is non-nil while the task waits for its next attempt: its
// latest attempt failed on its own (not disrupted, not stopped by the Job),
// the retry limit is not used up, and its exit code is worth a retry.
// Everything comes from the pods, which the outputs finalizer keeps until
// the task ends, so a restarted operator finds the same wait.
func waitingToRetry(spec *schedv1.AgentTaskSpec, job *batchv1.Job, sorted []corev1.Pod, before prior) *retryWait {
	latest := latestAttempt(job, sorted)
	if latest == nil || !failedAttempt(latest) {
		return nil
	}
	n := before.failed + failedAttempts(sorted)
	term := attemptEnd(latest)
	// The Job retries a failed clone whatever retry.onExitCodes says.
	if n > int(spec.RetryLimit()) || (cloneFailure(latest) == "" && !retried(spec.Retry, term.ExitCode)) {
		return nil
	}
	w := &retryWait{pod: latest, failed: n, exitCode: term.ExitCode}
	if r := spec.Retry; r != nil && r.Backoff != nil {
		w.resumeAt = finishedAt(latest).Add(doubled(r.Backoff.Duration, n))
	}
	w.next = w.resumeAt
	at, jobFailed := jobControllerNext(sorted, before)
	if at.After(w.next) {
		w.next, w.jobFailed = at, jobFailed
	}
	return w
}

// retried reports whether retry lets an attempt that exited with code be
// tried again (when the limit allows).
func retried(retry *schedv1.RetryPolicy, code int32) bool {
	return retry == nil || len(retry.OnExitCodes) == 0 || slices.Contains(retry.OnExitCodes, code)
}

// latestAttempt is the latest pod, but while the Job is suspended not
// those the Job controller deleted for it (which it never counts): a pod
// it had just made when the operator held the Job is not an attempt. A pod
// it deletes because the Job failed (its deadline) is the latest attempt.
func latestAttempt(job *batchv1.Job, sorted []corev1.Pod) *corev1.Pod {
	suspended := job != nil && ptr.Deref(job.Spec.Suspend, false)
	for i := len(sorted) - 1; i >= 0; i-- {
		p := &sorted[i]
		if !suspended || p.DeletionTimestamp == nil || disruption(p) != nil || p.Status.Phase == corev1.PodSucceeded {
			return p
		}
	}
	return nil
}

// failedAttempt reports whether the pod ran and failed on its own, as
// failedAttempts counts it.
func failedAttempt(p *corev1.Pod) bool {
	return p.Status.Phase == corev1.PodFailed && p.DeletionTimestamp == nil && attemptEnd(p) != nil && disruption(p) == nil
}

// jobControllerNext is when the Job controller starts a pod after the
// failed ones, by its own wait: it counts every failed pod, disrupted ones
// too (they only do not count against the backoffLimit), from the end of
// the latest. It keeps that count in memory only, so after a restart of
// kube-controller-manager it may start sooner: never later. The pruned
// pods count too (before): the latest failed one, whose end counts, is
// never pruned.
func jobControllerNext(sorted []corev1.Pod, before prior) (time.Time, int) {
	n := 0
	var last time.Time
	for i := range sorted {
		p := &sorted[i]
		// The pods it deleted itself (cancel, a held Job) lost its
		// tracking finalizer first and are not counted.
		if p.Status.Phase != corev1.PodFailed || p.DeletionTimestamp != nil && disruption(p) == nil {
			continue
		}
		n++
		if t := finishedAt(p); t.After(last) {
			last = t
		}
	}
	if n == 0 {
		return time.Time{}, 0
	}
	n += before.failed + before.disrupted
	return last.Add(doubled(jobControllerBackoff, n)), n
}

// finishedAt is when a finished pod ended, as the Job controller reads it:
// its container's end, else when it stopped being Ready, else its
// deletion, else its creation.
func finishedAt(p *corev1.Pod) time.Time {
	if t := attemptEnd(p); t != nil && !t.FinishedAt.IsZero() {
		return t.FinishedAt.Time
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady && c.Status == corev1.ConditionFalse && !c.LastTransitionTime.IsZero() {
			return c.LastTransitionTime.Time
		}
	}
	if p.DeletionTimestamp != nil {
		return p.DeletionTimestamp.Add(-time.Duration(ptr.Deref(p.DeletionGracePeriodSeconds, 0)) * time.Second)
	}
	return p.CreationTimestamp.Time
}

// deadline is when the task's spec.timeout runs out: counted from its
// Job's creation, as the Job's activeDeadlineSeconds first was. Zero
// without a timeout.
func deadline(spec *schedv1.AgentTaskSpec, job *batchv1.Job) time.Time {
	if spec.Timeout == nil || job == nil {
		return time.Time{}
	}
	return job.CreationTimestamp.Add(spec.Timeout.Duration)
}

// held reports whether the Job is suspended for a backoff: by the
// operator, not for spec.cancel.
func held(spec *schedv1.AgentTaskSpec, job *batchv1.Job) bool {
	return job != nil && !spec.Cancel && ptr.Deref(job.Spec.Suspend, false)
}

// jobHold is what the operator does to the Job's spec.suspend for a
// backoff.
type jobHold struct {
	// suspend holds the Job until resumeAt.
	suspend bool
	// resume lets it go on, with activeDeadlineSeconds set to what is left
	// of spec.timeout (nil without one): resuming a Job restarts its clock.
	resume         bool
	activeDeadline *int64
	// wake is when to look again (resumeAt, or the deadline when it comes
	// first); zero when an event will say.
	wake time.Time
}

// planHold decides, for an unfinished task that is not cancelled, whether
// the operator holds its Job now, lets it go, or waits. It is pure: the
// same task, Job and pods at the same time give the same answer, so a
// restarted operator resumes at the same time, and only a Job the cache
// shows held is resumed (the patch is conditional on its resourceVersion,
// so a stale cache cannot resume it twice).
func planHold(spec *schedv1.AgentTaskSpec, job *batchv1.Job, sorted []corev1.Pod, before prior, now time.Time) jobHold {
	var h jobHold
	if job == nil || spec.Cancel {
		return h
	}
	w := waitingToRetry(spec, job, sorted, before)
	end := deadline(spec, job)
	if w != nil && now.Before(w.resumeAt) {
		// The Job controller waits at least 10s after a failure before it
		// makes the next pod, and the operator sees the failure first, so
		// holding now keeps the next attempt from starting.
		h.suspend = !ptr.Deref(job.Spec.Suspend, false)
		h.wake = w.resumeAt
		if !end.IsZero() && end.Before(h.wake) {
			h.wake = end
		}
		return h
	}
	if !held(spec, job) {
		return h
	}
	if !end.IsZero() {
		left := end.Sub(now)
		if left < time.Second {
			// Nothing left to run with: the task ends Timeout (computeStatus).
			h.wake = end
			return h
		}
		h.activeDeadline = ptr.To(int64(math.Ceil(left.Seconds())))
	}
	h.resume = true
	return h
}

// backingOff sets the status of a task waiting for its next attempt.
func backingOff(st *schedv1.AgentTaskStatus, spec *schedv1.AgentTaskSpec, w *retryWait, end time.Time) {
	setExitCode(st, w.pod)
	st.NextAttemptTime = ptr.To(metav1.NewTime(w.next))
	msg := fmt.Sprintf("%s; the next starts at %s (%s)", attemptFailed(spec, w), atClock(w.next), waitText(spec, w))
	if !end.IsZero() && !w.next.Before(end) {
		msg = fmt.Sprintf("%s; the next would start at %s (%s), past spec.timeout at %s", attemptFailed(spec, w), atClock(w.next), waitText(spec, w), atClock(end))
	}
	msg += said(w.pod)
	st.Phase = schedv1.TaskRunning
	st.Reason, st.Message = schedv1.ReasonBackingOff, msg
	setNotReady(st, schedv1.ReasonBackingOff, msg)
}

// attemptFailed says which attempt failed and how.
func attemptFailed(spec *schedv1.AgentTaskSpec, w *retryWait) string {
	return fmt.Sprintf("attempt %d of %d failed (exit code %d)", w.failed, spec.RetryLimit()+1, w.exitCode)
}

// waitText says where the wait comes from: retry.backoff (doubled for a
// later retry), or the Job controller's own wait.
func waitText(spec *schedv1.AgentTaskSpec, w *retryWait) string {
	if w.jobFailed > 0 || w.resumeAt.IsZero() {
		return "the Job controller's wait after " + plural(max(w.jobFailed, 1), "failed pod")
	}
	b := spec.Retry.Backoff.Duration
	switch d := doubled(b, w.failed); d {
	case b:
		return "backoff " + tiers.FormatDuration(b)
	case maxBackoff:
		return fmt.Sprintf("backoff %s doubled, at most %s", tiers.FormatDuration(b), tiers.FormatDuration(maxBackoff))
	default:
		return fmt.Sprintf("backoff %s doubled to %s", tiers.FormatDuration(b), tiers.FormatDuration(d))
	}
}

// said is the failed attempt's termination message, as "; it said: ...",
// or "".
func said(p *corev1.Pod) string {
	if term := terminatedState(p); term != nil {
		if m := strings.TrimSpace(term.Message); m != "" {
			return "; it said: " + podstatus.ClipMessage(m)
		}
	}
	return ""
}

// atClock is a time in a status message: UTC, to the second.
func atClock(t time.Time) string { return t.UTC().Format("15:04:05 UTC") }

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

package userdeployment

import (
	"cmp"
	"fmt"
	"sort"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
	"github.com/kubectl-sched/kubectl-sched/operator/podstatus"
	"github.com/kubectl-sched/kubectl-sched/operator/status"
)

// maxConditionMessage keeps a condition well under the API's 32 KiB limit
// when many services fail at once.
const maxConditionMessage = 4096

// observed is what the controller saw of an app's objects after writing.
type observed struct {
	// deployments by service name; absent when not created.
	deployments map[string]*appsv1.Deployment
	// pods by service name.
	pods map[string][]corev1.Pod
	// problems are objects the operator could not write, and why.
	problems []string
	// certificate is the app's cert-manager Certificate as cached; nil
	// before it is.
	certificate *unstructured.Unstructured
	// now is when this was observed: progress deadlines count to it.
	now time.Time
	// noCPUScheduler explains the app's unschedulable pods when no node
	// they may run on has their placement.cpuScheduler attached
	// (cpuSchedulerCause); "" otherwise.
	noCPUScheduler string
	// currentRevision is the spec's revision, 0 when it could not be
	// recorded; runRevision the one whose template the plan builds (the
	// spec's, or the one rolled back to), 0 when not known; rolledBack
	// says which revision is rolled back to which, while one is.
	currentRevision, runRevision int64
	// currentCreated is when the spec's revision was recorded.
	currentCreated time.Time
	rolledBack     *schedv1.RolledBack
}

// cause is why an app is Degraded, or what it waits for.
type cause struct{ reason, message string }

// summary is what the conditions are computed from: each service's state,
// the causes that make the app Degraded and those it waits out.
type summary struct {
	stopped bool
	causes  []cause
	// waitingOn are causes that may clear by themselves
	// (podstatus.Transient), of services still within their deadline.
	waitingOn []cause
	deadline  time.Duration
	// ready services have rolled out; missing ones have no Deployment yet.
	ready, missing, services int
	// remaining pods while stopping; waiting services while rolling out.
	remaining int32
	waiting   []string
}

// computeStatus derives the status from the plan and what was observed. It
// is pure: a reconcile that sees nothing new computes the same status and
// writes nothing. The phase follows from the state (see
// UserDeploymentPhase): Stopped when asked; Degraded when a cause is found;
// Pending while a Deployment is missing; Running when every service has
// rolled out; Progressing otherwise. Each condition has its function.
func computeStatus(ud *schedv1.UserDeployment, p plan, o observed) schedv1.UserDeploymentStatus {
	st := schedv1.UserDeploymentStatus{
		ObservedGeneration: ud.Generation,
		URLs:               p.urls,
		Conditions:         append([]metav1.Condition(nil), ud.Status.Conditions...),
	}
	sum := summarize(ud, p, o, &st)
	st.Ready = fmt.Sprintf("%d/%d", sum.ready, sum.services)
	st.Phase = phaseOf(sum)
	revisionStatus(ud, o, &st)
	degraded := degradedCondition(sum)
	status.SetCondition(&st.Conditions, ud.Generation, readyCondition(st.Phase, sum, degraded, st.RolledBack))
	status.SetCondition(&st.Conditions, ud.Generation, progressingCondition(st.Phase, sum, degraded))
	status.SetCondition(&st.Conditions, ud.Generation, degraded)
	if c := p.priority; c.Type != "" {
		status.SetCondition(&st.Conditions, ud.Generation, c)
	} else {
		meta.RemoveStatusCondition(&st.Conditions, schedv1.ConditionPriorityMapped)
	}
	if s, reason, msg := certificateState(p, o.certificate); reason != "" {
		status.SetCondition(&st.Conditions, ud.Generation, metav1.Condition{Type: schedv1.ConditionCertificateReady, Status: s, Reason: reason, Message: msg})
	} else {
		meta.RemoveStatusCondition(&st.Conditions, schedv1.ConditionCertificateReady)
	}
	setRolledBackCondition(ud, &st)
	return st
}

// revisionStatus sets the status's revisions: the spec's (the last one
// recorded while a new one cannot be), the last that ran (when the app
// runs now, the one whose template it runs), and the rollback.
func revisionStatus(ud *schedv1.UserDeployment, o observed, st *schedv1.UserDeploymentStatus) {
	st.CurrentRevision = cmp.Or(o.currentRevision, ud.Status.CurrentRevision)
	// When the spec's revision began to roll out: its creation, or the
	// app's start when it was made while the app was Stopped.
	st.CurrentRevisionTime = ud.Status.CurrentRevisionTime
	switch {
	case o.currentRevision > 0 && (o.currentRevision != ud.Status.CurrentRevision || st.CurrentRevisionTime == nil):
		t := metav1.NewTime(o.currentCreated).Rfc3339Copy()
		st.CurrentRevisionTime = &t
	case ud.Status.Phase == schedv1.UserDeploymentStopped && st.Phase != schedv1.UserDeploymentStopped:
		t := metav1.NewTime(o.now).Rfc3339Copy()
		st.CurrentRevisionTime = &t
	}
	st.LastRunningRevision = ud.Status.LastRunningRevision
	if st.Phase == schedv1.UserDeploymentRunning && o.runRevision > 0 {
		st.LastRunningRevision = o.runRevision
	}
	st.RolledBack = o.rolledBack
}

// setRolledBackCondition sets the RolledBack condition while the app runs
// an earlier revision than the spec's, and removes it otherwise.
func setRolledBackCondition(ud *schedv1.UserDeployment, st *schedv1.UserDeploymentStatus) {
	rb := st.RolledBack
	if rb == nil {
		meta.RemoveStatusCondition(&st.Conditions, schedv1.ConditionRolledBack)
		return
	}
	msg := fmt.Sprintf("revision %d, the spec's, did not become Running within %s (spec.progressDeadline): the services run revision %d, the last that did. "+
		"A new spec tries again; kubectl sched rollback %s --to-revision %d makes the spec revision %d's",
		rb.FromRevision, ud.Spec.Deadline(), rb.ToRevision, ud.Name, rb.ToRevision, rb.ToRevision)
	if st.Phase != schedv1.UserDeploymentRunning {
		msg += fmt.Sprintf("; revision %d does not run either, and is not rolled back further", rb.ToRevision)
	}
	status.SetCondition(&st.Conditions, ud.Generation, metav1.Condition{
		Type: schedv1.ConditionRolledBack, Status: metav1.ConditionTrue, Reason: schedv1.ReasonRolledBack,
		Message: clipCondition(msg), LastTransitionTime: rb.Time,
	})
}

// summarize reads each service's Deployment and pods into st.Services and
// the summary.
func summarize(ud *schedv1.UserDeployment, p plan, o observed, st *schedv1.UserDeploymentStatus) summary {
	sum := summary{stopped: ud.Spec.State == schedv1.StateStopped, services: len(ud.Spec.Services), deadline: ud.Spec.Deadline()}
	newSpec := ud.Status.ObservedGeneration != ud.Generation
	if p.routeWithheld.reason != "" {
		sum.causes = append(sum.causes, p.routeWithheld)
	}
	if len(p.invalid) > 0 {
		sum.causes = append(sum.causes, cause{schedv1.ReasonInvalidSpec, strings.Join(p.invalid, "; ")})
	}
	if len(o.problems) > 0 {
		sum.causes = append(sum.causes, cause{schedv1.ReasonCreateFailed, strings.Join(o.problems, "; ")})
	}
	for _, svc := range ud.Spec.Services {
		want := int32(0)
		dep := o.deployments[svc.Name]
		switch d := p.deployments[svc.Name]; {
		case d != nil && d.Spec.Replicas != nil:
			want = *d.Spec.Replicas
		case d != nil && dep != nil && dep.Spec.Replicas != nil:
			want = *dep.Spec.Replicas // an autoscaler decides
		}
		ss := schedv1.ServiceStatus{Name: svc.Name, DesiredReplicas: want}
		prev := previousService(ud, svc.Name)
		if prev != nil {
			ss.Revision = prev.Revision
		}
		if dep == nil {
			sum.missing++
			ss.Message = "the Deployment is not created yet"
			st.Services = append(st.Services, ss)
			continue
		}
		ss.ReadyReplicas = dep.Status.ReadyReplicas
		sum.remaining += dep.Status.Replicas
		done := rolledOut(dep, want)
		if done && o.runRevision > 0 {
			// Its workload runs the template the plan built.
			ss.Revision = o.runRevision
		}
		if !sum.stopped {
			ss.LastProgressTime = lastProgress(prev, newSpec, done, dep.Status.ReadyReplicas, o.now)
		}
		reason, msg := serviceCause(p.held[svc.Name], dep, o.pods[svc.Name], o.noCPUScheduler)
		if why, ok := p.notAllowed[svc.Name]; ok {
			reason, msg = why.reason, why.message
		}
		transient := podstatus.Transient(reason)
		passed, _ := deadlinePassed(&ss, dep, sum.deadline, o.now)
		switch {
		case sum.stopped:
			if dep.Status.Replicas > 0 {
				ss.Message = fmt.Sprintf("stopping: %d pod(s) left", dep.Status.Replicas)
			}
		case reason != "" && !transient:
			ss.Message = msg
			sum.causes = append(sum.causes, cause{reason, fmt.Sprintf("service %s: %s", svc.Name, msg)})
		case done:
			sum.ready++
		case passed:
			detail := msg
			if reason == "" {
				detail = fmt.Sprintf("%d/%d replicas ready", dep.Status.ReadyReplicas, want)
			}
			ss.Message = fmt.Sprintf("no progress for %s (spec.progressDeadline): %s", sum.deadline, detail)
			sum.causes = append(sum.causes, cause{schedv1.ReasonProgressDeadline, fmt.Sprintf("service %s: %s", svc.Name, ss.Message)})
		default:
			ss.Message = fmt.Sprintf("%d/%d replicas ready", dep.Status.ReadyReplicas, want)
			if reason != "" {
				ss.Message = msg
				sum.waitingOn = append(sum.waitingOn, cause{reason, fmt.Sprintf("service %s: %s", svc.Name, msg)})
			}
			sum.waiting = append(sum.waiting, fmt.Sprintf("%s %d/%d", svc.Name, dep.Status.ReadyReplicas, want))
		}
		st.Services = append(st.Services, ss)
	}
	return sum
}

// previousService is the service's status as last written, or nil.
func previousService(ud *schedv1.UserDeployment, name string) *schedv1.ServiceStatus {
	for i := range ud.Status.Services {
		if ud.Status.Services[i].Name == name {
			return &ud.Status.Services[i]
		}
	}
	return nil
}

// lastProgress is when a service last made progress, as a Deployment
// counts it: its rollout started (it stopped being rolled out, or the
// app's spec changed) or one more replica is ready. Nil once it has rolled
// out. prev is its status as last written, ready its ready replicas now.
func lastProgress(prev *schedv1.ServiceStatus, newSpec, done bool, ready int32, now time.Time) *metav1.Time {
	switch {
	case done:
		return nil
	case prev == nil || prev.LastProgressTime == nil || newSpec || ready > prev.ReadyReplicas:
		t := metav1.NewTime(now).Rfc3339Copy() // as it reads back
		return &t
	}
	return prev.LastProgressTime
}

// deadlinePassed says whether a service's rollout has gone without progress
// for deadline (its status's LastProgressTime, see lastProgress), or its
// Deployment says its own deadline passed; otherwise left is the time until
// it would (0 when no rollout is under way). It is the one place that
// decides: the status turns a cause that may clear by itself into
// ProgressDeadlineExceeded with it, and the reconciler comes back when
// left runs out.
func deadlinePassed(ss *schedv1.ServiceStatus, dep *appsv1.Deployment, deadline time.Duration, now time.Time) (passed bool, left time.Duration) {
	if deploymentTimedOut(dep) {
		return true, 0
	}
	if ss.LastProgressTime == nil {
		return false, 0
	}
	left = ss.LastProgressTime.Add(deadline).Sub(now)
	return left <= 0, max(left, 0)
}

// deploymentTimedOut: the Deployment's Progressing condition says its
// progressDeadlineSeconds passed. A status older than its spec (a template
// just applied) describes the rollout before, which may have timed out.
func deploymentTimedOut(dep *appsv1.Deployment) bool {
	if dep == nil || dep.Status.ObservedGeneration < dep.Generation {
		return false
	}
	for _, c := range dep.Status.Conditions {
		if c.Type == appsv1.DeploymentProgressing && c.Status == corev1.ConditionFalse && c.Reason == "ProgressDeadlineExceeded" {
			return true
		}
	}
	return false
}

// recheckAfter is how long until the first service's progress deadline
// passes, 0 when none is pending: no event marks that moment.
func recheckAfter(deadline time.Duration, st schedv1.UserDeploymentStatus, now time.Time) time.Duration {
	var next time.Duration
	for i := range st.Services {
		if _, left := deadlinePassed(&st.Services[i], nil, deadline, now); left > 0 && (next == 0 || left < next) {
			next = left
		}
	}
	return next
}

// phaseOf is the app's phase; see computeStatus.
func phaseOf(sum summary) schedv1.UserDeploymentPhase {
	switch {
	case sum.stopped:
		return schedv1.UserDeploymentStopped
	case len(sum.causes) > 0:
		return schedv1.UserDeploymentDegraded
	case sum.missing > 0:
		return schedv1.UserDeploymentPending
	case sum.ready == sum.services:
		return schedv1.UserDeploymentRunning
	}
	return schedv1.UserDeploymentProgressing
}

// degradedCondition names every cause, the first one's reason first.
func degradedCondition(sum summary) metav1.Condition {
	if len(sum.causes) == 0 {
		return metav1.Condition{Type: schedv1.ConditionDegraded, Status: metav1.ConditionFalse, Reason: schedv1.ReasonAsExpected, Message: "no problem found"}
	}
	return metav1.Condition{Type: schedv1.ConditionDegraded, Status: metav1.ConditionTrue, Reason: sum.causes[0].reason, Message: joinCauses(sum.causes)}
}

// joinCauses is the causes' messages in one, bounded.
func joinCauses(causes []cause) string {
	msgs := make([]string, 0, len(causes))
	for _, c := range causes {
		msgs = append(msgs, c.message)
	}
	return clipCondition(strings.Join(msgs, "; "))
}

func clipCondition(msg string) string {
	if len(msg) > maxConditionMessage {
		msg = strings.ToValidUTF8(msg[:maxConditionMessage], "") + "…"
	}
	return msg
}

// readyCondition says whether the app serves, and if not why; rb is set
// while it runs a revision rolled back to.
func readyCondition(phase schedv1.UserDeploymentPhase, sum summary, degraded metav1.Condition, rb *schedv1.RolledBack) metav1.Condition {
	c := metav1.Condition{Type: schedv1.ConditionReady, Status: metav1.ConditionFalse}
	switch phase {
	case schedv1.UserDeploymentStopped:
		c.Reason, c.Message = schedv1.ReasonStopped, "stopped (spec.state: Stopped): every service is scaled to zero"
	case schedv1.UserDeploymentDegraded:
		c.Reason, c.Message = degraded.Reason, degraded.Message
	case schedv1.UserDeploymentPending:
		c.Reason, c.Message = schedv1.ReasonPending, pendingMessage(sum)
	case schedv1.UserDeploymentRunning:
		c.Status, c.Reason, c.Message = metav1.ConditionTrue, schedv1.ReasonAvailable, fmt.Sprintf("all %d service(s) are ready", sum.ready)
		if rb != nil {
			c.Reason = schedv1.ReasonRolledBack
			c.Message += fmt.Sprintf(", running revision %d: the spec's revision %d did not become Running and was rolled back", rb.ToRevision, rb.FromRevision)
		}
	default:
		c.Reason, c.Message = schedv1.ReasonReconciling, rollingMessage(sum)
		if len(sum.waitingOn) > 0 {
			// What it waits for, as the reason a script or a column shows.
			c.Reason, c.Message = sum.waitingOn[0].reason, joinCauses(sum.waitingOn)
		}
	}
	return c
}

// progressingCondition says whether the app is still changing.
func progressingCondition(phase schedv1.UserDeploymentPhase, sum summary, degraded metav1.Condition) metav1.Condition {
	c := metav1.Condition{Type: schedv1.ConditionProgressing, Status: metav1.ConditionTrue, Reason: schedv1.ReasonReconciling}
	switch phase {
	case schedv1.UserDeploymentStopped:
		if sum.remaining > 0 {
			c.Message = fmt.Sprintf("scaling to zero: %d pod(s) left", sum.remaining)
		} else {
			c.Status, c.Reason, c.Message = metav1.ConditionFalse, schedv1.ReasonStopped, "every service is scaled to zero"
		}
	case schedv1.UserDeploymentDegraded:
		c.Status, c.Reason, c.Message = metav1.ConditionFalse, degraded.Reason, "stuck: "+degraded.Message
	case schedv1.UserDeploymentPending:
		c.Message = pendingMessage(sum)
	case schedv1.UserDeploymentRunning:
		c.Status, c.Reason, c.Message = metav1.ConditionFalse, schedv1.ReasonRolledOut, "every service runs its desired replicas"
	default:
		c.Message = rollingMessage(sum)
	}
	return c
}

func pendingMessage(sum summary) string {
	return fmt.Sprintf("creating the app's objects: %d Deployment(s) not created yet", sum.missing)
}

func rollingMessage(sum summary) string {
	msg := "rolling out: " + strings.Join(sum.waiting, ", ") + " replicas ready"
	if len(sum.waitingOn) > 0 {
		msg += fmt.Sprintf("; %s; Degraded after %s without progress (spec.progressDeadline)", joinCauses(sum.waitingOn), sum.deadline)
	}
	return clipCondition(msg)
}

// certificateState is the CertificateReady condition, from cert-manager's
// own Ready condition on the Certificate; no reason when the app gets no
// certificate from the operator.
func certificateState(p plan, cert *unstructured.Unstructured) (metav1.ConditionStatus, string, string) {
	switch {
	case p.certificateProblem != "":
		return metav1.ConditionFalse, schedv1.ReasonCertificateNotRequested, p.certificateProblem
	case p.certificate == "":
		return "", "", ""
	case cert == nil:
		return metav1.ConditionFalse, schedv1.ReasonCertificatePending, fmt.Sprintf("requesting Certificate %s from cert-manager", p.certificate)
	}
	conds, _, _ := unstructured.NestedSlice(cert.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["type"] != "Ready" {
			continue
		}
		msg, _ := m["message"].(string)
		if m["status"] == "True" {
			return metav1.ConditionTrue, schedv1.ReasonCertificateIssued, fmt.Sprintf("Certificate %s is issued: %s", p.certificate, podstatus.ClipMessage(msg))
		}
		return metav1.ConditionFalse, schedv1.ReasonCertificatePending, fmt.Sprintf("Certificate %s is not ready: %s", p.certificate, podstatus.ClipMessage(msg))
	}
	return metav1.ConditionFalse, schedv1.ReasonCertificatePending, fmt.Sprintf("Certificate %s is waiting for cert-manager to issue it", p.certificate)
}

// rolledOut reports whether a Deployment runs want up-to-date, available
// replicas and nothing else, as `kubectl rollout status` decides.
func rolledOut(dep *appsv1.Deployment, want int32) bool {
	s := dep.Status
	return s.ObservedGeneration >= dep.Generation &&
		dep.Spec.Replicas != nil && *dep.Spec.Replicas == want &&
		s.UpdatedReplicas == want && s.Replicas == want && s.AvailableReplicas == want
}

// serviceCause explains a service that cannot reach its replicas. A cause
// that needs someone to act comes first, from the most specific signal: a
// secret the operator cannot provide, a pod's container state, the
// Deployment's refusal to create pods. Then what may clear by itself
// (podstatus.Transient): a pod no node can run yet (because no node it may
// run on has its CPU scheduler, noCPUScheduler, when that is why), or one
// starting.
func serviceCause(held string, dep *appsv1.Deployment, pods []corev1.Pod, noCPUScheduler string) (reason, msg string) {
	if held != "" {
		return schedv1.ReasonExternalSecretsUnavailable, held
	}
	sorted := make([]*corev1.Pod, 0, len(pods))
	for i := range pods {
		if pods[i].DeletionTimestamp == nil {
			sorted = append(sorted, &pods[i])
		}
	}
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Name < sorted[j].Name })
	var waiting cause
	for _, pod := range sorted {
		reason, msg := podstatus.Cause(pod)
		if reason == "" {
			reason, msg = podstatus.Starting(pod)
		}
		if reason == schedv1.ReasonUnschedulable && noCPUScheduler != "" {
			reason, msg = schedv1.ReasonCPUSchedulerUnavailable, noCPUScheduler
		}
		switch {
		case reason == "":
		case !podstatus.Transient(reason):
			return reason, fmt.Sprintf("pod %s: %s", pod.Name, msg)
		case waiting.reason == "" || waiting.reason == schedv1.ReasonContainersStarting && reason != schedv1.ReasonContainersStarting:
			// A pod no node can run says more than one starting.
			waiting = cause{reason, fmt.Sprintf("pod %s: %s", pod.Name, msg)}
		}
	}
	for _, c := range dep.Status.Conditions {
		if c.Type == appsv1.DeploymentReplicaFailure && c.Status == corev1.ConditionTrue {
			reason := schedv1.ReasonCreateFailed
			if strings.Contains(c.Message, "forbidden") {
				reason = schedv1.ReasonForbidden
			}
			return reason, "cannot create pods: " + podstatus.ClipMessage(c.Message)
		}
	}
	return waiting.reason, waiting.message
}

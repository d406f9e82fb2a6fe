package userdeployment

import (
	"fmt"
	"sort"
	"strings"

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
}

// cause is why an app is Degraded.
type cause struct{ reason, message string }

// summary is what the conditions are computed from: each service's state
// and the causes that make the app Degraded.
type summary struct {
	stopped bool
	causes  []cause
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
	set := func(c metav1.Condition) {
		status.SetCondition(&st.Conditions, ud.Generation, c.Type, c.Status, c.Reason, c.Message)
	}
	degraded := degradedCondition(sum)
	set(readyCondition(st.Phase, sum, degraded))
	set(progressingCondition(st.Phase, sum, degraded))
	set(degraded)
	if c := p.priority; c.Type != "" {
		set(c)
	} else {
		meta.RemoveStatusCondition(&st.Conditions, schedv1.ConditionPriorityMapped)
	}
	if s, reason, msg := certificateState(p, o.certificate); reason != "" {
		set(metav1.Condition{Type: schedv1.ConditionCertificateReady, Status: s, Reason: reason, Message: msg})
	} else {
		meta.RemoveStatusCondition(&st.Conditions, schedv1.ConditionCertificateReady)
	}
	return st
}

// summarize reads each service's Deployment and pods into st.Services and
// the summary.
func summarize(ud *schedv1.UserDeployment, p plan, o observed, st *schedv1.UserDeploymentStatus) summary {
	sum := summary{stopped: ud.Spec.State == schedv1.StateStopped, services: len(ud.Spec.Services)}
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
		if dep == nil {
			sum.missing++
			ss.Message = "the Deployment is not created yet"
			st.Services = append(st.Services, ss)
			continue
		}
		ss.ReadyReplicas = dep.Status.ReadyReplicas
		sum.remaining += dep.Status.Replicas
		reason, msg := serviceCause(p.held[svc.Name], dep, o.pods[svc.Name])
		if why := p.notAllowed[svc.Name]; why != "" {
			reason, msg = schedv1.ReasonPrivilegedNotAllowed, why
		}
		switch {
		case sum.stopped:
			if dep.Status.Replicas > 0 {
				ss.Message = fmt.Sprintf("stopping: %d pod(s) left", dep.Status.Replicas)
			}
		case reason != "":
			ss.Message = msg
			sum.causes = append(sum.causes, cause{reason, fmt.Sprintf("service %s: %s", svc.Name, msg)})
		case rolledOut(dep, want):
			sum.ready++
		default:
			ss.Message = fmt.Sprintf("%d/%d replicas ready", dep.Status.ReadyReplicas, want)
			sum.waiting = append(sum.waiting, fmt.Sprintf("%s %d/%d", svc.Name, dep.Status.ReadyReplicas, want))
		}
		st.Services = append(st.Services, ss)
	}
	return sum
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
	msgs := make([]string, 0, len(sum.causes))
	for _, c := range sum.causes {
		msgs = append(msgs, c.message)
	}
	msg := strings.Join(msgs, "; ")
	if len(msg) > maxConditionMessage {
		msg = strings.ToValidUTF8(msg[:maxConditionMessage], "") + "…"
	}
	return metav1.Condition{Type: schedv1.ConditionDegraded, Status: metav1.ConditionTrue, Reason: sum.causes[0].reason, Message: msg}
}

// readyCondition says whether the app serves, and if not why.
func readyCondition(phase schedv1.UserDeploymentPhase, sum summary, degraded metav1.Condition) metav1.Condition {
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
	default:
		c.Reason, c.Message = schedv1.ReasonReconciling, rollingMessage(sum)
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
	return "rolling out: " + strings.Join(sum.waiting, ", ") + " replicas ready"
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
			return metav1.ConditionTrue, schedv1.ReasonCertificateIssued, fmt.Sprintf("Certificate %s is issued: %s", p.certificate, podstatus.Clip(msg))
		}
		return metav1.ConditionFalse, schedv1.ReasonCertificatePending, fmt.Sprintf("Certificate %s is not ready: %s", p.certificate, podstatus.Clip(msg))
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

// serviceCause explains a service that cannot reach its replicas, from the
// most specific signal: a secret the operator cannot provide, a pod's
// scheduling or container state, then the Deployment's own conditions.
func serviceCause(held string, dep *appsv1.Deployment, pods []corev1.Pod) (reason, msg string) {
	if held != "" {
		return schedv1.ReasonExternalSecretsUnavailable, held
	}
	sorted := append([]corev1.Pod(nil), pods...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Name < sorted[j].Name })
	for i := range sorted {
		if sorted[i].DeletionTimestamp != nil {
			continue
		}
		if reason, msg := podstatus.Cause(&sorted[i]); reason != "" {
			return reason, fmt.Sprintf("pod %s: %s", sorted[i].Name, msg)
		}
	}
	for _, c := range dep.Status.Conditions {
		switch {
		case c.Type == appsv1.DeploymentReplicaFailure && c.Status == corev1.ConditionTrue:
			reason := schedv1.ReasonCreateFailed
			if strings.Contains(c.Message, "forbidden") {
				reason = schedv1.ReasonForbidden
			}
			return reason, "cannot create pods: " + podstatus.Clip(c.Message)
		case c.Type == appsv1.DeploymentProgressing && c.Status == corev1.ConditionFalse && c.Reason == "ProgressDeadlineExceeded":
			return schedv1.ReasonProgressDeadline, podstatus.Clip(c.Message)
		}
	}
	return "", ""
}

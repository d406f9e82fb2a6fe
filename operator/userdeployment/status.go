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

// computeStatus derives the status from the plan and what was observed. It
// is pure: a reconcile that sees nothing new computes the same status and
// writes nothing. The phase follows from the state (see
// UserDeploymentPhase): Stopped when asked; Degraded when a cause is found;
// Pending while a Deployment is missing; Running when every service has
// rolled out; Progressing otherwise.
func computeStatus(ud *schedv1.UserDeployment, p plan, o observed) schedv1.UserDeploymentStatus {
	st := schedv1.UserDeploymentStatus{
		ObservedGeneration: ud.Generation,
		URLs:               p.urls,
		Conditions:         append([]metav1.Condition(nil), ud.Status.Conditions...),
	}
	stopped := ud.Spec.State == schedv1.StateStopped
	var causes []cause
	if p.hostConflict != "" {
		causes = append(causes, cause{schedv1.ReasonHostConflict, p.hostConflict})
	}
	if len(p.invalid) > 0 {
		causes = append(causes, cause{schedv1.ReasonInvalidSpec, strings.Join(p.invalid, "; ")})
	}
	if len(o.problems) > 0 {
		causes = append(causes, cause{schedv1.ReasonCreateFailed, strings.Join(o.problems, "; ")})
	}
	var ready, missing int
	var remaining int32 // pods not yet gone while stopping
	var waiting []string
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
			missing++
			ss.Message = "the Deployment is not created yet"
			st.Services = append(st.Services, ss)
			continue
		}
		ss.ReadyReplicas = dep.Status.ReadyReplicas
		remaining += dep.Status.Replicas
		reason, msg := serviceCause(p.held[svc.Name], dep, o.pods[svc.Name])
		switch {
		case stopped:
			if dep.Status.Replicas > 0 {
				ss.Message = fmt.Sprintf("stopping: %d pod(s) left", dep.Status.Replicas)
			}
		case reason != "":
			ss.Message = msg
			causes = append(causes, cause{reason, fmt.Sprintf("service %s: %s", svc.Name, msg)})
		case rolledOut(dep, want):
			ready++
		default:
			ss.Message = fmt.Sprintf("%d/%d replicas ready", dep.Status.ReadyReplicas, want)
			waiting = append(waiting, fmt.Sprintf("%s %d/%d", svc.Name, dep.Status.ReadyReplicas, want))
		}
		st.Services = append(st.Services, ss)
	}
	st.Ready = fmt.Sprintf("%d/%d", ready, len(ud.Spec.Services))

	set := func(typ string, s metav1.ConditionStatus, reason, msg string) {
		status.SetCondition(&st.Conditions, ud.Generation, typ, s, reason, msg)
	}
	degraded := func() {
		msgs := make([]string, 0, len(causes))
		for _, c := range causes {
			msgs = append(msgs, c.message)
		}
		msg := strings.Join(msgs, "; ")
		if len(msg) > maxConditionMessage {
			msg = strings.ToValidUTF8(msg[:maxConditionMessage], "") + "…"
		}
		set(schedv1.ConditionDegraded, metav1.ConditionTrue, causes[0].reason, msg)
	}
	notDegraded := func() {
		set(schedv1.ConditionDegraded, metav1.ConditionFalse, schedv1.ReasonAsExpected, "no problem found")
	}

	switch {
	case stopped:
		st.Phase = schedv1.UserDeploymentStopped
		set(schedv1.ConditionReady, metav1.ConditionFalse, schedv1.ReasonStopped, "stopped (spec.state: Stopped): every service is scaled to zero")
		if remaining > 0 {
			set(schedv1.ConditionProgressing, metav1.ConditionTrue, schedv1.ReasonReconciling, fmt.Sprintf("scaling to zero: %d pod(s) left", remaining))
		} else {
			set(schedv1.ConditionProgressing, metav1.ConditionFalse, schedv1.ReasonStopped, "every service is scaled to zero")
		}
		if len(causes) > 0 {
			degraded()
		} else {
			notDegraded()
		}
	case len(causes) > 0:
		st.Phase = schedv1.UserDeploymentDegraded
		degraded()
		c := meta.FindStatusCondition(st.Conditions, schedv1.ConditionDegraded)
		set(schedv1.ConditionReady, metav1.ConditionFalse, c.Reason, c.Message)
		set(schedv1.ConditionProgressing, metav1.ConditionFalse, c.Reason, "stuck: "+c.Message)
	case missing > 0:
		st.Phase = schedv1.UserDeploymentPending
		msg := fmt.Sprintf("creating the app's objects: %d Deployment(s) not created yet", missing)
		set(schedv1.ConditionReady, metav1.ConditionFalse, schedv1.ReasonPending, msg)
		set(schedv1.ConditionProgressing, metav1.ConditionTrue, schedv1.ReasonReconciling, msg)
		notDegraded()
	case ready == len(ud.Spec.Services):
		st.Phase = schedv1.UserDeploymentRunning
		set(schedv1.ConditionReady, metav1.ConditionTrue, schedv1.ReasonAvailable, fmt.Sprintf("all %d service(s) are ready", ready))
		set(schedv1.ConditionProgressing, metav1.ConditionFalse, schedv1.ReasonRolledOut, "every service runs its desired replicas")
		notDegraded()
	default:
		st.Phase = schedv1.UserDeploymentProgressing
		msg := "rolling out: " + strings.Join(waiting, ", ") + " replicas ready"
		set(schedv1.ConditionReady, metav1.ConditionFalse, schedv1.ReasonReconciling, msg)
		set(schedv1.ConditionProgressing, metav1.ConditionTrue, schedv1.ReasonReconciling, msg)
		notDegraded()
	}
	if c := p.priority; c.Type != "" {
		set(c.Type, c.Status, c.Reason, c.Message)
	} else {
		meta.RemoveStatusCondition(&st.Conditions, schedv1.ConditionPriorityMapped)
	}
	if status, reason, msg := certificateState(p, o.certificate); reason != "" {
		set(schedv1.ConditionCertificateReady, status, reason, msg)
	} else {
		meta.RemoveStatusCondition(&st.Conditions, schedv1.ConditionCertificateReady)
	}
	return st
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

package userdeployment

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
)

func TestPhaseEvent(t *testing.T) {
	st := func(ph schedv1.UserDeploymentPhase, reason string) *schedv1.UserDeploymentStatus {
		return &schedv1.UserDeploymentStatus{Phase: ph, Conditions: []metav1.Condition{
			{Type: schedv1.ConditionReady, Reason: reason, Message: "why " + reason},
		}}
	}
	cases := map[string]struct {
		was  schedv1.UserDeploymentPhase
		now  *schedv1.UserDeploymentStatus
		want *note
	}{
		"Running reached": {was: schedv1.UserDeploymentProgressing, now: st(schedv1.UserDeploymentRunning, "Running"),
			want: &note{typ: corev1.EventTypeNormal, reason: "Running", action: "Running", message: "why Running"}},
		"Stopped reached": {was: schedv1.UserDeploymentRunning, now: st(schedv1.UserDeploymentStopped, "Stopped"),
			want: &note{typ: corev1.EventTypeNormal, reason: "Stopped", action: "Stopped", message: "why Stopped"}},
		"Degraded, a warning": {was: schedv1.UserDeploymentRunning, now: st(schedv1.UserDeploymentDegraded, "CrashLoop"),
			want: &note{typ: corev1.EventTypeWarning, reason: "CrashLoop", action: "Degraded", message: "why CrashLoop"}},
		"still Running":                  {was: schedv1.UserDeploymentRunning, now: st(schedv1.UserDeploymentRunning, "Running")},
		"Progressing is on the way":      {was: schedv1.UserDeploymentRunning, now: st(schedv1.UserDeploymentProgressing, "RollingOut")},
		"Pending is on the way":          {was: "", now: st(schedv1.UserDeploymentPending, "Creating")},
		"no Ready condition, no message": {was: schedv1.UserDeploymentPending, now: &schedv1.UserDeploymentStatus{Phase: schedv1.UserDeploymentRunning}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var got *note
			if n, ok := phaseEvent(tc.was, tc.now); ok {
				got = &n
			}
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(note{})); diff != "" {
				t.Errorf("event (-want +got):\n%s", diff)
			}
		})
	}
}

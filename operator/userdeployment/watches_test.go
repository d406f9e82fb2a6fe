package userdeployment

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/event"

	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
)

func TestPodCauseChanged(t *testing.T) {
	pod := func(mutate ...func(*corev1.Pod)) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web-1", Labels: map[string]string{schedv1.LabelUserDeployment: "shop"}}}
		for _, m := range mutate {
			m(p)
		}
		return p
	}
	running := func(p *corev1.Pod) { p.Status.Phase = corev1.PodRunning }
	ready := func(p *corev1.Pod) {
		p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionTrue})
	}
	waiting := func(reason string) func(*corev1.Pod) {
		return func(p *corev1.Pod) {
			p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "web", Image: "web:1", State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason}}}}
		}
	}
	unschedulable := func(p *corev1.Pod) {
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable, Message: "0/3 nodes"}}
	}
	deleting := func(p *corev1.Pod) { p.DeletionTimestamp = &metav1.Time{} }
	foreign := func(p *corev1.Pod) { p.Labels = nil }

	for _, tc := range []struct {
		name     string
		old, new *corev1.Pod // old nil: a create
		want     bool
	}{
		{name: "created starting", new: pod(), want: false},
		{name: "created unschedulable", new: pod(unschedulable), want: true},
		{name: "scheduled", old: pod(), new: pod(func(p *corev1.Pod) { p.Spec.NodeName = "n1" }), want: false},
		{name: "creating containers", old: pod(), new: pod(waiting("ContainerCreating")), want: true},
		{name: "started", old: pod(waiting("ContainerCreating")), new: pod(running), want: true},
		{name: "became ready", old: pod(running), new: pod(running, ready), want: false},
		{name: "cannot pull", old: pod(waiting("ContainerCreating")), new: pod(waiting("ErrImagePull")), want: true},
		{name: "pull recovered", old: pod(waiting("ImagePullBackOff")), new: pod(running), want: true},
		{name: "being deleted", old: pod(running), new: pod(running, deleting), want: true},
		{name: "not an app's pod", old: pod(foreign), new: pod(foreign, unschedulable), want: false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got bool
			if tc.old == nil {
				got = podCauseChanged.Create(event.CreateEvent{Object: tc.new})
			} else {
				got = podCauseChanged.Update(event.UpdateEvent{ObjectOld: tc.old, ObjectNew: tc.new})
			}
			if got != tc.want {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
	if !podCauseChanged.Delete(event.DeleteEvent{Object: pod(running)}) {
		t.Error("a deleted pod of an app must reach the app")
	}
}

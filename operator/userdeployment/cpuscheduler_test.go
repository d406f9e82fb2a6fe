package userdeployment

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-sched/kubectl-sched/api/placement"
	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
)

// appPod is a pod of an app that asks for scx_lavd (requires: its
// affinity has the requirement), on node, Ready or not.
func appPod(name, node string, requires, ready bool) corev1.Pod {
	p := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.PodSpec{NodeName: node}}
	if requires {
		p.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{}}
		placement.RequireCPUScheduler(p.Spec.Affinity.NodeAffinity, "scx_lavd")
	}
	status := corev1.ConditionFalse
	if ready {
		status = corev1.ConditionTrue
	}
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: status}}
	return p
}

func TestPodToMove(t *testing.T) {
	// n1 and n2 run scx_lavd, n3 lost it, gone is not in the cache.
	nodeRuns := func(node string) (has, known bool) {
		switch node {
		case "n1", "n2":
			return true, true
		case "n3":
			return false, true
		}
		return false, false
	}
	deleting := appPod("b", "n1", true, true)
	deleting.DeletionTimestamp = &metav1.Time{Time: time.Now()}
	cases := map[string]struct {
		pods     []corev1.Pod
		replicas int32 // 0: as many as pods
		want     string
	}{
		// The last eviction's pod is gone and its replacement not seen yet.
		"fewer pods than replicas":   {pods: []corev1.Pod{appPod("a", "n3", true, true)}, replicas: 2},
		"all where it runs":          {pods: []corev1.Pod{appPod("a", "n1", true, true), appPod("b", "n2", true, true)}, want: ""},
		"one on a node that lost it": {pods: []corev1.Pod{appPod("a", "n1", true, true), appPod("b", "n3", true, true)}, want: "b"},
		"the first by name of two":   {pods: []corev1.Pod{appPod("z", "n3", true, true), appPod("c", "n3", true, true)}, want: "c"},
		// One at a time: the last one's replacement is not up yet.
		"another pod not ready":  {pods: []corev1.Pod{appPod("a", "n3", true, true), appPod("b", "", true, false)}, want: ""},
		"another pod going":      {pods: []corev1.Pod{appPod("a", "n3", true, true), deleting}, want: ""},
		"the pod itself unready": {pods: []corev1.Pod{appPod("a", "n3", true, false)}, want: ""},
		// An older template's pod does not ask for it: the rollout replaces it.
		"a pod that does not require it": {pods: []corev1.Pod{appPod("a", "n3", false, true)}, want: ""},
		"a node the cache does not know": {pods: []corev1.Pod{appPod("a", "gone", true, true)}, want: ""},
		"no pods":                        {pods: nil, want: ""},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := ""
			replicas := tc.replicas
			if replicas == 0 {
				replicas = int32(len(tc.pods))
			}
			if p := podToMove(tc.pods, replicas, "scx_lavd", nodeRuns); p != nil {
				got = p.Name
			}
			if got != tc.want {
				t.Errorf("pod to move %q, want %q", got, tc.want)
			}
		})
	}
}

func TestRequiresCPUScheduler(t *testing.T) {
	lavd := appPod("a", "n1", true, true).Spec.Affinity
	other := &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{}}
	placement.RequireCPUScheduler(other.NodeAffinity, "scx_rusty")
	pool := &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
		NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: schedv1.NodeLabelPool, Operator: corev1.NodeSelectorOpIn, Values: []string{"general"}}}}},
	}}}
	for name, tc := range map[string]struct {
		affinity *corev1.Affinity
		want     bool
	}{
		"required":          {lavd, true},
		"another scheduler": {other, false},
		"only a pool":       {pool, false},
		"no affinity":       {nil, false},
	} {
		if got := requiresCPUScheduler(tc.affinity, "scx_lavd"); got != tc.want {
			t.Errorf("%s: requiresCPUScheduler = %v, want %v", name, got, tc.want)
		}
	}
}

func TestCPUSchedulerIndex(t *testing.T) {
	ud := app().Service("api", "api:1", 8080, schedv1.ExposureInternal).Obj()
	if got := cpuSchedulerOf(ud); got != nil {
		t.Errorf("an app without placement is indexed under %v", got)
	}
	ud.Spec.Placement = &schedv1.Placement{CPUScheduler: "scx_lavd"}
	if got := cpuSchedulerOf(ud); len(got) != 1 || got[0] != "scx_lavd" {
		t.Errorf("index values %v, want [scx_lavd]", got)
	}
}

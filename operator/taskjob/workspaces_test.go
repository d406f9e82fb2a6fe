package taskjob

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	. "github.com/kubectl-sched/kubectl-sched/api/builders"
	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
	"github.com/kubectl-sched/kubectl-sched/operator/podsecurity"
)

// TestWorkspaceMounts: each workspace is a claim volume mounted at its
// path (read-only where asked); a claim's node keeps the pod there beside
// what placement requires, in every required term.
func TestWorkspaceMounts(t *testing.T) {
	onNode := corev1.NodeSelectorRequirement{Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{"node-1"}}
	for name, tc := range map[string]struct {
		task      *schedv1.AgentTask
		volumes   []corev1.Volume
		mounts    []corev1.VolumeMount
		affinity  *corev1.NodeSelector
		noFSGroup bool
	}{
		"none": {task: MakeAgentTask("t", "ns").Image("busybox").Obj(), noFSGroup: true},
		"two claims, one read-only": {
			task: MakeAgentTask("t", "ns").Image("busybox").Workspace("src", "/src", "checkout").
				Spec(func(s *schedv1.AgentTaskSpec) {
					s.Workspaces = append(s.Workspaces, schedv1.WorkspaceMount{Name: "cache", MountPath: "/cache", ClaimName: "cache", ReadOnly: true})
				}).Obj(),
			volumes: []corev1.Volume{
				{Name: "ws-src", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "checkout"}}},
				{Name: "ws-cache", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "cache", ReadOnly: true}}},
			},
			mounts: []corev1.VolumeMount{{Name: "ws-src", MountPath: "/src"}, {Name: "ws-cache", MountPath: "/cache", ReadOnly: true}},
		},
		"a node, no placement": {
			task: MakeAgentTask("t", "ns").Image("busybox").Spec(func(s *schedv1.AgentTaskSpec) {
				s.Workspaces = []schedv1.WorkspaceMount{{Name: "src", MountPath: "/src", ClaimName: "c", Node: "node-1"}}
			}).Obj(),
			volumes:  []corev1.Volume{{Name: "ws-src", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "c"}}}},
			mounts:   []corev1.VolumeMount{{Name: "ws-src", MountPath: "/src"}},
			affinity: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchFields: []corev1.NodeSelectorRequirement{onNode}}}},
		},
		"a node beside node pools": {
			task: MakeAgentTask("t", "ns").Image("busybox").Placement(schedv1.Placement{NodePools: []string{"general"}}).Spec(func(s *schedv1.AgentTaskSpec) {
				s.Workspaces = []schedv1.WorkspaceMount{{Name: "src", MountPath: "/src", ClaimName: "c", Node: "node-1"}}
			}).Obj(),
			volumes: []corev1.Volume{{Name: "ws-src", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "c"}}}},
			mounts:  []corev1.VolumeMount{{Name: "ws-src", MountPath: "/src"}},
			affinity: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
				MatchExpressions: []corev1.NodeSelectorRequirement{
					{Key: schedv1.NodeLabelPool, Operator: corev1.NodeSelectorOpIn, Values: []string{"general"}},
					{Key: schedv1.NodeLabelSpot, Operator: corev1.NodeSelectorOpNotIn, Values: []string{"true"}},
				},
				MatchFields: []corev1.NodeSelectorRequirement{onNode},
			}}},
		},
	} {
		t.Run(name, func(t *testing.T) {
			pod := buildJob(tc.task, nil).Spec.Template.Spec
			if diff := cmp.Diff(tc.volumes, pod.Volumes); diff != "" {
				t.Errorf("volumes (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.mounts, pod.Containers[0].VolumeMounts); diff != "" {
				t.Errorf("mounts (-want +got):\n%s", diff)
			}
			var got *corev1.NodeSelector
			if pod.Affinity != nil && pod.Affinity.NodeAffinity != nil {
				got = pod.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution
			}
			if diff := cmp.Diff(tc.affinity, got); diff != "" {
				t.Errorf("required node affinity (-want +got):\n%s", diff)
			}
			if want := ptr.To[int64](podsecurity.NonRootUID); !tc.noFSGroup && !cmp.Equal(want, pod.SecurityContext.FSGroup) {
				t.Errorf("fsGroup %v, want %d so the non-root user can write its workspaces", pod.SecurityContext.FSGroup, *want)
			}
		})
	}
}

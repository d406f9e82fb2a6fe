package placement

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
)

// requireCPUScheduler adds the cpu-scheduler requirement once, to every
// term, and nothing where the translation already has it.
func TestRequireCPUScheduler(t *testing.T) {
	lavd := &schedv1.Placement{CPUScheduler: "scx_lavd"}
	req := func(key string, values ...string) corev1.NodeSelectorRequirement {
		return corev1.NodeSelectorRequirement{Key: key, Operator: corev1.NodeSelectorOpIn, Values: values}
	}
	affinity := func(terms ...[]corev1.NodeSelectorRequirement) *corev1.Affinity {
		ns := &corev1.NodeSelector{}
		for _, t := range terms {
			ns.NodeSelectorTerms = append(ns.NodeSelectorTerms, corev1.NodeSelectorTerm{MatchExpressions: t})
		}
		return &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: ns}}
	}
	sched := req(schedv1.NodeLabelCPUScheduler, "scx_lavd")
	pool := req(schedv1.NodeLabelPool, "general")
	zone := req(schedv1.NodeLabelZone, "zone-a")
	cases := map[string]struct {
		placement *schedv1.Placement
		spec      corev1.PodSpec
		want      corev1.PodSpec
	}{
		"no scheduler asked":      {placement: &schedv1.Placement{}, spec: corev1.PodSpec{}, want: corev1.PodSpec{}},
		"added to an empty spec":  {placement: lavd, want: corev1.PodSpec{Affinity: affinity([]corev1.NodeSelectorRequirement{sched})}},
		"added to every term":     {placement: lavd, spec: corev1.PodSpec{Affinity: affinity([]corev1.NodeSelectorRequirement{pool}, []corev1.NodeSelectorRequirement{zone})}, want: corev1.PodSpec{Affinity: affinity([]corev1.NodeSelectorRequirement{pool, sched}, []corev1.NodeSelectorRequirement{zone, sched})}},
		"the translation has it":  {placement: lavd, spec: corev1.PodSpec{Affinity: affinity([]corev1.NodeSelectorRequirement{pool, sched})}, want: corev1.PodSpec{Affinity: affinity([]corev1.NodeSelectorRequirement{pool, sched})}},
		"the nodeSelector has it": {placement: lavd, spec: corev1.PodSpec{NodeSelector: map[string]string{schedv1.NodeLabelCPUScheduler: "scx_lavd"}}, want: corev1.PodSpec{NodeSelector: map[string]string{schedv1.NodeLabelCPUScheduler: "scx_lavd"}}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			spec := *tc.spec.DeepCopy()
			requireCPUScheduler(&spec, tc.placement)
			if diff := cmp.Diff(tc.want, spec); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

package placement

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
)

func req(key string, op corev1.NodeSelectorOperator, values ...string) corev1.NodeSelectorRequirement {
	return corev1.NodeSelectorRequirement{Key: key, Operator: op, Values: values}
}

func pref(weight int32, key string, value string) corev1.PreferredSchedulingTerm {
	return corev1.PreferredSchedulingTerm{Weight: weight, Preference: corev1.NodeSelectorTerm{
		MatchExpressions: []corev1.NodeSelectorRequirement{req(key, corev1.NodeSelectorOpIn, value)}}}
}

func affinity(required []corev1.NodeSelectorRequirement, preferred ...corev1.PreferredSchedulingTerm) *corev1.Affinity {
	na := &corev1.NodeAffinity{PreferredDuringSchedulingIgnoredDuringExecution: preferred}
	if required != nil {
		na.RequiredDuringSchedulingIgnoredDuringExecution = &corev1.NodeSelector{
			NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: required}}}
	}
	return &corev1.Affinity{NodeAffinity: na}
}

var (
	notSpot = req(schedv1.NodeLabelSpot, corev1.NodeSelectorOpNotIn, "true")
	lavd    = req(schedv1.NodeLabelCPUScheduler, corev1.NodeSelectorOpIn, "scx_lavd")
	spotTol = corev1.Toleration{Key: schedv1.TaintSpot, Operator: corev1.TolerationOpEqual, Value: "true", Effect: corev1.TaintEffectNoSchedule}
	poolTol = func(pool string) corev1.Toleration {
		return corev1.Toleration{Key: schedv1.TaintPool, Operator: corev1.TolerationOpEqual, Value: pool, Effect: corev1.TaintEffectNoSchedule}
	}
	gpuTol     = corev1.Toleration{Key: schedv1.TaintGPU, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}
	podLabels  = map[string]string{"app": "shop"}
	priorities = map[string]string{"Critical": "system-critical-apps", "High": "high"}
)

func TestApply(t *testing.T) {
	cases := map[string]struct {
		placement *schedv1.Placement
		want      corev1.PodSpec
	}{
		"no placement changes nothing": {},
		"empty placement keeps pods off spot nodes": {
			placement: &schedv1.Placement{},
			want:      corev1.PodSpec{Affinity: affinity([]corev1.NodeSelectorRequirement{notSpot})},
		},
		"pools are required, preferred in order, and their taints tolerated": {
			placement: &schedv1.Placement{NodePools: []string{"highmem", "general"}},
			want: corev1.PodSpec{Affinity: affinity(
				[]corev1.NodeSelectorRequirement{req(schedv1.NodeLabelPool, corev1.NodeSelectorOpIn, "highmem", "general"), notSpot},
				pref(100, schedv1.NodeLabelPool, "highmem"), pref(90, schedv1.NodeLabelPool, "general")),
				Tolerations: []corev1.Toleration{poolTol("highmem"), poolTol("general")}},
		},
		"one pool needs no preference": {
			placement: &schedv1.Placement{NodePools: []string{"real"}},
			want: corev1.PodSpec{Affinity: affinity(
				[]corev1.NodeSelectorRequirement{req(schedv1.NodeLabelPool, corev1.NodeSelectorOpIn, "real"), notSpot}),
				Tolerations: []corev1.Toleration{poolTol("real")}},
		},
		"gpu requires a gpu node and tolerates its taint": {
			placement: &schedv1.Placement{WorkloadType: schedv1.WorkloadGPU},
			want: corev1.PodSpec{
				Affinity:    affinity([]corev1.NodeSelectorRequirement{req(schedv1.NodeLabelGPU, corev1.NodeSelectorOpIn, "true"), notSpot}),
				Tolerations: []corev1.Toleration{gpuTol},
			},
		},
		"memory prefers the highmem pool": {
			placement: &schedv1.Placement{WorkloadType: schedv1.WorkloadMemory},
			want: corev1.PodSpec{Affinity: affinity([]corev1.NodeSelectorRequirement{notSpot},
				pref(20, schedv1.NodeLabelPool, "highmem"))},
		},
		"named pools win over the workload type": {
			placement: &schedv1.Placement{WorkloadType: schedv1.WorkloadMemory, NodePools: []string{"general"}},
			want: corev1.PodSpec{Affinity: affinity(
				[]corev1.NodeSelectorRequirement{req(schedv1.NodeLabelPool, corev1.NodeSelectorOpIn, "general"), notSpot}),
				Tolerations: []corev1.Toleration{poolTol("general")}},
		},
		"spot allowed only tolerates": {
			placement: &schedv1.Placement{Spot: schedv1.SpotAllowed},
			want:      corev1.PodSpec{Tolerations: []corev1.Toleration{spotTol}},
		},
		"spot preferred tolerates and prefers": {
			placement: &schedv1.Placement{Spot: schedv1.SpotPreferred},
			want: corev1.PodSpec{
				Affinity:    affinity(nil, pref(5, schedv1.NodeLabelSpot, "true")),
				Tolerations: []corev1.Toleration{spotTol},
			},
		},
		"spot required": {
			placement: &schedv1.Placement{Spot: schedv1.SpotRequired},
			want: corev1.PodSpec{
				Affinity:    affinity([]corev1.NodeSelectorRequirement{req(schedv1.NodeLabelSpot, corev1.NodeSelectorOpIn, "true")}),
				Tolerations: []corev1.Toleration{spotTol},
			},
		},
		"multi-zone spreads the workload's own pods": {
			placement: &schedv1.Placement{MultiZone: true, Spot: schedv1.SpotAllowed},
			want: corev1.PodSpec{
				Tolerations: []corev1.Toleration{spotTol},
				TopologySpreadConstraints: []corev1.TopologySpreadConstraint{{
					MaxSkew: 1, TopologyKey: schedv1.NodeLabelZone, WhenUnsatisfiable: corev1.ScheduleAnyway,
					LabelSelector: &metav1.LabelSelector{MatchLabels: podLabels},
				}},
			},
		},
		"mapped priority sets the class, unmapped does not": {
			placement: &schedv1.Placement{Priority: schedv1.PriorityHigh, Spot: schedv1.SpotAllowed},
			want:      corev1.PodSpec{PriorityClassName: "high", Tolerations: []corev1.Toleration{spotTol}},
		},
		"unmapped priority": {
			placement: &schedv1.Placement{Priority: schedv1.PriorityLow, Spot: schedv1.SpotAllowed},
			want:      corev1.PodSpec{Tolerations: []corev1.Toleration{spotTol}},
		},
		"user tolerations come last": {
			placement: &schedv1.Placement{WorkloadType: schedv1.WorkloadGPU, Spot: schedv1.SpotAllowed,
				Tolerations: []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpExists}}},
			want: corev1.PodSpec{
				Affinity:    affinity([]corev1.NodeSelectorRequirement{req(schedv1.NodeLabelGPU, corev1.NodeSelectorOpIn, "true")}),
				Tolerations: []corev1.Toleration{gpuTol, spotTol, {Key: "dedicated", Operator: corev1.TolerationOpExists}},
			},
		},
		"cpu scheduler is required with the rest": {
			placement: &schedv1.Placement{NodePools: []string{"general"}, CPUScheduler: "scx_lavd"},
			want: corev1.PodSpec{Affinity: affinity(
				[]corev1.NodeSelectorRequirement{req(schedv1.NodeLabelPool, corev1.NodeSelectorOpIn, "general"), notSpot, lavd}),
				Tolerations: []corev1.Toleration{poolTol("general")}},
		},
		"cpu scheduler alone is a term of its own": {
			placement: &schedv1.Placement{Spot: schedv1.SpotPreferred, CPUScheduler: "scx_lavd"},
			want: corev1.PodSpec{
				Affinity:    affinity([]corev1.NodeSelectorRequirement{lavd}, pref(5, schedv1.NodeLabelSpot, "true")),
				Tolerations: []corev1.Toleration{spotTol},
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var got corev1.PodSpec
			Apply(&got, tc.placement, podLabels, priorities)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("pod spec (-want +got):\n%s", diff)
			}
		})
	}
}

func TestRequireCPUScheduler(t *testing.T) {
	pool := func(p string) corev1.NodeSelectorRequirement {
		return req(schedv1.NodeLabelPool, corev1.NodeSelectorOpIn, p)
	}
	cases := map[string]struct {
		in, want *corev1.NodeAffinity
	}{
		"no required terms: one term of its own, preferences kept": {
			in: &corev1.NodeAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []corev1.PreferredSchedulingTerm{pref(5, schedv1.NodeLabelSpot, "true")}},
			want: &corev1.NodeAffinity{
				RequiredDuringSchedulingIgnoredDuringExecution:  &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{lavd}}}},
				PreferredDuringSchedulingIgnoredDuringExecution: []corev1.PreferredSchedulingTerm{pref(5, schedv1.NodeLabelSpot, "true")},
			},
		},
		"an empty selector gets the one term": {
			in:   &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{}},
			want: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{lavd}}}}},
		},
		"ORed terms each require it, fields terms too": {
			in: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{
				{MatchExpressions: []corev1.NodeSelectorRequirement{pool("general")}},
				{MatchExpressions: []corev1.NodeSelectorRequirement{pool("highmem"), notSpot}},
				{MatchFields: []corev1.NodeSelectorRequirement{req(metav1.ObjectNameField, corev1.NodeSelectorOpIn, "n1")}},
			}}},
			want: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{
				{MatchExpressions: []corev1.NodeSelectorRequirement{pool("general"), lavd}},
				{MatchExpressions: []corev1.NodeSelectorRequirement{pool("highmem"), notSpot, lavd}},
				{MatchExpressions: []corev1.NodeSelectorRequirement{lavd}, MatchFields: []corev1.NodeSelectorRequirement{req(metav1.ObjectNameField, corev1.NodeSelectorOpIn, "n1")}},
			}}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			RequireCPUScheduler(tc.in, "scx_lavd")
			if diff := cmp.Diff(tc.want, tc.in); diff != "" {
				t.Errorf("node affinity (-want +got):\n%s", diff)
			}
		})
	}
}

// Package placement turns a Placement into pod scheduling fields. It is the
// one place UserDeployment and AgentTask translate placement, so an app and
// a task with the same placement land on the same kind of node.
package placement

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
)

// poolFor is the node pool a workload type prefers when no pools are named.
var poolFor = map[schedv1.WorkloadType]string{
	schedv1.WorkloadCompute: "compute",
	schedv1.WorkloadMemory:  "highmem",
	schedv1.WorkloadStorage: "storage",
	schedv1.WorkloadGPU:     "gpu",
}

// Weights of preferred node affinity terms: pools in order of preference get
// decreasing weights above the spot preference, so a named pool wins over
// cheapness.
const (
	firstPoolWeight = 100
	poolWeightStep  = 10
	spotWeight      = 5
	typeWeight      = 20
)

// PriorityCondition reports how p's priority maps to a PriorityClass, for
// the PriorityMapped condition; ok is false when p sets no priority and the
// condition does not apply. An unmapped priority is never silently dropped.
func PriorityCondition(p *schedv1.Placement, priorityClasses map[string]string) (cond metav1.Condition, ok bool) {
	if p == nil || p.Priority == "" {
		return metav1.Condition{}, false
	}
	if class, mapped := priorityClasses[string(p.Priority)]; mapped {
		return metav1.Condition{Type: schedv1.ConditionPriorityMapped, Status: metav1.ConditionTrue, Reason: schedv1.ReasonPriorityMapped,
			Message: fmt.Sprintf("placement.priority %s runs as PriorityClass %s", p.Priority, class)}, true
	}
	return metav1.Condition{Type: schedv1.ConditionPriorityMapped, Status: metav1.ConditionFalse, Reason: schedv1.ReasonPriorityUnmapped,
		Message: fmt.Sprintf("placement.priority %s maps to no PriorityClass in the operator's settings, so the pods run at the cluster's default priority; a cluster admin maps it with 'kubectl sched install --priority-class %s=CLASS'", p.Priority, p.Priority)}, true
}

// Apply sets node affinity, tolerations, topology spread and the priority
// class on spec. podLabels select the workload's own pods for zone spread;
// priorityClasses maps priorities to the cluster's PriorityClass names.
//
//	nodePools      required: pool In (pools); preferred: each pool, earlier heavier;
//	               tolerates each named pool's taint (pool=POOL:NoSchedule)
//	workloadType   GPU: required gpu=true plus the GPU toleration;
//	               others: preferred pool compute|highmem|storage (when no pools are named)
//	spot           Never (default): required spot NotIn (true)
//	               Allowed: spot toleration; Preferred: also preferred spot=true;
//	               Required: toleration and required spot In (true)
//	multiZone      topology spread over zones, maxSkew 1, ScheduleAnyway
//	priority       priorityClassName from priorityClasses, when mapped
//	tolerations    appended as given
//	cpuScheduler   required: cpu-scheduler In (name), in every term (RequireCPUScheduler)
func Apply(spec *corev1.PodSpec, p *schedv1.Placement, podLabels map[string]string, priorityClasses map[string]string) {
	if p == nil {
		return
	}
	var t terms
	t.pools(spec, p)
	t.workloadType(spec, p)
	t.spot(spec, p)
	t.setNodeAffinity(spec)
	if p.CPUScheduler != "" {
		if spec.Affinity == nil {
			spec.Affinity = &corev1.Affinity{}
		}
		if spec.Affinity.NodeAffinity == nil {
			spec.Affinity.NodeAffinity = &corev1.NodeAffinity{}
		}
		RequireCPUScheduler(spec.Affinity.NodeAffinity, p.CPUScheduler)
	}

	if p.MultiZone {
		spec.TopologySpreadConstraints = append(spec.TopologySpreadConstraints, corev1.TopologySpreadConstraint{
			MaxSkew:           1,
			TopologyKey:       schedv1.NodeLabelZone,
			WhenUnsatisfiable: corev1.ScheduleAnyway,
			LabelSelector:     &metav1.LabelSelector{MatchLabels: podLabels},
		})
	}

	if pc, ok := priorityClasses[string(p.Priority)]; ok && p.Priority != "" {
		spec.PriorityClassName = pc
	}
	spec.Tolerations = append(spec.Tolerations, p.Tolerations...)
}

// terms are the node affinity a placement asks for, built up field by
// field (pools, workload type, spot) in Apply's order.
type terms struct {
	required  []corev1.NodeSelectorRequirement
	preferred []corev1.PreferredSchedulingTerm
}

func (t *terms) require(key string, op corev1.NodeSelectorOperator, values ...string) {
	t.required = append(t.required, corev1.NodeSelectorRequirement{Key: key, Operator: op, Values: values})
}

func (t *terms) prefer(weight int32, key string, values ...string) {
	t.preferred = append(t.preferred, corev1.PreferredSchedulingTerm{
		Weight: weight,
		Preference: corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{
			{Key: key, Operator: corev1.NodeSelectorOpIn, Values: values},
		}},
	})
}

func (t *terms) pools(spec *corev1.PodSpec, p *schedv1.Placement) {
	if len(p.NodePools) == 0 {
		return
	}
	t.require(schedv1.NodeLabelPool, corev1.NodeSelectorOpIn, append([]string(nil), p.NodePools...)...)
	// Naming a pool is asking for it, so a reserved (tainted) pool
	// takes the workload; unnamed reserved pools still refuse it.
	for _, pool := range p.NodePools {
		spec.Tolerations = append(spec.Tolerations, corev1.Toleration{
			Key: schedv1.TaintPool, Operator: corev1.TolerationOpEqual, Value: pool, Effect: corev1.TaintEffectNoSchedule,
		})
	}
	if len(p.NodePools) > 1 {
		for i, pool := range p.NodePools {
			t.prefer(int32(max(firstPoolWeight-i*poolWeightStep, 1)), schedv1.NodeLabelPool, pool)
		}
	}
}

func (t *terms) workloadType(spec *corev1.PodSpec, p *schedv1.Placement) {
	switch p.WorkloadType {
	case schedv1.WorkloadGPU:
		t.require(schedv1.NodeLabelGPU, corev1.NodeSelectorOpIn, "true")
		spec.Tolerations = append(spec.Tolerations, corev1.Toleration{
			Key: schedv1.TaintGPU, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule,
		})
	case "":
	default:
		if len(p.NodePools) == 0 {
			t.prefer(typeWeight, schedv1.NodeLabelPool, poolFor[p.WorkloadType])
		}
	}
}

func (t *terms) spot(spec *corev1.PodSpec, p *schedv1.Placement) {
	spotToleration := corev1.Toleration{
		Key: schedv1.TaintSpot, Operator: corev1.TolerationOpEqual, Value: "true", Effect: corev1.TaintEffectNoSchedule,
	}
	switch p.Spot {
	case "", schedv1.SpotNever:
		t.require(schedv1.NodeLabelSpot, corev1.NodeSelectorOpNotIn, "true")
	case schedv1.SpotAllowed:
		spec.Tolerations = append(spec.Tolerations, spotToleration)
	case schedv1.SpotPreferred:
		spec.Tolerations = append(spec.Tolerations, spotToleration)
		t.prefer(spotWeight, schedv1.NodeLabelSpot, "true")
	case schedv1.SpotRequired:
		spec.Tolerations = append(spec.Tolerations, spotToleration)
		t.require(schedv1.NodeLabelSpot, corev1.NodeSelectorOpIn, "true")
	}
}

// setNodeAffinity replaces spec's node affinity with t, when t asks for
// anything: the required terms in one selector term.
func (t *terms) setNodeAffinity(spec *corev1.PodSpec) {
	if len(t.required) == 0 && len(t.preferred) == 0 {
		return
	}
	if spec.Affinity == nil {
		spec.Affinity = &corev1.Affinity{}
	}
	na := &corev1.NodeAffinity{PreferredDuringSchedulingIgnoredDuringExecution: t.preferred}
	if len(t.required) > 0 {
		na.RequiredDuringSchedulingIgnoredDuringExecution = &corev1.NodeSelector{
			NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: t.required}},
		}
	}
	spec.Affinity.NodeAffinity = na
}

// RequireCPUScheduler requires nodes whose kernel runs the sched_ext
// scheduler name (the label the SchedExt controller sets). Terms are ORed,
// so the requirement goes into each one: a term without it would let the
// pod run anywhere that term matches.
func RequireCPUScheduler(na *corev1.NodeAffinity, name string) {
	req := corev1.NodeSelectorRequirement{Key: schedv1.NodeLabelCPUScheduler, Operator: corev1.NodeSelectorOpIn, Values: []string{name}}
	if na.RequiredDuringSchedulingIgnoredDuringExecution == nil || len(na.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms) == 0 {
		na.RequiredDuringSchedulingIgnoredDuringExecution = &corev1.NodeSelector{
			NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{req}}},
		}
		return
	}
	terms := na.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms
	for i := range terms {
		terms[i].MatchExpressions = append(terms[i].MatchExpressions, req)
	}
}

// OnNode keeps a pod on node, where a ReadWriteOnce volume it mounts is:
// every required term of its node affinity gets the node, so the
// requirements placement made still hold beside it.
func OnNode(spec *corev1.PodSpec, node string) {
	onNode := corev1.NodeSelectorRequirement{Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{node}}
	if spec.Affinity == nil {
		spec.Affinity = &corev1.Affinity{}
	}
	if spec.Affinity.NodeAffinity == nil {
		spec.Affinity.NodeAffinity = &corev1.NodeAffinity{}
	}
	na := spec.Affinity.NodeAffinity
	if na.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		na.RequiredDuringSchedulingIgnoredDuringExecution = &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{}}}
	}
	terms := na.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms
	for i := range terms {
		terms[i].MatchFields = append(terms[i].MatchFields, onNode)
	}
}

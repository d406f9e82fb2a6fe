package fit_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-sched/kubectl-sched/api/placement"
	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
	"github.com/kubectl-sched/kubectl-sched/plugin/internal/fit"
)

// node is a Ready node with labels and taints.
func node(name string, labels map[string]string, taints ...corev1.Taint) corev1.Node {
	return corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
		Spec:       corev1.NodeSpec{Taints: taints},
		Status:     corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}},
	}
}

func noSchedule(key, value string) corev1.Taint {
	return corev1.Taint{Key: key, Value: value, Effect: corev1.TaintEffectNoSchedule}
}

// placed is a pod with p applied by the operator's own translation.
func placed(p *schedv1.Placement) *corev1.Pod {
	pod := &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "task"}}}}
	placement.Apply(&pod.Spec, p, nil, nil)
	return pod
}

// withRequired adds a required node selector requirement to pod's one term.
func withRequired(pod *corev1.Pod, key string, op corev1.NodeSelectorOperator, values ...string) *corev1.Pod {
	if pod.Spec.Affinity == nil {
		pod.Spec.Affinity = &corev1.Affinity{}
	}
	if pod.Spec.Affinity.NodeAffinity == nil {
		pod.Spec.Affinity.NodeAffinity = &corev1.NodeAffinity{}
	}
	na := pod.Spec.Affinity.NodeAffinity
	if na.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		na.RequiredDuringSchedulingIgnoredDuringExecution = &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{}}}
	}
	term := &na.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms[0]
	term.MatchExpressions = append(term.MatchExpressions, corev1.NodeSelectorRequirement{Key: key, Operator: op, Values: values})
	return pod
}

var (
	general = node("general-a", map[string]string{schedv1.NodeLabelPool: "general", schedv1.NodeLabelZone: "zone-a"})
	spot    = node("spot-b", map[string]string{schedv1.NodeLabelPool: "spot", schedv1.NodeLabelSpot: "true", schedv1.NodeLabelZone: "zone-b"},
		noSchedule(schedv1.TaintSpot, "true"))
	gpu = node("gpu-c", map[string]string{schedv1.NodeLabelPool: "gpu", schedv1.NodeLabelGPU: "true", schedv1.NodeLabelZone: "zone-c"},
		noSchedule(schedv1.TaintGPU, "present"))
	reserved = node("real", map[string]string{schedv1.NodeLabelPool: "real"}, noSchedule(schedv1.TaintPool, "real"))
	lavd     = node("lavd-a", map[string]string{schedv1.NodeLabelPool: "general", schedv1.NodeLabelCPUScheduler: "scx_lavd"})
	rusty    = node("rusty-a", map[string]string{schedv1.NodeLabelPool: "general", schedv1.NodeLabelCPUScheduler: "scx_rusty"})
)

func TestWhy(t *testing.T) {
	notReady := node("down", nil)
	notReady.Status.Conditions[0] = corev1.NodeCondition{Type: corev1.NodeReady, Status: corev1.ConditionUnknown, Reason: "NodeStatusUnknown"}
	fresh := node("fresh", nil)
	fresh.Status.Conditions = nil
	cordoned := node("cordoned", nil)
	cordoned.Spec.Unschedulable = true
	unreachable := node("unreachable", nil, corev1.Taint{Key: corev1.TaintNodeUnreachable, Effect: corev1.TaintEffectNoExecute})
	dedicated := node("db", nil, noSchedule("dedicated", "db"), corev1.Taint{Key: "soft", Effect: corev1.TaintEffectPreferNoSchedule})

	cases := map[string]struct {
		pod  *corev1.Pod
		node corev1.Node
		want []fit.Reason
	}{
		"no placement fits an untainted node": {pod: placed(nil), node: general},
		"no placement is refused by the spot taint": {pod: placed(nil), node: spot,
			want: []fit.Reason{{Kind: fit.KindSpot, Message: "spot node; needs placement.spot Allowed, Preferred or Required", Detail: "node.kubectl-sched.dev/spot=true:NoSchedule"}}},
		"spot Never: one reason for the label and the taint": {pod: placed(&schedv1.Placement{}), node: spot,
			want: []fit.Reason{{Kind: fit.KindSpot, Message: "spot node; placement.spot is Never", Detail: "node.kubectl-sched.dev/spot notin (true)"}}},
		"spot Required on a general node": {pod: placed(&schedv1.Placement{Spot: schedv1.SpotRequired}), node: general,
			want: []fit.Reason{{Kind: fit.KindSpot, Message: "not a spot node; placement.spot is Required", Detail: "node.kubectl-sched.dev/spot in (true)"}}},
		"spot Allowed fits a spot node": {pod: placed(&schedv1.Placement{Spot: schedv1.SpotAllowed}), node: spot},
		"pool not named": {pod: placed(&schedv1.Placement{NodePools: []string{"general", "highmem"}}), node: spot,
			want: []fit.Reason{
				{Kind: fit.KindPool, Message: "not in node pool general or highmem", Detail: "node.kubectl-sched.dev/pool in (general, highmem)"},
				{Kind: fit.KindSpot, Message: "spot node; placement.spot is Never", Detail: "node.kubectl-sched.dev/spot notin (true)"},
			}},
		"a reserved pool not named: the pool speaks once": {pod: placed(&schedv1.Placement{NodePools: []string{"general"}}), node: reserved,
			want: []fit.Reason{{Kind: fit.KindPool, Message: "not in node pool general", Detail: "node.kubectl-sched.dev/pool in (general)"}}},
		"a reserved pool without placement": {pod: placed(nil), node: reserved,
			want: []fit.Reason{{Kind: fit.KindPool, Message: "pool real is reserved; name it in placement.nodePools", Detail: "node.kubectl-sched.dev/pool=real:NoSchedule"}}},
		"a reserved pool named": {pod: placed(&schedv1.Placement{NodePools: []string{"real"}}), node: reserved},
		"GPU workload on a general node": {pod: placed(&schedv1.Placement{WorkloadType: schedv1.WorkloadGPU}), node: general,
			want: []fit.Reason{{Kind: fit.KindGPU, Message: "no GPU; workloadType is GPU", Detail: "node.kubectl-sched.dev/gpu in (true)"}}},
		"GPU workload on a GPU node": {pod: placed(&schedv1.Placement{WorkloadType: schedv1.WorkloadGPU}), node: gpu},
		"other workload on a GPU node": {pod: placed(&schedv1.Placement{WorkloadType: schedv1.WorkloadCompute}), node: gpu,
			want: []fit.Reason{{Kind: fit.KindGPU, Message: "GPU node, for workloadType GPU only", Detail: "nvidia.com/gpu=present:NoSchedule"}}},
		"a tolerated GPU taint by placement.tolerations": {
			pod:  placed(&schedv1.Placement{Tolerations: []corev1.Toleration{{Key: schedv1.TaintGPU, Operator: corev1.TolerationOpExists}}}),
			node: gpu},
		"zone": {pod: withRequired(placed(nil), schedv1.NodeLabelZone, corev1.NodeSelectorOpIn, "zone-b", "zone-c"), node: general,
			want: []fit.Reason{{Kind: fit.KindZone, Message: "not in zone zone-b or zone-c", Detail: "topology.kubernetes.io/zone in (zone-b, zone-c)"}}},
		"cpu scheduler not attached": {pod: withRequired(placed(nil), schedv1.NodeLabelCPUScheduler, corev1.NodeSelectorOpIn, "scx_lavd"), node: general,
			want: []fit.Reason{{Kind: fit.KindCPUScheduler, Message: "CPU scheduler scx_lavd not attached", Detail: "node.kubectl-sched.dev/cpu-scheduler in (scx_lavd)"}}},
		"another cpu scheduler attached": {pod: withRequired(placed(nil), schedv1.NodeLabelCPUScheduler, corev1.NodeSelectorOpIn, "scx_lavd"), node: rusty,
			want: []fit.Reason{{Kind: fit.KindCPUScheduler, Message: "runs CPU scheduler scx_rusty, not scx_lavd", Detail: "node.kubectl-sched.dev/cpu-scheduler in (scx_lavd)"}}},
		"cpu scheduler attached": {pod: withRequired(placed(nil), schedv1.NodeLabelCPUScheduler, corev1.NodeSelectorOpIn, "scx_lavd"), node: lavd},
		"another label, from nodeSelector": {
			pod:  &corev1.Pod{Spec: corev1.PodSpec{NodeSelector: map[string]string{"disk": "ssd"}}},
			node: general,
			want: []fit.Reason{{Kind: fit.KindNodeLabel, Message: "node label does not match", Detail: "disk in (ssd)"}}},
		"a pinned node name": {
			pod: &corev1.Pod{Spec: corev1.PodSpec{Affinity: &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
				NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchFields: []corev1.NodeSelectorRequirement{{Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{"other"}}}}}}}}}},
			node: general,
			want: []fit.Reason{{Kind: fit.KindNodeLabel, Message: "not the node the pod asks for", Detail: "metadata.name in (other)"}}},
		"any of several terms suffices": {
			pod: &corev1.Pod{Spec: corev1.PodSpec{Affinity: &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
				NodeSelectorTerms: []corev1.NodeSelectorTerm{
					{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: schedv1.NodeLabelPool, Operator: corev1.NodeSelectorOpIn, Values: []string{"gpu"}}}},
					{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: schedv1.NodeLabelZone, Operator: corev1.NodeSelectorOpIn, Values: []string{"zone-a"}}}},
				}}}}}},
			node: general},
		"of failing terms the closest speaks": {
			pod: &corev1.Pod{Spec: corev1.PodSpec{Affinity: &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
				NodeSelectorTerms: []corev1.NodeSelectorTerm{
					{MatchExpressions: []corev1.NodeSelectorRequirement{
						{Key: schedv1.NodeLabelPool, Operator: corev1.NodeSelectorOpIn, Values: []string{"gpu"}},
						{Key: schedv1.NodeLabelZone, Operator: corev1.NodeSelectorOpIn, Values: []string{"zone-c"}}}},
					{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: schedv1.NodeLabelZone, Operator: corev1.NodeSelectorOpIn, Values: []string{"zone-b"}}}},
				}}}}}},
			node: general,
			want: []fit.Reason{{Kind: fit.KindZone, Message: "not in zone zone-b", Detail: "topology.kubernetes.io/zone in (zone-b)"}}},
		"another taint; PreferNoSchedule does not refuse": {pod: placed(nil), node: dedicated,
			want: []fit.Reason{{Kind: fit.KindTaint, Message: "taint dedicated=db:NoSchedule not tolerated", Detail: "dedicated=db:NoSchedule"}}},
		"not Ready": {pod: placed(nil), node: notReady,
			want: []fit.Reason{{Kind: fit.KindNotReady, Message: "not Ready", Detail: "Ready=Unknown (NodeStatusUnknown)"}}},
		"no Ready condition yet": {pod: placed(nil), node: fresh,
			want: []fit.Reason{{Kind: fit.KindNotReady, Message: "not Ready", Detail: "no Ready condition yet"}}},
		"unreachable taint": {pod: placed(nil), node: unreachable,
			want: []fit.Reason{{Kind: fit.KindNotReady, Message: "not Ready", Detail: "node.kubernetes.io/unreachable:NoExecute"}}},
		"cordoned": {pod: placed(nil), node: cordoned,
			want: []fit.Reason{{Kind: fit.KindUnschedulable, Message: "cordoned", Detail: "spec.unschedulable"}}},
		"a requirement in nodeSelector and node affinity speaks once": {
			pod: func() *corev1.Pod {
				p := placed(&schedv1.Placement{NodePools: []string{"general"}})
				p.Spec.NodeSelector = map[string]string{schedv1.NodeLabelPool: "general"}
				return p
			}(), node: gpu,
			want: []fit.Reason{
				{Kind: fit.KindPool, Message: "not in node pool general", Detail: "node.kubectl-sched.dev/pool in (general)"},
				{Kind: fit.KindGPU, Message: "GPU node, for workloadType GPU only", Detail: "nvidia.com/gpu=present:NoSchedule"},
			}},
		"a pod tolerating every taint still needs a Ready node": {
			pod: &corev1.Pod{Spec: corev1.PodSpec{Tolerations: []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpExists}}}}, node: dedicated},
		"several reasons at once": {pod: withRequired(placed(&schedv1.Placement{NodePools: []string{"general"}}), schedv1.NodeLabelCPUScheduler, corev1.NodeSelectorOpIn, "scx_lavd"), node: gpu,
			want: []fit.Reason{
				{Kind: fit.KindPool, Message: "not in node pool general", Detail: "node.kubectl-sched.dev/pool in (general)"},
				{Kind: fit.KindCPUScheduler, Message: "CPU scheduler scx_lavd not attached", Detail: "node.kubectl-sched.dev/cpu-scheduler in (scx_lavd)"},
				{Kind: fit.KindGPU, Message: "GPU node, for workloadType GPU only", Detail: "nvidia.com/gpu=present:NoSchedule"},
			}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := fit.Why(tc.pod, &tc.node)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestNodesOrderFitsByPreference(t *testing.T) {
	highmem := node("highmem-a", map[string]string{schedv1.NodeLabelPool: "highmem", schedv1.NodeLabelZone: "zone-a"})
	general2 := node("general-b", map[string]string{schedv1.NodeLabelPool: "general", schedv1.NodeLabelZone: "zone-b"})
	pod := placed(&schedv1.Placement{NodePools: []string{"general", "highmem"}})
	got := fit.Nodes(pod, []corev1.Node{spot, highmem, general2, general})
	want := []fit.Node{
		{Name: "general-a", Fits: true, Preference: 100, Pool: "general", Zone: "zone-a"},
		{Name: "general-b", Fits: true, Preference: 100, Pool: "general", Zone: "zone-b"},
		{Name: "highmem-a", Fits: true, Preference: 90, Pool: "highmem", Zone: "zone-a"},
		{Name: "spot-b", Pool: "spot", Zone: "zone-b", Reasons: []fit.Reason{
			{Kind: fit.KindPool, Message: "not in node pool general or highmem", Detail: "node.kubectl-sched.dev/pool in (general, highmem)"},
			{Kind: fit.KindSpot, Message: "spot node; placement.spot is Never", Detail: "node.kubectl-sched.dev/spot notin (true)"},
		}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func quota(name string, hard, used corev1.ResourceList) corev1.ResourceQuota {
	return corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.ResourceQuotaSpec{Hard: hard}, Status: corev1.ResourceQuotaStatus{Hard: hard, Used: used}}
}

func list(kv ...string) corev1.ResourceList {
	l := corev1.ResourceList{}
	for i := 0; i < len(kv); i += 2 {
		l[corev1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
	}
	return l
}

func podWith(requests, limits corev1.ResourceList) *corev1.Pod {
	return &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "task", Resources: corev1.ResourceRequirements{Requests: requests, Limits: limits}}}}}
}

func TestQuota(t *testing.T) {
	tier := quota("kubectl-sched-tier", list("requests.cpu", "1", "requests.memory", "2Gi", "pods", "10"), list("requests.cpu", "900m", "requests.memory", "1Gi", "pods", "3"))
	priority := quota("kubectl-sched-tier-priority", list("pods", "0"), list("pods", "0"))
	priority.Spec.ScopeSelector = &corev1.ScopeSelector{MatchExpressions: []corev1.ScopedResourceSelectorRequirement{
		{ScopeName: corev1.ResourceQuotaScopePriorityClass, Operator: corev1.ScopeSelectorOpIn, Values: []string{"kubectl-sched-high"}}}}
	cases := map[string]struct {
		pod    *corev1.Pod
		n      int
		quotas []corev1.ResourceQuota
		want   []fit.Reason
	}{
		"room for one": {pod: podWith(list("cpu", "100m", "memory", "128Mi"), nil), n: 1, quotas: []corev1.ResourceQuota{tier, priority}},
		"no room for two": {pod: podWith(list("cpu", "100m", "memory", "128Mi"), nil), n: 2, quotas: []corev1.ResourceQuota{tier},
			want: []fit.Reason{{Kind: fit.KindQuota, Message: "quota kubectl-sched-tier is full: requests.cpu 900m used of 1, 200m more asked"}}},
		"no more pods needed": {pod: podWith(list("cpu", "8"), nil), n: 0, quotas: []corev1.ResourceQuota{tier}},
		"a request the quota tracks is not set": {pod: podWith(list("cpu", "100m"), nil), n: 1, quotas: []corev1.ResourceQuota{tier},
			want: []fit.Reason{{Kind: fit.KindQuota, Message: "quota kubectl-sched-tier tracks requests.memory, which container task does not set (and no LimitRange gives it a default)"}}},
		"a use not counted yet": {pod: podWith(list("cpu", "100m", "memory", "1Mi"), nil), n: 1,
			quotas: []corev1.ResourceQuota{quota("q", list("limits.cpu", "4"), nil)},
			want:   []fit.Reason{{Kind: fit.KindQuota, Message: "quota q tracks limits.cpu, which container task does not set (and no LimitRange gives it a default)"}}},
		"counted nothing yet": {pod: podWith(list("cpu", "100m"), list("cpu", "100m")), n: 1,
			quotas: []corev1.ResourceQuota{quota("q", list("limits.cpu", "4"), nil)},
			want:   []fit.Reason{{Kind: fit.KindQuota, Message: "quota q has not counted limits.cpu yet, so the API server refuses pods for now"}}},
		"a priority class in the scope": {
			pod: func() *corev1.Pod {
				p := podWith(list("cpu", "100m", "memory", "1Mi"), nil)
				p.Spec.PriorityClassName = "kubectl-sched-high"
				return p
			}(), n: 1, quotas: []corev1.ResourceQuota{tier, priority},
			want: []fit.Reason{{Kind: fit.KindQuota, Message: "quota kubectl-sched-tier-priority is full: pods 0 used of 0, 1 more asked"}}},
		"best effort scope does not select a pod with requests": {
			pod: podWith(list("cpu", "100m"), nil), n: 1,
			quotas: []corev1.ResourceQuota{func() corev1.ResourceQuota {
				q := quota("be", list("pods", "0"), list("pods", "0"))
				q.Spec.Scopes = []corev1.ResourceQuotaScope{corev1.ResourceQuotaScopeBestEffort}
				return q
			}()}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := fit.Quota(tc.pod, tc.n, tc.quotas)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestWithDefaults(t *testing.T) {
	ranges := []corev1.LimitRange{{Spec: corev1.LimitRangeSpec{Limits: []corev1.LimitRangeItem{
		{Type: corev1.LimitTypePod, Max: list("cpu", "4")},
		{Type: corev1.LimitTypeContainer, Default: list("cpu", "500m", "memory", "512Mi"), DefaultRequest: list("cpu", "100m", "memory", "128Mi")},
	}}}}
	got := fit.WithDefaults(podWith(nil, list("memory", "1Gi")), ranges)
	want := corev1.ResourceRequirements{
		// The request defaults to the limit given, before the LimitRange.
		Requests: list("memory", "1Gi", "cpu", "100m"),
		Limits:   list("memory", "1Gi", "cpu", "500m"),
	}
	if diff := cmp.Diff(want, got.Spec.Containers[0].Resources); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	// And the tier quota then counts it.
	if r := fit.Quota(got, 1, []corev1.ResourceQuota{quota("q", list("requests.memory", "1Gi"), list("requests.memory", "512Mi"))}); len(r) != 1 {
		t.Errorf("want the quota to refuse 1Gi more, got %v", r)
	}
}

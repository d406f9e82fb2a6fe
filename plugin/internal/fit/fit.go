// Package fit says which nodes a pod may use and, for each other node, why
// not, in plain words. The pod's node affinity and tolerations are
// evaluated as kube-scheduler's filters evaluate them, with
// k8s.io/component-helpers; each failed requirement is then named by what
// its key means (node pool, spot, GPU, zone, CPU scheduler). The
// namespace's ResourceQuotas are checked against the pod's requests
// (quota.go). It is pure: `kubectl sched placement explain` reads the
// cluster and prints.
package fit

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	corev1helper "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"

	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
)

// Kind is what a reason is about.
type Kind string

// The kinds of reasons, by what a placement field or the node decides.
const (
	// KindPool: the node is not in a pool placement.nodePools names, or
	// its pool is reserved by a taint and not named.
	KindPool Kind = "Pool"
	// KindSpot: a spot node for placement.spot Never, or not a spot node
	// for Required.
	KindSpot Kind = "Spot"
	// KindGPU: no GPU for workloadType GPU, or a GPU node's taint.
	KindGPU Kind = "GPU"
	// KindZone: not in a required zone.
	KindZone Kind = "Zone"
	// KindCPUScheduler: the node has not the sched_ext scheduler
	// placement.cpuScheduler asks for attached.
	KindCPUScheduler Kind = "CPUScheduler"
	// KindNodeLabel: another required node label or field.
	KindNodeLabel Kind = "NodeLabel"
	// KindTaint: a taint no toleration of the pod tolerates.
	KindTaint Kind = "Taint"
	// KindNotReady: the node is not Ready.
	KindNotReady Kind = "NotReady"
	// KindUnschedulable: the node is cordoned.
	KindUnschedulable Kind = "Unschedulable"
	// KindQuota: a ResourceQuota of the namespace would refuse the pod,
	// whatever the node.
	KindQuota Kind = "Quota"
)

// Reason is why a pod may not use a node (or, for KindQuota, any node).
type Reason struct {
	Kind Kind `json:"kind"`
	// Message says it in plain words, the same for every node that fails
	// alike, so nodes group by it.
	Message string `json:"message"`
	// Detail is the requirement or taint itself, as kubectl writes them.
	Detail string `json:"detail,omitempty"`
}

// Node is one node's verdict for a pod.
type Node struct {
	Name string `json:"name"`
	Fits bool   `json:"fits"`
	// Preference is the node's score from the pod's preferred node
	// affinity (the sum of the weights of the terms it matches): the
	// scheduler favours higher ones among the nodes that fit.
	Preference int64    `json:"preference,omitempty"`
	Pool       string   `json:"pool,omitempty"`
	Zone       string   `json:"zone,omitempty"`
	Reasons    []Reason `json:"reasons,omitempty"`
}

// Nodes judges every node for pod: those that fit first, the preferred
// ones first, then the others, each by name.
func Nodes(pod *corev1.Pod, nodes []corev1.Node) []Node {
	var preferred *nodeaffinity.PreferredSchedulingTerms
	if a := pod.Spec.Affinity; a != nil && a.NodeAffinity != nil && len(a.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution) > 0 {
		// An invalid term scores nothing, as the scheduler's PreScore
		// refuses the pod; the required part still explains itself.
		preferred, _ = nodeaffinity.NewPreferredSchedulingTerms(a.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution)
	}
	out := make([]Node, 0, len(nodes))
	for i := range nodes {
		n := &nodes[i]
		v := Node{Name: n.Name, Pool: n.Labels[schedv1.NodeLabelPool], Zone: n.Labels[schedv1.NodeLabelZone], Reasons: Why(pod, n)}
		v.Fits = len(v.Reasons) == 0
		if v.Fits && preferred != nil {
			v.Preference = preferred.Score(n)
		}
		out = append(out, v)
	}
	slices.SortFunc(out, func(a, b Node) int {
		switch {
		case a.Fits != b.Fits && a.Fits:
			return -1
		case a.Fits != b.Fits:
			return 1
		}
		return cmp.Or(cmp.Compare(b.Preference, a.Preference), strings.Compare(a.Name, b.Name))
	})
	return out
}

// Why lists the reasons pod may not use node; none when it may. It
// applies what kube-scheduler's filters check of a pod's spec against a
// node's labels, taints and state: NodeAffinity (nodeSelector and required
// node affinity), TaintToleration (NoSchedule and NoExecute taints) and
// NodeUnschedulable, plus the not-ready taint the node lifecycle
// controller puts on a node that is not Ready. Room on the node is not
// checked: that depends on every other pod.
func Why(pod *corev1.Pod, node *corev1.Node) []Reason {
	var out []Reason
	has := func(k Kind) bool { return slices.ContainsFunc(out, func(r Reason) bool { return r.Kind == k }) }

	if ok, err := nodeaffinity.GetRequiredNodeAffinity(pod).Match(node); err != nil || !ok {
		rs := affinityReasons(pod, node)
		if len(rs) == 0 {
			msg := "does not match the pod's node affinity"
			if err != nil {
				msg += ": " + err.Error()
			}
			rs = []Reason{{Kind: KindNodeLabel, Message: msg}}
		}
		out = append(out, rs...)
	}

	if ready := readyCondition(node); (ready == nil || ready.Status != corev1.ConditionTrue) && !tolerates(pod, corev1.TaintNodeNotReady) {
		detail := "no Ready condition yet"
		if ready != nil {
			detail = "Ready=" + string(ready.Status)
			if ready.Reason != "" {
				detail += " (" + ready.Reason + ")"
			}
		}
		out = append(out, Reason{Kind: KindNotReady, Message: "not Ready", Detail: detail})
	}
	if node.Spec.Unschedulable && !tolerates(pod, corev1.TaintNodeUnschedulable) {
		out = append(out, Reason{Kind: KindUnschedulable, Message: "cordoned", Detail: "spec.unschedulable"})
	}

	for i := range node.Spec.Taints {
		t := &node.Spec.Taints[i]
		if t.Effect != corev1.TaintEffectNoSchedule && t.Effect != corev1.TaintEffectNoExecute {
			continue
		}
		if corev1helper.TolerationsTolerateTaint(logr.Discard(), pod.Spec.Tolerations, t, true) {
			continue
		}
		r := taintReason(t)
		// A spot node for a pod kept off spot fails its label and its
		// taint: one reason, the label's, says it.
		if r.Kind != KindTaint && has(r.Kind) {
			continue
		}
		out = append(out, r)
	}
	return out
}

// tolerates reports whether pod tolerates a NoSchedule taint with key.
func tolerates(pod *corev1.Pod, key string) bool {
	return corev1helper.TolerationsTolerateTaint(logr.Discard(), pod.Spec.Tolerations, &corev1.Taint{Key: key, Effect: corev1.TaintEffectNoSchedule}, true)
}

func readyCondition(node *corev1.Node) *corev1.NodeCondition {
	for i := range node.Status.Conditions {
		if node.Status.Conditions[i].Type == corev1.NodeReady {
			return &node.Status.Conditions[i]
		}
	}
	return nil
}

// affinityReasons names the requirements of the pod's nodeSelector and
// required node affinity that node fails. Of several terms (any one
// suffices), the one with the fewest failures speaks.
func affinityReasons(pod *corev1.Pod, node *corev1.Node) []Reason {
	var out []Reason
	keys := make([]string, 0, len(pod.Spec.NodeSelector))
	for k := range pod.Spec.NodeSelector {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		req := corev1.NodeSelectorRequirement{Key: k, Operator: corev1.NodeSelectorOpIn, Values: []string{pod.Spec.NodeSelector[k]}}
		if !matches(node, corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{req}}) {
			out = append(out, labelReason(req, node))
		}
	}

	a := pod.Spec.Affinity
	if a == nil || a.NodeAffinity == nil || a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		return out
	}
	var best []Reason
	for i, term := range a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
		var failed []Reason
		for _, req := range term.MatchExpressions {
			if !matches(node, corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{req}}) {
				failed = append(failed, labelReason(req, node))
			}
		}
		for _, req := range term.MatchFields {
			if !matches(node, corev1.NodeSelectorTerm{MatchFields: []corev1.NodeSelectorRequirement{req}}) {
				failed = append(failed, Reason{Kind: KindNodeLabel, Message: "not the node the pod asks for", Detail: requirement(req)})
			}
		}
		if len(failed) == 0 {
			// This term matches, so the terms do: nothing to add.
			return out
		}
		if i == 0 || len(failed) < len(best) {
			best = failed
		}
	}
	for _, r := range best {
		// A requirement the nodeSelector states too speaks once.
		if !slices.Contains(out, r) {
			out = append(out, r)
		}
	}
	return out
}

// matches evaluates one term against node with the scheduler's own
// matcher.
func matches(node *corev1.Node, term corev1.NodeSelectorTerm) bool {
	ok, err := corev1helper.MatchNodeSelectorTerms(node, &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{term}})
	return err == nil && ok
}

// labelReason says in words why node fails req, by what req's key means.
// The message does not name the node's own value where that would split
// nodes failing alike into many groups (its pool and zone are beside it).
func labelReason(req corev1.NodeSelectorRequirement, node *corev1.Node) Reason {
	r := Reason{Kind: KindNodeLabel, Message: "node label does not match", Detail: requirement(req)}
	if k, ok := labelKinds[req.Key]; ok {
		r.Kind = k
	}
	value := node.Labels[req.Key]
	in := req.Operator == corev1.NodeSelectorOpIn
	switch {
	case req.Key == schedv1.NodeLabelPool && in:
		r.Message = "not in node pool " + orList(req.Values)
	case req.Key == schedv1.NodeLabelSpot && in && slices.Contains(req.Values, "true"):
		r.Message = "not a spot node; placement.spot is Required"
	case req.Key == schedv1.NodeLabelSpot && req.Operator == corev1.NodeSelectorOpNotIn && value == "true":
		r.Message = "spot node; placement.spot is Never"
	case req.Key == schedv1.NodeLabelGPU && in && slices.Contains(req.Values, "true"):
		r.Message = "no GPU; workloadType is GPU"
	case req.Key == schedv1.NodeLabelZone && in:
		r.Message = "not in zone " + orList(req.Values)
	case req.Key == schedv1.NodeLabelCPUScheduler && in && value == "":
		r.Message = "CPU scheduler " + orList(req.Values) + " not attached"
	case req.Key == schedv1.NodeLabelCPUScheduler && in:
		r.Message = "runs CPU scheduler " + value + ", not " + orList(req.Values)
	}
	return r
}

// labelKinds are what the node labels placement translates to are about.
var labelKinds = map[string]Kind{
	schedv1.NodeLabelPool:         KindPool,
	schedv1.NodeLabelSpot:         KindSpot,
	schedv1.NodeLabelGPU:          KindGPU,
	schedv1.NodeLabelZone:         KindZone,
	schedv1.NodeLabelCPUScheduler: KindCPUScheduler,
}

// taintReason says in words which taint node has that the pod does not
// tolerate.
func taintReason(t *corev1.Taint) Reason {
	r := Reason{Kind: KindTaint, Message: "taint " + taintString(t) + " not tolerated", Detail: taintString(t)}
	switch t.Key {
	case schedv1.TaintPool:
		r.Kind, r.Message = KindPool, "pool "+t.Value+" is reserved; name it in placement.nodePools"
	case schedv1.TaintSpot:
		r.Kind, r.Message = KindSpot, "spot node; needs placement.spot Allowed, Preferred or Required"
	case schedv1.TaintGPU:
		r.Kind, r.Message = KindGPU, "GPU node, for workloadType GPU only"
	case corev1.TaintNodeNotReady, corev1.TaintNodeUnreachable:
		r.Kind, r.Message = KindNotReady, "not Ready"
	case corev1.TaintNodeUnschedulable:
		r.Kind, r.Message = KindUnschedulable, "cordoned"
	}
	return r
}

// taintString is key=value:effect, as kubectl taint writes it.
func taintString(t *corev1.Taint) string {
	s := t.Key
	if t.Value != "" {
		s += "=" + t.Value
	}
	return s + ":" + string(t.Effect)
}

// requirement writes req as kubectl's selectors do: "disk in (ssd, nvme)".
func requirement(req corev1.NodeSelectorRequirement) string {
	switch req.Operator {
	case corev1.NodeSelectorOpExists:
		return req.Key
	case corev1.NodeSelectorOpDoesNotExist:
		return "!" + req.Key
	case corev1.NodeSelectorOpIn, corev1.NodeSelectorOpNotIn:
		return fmt.Sprintf("%s %s (%s)", req.Key, strings.ToLower(string(req.Operator)), strings.Join(req.Values, ", "))
	}
	return fmt.Sprintf("%s %s %s", req.Key, req.Operator, strings.Join(req.Values, ", "))
}

// orList is "a", "a or b", "a, b or c".
func orList(values []string) string {
	if len(values) <= 1 {
		return strings.Join(values, "")
	}
	return strings.Join(values[:len(values)-1], ", ") + " or " + values[len(values)-1]
}

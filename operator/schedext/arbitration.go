package schedext

import (
	"slices"
	"strings"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"

	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
)

// Assignment is what arbitration gives one SchedExt.
type Assignment struct {
	// Nodes it selects and keeps, sorted by name.
	Nodes []string
	// Conflicts are the nodes it selects that an older SchedExt keeps,
	// sorted by node name.
	Conflicts []Conflict
}

// Conflict is a node a SchedExt selects but an older one keeps.
type Conflict struct {
	Node   string
	Winner string
}

// ExcludedNodes are the names of the conflicting nodes, for the DaemonSet's
// node affinity.
func (a Assignment) ExcludedNodes() []string {
	out := make([]string, 0, len(a.Conflicts))
	for _, c := range a.Conflicts {
		out = append(out, c.Node)
	}
	return out
}

// Arbitrate decides, for every SchedExt, which of the nodes it selects it
// runs on. A node runs one sched_ext scheduler, so the oldest SchedExt
// (creationTimestamp, then name) that selects a node keeps it and every
// younger one excludes it. SchedExts being deleted claim nothing, so the
// next in line takes their nodes over at once.
//
// Claims follow the spec alone, not whether the scheduler resolved or
// attached: the outcome depends only on the SchedExts and the nodes, and a
// SchedExt whose image is fixed later does not suddenly take nodes from a
// younger one that was told it could not have them.
func Arbitrate(scxs []schedv1.SchedExt, nodes []corev1.Node) map[string]Assignment {
	order := claimOrder(scxs)
	sorted := make([]*corev1.Node, 0, len(nodes))
	for i := range nodes {
		sorted = append(sorted, &nodes[i])
	}
	slices.SortFunc(sorted, func(a, b *corev1.Node) int { return strings.Compare(a.Name, b.Name) })

	owner := map[string]string{}
	out := make(map[string]Assignment, len(order))
	for _, scx := range order {
		var a Assignment
		for _, n := range sorted {
			if !Selects(scx, n) {
				continue
			}
			if w, taken := owner[n.Name]; taken {
				a.Conflicts = append(a.Conflicts, Conflict{Node: n.Name, Winner: w})
				continue
			}
			owner[n.Name] = scx.Name
			a.Nodes = append(a.Nodes, n.Name)
		}
		out[scx.Name] = a
	}
	return out
}

// Owner is the SchedExt that keeps node, as Arbitrate decides it: the
// oldest that selects it and is not being deleted; "" when none does.
func Owner(scxs []schedv1.SchedExt, node *corev1.Node) string {
	for _, scx := range claimOrder(scxs) {
		if Selects(scx, node) {
			return scx.Name
		}
	}
	return ""
}

// claimOrder is the SchedExts that claim nodes, oldest first
// (creationTimestamp, then name); those being deleted claim nothing.
func claimOrder(scxs []schedv1.SchedExt) []*schedv1.SchedExt {
	order := make([]*schedv1.SchedExt, 0, len(scxs))
	for i := range scxs {
		if scxs[i].DeletionTimestamp.IsZero() {
			order = append(order, &scxs[i])
		}
	}
	slices.SortFunc(order, func(a, b *schedv1.SchedExt) int {
		if c := a.CreationTimestamp.Compare(b.CreationTimestamp.Time); c != 0 {
			return c
		}
		return strings.Compare(a.Name, b.Name)
	})
	return order
}

// Selects says whether scx's DaemonSet would run a pod on node: the
// nodeSelector matches and every NoSchedule or NoExecute taint is tolerated,
// counting the tolerations the DaemonSet controller adds to every daemon pod.
// A tainted node the SchedExt does not tolerate is not claimed, so a younger
// SchedExt that tolerates it (say the gpu pool) can have it.
func Selects(scx *schedv1.SchedExt, node *corev1.Node) bool {
	if !node.DeletionTimestamp.IsZero() {
		return false
	}
	if !labels.SelectorFromSet(scx.Spec.NodeSelector).Matches(labels.Set(node.Labels)) {
		return false
	}
	tolerations := append(slices.Clone(scx.Spec.Tolerations), daemonTolerations...)
	for i := range node.Spec.Taints {
		t := &node.Spec.Taints[i]
		if t.Effect != corev1.TaintEffectNoSchedule && t.Effect != corev1.TaintEffectNoExecute {
			continue
		}
		if !slices.ContainsFunc(tolerations, func(tol corev1.Toleration) bool {
			return tol.ToleratesTaint(logr.Discard(), t, true)
		}) {
			return false
		}
	}
	return true
}

// daemonTolerations are the tolerations the DaemonSet controller adds to
// every daemon pod that does not use the host network (see its
// AddOrUpdateDaemonPodTolerations). Counting them keeps a node that turns
// NotReady or comes under pressure with the SchedExt that runs there,
// rather than handing it to another one.
var daemonTolerations = []corev1.Toleration{
	{Key: corev1.TaintNodeNotReady, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute},
	{Key: corev1.TaintNodeUnreachable, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute},
	{Key: corev1.TaintNodeDiskPressure, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule},
	{Key: corev1.TaintNodeMemoryPressure, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule},
	{Key: corev1.TaintNodePIDPressure, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule},
	{Key: corev1.TaintNodeUnschedulable, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule},
}

// TrimNode is the cache transform for nodes: arbitration reads labels,
// taints and the deletion timestamp, so the status (images, conditions,
// capacity) and managed fields are dropped before caching.
func TrimNode(obj any) (any, error) {
	if n, ok := obj.(*corev1.Node); ok {
		n.ManagedFields = nil
		n.Status = corev1.NodeStatus{}
	}
	return obj, nil
}

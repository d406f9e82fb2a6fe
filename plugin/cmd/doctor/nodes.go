package doctor

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"

	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
	"github.com/kubectl-sched/kubectl-sched/plugin/internal/cmdutil"
)

// kwokNode marks a simulated node (hack/cluster): it runs no kernel, so
// sched_ext cannot attach there.
const kwokNode = "kwok.x-k8s.io/node"

// noPool names the nodes without a pool label.
const noPool = "(no pool)"

// nodes counts the nodes of each pool and the SchedExts that select them.
func (d *doctor) nodes(ctx context.Context) Check {
	var nodes corev1.NodeList
	if err := d.c.Client.List(ctx, &nodes); err != nil {
		return skipped(checkNodes, err, "list", "nodes")
	}
	var scxs schedv1.SchedExtList
	scxErr := ""
	if err := d.c.Client.List(ctx, &scxs); cmdutil.NotInstalled(err) {
		scxErr = "(the SchedExt CRD is not installed)"
	} else if err != nil {
		scxErr = skipped(checkNodes, err, "list", "schedexts."+schedv1.GroupName).Message
	}
	return nodesStatus(nodes.Items, scxs.Items, scxErr)
}

// nodesStatus writes a line per pool: its nodes (simulated ones counted),
// the SchedExts selecting them and the nodes they found without sched_ext.
// scxErr says why SchedExts could not be read. Pools whose nodes lack
// sched_ext under a SchedExt warn; a pool no SchedExt selects has no known
// support, which is fine.
func nodesStatus(nodes []corev1.Node, scxs []schedv1.SchedExt, scxErr string) Check {
	c := Check{Name: checkNodes, Status: OK}
	if len(nodes) == 0 {
		c.Status, c.Message = Warn, "no nodes: nothing can run"
		c.Fix = "add nodes to the cluster (kubectl get nodes)"
		return c
	}
	pools := map[string][]corev1.Node{}
	for _, n := range nodes {
		p := n.Labels[schedv1.NodeLabelPool]
		if p == "" {
			p = noPool
		}
		pools[p] = append(pools[p], n)
	}
	unsupported := map[string]bool{}
	for _, s := range scxs {
		for _, n := range s.Status.UnsupportedNodes {
			unsupported[n] = true
		}
	}
	var lacking []string
	for _, p := range slices.Sorted(maps.Keys(pools)) {
		simulated, without := 0, 0
		selectedBy := map[string]bool{}
		for _, n := range pools[p] {
			if _, ok := n.Annotations[kwokNode]; ok {
				simulated++
			}
			if unsupported[n.Name] {
				without++
			}
			for _, s := range scxs {
				if labels.SelectorFromSet(s.Spec.NodeSelector).Matches(labels.Set(n.Labels)) {
					selectedBy[s.Name] = true
				}
			}
		}
		line := fmt.Sprintf("pool %s: %d node(s)", p, len(pools[p]))
		if simulated > 0 {
			line += fmt.Sprintf(" (%d simulated)", simulated)
		}
		switch {
		case scxErr != "":
			line += "; sched_ext not checked"
		case len(selectedBy) == 0:
			line += "; no SchedExt selects them (sched_ext support unknown)"
		default:
			var parts []string
			for _, s := range scxs {
				if selectedBy[s.Name] {
					parts = append(parts, fmt.Sprintf("%s %d/%d ready", s.Name, s.Status.ReadyNodes, s.Status.DesiredNodes))
				}
			}
			line += "; SchedExt " + strings.Join(parts, ", ")
			if without > 0 {
				line += fmt.Sprintf("; %d without sched_ext", without)
				lacking = append(lacking, p)
			}
		}
		c.Details = append(c.Details, line)
	}
	c.Message = fmt.Sprintf("%d node(s) in %d pool(s)", len(nodes), len(pools))
	if scxErr != "" {
		c.Message += "; SchedExts not read " + scxErr
	}
	if len(lacking) > 0 {
		c.Status = Warn
		c.Message += "; nodes without sched_ext in pool " + strings.Join(lacking, ", ")
		c.Fix = "'kubectl sched schedext status' names them; run SchedExts only on pools whose kernels have sched_ext (6.12+)"
	}
	return c
}

// Package placement is the operator's side of placement.cpuScheduler: why a
// pod waits for its CPU scheduler, and the watches that re-check the
// workloads asking for one. The translation of a Placement into pod
// scheduling fields, shared with the plugin, is api/placement.
package placement

import (
	"context"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	corev1helper "k8s.io/component-helpers/scheduling/corev1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
)

// NodeIndexCPUScheduler indexes the cached nodes by the value of their
// NodeLabelCPUScheduler label, so finding the nodes that run a scheduler is
// a lookup, not a scan of every node.
const NodeIndexCPUScheduler = "node.byCPUScheduler"

// IndexNodes registers NodeIndexCPUScheduler. The manager calls it once:
// the AgentTask, UserDeployment and SchedExt controllers share it.
func IndexNodes(ctx context.Context, indexer client.FieldIndexer) error {
	return indexer.IndexField(ctx, &corev1.Node{}, NodeIndexCPUScheduler, func(o client.Object) []string {
		if v := o.GetLabels()[schedv1.NodeLabelCPUScheduler]; v != "" {
			return []string{v}
		}
		return nil
	})
}

// maxProviders bounds how many SchedExts a message names.
const maxProviders = 5

// Provider is a SchedExt that loads a scheduler, and where it stands.
type Provider struct {
	Name string
	// State is its Ready condition's reason (Attached, NotAttached,
	// UnsupportedKernel, ...); "" before it has one.
	State string
}

// Providers are the SchedExts, not being deleted, whose scheduler is
// scheduler (SchedulerSource.CPUScheduler), sorted by name. Only their
// names and Ready reasons are kept: a message that tenants read may name a
// cluster-scoped SchedExt, not its nodes or its kernels' messages.
func Providers(scxs []schedv1.SchedExt, scheduler string) []Provider {
	var out []Provider
	for i := range scxs {
		s := &scxs[i]
		if !s.DeletionTimestamp.IsZero() || s.Spec.Scheduler.CPUScheduler() != scheduler {
			continue
		}
		p := Provider{Name: s.Name}
		if c := meta.FindStatusCondition(s.Status.Conditions, schedv1.ConditionReady); c != nil {
			p.State = c.Reason
		}
		out = append(out, p)
	}
	slices.SortFunc(out, func(a, b Provider) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// UnavailableMessage says why a pod that asks for scheduler
// (placement.cpuScheduler) has no node: no SchedExt loads it (and who can
// fix that), or those that do are attached on no node (yet), or only on
// nodes the rest of the placement rules out (runsElsewhere).
func UnavailableMessage(scheduler string, providers []Provider, runsElsewhere bool) string {
	if len(providers) == 0 {
		return fmt.Sprintf("no node runs the CPU scheduler %s (placement.cpuScheduler) and no SchedExt loads it: ask a cluster admin to create one (%s)",
			scheduler, setHint(scheduler))
	}
	if runsElsewhere {
		return fmt.Sprintf("the CPU scheduler %s (placement.cpuScheduler) runs on no node the rest of the placement allows (node pools, spot, GPU); %s it on other nodes",
			scheduler, providerList(providers))
	}
	return fmt.Sprintf("no node runs the CPU scheduler %s (placement.cpuScheduler) yet: %s it, and the pod runs once a node's kernel reports it attached",
		scheduler, providerList(providers))
}

// setHint is the command that makes a SchedExt for scheduler: a
// well-known name loads from the operator's image, any other from an
// image of the admin's whose ops name is the rest of the name.
func setHint(scheduler string) string {
	if slices.Contains(schedv1.WellKnownSchedulers, scheduler) {
		return fmt.Sprintf("kubectl sched schedext set NAME --sched %s --nodes LABEL=VALUE", scheduler)
	}
	return fmt.Sprintf("kubectl sched schedext set NAME --sched IMAGE --ops-name %s --nodes LABEL=VALUE", strings.TrimPrefix(scheduler, "scx_"))
}

// providerList names up to maxProviders SchedExts with their Ready
// reasons, and the verb: "SchedExt a (Attached) loads".
func providerList(ps []Provider) string {
	parts := make([]string, 0, min(len(ps), maxProviders))
	for _, p := range ps[:min(len(ps), maxProviders)] {
		state := p.State
		if state == "" {
			state = "no status yet"
		}
		parts = append(parts, fmt.Sprintf("%s (%s)", p.Name, state))
	}
	if len(ps) == 1 {
		return "SchedExt " + parts[0] + " loads"
	}
	list := "SchedExts " + strings.Join(parts, ", ")
	if len(ps) > maxProviders {
		list += fmt.Sprintf(" and %d more", len(ps)-maxProviders)
	}
	return list + " load"
}

// CPUSchedulerCause explains an unschedulable pod that asks for scheduler,
// from the caches: reason ReasonCPUSchedulerUnavailable and a message
// (UnavailableMessage) when no node that runs it matches the pod's
// required node affinity; "" when one does, and the scheduler's own verdict
// (resources, taints) says more. affinity is the pod's.
func CPUSchedulerCause(ctx context.Context, c client.Reader, scheduler string, affinity *corev1.Affinity) (reason, msg string, err error) {
	allowed, running, err := NodesRunning(ctx, c, scheduler, affinity)
	if err != nil || allowed {
		return "", "", err
	}
	var scxs schedv1.SchedExtList
	if err := c.List(ctx, &scxs, client.UnsafeDisableDeepCopy); err != nil {
		return "", "", fmt.Errorf("list SchedExts: %w", err)
	}
	return schedv1.ReasonCPUSchedulerUnavailable, UnavailableMessage(scheduler, Providers(scxs.Items, scheduler), running), nil
}

// NodesRunning says, from the node cache (NodeIndexCPUScheduler), whether
// a node whose label says scheduler is attached matches affinity's
// required terms (allowed), and whether any node has it at all (running).
func NodesRunning(ctx context.Context, c client.Reader, scheduler string, affinity *corev1.Affinity) (allowed, running bool, err error) {
	var nodes corev1.NodeList
	if err := c.List(ctx, &nodes, client.MatchingFields{NodeIndexCPUScheduler: scheduler}, client.UnsafeDisableDeepCopy); err != nil {
		return false, false, fmt.Errorf("list the nodes that run %s: %w", scheduler, err)
	}
	for i := range nodes.Items {
		n := &nodes.Items[i]
		if !n.DeletionTimestamp.IsZero() || n.Labels[schedv1.NodeLabelCPUScheduler] != scheduler {
			continue
		}
		running = true
		if MatchesRequired(affinity, n) {
			return true, true, nil
		}
	}
	return false, running, nil
}

// MatchesRequired says whether node satisfies affinity's required node
// affinity, as the scheduler reads it (the scheduler's own helper): any
// one term, each term's expressions and fields all holding. An empty term
// matches nothing; no required affinity matches every node.
func MatchesRequired(affinity *corev1.Affinity, node *corev1.Node) bool {
	if affinity == nil || affinity.NodeAffinity == nil || affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		return true
	}
	ok, err := corev1helper.MatchNodeSelectorTerms(node, affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution)
	return err == nil && ok
}

package placement

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/kubectl-sched/kubectl-sched/plugin/internal/cmdutil"
	"github.com/kubectl-sched/kubectl-sched/plugin/internal/fit"
	"github.com/kubectl-sched/kubectl-sched/plugin/internal/printing"
)

// Limits are a namespace's ResourceQuotas and LimitRanges.
type Limits struct {
	Quotas      []corev1.ResourceQuota
	LimitRanges []corev1.LimitRange
}

// Report is what explain found, -o json|yaml as it is.
type Report struct {
	Pods []PodReport `json:"pods"`
}

// PodReport is one pod the object makes and every node's verdict.
type PodReport struct {
	// Name is ud/APP/SERVICE, at/TASK or wf/WORKFLOW/STEP.
	Name      string `json:"name"`
	Object    string `json:"object"`
	Namespace string `json:"namespace"`
	Service   string `json:"service,omitempty"`
	Step      string `json:"step,omitempty"`
	// PodSpecFrom is spec.placement (the operator's translation of it) or
	// the pod template the operator made (Deployment/NAME, Job/NAME).
	PodSpecFrom string `json:"podSpecFrom"`
	Created     bool   `json:"created"`
	// Wanted is how many pods it should have now.
	Wanted int `json:"wanted"`
	// HasNode is true when some node fits and no quota refuses its pods.
	HasNode    bool `json:"hasNode"`
	NodesFit   int  `json:"nodesFit"`
	NodesTotal int  `json:"nodesTotal"`
	// Quota are the namespace's quotas that would refuse the pods it
	// still has to make.
	Quota []fit.Reason `json:"quota,omitempty"`
	// Pods are its pods that exist, and where they are.
	Pods    []PodPlacement `json:"pods,omitempty"`
	Summary string         `json:"summary"`
	Nodes   []fit.Node     `json:"nodes"`
}

// PodPlacement is a pod that exists and its node.
type PodPlacement struct {
	Name  string `json:"name"`
	Node  string `json:"node,omitempty"`
	Phase string `json:"phase"`
	// Unschedulable is the scheduler's message for a pod it could not
	// place.
	Unschedulable string `json:"unschedulable,omitempty"`
	// Reasons say why its node would not take it now (labels and taints
	// change after scheduling).
	Reasons []fit.Reason `json:"reasons,omitempty"`
}

// Build judges every node for every unit, the quotas for the pods each
// still has to make, and says where its pods are.
func Build(units []Unit, nodes []corev1.Node, limits map[string]Limits) Report {
	r := Report{Pods: make([]PodReport, 0, len(units))}
	for _, u := range units {
		l := limits[u.Namespace]
		pod := fit.WithDefaults(u.Pod, l.LimitRanges)
		p := PodReport{Name: u.Name, Object: u.Object, Namespace: u.Namespace, Service: u.Service, Step: u.Step,
			PodSpecFrom: u.From, Created: u.Created, Wanted: u.Wanted, NodesTotal: len(nodes), Nodes: fit.Nodes(pod, nodes)}
		verdicts := map[string]fit.Node{}
		for _, v := range p.Nodes {
			verdicts[v.Name] = v
			if v.Fits {
				p.NodesFit++
			}
		}
		active := 0
		for _, pod := range u.Pods {
			if isActive(&pod) {
				active++
			}
		}
		p.Quota = fit.Quota(pod, u.Wanted-active, l.Quotas)
		p.HasNode = p.NodesFit > 0 && len(p.Quota) == 0
		for _, pod := range u.Pods {
			pl := PodPlacement{Name: pod.Name, Node: pod.Spec.NodeName, Phase: string(pod.Status.Phase)}
			for _, c := range pod.Status.Conditions {
				if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse {
					pl.Unschedulable = strings.TrimSuffix(printing.OneLine(c.Message), ".")
				}
			}
			if v, ok := verdicts[pl.Node]; ok && isActive(&pod) {
				pl.Reasons = v.Reasons
			} else if pl.Node != "" && !ok && isActive(&pod) {
				pl.Reasons = []fit.Reason{{Kind: fit.KindNotReady, Message: "the node is gone"}}
			}
			p.Pods = append(p.Pods, pl)
		}
		slices.SortFunc(p.Pods, func(a, b PodPlacement) int { return strings.Compare(a.Name, b.Name) })
		p.Summary = summary(u, &p)
		r.Pods = append(r.Pods, p)
	}
	return r
}

func isActive(p *corev1.Pod) bool {
	return p.DeletionTimestamp == nil && p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed
}

// summary is one line on a unit: whether it has a node, its state, and
// where its pods are.
func summary(u Unit, p *PodReport) string {
	var parts []string
	switch {
	case len(p.Quota) > 0:
		parts = append(parts, "its pods cannot be created: "+p.Quota[0].Message)
		if p.NodesFit > 0 {
			parts = append(parts, fmt.Sprintf("%d of %d nodes fit otherwise", p.NodesFit, p.NodesTotal))
		}
	case p.NodesFit == 0:
		parts = append(parts, fmt.Sprintf("no node fits (of %d)", p.NodesTotal))
	default:
		parts = append(parts, fmt.Sprintf("may use %d of %d nodes", p.NodesFit, p.NodesTotal))
	}
	if u.State != "" {
		parts = append(parts, u.State)
	}
	if u.Pinned != "" {
		parts = append(parts, u.Pinned)
	}
	var running, ran, pending []string
	unschedulable := ""
	for _, pl := range p.Pods {
		switch {
		case pl.Node == "" && pl.Phase == string(corev1.PodPending):
			pending = append(pending, pl.Name)
			if unschedulable == "" {
				unschedulable = pl.Unschedulable
			}
		case pl.Phase == string(corev1.PodSucceeded) || pl.Phase == string(corev1.PodFailed):
			ran = append(ran, pl.Node)
		case pl.Node != "":
			running = append(running, pl.Node)
		}
	}
	if len(running) > 0 {
		parts = append(parts, fmt.Sprintf("%s on %s", count(len(running), "pod"), nodeList(running)))
	}
	if len(ran) > 0 {
		parts = append(parts, fmt.Sprintf("%s ran on %s", count(len(ran), "pod"), nodeList(ran)))
	}
	if len(pending) > 0 {
		s := count(len(pending), "pod") + " not scheduled"
		if unschedulable != "" {
			// The scheduler's first sentence counts the nodes by filter;
			// the rest (preemption) is in -o json.
			first, _, _ := strings.Cut(unschedulable, ". ")
			s += ": " + first
		}
		parts = append(parts, s)
	}
	for _, pl := range p.Pods {
		if len(pl.Reasons) > 0 {
			parts = append(parts, fmt.Sprintf("%s would not take it now: %s", pl.Node, pl.Reasons[0].Message))
			break
		}
	}
	if u.Created && u.Wanted > 0 && len(p.Pods) == 0 && len(p.Quota) == 0 {
		parts = append(parts, "no pod yet")
	}
	return strings.Join(parts, "; ")
}

// nodeList names each node once, in order, with how many pods it has
// when more than one.
func nodeList(nodes []string) string {
	counts := map[string]int{}
	var order []string
	for _, n := range nodes {
		if counts[n] == 0 {
			order = append(order, n)
		}
		counts[n]++
	}
	for i, n := range order {
		if counts[n] > 1 {
			order[i] = fmt.Sprintf("%s (%d)", n, counts[n])
		}
	}
	return strings.Join(order, ", ")
}

func count(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return strconv.Itoa(n) + " " + what + "s"
}

// Err is the command's error when some pod has no node: exit code 13.
func (r Report) Err() error {
	var none []string
	for _, p := range r.Pods {
		if !p.HasNode {
			none = append(none, p.Name)
		}
	}
	if len(none) == 0 {
		return nil
	}
	hint := "The reasons are above (-o wide lists every node): change the placement, or ask a cluster admin about the nodes or the quota."
	if len(none) == 1 {
		why := "no node fits"
		for _, p := range r.Pods {
			if p.Name == none[0] && len(p.Quota) > 0 {
				why = "a quota refuses its pods"
			}
		}
		return cmdutil.Errorf(cmdutil.ExitNoNode, hint, "%s has no node it may use: %s", none[0], why)
	}
	return cmdutil.Errorf(cmdutil.ExitNoNode, hint, "%d of %d pods have no node they may use: %s", len(none), len(r.Pods), strings.Join(none, ", "))
}

// maxNames is how many nodes a row names per reason; -o wide names all.
const maxNames = 5

func (o *ExplainOptions) print(r Report) error {
	switch o.Output {
	case "json", "yaml":
		var (
			b   []byte
			err error
		)
		if o.Output == "json" {
			b, err = json.MarshalIndent(r, "", "  ")
			b = append(b, '\n')
		} else {
			b, err = yaml.Marshal(r)
		}
		if err != nil {
			return err
		}
		_, err = io.WriteString(o.Out, printing.Text(string(b)))
		return err
	case "wide":
		if err := o.wideTable(r); err != nil {
			return err
		}
	default:
		if err := o.table(r); err != nil {
			return err
		}
	}
	fmt.Fprintln(o.Out)
	for _, p := range r.Pods {
		fmt.Fprintln(o.Out, printing.Line(p.Name+": "+p.Summary))
	}
	return nil
}

// table groups each pod's nodes: those that fit, then those that do not,
// by reason, the commonest first.
func (o *ExplainOptions) table(r Report) error {
	t := printing.NewTableWriter(o.Out, printing.GetStyle)
	if !o.NoHeaders {
		t.Header("POD", "NODES", "REASON", "NAMES")
	}
	for _, p := range r.Pods {
		for _, q := range p.Quota {
			t.Row(p.Name, "-", q.Message, "-")
		}
		var fits []string
		type group struct {
			reason fit.Reason
			nodes  []string
		}
		var groups []*group
		for _, v := range p.Nodes {
			if v.Fits {
				fits = append(fits, v.Name)
				continue
			}
			for _, reason := range v.Reasons {
				i := slices.IndexFunc(groups, func(g *group) bool { return g.reason == reason })
				if i < 0 {
					groups = append(groups, &group{reason: reason})
					i = len(groups) - 1
				}
				groups[i].nodes = append(groups[i].nodes, v.Name)
			}
		}
		what := "fits"
		if len(fits) == 0 {
			what = "no node fits"
		}
		t.Row(p.Name, fmt.Sprintf("%d of %d", len(fits), p.NodesTotal), what, nameList(fits))
		slices.SortStableFunc(groups, func(a, b *group) int { return len(b.nodes) - len(a.nodes) })
		for _, g := range groups {
			t.Row(p.Name, strconv.Itoa(len(g.nodes)), g.reason.Message, nameList(g.nodes))
		}
	}
	return t.Render()
}

// wideTable is a row per pod and node.
func (o *ExplainOptions) wideTable(r Report) error {
	t := printing.NewTableWriter(o.Out, printing.GetStyle)
	if !o.NoHeaders {
		t.Header("POD", "NODE", "FITS", "PREFERENCE", "POOL", "ZONE", "PODS", "REASONS")
	}
	for _, p := range r.Pods {
		for _, q := range p.Quota {
			t.Row(p.Name, "<any>", "no", "-", "-", "-", "-", q.Message)
		}
		for _, v := range p.Nodes {
			var pods, reasons []string
			for _, pl := range p.Pods {
				if pl.Node == v.Name {
					pods = append(pods, pl.Name)
				}
			}
			for _, reason := range v.Reasons {
				reasons = append(reasons, reason.Message)
			}
			fits := "no"
			if v.Fits {
				fits = "yes"
			}
			t.Row(p.Name, v.Name, fits, strconv.FormatInt(v.Preference, 10), printing.OrNone(v.Pool), printing.OrNone(v.Zone),
				printing.OrNone(strings.Join(pods, ",")), printing.OrNone(strings.Join(reasons, "; ")))
		}
	}
	return t.Render()
}

// nameList is up to maxNames names and how many more.
func nameList(names []string) string {
	if len(names) == 0 {
		return "<none>"
	}
	if len(names) <= maxNames {
		return strings.Join(names, ", ")
	}
	return fmt.Sprintf("%s, +%d more", strings.Join(names[:maxNames], ", "), len(names)-maxNames)
}

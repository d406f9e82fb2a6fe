package schedext

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
	"github.com/kubectl-sched/kubectl-sched/plugin/internal/cmdutil"
	"github.com/kubectl-sched/kubectl-sched/plugin/internal/kube"
	"github.com/kubectl-sched/kubectl-sched/plugin/internal/printing"
)

// Node states `schedext status` reports.
const (
	// StateAttached: the scheduler pod is Ready, and its readiness probe is
	// the kernel reporting the scheduler attached.
	StateAttached = "attached"
	// StatePending: a pod runs or is starting there, not attached yet.
	StatePending = "pending"
	// StateConflict: the node matches but an older SchedExt has it.
	StateConflict = "conflict"
	// StateUnsupported: the node's kernel has no sched_ext.
	StateUnsupported = "unsupported"
)

// NodeStatus is one row of `schedext status`.
type NodeStatus struct {
	Node     string `json:"node"`
	SchedExt string `json:"schedExt"`
	State    string `json:"state"`
	Pod      string `json:"pod,omitempty"`
	// Reason says why a node is not attached.
	Reason string `json:"reason,omitempty"`
}

// Report is one SchedExt's nodes and their counts.
type Report struct {
	SchedExt    string       `json:"schedExt"`
	Scheduler   string       `json:"scheduler"`
	Attached    int          `json:"attached"`
	Pending     int          `json:"pending"`
	Conflict    int          `json:"conflict"`
	Unsupported int          `json:"unsupported"`
	Ready       string       `json:"ready,omitempty"`
	Nodes       []NodeStatus `json:"nodes"`
	// Workloads ask for the scheduler (placement.cpuScheduler). A
	// scheduler that workloads ask for and no SchedExt runs has a report
	// of its own, without schedExt.
	Workloads []Workload `json:"workloads,omitempty"`
	// NodesWithScheduler counts the nodes labelled with the scheduler
	// attached (node.kubectl-sched.dev/cpu-scheduler), the nodes those
	// workloads may use: set when workloads ask for it and nodes may be
	// listed.
	NodesWithScheduler *int `json:"nodesWithScheduler,omitempty"`
}

// StatusOptions for `kubectl sched schedext status`.
type StatusOptions struct {
	kube.ClientOptions

	SchedulerNamespace string
	Output             string
	NoHeaders          bool
	AllNamespaces      bool

	name string
	// namespaceFlag is -n given: workloads of that namespace only.
	namespaceFlag bool
}

func newStatusCommand(c kube.ClientOptions) *cobra.Command {
	o := &StatusOptions{ClientOptions: c, SchedulerNamespace: schedv1.DefaultSchedulerNamespace}
	cmd := &cobra.Command{
		Use:   "status [NAME]",
		Short: "Show, per node, whether each SchedExt's scheduler is attached",
		Long: `For each node a SchedExt selects: attached (the kernel reports the scheduler
attached), pending (its pod is starting or not attached yet), conflict (an older
SchedExt has the node) or unsupported (the kernel has no sched_ext), with the
scheduler pod. A summary line per SchedExt follows.

Then the workloads that ask for each scheduler (placement.cpuScheduler of
UserDeployments, AgentTasks and Workflow steps), with how many nodes have it
attached (the node label node.kubectl-sched.dev/cpu-scheduler): their pods run
only there. Workloads of every namespace are listed, or of one with -n; where
you may not list a kind in every namespace, the current namespace's are, and a
warning says so. A scheduler workloads ask for that no SchedExt runs gets a
summary line of its own.`,
		Example: `  kubectl sched schedext status
  kubectl sched schedext status lavd -o wide
  kubectl sched schedext status lavd -o json
  kubectl sched schedext status -n team-a`,
		Args:              cobra.MaximumNArgs(1),
		ValidArgsFunction: o.CompleteNames(kind, 1),
		RunE:              cmdutil.RunE(o),
	}
	f := cmd.Flags()
	f.StringVar(&o.SchedulerNamespace, "scheduler-namespace", o.SchedulerNamespace, "Namespace of the scheduler DaemonSets (the operator's --scheduler-namespace).")
	f.StringVarP(&o.Output, "output", "o", "", "Output format: wide (adds REASON), json or yaml.")
	f.BoolVar(&o.NoHeaders, "no-headers", false, "Print the table without its header.")
	f.BoolVarP(&o.AllNamespaces, "all-namespaces", "A", false, "List the workloads of every namespace (the default unless -n is given).")
	return cmd
}

// Complete reads the arguments and builds the clients.
func (o *StatusOptions) Complete(cmd *cobra.Command, args []string) error {
	if len(args) == 1 {
		o.name = args[0]
	}
	if f := cmd.Flag("namespace"); f != nil && f.Changed {
		o.namespaceFlag = true
	}
	return o.ClientOptions.Complete(cmd, args)
}

// Validate checks the flags.
func (o *StatusOptions) Validate() error {
	switch o.Output {
	case "", "wide", "json", "yaml":
		return nil
	}
	return cmdutil.Usage("Use -o wide, json or yaml.", "--output must be wide, json or yaml, got %q", o.Output)
}

// Run prints the per-node table and the summary lines.
func (o *StatusOptions) Run(ctx context.Context) error {
	var items []schedv1.SchedExt
	if o.name != "" {
		var scx schedv1.SchedExt
		if err := o.Clients.Client.Get(ctx, client.ObjectKey{Name: o.name}, &scx); err != nil {
			return cmdutil.API(err, "get", kind.What("", o.name))
		}
		items = []schedv1.SchedExt{scx}
	} else {
		var list schedv1.SchedExtList
		if err := o.Clients.Client.List(ctx, &list); err != nil {
			return cmdutil.API(err, "list", kind.What("", ""))
		}
		items = list.Items
	}
	byScheduler, err := o.workloads(ctx)
	if err != nil {
		return err
	}
	var nodes map[string]int
	if len(byScheduler) > 0 {
		if nodes, err = o.nodesWithScheduler(ctx); err != nil {
			return err
		}
	}
	if len(items) == 0 && (o.name != "" || len(byScheduler) == 0) {
		if o.Output == "json" || o.Output == "yaml" {
			return o.printStructured([]Report{})
		}
		fmt.Fprintln(o.ErrOut, "No resources found")
		return nil
	}
	reports := make([]Report, 0, len(items))
	warned := false
	for i := range items {
		pods, err := o.pods(ctx, &items[i])
		if err != nil {
			if !apierrors.IsForbidden(err) {
				return err
			}
			// Still useful from the status alone: conflicts and unsupported nodes.
			if !warned {
				fmt.Fprintf(o.ErrOut, "Warning: %s; pod states are unknown.\n", printing.Line(firstLine(cmdutil.API(err, "list", "pods in namespace "+o.SchedulerNamespace))))
				warned = true
			}
		}
		reports = append(reports, BuildReport(&items[i], pods))
	}
	reports = addWorkloads(reports, items, byScheduler, nodes, o.name == "")
	if o.Output == "json" || o.Output == "yaml" {
		return o.printStructured(reports)
	}
	return o.printTable(reports)
}

// pods are the scheduler pods of scx: those its DaemonSet selects, or,
// before the DaemonSet exists, those carrying its label.
func (o *StatusOptions) pods(ctx context.Context, scx *schedv1.SchedExt) ([]corev1.Pod, error) {
	selector := client.MatchingLabels{schedv1.LabelSchedExt: scx.Name}
	var opts []client.ListOption
	// Without the DaemonSet (not there yet, or not readable) the label does.
	if name := scx.Status.DaemonSetName; name != "" {
		var ds appsv1.DaemonSet
		err := o.Clients.Client.Get(ctx, client.ObjectKey{Namespace: o.SchedulerNamespace, Name: name}, &ds)
		switch {
		case err == nil && ds.Spec.Selector != nil:
			sel, err := metav1.LabelSelectorAsSelector(ds.Spec.Selector)
			if err != nil {
				return nil, err
			}
			opts = append(opts, client.MatchingLabelsSelector{Selector: sel})
		case err != nil && !apierrors.IsNotFound(err) && !apierrors.IsForbidden(err):
			return nil, err
		}
	}
	if len(opts) == 0 {
		opts = append(opts, selector)
	}
	var pods corev1.PodList
	if err := o.Clients.Client.List(ctx, &pods, append(opts, client.InNamespace(o.SchedulerNamespace))...); err != nil {
		return nil, err
	}
	return pods.Items, nil
}

// BuildReport derives each node's state from the SchedExt's status
// (conflicting and unsupported nodes) and its scheduler pods (Ready is
// attached). It is pure so the rules are tested without a cluster.
func BuildReport(scx *schedv1.SchedExt, pods []corev1.Pod) Report {
	r := Report{SchedExt: scx.Name, Scheduler: scx.Spec.Scheduler.Name}
	if r.Scheduler == "" {
		r.Scheduler = scx.Spec.Scheduler.Image
	}
	if c := meta.FindStatusCondition(scx.Status.Conditions, schedv1.ConditionReady); c != nil && c.Status != metav1.ConditionTrue {
		r.Ready = c.Reason
		if c.Message != "" {
			r.Ready += ": " + c.Message
		}
	}
	unsupported := map[string]bool{}
	for _, n := range scx.Status.UnsupportedNodes {
		unsupported[n] = true
	}
	seen := map[string]bool{}
	for _, p := range pods {
		if p.DeletionTimestamp != nil {
			continue
		}
		node := podNode(p)
		row := NodeStatus{Node: node, SchedExt: scx.Name, Pod: p.Name}
		switch {
		case unsupported[node]:
			row.State, row.Reason = StateUnsupported, "the kernel has no sched_ext"
		case podReady(p):
			row.State = StateAttached
		default:
			row.State, row.Reason = StatePending, notReadyReason(p)
		}
		seen[node] = true
		r.Nodes = append(r.Nodes, row)
	}
	for _, n := range scx.Status.UnsupportedNodes {
		if !seen[n] {
			seen[n] = true
			r.Nodes = append(r.Nodes, NodeStatus{Node: n, SchedExt: scx.Name, State: StateUnsupported, Reason: "the kernel has no sched_ext"})
		}
	}
	for _, n := range scx.Status.ConflictingNodes {
		if !seen[n] {
			seen[n] = true
			r.Nodes = append(r.Nodes, NodeStatus{Node: n, SchedExt: scx.Name, State: StateConflict, Reason: "an older SchedExt runs its scheduler there"})
		}
	}
	slices.SortFunc(r.Nodes, func(a, b NodeStatus) int { return strings.Compare(a.Node, b.Node) })
	for _, n := range r.Nodes {
		switch n.State {
		case StateAttached:
			r.Attached++
		case StatePending:
			r.Pending++
		case StateConflict:
			r.Conflict++
		case StateUnsupported:
			r.Unsupported++
		}
	}
	return r
}

// podNode is the pod's node, or before binding the node the DaemonSet
// controller pinned it to with a metadata.name node affinity.
func podNode(p corev1.Pod) string {
	if p.Spec.NodeName != "" {
		return p.Spec.NodeName
	}
	if a := p.Spec.Affinity; a != nil && a.NodeAffinity != nil && a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution != nil {
		for _, term := range a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
			for _, f := range term.MatchFields {
				if f.Key == metav1.ObjectNameField && f.Operator == corev1.NodeSelectorOpIn && len(f.Values) == 1 {
					return f.Values[0]
				}
			}
		}
	}
	return "<unscheduled>"
}

func podReady(p corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// notReadyReason is the first thing a person would look at: a waiting
// container's reason, else the pod's phase.
func notReadyReason(p corev1.Pod) string {
	for _, cs := range append(slices.Clone(p.Status.InitContainerStatuses), p.Status.ContainerStatuses...) {
		if w := cs.State.Waiting; w != nil && w.Reason != "" {
			return cs.Name + ": " + w.Reason
		}
		if t := cs.State.Terminated; t != nil && t.ExitCode != 0 {
			return fmt.Sprintf("%s: exited %d", cs.Name, t.ExitCode)
		}
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason != "" {
			return c.Reason
		}
	}
	if p.Status.Phase == corev1.PodRunning {
		return "not attached yet"
	}
	return string(p.Status.Phase)
}

func (o *StatusOptions) printTable(reports []Report) error {
	var rows []NodeStatus
	for _, r := range reports {
		rows = append(rows, r.Nodes...)
	}
	// By node, so a node two SchedExts want reads as one block.
	slices.SortStableFunc(rows, func(a, b NodeStatus) int { return strings.Compare(a.Node, b.Node) })
	if len(rows) > 0 {
		wide := o.Output == "wide"
		t := printing.NewTableWriter(o.Out, printing.GetStyle)
		if !o.NoHeaders {
			header := []string{"NODE", "SCHEDEXT", "STATE", "POD"}
			if wide {
				header = append(header, "REASON")
			}
			t.Header(header...)
		}
		for _, n := range rows {
			row := []string{n.Node, n.SchedExt, n.State, printing.OrNone(n.Pod)}
			if wide {
				row = append(row, printing.OrNone(n.Reason))
			}
			t.Row(row...)
		}
		if err := t.Render(); err != nil {
			return err
		}
		fmt.Fprintln(o.Out)
	}
	for _, r := range reports {
		fmt.Fprintln(o.Out, printing.Line(summary(r)))
	}
	return o.printWorkloads(reports)
}

// summary is one line per SchedExt: how many nodes have it attached, and
// how many workloads ask for its scheduler.
func summary(r Report) string {
	if r.SchedExt == "" {
		s := r.Scheduler + ": no SchedExt runs it"
		if n := r.NodesWithScheduler; n != nil && *n > 0 {
			s += fmt.Sprintf(", yet %d node(s) have it attached", *n)
		}
		return s + "; " + asks(len(r.Workloads))
	}
	total := r.Attached + r.Pending + r.Unsupported
	s := fmt.Sprintf("%s (%s): attached on %d of %d nodes", r.SchedExt, r.Scheduler, r.Attached, total)
	if total == 0 {
		s = fmt.Sprintf("%s (%s): on no nodes", r.SchedExt, r.Scheduler)
	}
	var more []string
	for _, c := range []struct {
		n    int
		what string
	}{{r.Pending, StatePending}, {r.Conflict, StateConflict}, {r.Unsupported, StateUnsupported}} {
		if c.n > 0 {
			more = append(more, fmt.Sprintf("%d %s", c.n, c.what))
		}
	}
	if len(more) > 0 {
		s += "; " + strings.Join(more, ", ")
	}
	if r.Ready != "" {
		s += " (" + printing.OneLine(r.Ready) + ")"
	}
	if len(r.Workloads) > 0 {
		s += "; " + asks(len(r.Workloads))
	}
	return s
}

func (o *StatusOptions) printStructured(reports []Report) error {
	var (
		b   []byte
		err error
	)
	if o.Output == "json" {
		b, err = json.MarshalIndent(reports, "", "  ")
		b = append(b, '\n')
	} else {
		b, err = yaml.Marshal(reports)
	}
	if err != nil {
		return err
	}
	// JSON and YAML let C1 and bidirectional controls through; in JSON
	// the escape Text writes for them is JSON's own.
	_, err = io.WriteString(o.Out, printing.Text(string(b)))
	return err
}

func firstLine(err error) string {
	s, _, _ := strings.Cut(err.Error(), "\n")
	return s
}

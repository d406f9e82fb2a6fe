package schedext

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
	"github.com/kubectl-sched/kubectl-sched/plugin/internal/cmdutil"
	"github.com/kubectl-sched/kubectl-sched/plugin/internal/kinds"
	"github.com/kubectl-sched/kubectl-sched/plugin/internal/printing"
)

// Workload is an app, task or workflow whose placement.cpuScheduler asks
// for a sched_ext scheduler: its pods run only on nodes labelled with it
// attached.
type Workload struct {
	Kind      string `json:"kind"`
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	// Steps are the steps of a workflow that ask for it.
	Steps        []string `json:"steps,omitempty"`
	Phase        string   `json:"phase,omitempty"`
	CPUScheduler string   `json:"cpuScheduler"`
}

// workloadKinds are the kinds whose placement may ask for a scheduler:
// what runs, not the templates a run is made from.
var workloadKinds = []kinds.Kind{kinds.UserDeployment, kinds.AgentTask, kinds.Workflow, kinds.CronWorkflow}

// workloads lists the UserDeployments, AgentTasks, Workflows and
// CronWorkflows that ask
// for a CPU scheduler, by scheduler: in every namespace unless -n names
// one. Where the user may not list a kind in every namespace, the current
// namespace's are shown; where not even there, none. Each says so on
// stderr, and the rest is shown.
func (o *StatusOptions) workloads(ctx context.Context) (map[string][]Workload, error) {
	out := map[string][]Workload{}
	for _, k := range workloadKinds {
		items, err := o.listKind(ctx, k)
		if err != nil {
			return nil, err
		}
		for _, w := range items {
			out[w.CPUScheduler] = append(out[w.CPUScheduler], w)
		}
	}
	for s := range out {
		slices.SortFunc(out[s], func(a, b Workload) int {
			return cmp.Or(strings.Compare(a.Namespace, b.Namespace), strings.Compare(a.Kind, b.Kind), strings.Compare(a.Name, b.Name))
		})
	}
	return out, nil
}

// listKind lists kind k in the namespaces status covers, falling back to
// the current namespace when every namespace is forbidden.
func (o *StatusOptions) listKind(ctx context.Context, k kinds.Kind) ([]Workload, error) {
	list := k.NewList()
	ns := ""
	if o.namespaceFlag && !o.AllNamespaces {
		ns = o.Clients.Namespace
	}
	err := o.Clients.Client.List(ctx, list, client.InNamespace(ns))
	if apierrors.IsForbidden(err) && ns == "" {
		everywhere := firstLine(cmdutil.API(err, "list", k.Resource()))
		ns = o.Clients.Namespace
		if err = o.Clients.Client.List(ctx, list, client.InNamespace(ns)); err == nil {
			fmt.Fprintf(o.ErrOut, "Warning: %s; showing the %s of namespace %s only.\n", printing.Line(everywhere), k.Plural, ns)
		}
	}
	switch {
	case apierrors.IsForbidden(err):
		fmt.Fprintf(o.ErrOut, "Warning: %s; workloads of that kind are not shown.\n", printing.Line(firstLine(cmdutil.API(err, "list", k.What(ns, "")))))
		return nil, nil
	case err != nil:
		return nil, cmdutil.API(err, "list", k.What(ns, ""))
	}
	return asking(list), nil
}

// asking are the objects of list that ask for a scheduler. A workflow's
// step tasks are left out: the workflow lists its steps.
func asking(list client.ObjectList) []Workload {
	var out []Workload
	switch l := list.(type) {
	case *schedv1.UserDeploymentList:
		for _, ud := range l.Items {
			if p := ud.Spec.Placement; p != nil && p.CPUScheduler != "" {
				out = append(out, Workload{Kind: "userdeployment", Namespace: ud.Namespace, Name: ud.Name, Phase: string(ud.Status.Phase), CPUScheduler: p.CPUScheduler})
			}
		}
	case *schedv1.AgentTaskList:
		for _, t := range l.Items {
			if _, step := t.Labels[schedv1.LabelWorkflow]; step {
				continue
			}
			if p := t.Spec.Placement; p != nil && p.CPUScheduler != "" {
				out = append(out, Workload{Kind: "agenttask", Namespace: t.Namespace, Name: t.Name, Phase: string(t.Status.Phase), CPUScheduler: p.CPUScheduler})
			}
		}
	case *schedv1.WorkflowList:
		for _, wf := range l.Items {
			out = append(out, stepsAsking("workflow", wf.Namespace, wf.Name, string(wf.Status.Phase), &wf.Spec)...)
		}
	case *schedv1.CronWorkflowList:
		for _, cw := range l.Items {
			out = append(out, stepsAsking("cronworkflow", cw.Namespace, cw.Name, "", &cw.Spec.WorkflowSpec)...)
		}
	}
	return out
}

// stepsAsking is one Workload per scheduler the steps (finally steps
// too) of spec ask for, naming those steps.
func stepsAsking(kind, namespace, name, phase string, spec *schedv1.WorkflowSpec) []Workload {
	var schedulers []string
	steps := map[string][]string{}
	for _, s := range slices.Concat(spec.Steps, spec.Finally) {
		if p := s.Task.Placement; p != nil && p.CPUScheduler != "" {
			if _, seen := steps[p.CPUScheduler]; !seen {
				schedulers = append(schedulers, p.CPUScheduler)
			}
			steps[p.CPUScheduler] = append(steps[p.CPUScheduler], s.Name)
		}
	}
	var out []Workload
	for _, s := range schedulers {
		out = append(out, Workload{Kind: kind, Namespace: namespace, Name: name, Steps: steps[s], Phase: phase, CPUScheduler: s})
	}
	return out
}

// nodesWithScheduler counts the nodes labelled with each attached
// scheduler; nil, with a warning, when nodes may not be listed.
func (o *StatusOptions) nodesWithScheduler(ctx context.Context) (map[string]int, error) {
	var nodes corev1.NodeList
	err := o.Clients.Client.List(ctx, &nodes, client.HasLabels{schedv1.NodeLabelCPUScheduler})
	if apierrors.IsForbidden(err) {
		fmt.Fprintf(o.ErrOut, "Warning: %s; how many nodes have each scheduler is unknown.\n", printing.Line(firstLine(cmdutil.API(err, "list", "nodes"))))
		return nil, nil
	}
	if err != nil {
		return nil, cmdutil.API(err, "list", "nodes")
	}
	out := map[string]int{}
	for _, n := range nodes.Items {
		out[n.Labels[schedv1.NodeLabelCPUScheduler]]++
	}
	return out, nil
}

// addWorkloads puts on each report the workloads asking for its scheduler
// and how many nodes have it, and, when every SchedExt is shown, adds a
// report for each scheduler asked for that no SchedExt runs.
// reports[i] is items[i]'s.
func addWorkloads(reports []Report, items []schedv1.SchedExt, byScheduler map[string][]Workload, nodes map[string]int, all bool) []Report {
	count := func(s string) *int {
		if nodes == nil {
			return nil
		}
		n := nodes[s]
		return &n
	}
	run := map[string]bool{}
	for i := range reports {
		// The value the SchedExt controller writes into the node label.
		s := items[i].Spec.Scheduler.CPUScheduler()
		if s == "" {
			continue
		}
		run[s] = true
		if w := byScheduler[s]; len(w) > 0 {
			reports[i].Workloads = w
			reports[i].NodesWithScheduler = count(s)
		}
	}
	if !all {
		return reports
	}
	var missing []string
	for s := range byScheduler {
		if !run[s] {
			missing = append(missing, s)
		}
	}
	slices.Sort(missing)
	for _, s := range missing {
		reports = append(reports, Report{Scheduler: s, Nodes: []NodeStatus{}, Workloads: byScheduler[s], NodesWithScheduler: count(s)})
	}
	return reports
}

// printWorkloads is the table of the workloads that ask for the reports'
// schedulers, each with how many nodes have its scheduler attached.
func (o *StatusOptions) printWorkloads(reports []Report) error {
	type row struct {
		w     Workload
		nodes string
	}
	var rows []row
	seen := map[string]bool{}
	for _, r := range reports {
		nodes := "?"
		if r.NodesWithScheduler != nil {
			nodes = strconv.Itoa(*r.NodesWithScheduler)
		}
		for _, w := range r.Workloads {
			key := w.CPUScheduler + "/" + w.Namespace + "/" + w.Kind + "/" + w.Name
			if !seen[key] {
				seen[key] = true
				rows = append(rows, row{w: w, nodes: nodes})
			}
		}
	}
	if len(rows) == 0 {
		return nil
	}
	slices.SortStableFunc(rows, func(a, b row) int { return strings.Compare(a.w.CPUScheduler, b.w.CPUScheduler) })
	fmt.Fprintln(o.Out)
	t := printing.NewTableWriter(o.Out, printing.GetStyle)
	if !o.NoHeaders {
		t.Header("WORKLOAD", "NAMESPACE", "CPU SCHEDULER", "PHASE", "NODES WITH IT")
	}
	for _, r := range rows {
		name := r.w.Kind + "/" + r.w.Name
		if len(r.w.Steps) == 1 {
			name += " (step " + r.w.Steps[0] + ")"
		} else if len(r.w.Steps) > 1 {
			name += " (steps " + strings.Join(r.w.Steps, ", ") + ")"
		}
		t.Row(name, r.w.Namespace, r.w.CPUScheduler, printing.OrNone(r.w.Phase), r.nodes)
	}
	return t.Render()
}

// asks is "1 workload asks for it" or "N workloads ask for it".
func asks(n int) string {
	if n == 1 {
		return "1 workload asks for it"
	}
	return strconv.Itoa(n) + " workloads ask for it"
}

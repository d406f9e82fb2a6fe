package placement

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubectl-sched/kubectl-sched/plugin/internal/cmdutil"
	"github.com/kubectl-sched/kubectl-sched/plugin/internal/kinds"
	"github.com/kubectl-sched/kubectl-sched/plugin/internal/kube"
	"github.com/kubectl-sched/kubectl-sched/plugin/internal/printing"
)

// ExplainOptions for `kubectl sched placement explain`.
type ExplainOptions struct {
	kube.ClientOptions

	File      string
	Output    string
	NoHeaders bool

	kind kinds.Kind
	name string
	step string
	// namespaceFlag is -n given on the command line, which an object of
	// -f must agree with.
	namespaceFlag bool
	podsWarned    bool
}

func newExplainCommand(c kube.ClientOptions) *cobra.Command {
	o := &ExplainOptions{ClientOptions: c}
	cmd := &cobra.Command{
		Use:   "explain (ud NAME | at NAME | wf NAME [STEP] | cwf NAME [STEP] | -f FILE)",
		Short: "Show the nodes each pod of an app, task or workflow may use, and why not the others",
		Long: `For each pod the object makes (each service of an app, the task's pod, each
step's task; for a CronWorkflow, each step's task in every run it starts), the
nodes it may use and, grouped by reason, why not the others:
not in a node pool it names or a pool reserved for others, a spot node (or not
one, for spot: Required), no GPU (or a GPU node for another workload), the
zone, the sched_ext CPU scheduler it asks for not attached, another taint
not tolerated, a node not Ready or cordoned. A ResourceQuota of the namespace
that would refuse its pods is named too, whatever the node.

The pod's node affinity and tolerations are the operator's own translation of
spec.placement (or, once the operator has made them, its Deployment's or Job's
pod template), evaluated as kube-scheduler's filters do. Room on each node
(CPU and memory left by other pods) is not checked. With -f FILE the object
need not exist; a live one shows where its pods run.

Up to 5 nodes are named per reason; -o wide lists every node, -o json|yaml
gives everything for scripts. Exits 0 when every pod has a node it may use,
13 when one has none (no node fits, or a quota refuses it).`,
		Example: `  # Where may the services of app shop run?
  kubectl sched placement explain ud shop

  # A task before it is created
  kubectl sched placement explain -f task.yaml

  # One step of a workflow, every node
  kubectl sched placement explain wf release build -o wide

  # The steps of the runs a CronWorkflow starts
  kubectl sched placement explain cwf nightly`,
		Args:              cmdutil.ArgsTaking(0, 3, "KIND NAME (ud, at, wf or cwf), wf or cwf NAME STEP, or nothing with -f"),
		ValidArgsFunction: o.complete,
		RunE:              cmdutil.RunE(o),
	}
	f := cmd.Flags()
	f.StringVarP(&o.File, "filename", "f", "", "A file (or - for stdin) with UserDeployments, AgentTasks, Workflows or CronWorkflows, explained before they are created.")
	f.StringVarP(&o.Output, "output", "o", "", "Output format: wide (every node), json or yaml.")
	f.BoolVar(&o.NoHeaders, "no-headers", false, "Print the table without its header.")
	return cmd
}

// Complete reads the arguments and builds the clients.
func (o *ExplainOptions) Complete(cmd *cobra.Command, args []string) error {
	if len(args) > 0 {
		kindArg := args[0]
		rest := args[1:]
		if k, n, ok := strings.Cut(kindArg, "/"); ok {
			kindArg, rest = k, append([]string{n}, rest...)
		}
		k, ok := kinds.Lookup(kindArg)
		if !ok || !explainable(k) {
			return cmdutil.Usage("Name ud, at, wf or cwf and an object, or give -f FILE.", "placement explain takes a UserDeployment (ud), AgentTask (at), Workflow (wf) or CronWorkflow (cwf), got %q", kindArg)
		}
		o.kind = k
		if len(rest) == 0 || rest[0] == "" {
			return cmdutil.Usage(fmt.Sprintf("'kubectl sched get %s' lists them.", k.Short), "placement explain %s needs the name of the %s", k.Short, k.Kind)
		}
		o.name = rest[0]
		if len(rest) > 1 {
			if !hasSteps(k) {
				return cmdutil.Usage("Only a workflow or a cronworkflow takes a STEP.", "placement explain %s takes one name, got %d arguments", k.Short, len(rest))
			}
			o.step = rest[1]
		}
		if len(rest) > 2 {
			return cmdutil.Usage(fmt.Sprintf("See '%s --help'.", cmd.CommandPath()), "placement explain %s takes a NAME and a STEP, got %d arguments", k.Short, len(rest))
		}
	}
	if f := cmd.Flag("namespace"); f != nil && f.Changed {
		o.namespaceFlag = true
	}
	return o.ClientOptions.Complete(cmd, args)
}

// explainable are the kinds that make pods.
func explainable(k kinds.Kind) bool {
	return k.Kind == kinds.UserDeployment.Kind || k.Kind == kinds.AgentTask.Kind || hasSteps(k)
}

// hasSteps are the kinds whose pods are steps' tasks: explain takes a STEP.
func hasSteps(k kinds.Kind) bool {
	return k.Kind == kinds.Workflow.Kind || k.Kind == kinds.CronWorkflow.Kind
}

// Validate checks that one object is named, and the output format.
func (o *ExplainOptions) Validate() error {
	switch {
	case o.File != "" && o.name != "":
		return cmdutil.Usage("Give either KIND NAME or -f FILE.", "placement explain takes an object or -f FILE, not both")
	case o.File == "" && o.name == "":
		return cmdutil.Usage("For example 'kubectl sched placement explain ud shop', or -f app.yaml.", "placement explain needs an object (ud, at, wf or cwf and a NAME) or -f FILE")
	}
	switch o.Output {
	case "", "wide", "json", "yaml":
		return nil
	}
	return cmdutil.Usage("Use -o wide, json or yaml.", "--output must be wide, json or yaml, got %q", o.Output)
}

// Run reads the objects, the nodes and the namespaces' quotas, judges
// every node for every pod, and prints.
func (o *ExplainOptions) Run(ctx context.Context) error {
	units, err := o.units(ctx)
	if err != nil {
		return err
	}
	var nodes corev1.NodeList
	if err := o.Clients.Client.List(ctx, &nodes); err != nil {
		return cmdutil.API(err, "list", "nodes")
	}
	limits := o.namespaceLimits(ctx, units)
	report := Build(units, nodes.Items, limits)
	if err := o.print(report); err != nil {
		return err
	}
	return report.Err()
}

// namespaceLimits reads the ResourceQuotas and LimitRanges of the
// namespaces the pods are in. What may not be read is left out, with a
// warning: the quota is then not checked.
func (o *ExplainOptions) namespaceLimits(ctx context.Context, units []Unit) map[string]Limits {
	out := map[string]Limits{}
	for _, u := range units {
		if _, done := out[u.Namespace]; done {
			continue
		}
		var l Limits
		var quotas corev1.ResourceQuotaList
		if err := o.Clients.Client.List(ctx, &quotas, client.InNamespace(u.Namespace)); err != nil {
			o.warn(err, "list", "resourcequotas in namespace "+u.Namespace, "quotas are not checked")
		} else {
			l.Quotas = quotas.Items
		}
		var ranges corev1.LimitRangeList
		if err := o.Clients.Client.List(ctx, &ranges, client.InNamespace(u.Namespace)); err != nil {
			o.warn(err, "list", "limitranges in namespace "+u.Namespace, "container defaults are not applied")
		} else {
			l.LimitRanges = ranges.Items
		}
		out[u.Namespace] = l
	}
	return out
}

// warn says on stderr what could not be read and what that leaves out.
func (o *ExplainOptions) warn(err error, verb, what, consequence string) {
	msg, _, _ := strings.Cut(cmdutil.API(err, verb, what).Error(), "\n")
	fmt.Fprintf(o.ErrOut, "Warning: %s; %s.\n", printing.Line(msg), consequence)
}

// completeTimeout bounds completion's requests: a shell must not hang.
const completeTimeout = 5 * time.Second

// complete completes the kind, then its names, then a workflow's (or a
// cronworkflow's) steps.
func (o *ExplainOptions) complete(_ *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
	switch len(args) {
	case 0:
		var out []cobra.Completion
		for _, k := range kinds.Kinds {
			if explainable(k) && strings.HasPrefix(k.Short, toComplete) {
				out = append(out, cobra.CompletionWithDesc(k.Short, k.Kind))
			}
		}
		return out, cobra.ShellCompDirectiveNoFileComp
	case 1:
		k, ok := kinds.Lookup(args[0])
		if !ok || !explainable(k) {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		return o.CompleteNames(k, 0)(nil, nil, toComplete)
	case 2:
		k, ok := kinds.Lookup(args[0])
		if !ok || !hasSteps(k) {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		c, err := o.NewClients(o.Flags)
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		if c, err = c.WithTimeout(completeTimeout); err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		obj := k.New()
		if err := c.Client.Get(context.Background(), client.ObjectKey{Namespace: c.Namespace, Name: args[1]}, obj); err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		var out []cobra.Completion
		for _, s := range workflowSpec(obj).Steps {
			if strings.HasPrefix(s.Name, toComplete) {
				out = append(out, s.Name)
			}
		}
		return out, cobra.ShellCompDirectiveNoFileComp
	}
	return nil, cobra.ShellCompDirectiveNoFileComp
}

// isGone is an object not there to read, or not ours to read: the spec
// speaks for it instead.
func isGone(err error) bool { return apierrors.IsNotFound(err) || apierrors.IsForbidden(err) }

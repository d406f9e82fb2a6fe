// Package cancel is the command behind `kubectl sched task cancel` and
// `workflow stop`: it sets spec.cancel, and the operator stops the object
// and ends it in phase Cancelled, keeping its record.
package cancel

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubectl-sched/kubectl-sched/plugin/internal/cmdutil"
	"github.com/kubectl-sched/kubectl-sched/plugin/internal/kinds"
	"github.com/kubectl-sched/kubectl-sched/plugin/internal/kube"
)

// Target is what differs between the kinds a cancel stops.
type Target struct {
	Kind kinds.Kind
	// Verb is the command's name and Done its past tense: cancel/cancelled.
	Verb, Done string
	// Phase reads the object's phase and whether it is final.
	Phase func(client.Object) (phase string, finished bool)
}

// Options for `task cancel` and `workflow stop`.
type Options struct {
	kube.NameOptions
	Target Target

	DryRun string
}

// NewCommand returns `task cancel` or `workflow stop`, as t says: it stops
// an AgentTask or a Workflow without deleting it.
func NewCommand(t Target, short, long, example string, c kube.ClientOptions) *cobra.Command {
	o := &Options{NameOptions: kube.Named(c), Target: t}
	cmd := &cobra.Command{
		Use:               t.Verb + " NAME",
		Short:             short,
		Long:              long,
		Example:           example,
		Args:              cmdutil.NameArg(t.Kind.Singular),
		ValidArgsFunction: o.CompleteNames(t.Kind, 1),
		RunE:              cmdutil.RunE(o),
	}
	cmdutil.AddDryRunFlag(cmd, &o.DryRun, `"server" has the API server check the change without making it; "client" only reads the object.`)
	return cmd
}

// Validate checks the flags.
func (o *Options) Validate() error { return cmdutil.ValidateDryRun(o.DryRun) }

// cancelPatch is all the command changes.
var cancelPatch = []byte(`{"spec":{"cancel":true}}`)

// Run sets spec.cancel, unless the object has already ended.
func (o *Options) Run(ctx context.Context) error {
	t, ns := o.Target, o.Clients.Namespace
	obj := t.Kind.New()
	if err := o.Clients.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: o.Name}, obj); err != nil {
		return cmdutil.API(err, "get", t.Kind.What(ns, o.Name))
	}
	ref := t.Kind.Qualified() + "/" + o.Name
	if phase, finished := t.Phase(obj); finished {
		fmt.Fprintf(o.Out, "%s already ended (%s): nothing to %s\n", ref, phase, t.Verb)
		return nil
	}
	if err := o.Clients.MergePatch(ctx, obj, cancelPatch, o.DryRun); err != nil {
		return cmdutil.API(err, "patch", t.Kind.What(ns, o.Name))
	}
	fmt.Fprintf(o.Out, "%s %s%s\n", ref, t.Done, cmdutil.DryRunSuffix(o.DryRun))
	if o.DryRun == "" {
		nsFlag := ""
		if o.Clients.ExplicitNamespace {
			nsFlag = " -n " + ns
		}
		fmt.Fprintf(o.Out, "It ends in phase Cancelled and keeps its record: kubectl sched describe %s %s%s\n", t.Kind.Short, o.Name, nsFlag)
	}
	return nil
}

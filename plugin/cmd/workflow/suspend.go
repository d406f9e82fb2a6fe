package workflow

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/types"

	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
	"github.com/kubectl-sched/kubectl-sched/plugin/internal/cmdutil"
	"github.com/kubectl-sched/kubectl-sched/plugin/internal/kube"
)

// SuspendOptions for `workflow suspend` and `workflow resume`.
type SuspendOptions struct {
	kube.NameOptions
	// Suspend is what spec.suspend is set to: true for suspend.
	Suspend bool

	DryRun string
}

func newSuspendCommand(c kube.ClientOptions) *cobra.Command {
	return newSuspendResumeCommand(c, true, "suspend",
		"Hold the start of a workflow's new steps; the running ones go on",
		`Suspend sets the workflow's spec.suspend: the steps that run go on, and no
other step starts (nor waits for approval, nor has its when evaluated) until
'kubectl sched workflow resume'. The workflow stays Running, with the
condition Suspended (and reason Suspended while nothing runs); its
spec.timeout keeps counting, so a workflow suspended past it times out.
Finally steps are held the same way.`,
		`  # Hold workflow nightly after its running step
  kubectl sched workflow suspend nightly`)
}

func newResumeCommand(c kube.ClientOptions) *cobra.Command {
	return newSuspendResumeCommand(c, false, "resume",
		"Let a suspended workflow start its steps again",
		`Resume unsets the workflow's spec.suspend: the steps whose turn came while it
was suspended start, and the condition Suspended becomes False (reason
Resumed).`,
		`  # Go on with workflow nightly
  kubectl sched workflow resume nightly`)
}

func newSuspendResumeCommand(c kube.ClientOptions, suspend bool, verb, short, long, example string) *cobra.Command {
	o := &SuspendOptions{NameOptions: kube.Named(c), Suspend: suspend}
	cmd := &cobra.Command{
		Use:               verb + " NAME",
		Short:             short,
		Long:              long,
		Example:           example,
		Args:              cmdutil.NameArg("workflow"),
		ValidArgsFunction: o.CompleteNames(workflowKind, 1),
		RunE:              cmdutil.RunE(o),
	}
	cmdutil.AddDryRunFlag(cmd, &o.DryRun, `"server" has the API server check the change without making it; "client" only reads the workflow.`)
	return cmd
}

// Validate checks the flags.
func (o *SuspendOptions) Validate() error { return cmdutil.ValidateDryRun(o.DryRun) }

// Run sets spec.suspend, unless the workflow has ended or already is so.
func (o *SuspendOptions) Run(ctx context.Context) error {
	c, ns := o.Clients, o.Clients.Namespace
	verb, done := "resume", "resumed"
	if o.Suspend {
		verb, done = "suspend", "suspended"
	}
	wf := &schedv1.Workflow{}
	if err := c.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: o.Name}, wf); err != nil {
		return cmdutil.API(err, "get", what(o.Name))
	}
	ref := fmt.Sprintf("workflow.%s/%s", schedv1.GroupName, o.Name)
	switch {
	case wf.Status.Phase.Finished():
		fmt.Fprintf(o.Out, "%s already ended (%s): nothing to %s\n", ref, wf.Status.Phase, verb)
		return nil
	case wf.Spec.Suspend == o.Suspend:
		state := "is not suspended"
		if o.Suspend {
			state = "is already suspended"
		}
		fmt.Fprintf(o.Out, "%s %s\n", ref, state)
		return nil
	}
	patch := []byte(fmt.Sprintf(`{"spec":{"suspend":%t}}`, o.Suspend))
	if err := c.MergePatch(ctx, wf, patch, o.DryRun); err != nil {
		return cmdutil.API(err, "patch", what(o.Name))
	}
	fmt.Fprintf(o.Out, "%s %s%s\n", ref, done, cmdutil.DryRunSuffix(o.DryRun))
	if o.DryRun != "" {
		return nil
	}
	if o.Suspend {
		fmt.Fprintf(o.Out, "Running steps go on; no other step starts until: kubectl sched workflow resume %s%s\n", o.Name, nsFlag(c))
	} else {
		fmt.Fprintf(o.Out, "Follow it: kubectl sched workflow watch %s%s\n", o.Name, nsFlag(c))
	}
	return nil
}

package workflow

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubectl-sched/kubectl-sched/api/names"
	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
	"github.com/kubectl-sched/kubectl-sched/plugin/internal/cmdutil"
	"github.com/kubectl-sched/kubectl-sched/plugin/internal/kube"
	"github.com/kubectl-sched/kubectl-sched/plugin/internal/printing"
	"github.com/kubectl-sched/kubectl-sched/plugin/internal/quota"
)

// TriggerOptions for `kubectl sched workflow trigger`.
type TriggerOptions struct {
	kube.NameOptions
	Print *printing.Flags

	watchFlags
	DryRun string
}

func newTriggerCommand(c kube.ClientOptions) *cobra.Command {
	o := &TriggerOptions{NameOptions: kube.Named(c), Print: printing.NewFlags()}
	cmd := &cobra.Command{
		Use:   "trigger NAME [--watch [--logs]]",
		Short: "Start one run of a CronWorkflow now, as kubectl create job --from=cronjob/NAME does",
		Long: `Start one run of the CronWorkflow NAME now, outside its schedule: a Workflow
named NAME-manual-<unix time> with the CronWorkflow's workflowSpec, owned by it
(deleted with it, and counted among its runs: its history limits apply, and
while it runs a Forbid schedule waits for it). It starts even while the
CronWorkflow is suspended, and leaves the schedule as it is. It is created as
you, so it needs the right to create Workflows. With --watch the command goes
on as 'kubectl sched workflow watch' and exits with the run's outcome.`,
		Example: `  # Run the nightly workflow now and watch it to the end
  kubectl sched workflow trigger nightly --watch

  # Have the API server check the run without creating it
  kubectl sched workflow trigger nightly --dry-run=server -o yaml`,
		Args:              cmdutil.NameArg("cronworkflow"),
		ValidArgsFunction: o.CompleteNames(cronKind, 1),
		RunE:              cmdutil.RunE(o),
	}
	f := cmd.Flags()
	o.addFlags(f, "Watch the run until it ends and exit with its outcome.")
	cmdutil.AddDryRunFlag(cmd, &o.DryRun, `"client" prints the run without sending it; "server" has the API server check it without creating it.`)
	f.StringVarP(o.Print.OutputFormat, "output", "o", "", "Output format: json, yaml, name, jsonpath=..., go-template=... (default: a line saying what was done).")
	return cmd
}

// Validate checks the flags.
func (o *TriggerOptions) Validate() error {
	if err := cmdutil.ValidateDryRun(o.DryRun); err != nil {
		return err
	}
	return o.validate(o.DryRun)
}

// Run creates the run and, with --watch, follows it.
func (o *TriggerOptions) Run(ctx context.Context) error {
	ns := o.Clients.Namespace
	cw := &schedv1.CronWorkflow{}
	if err := o.Clients.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: o.Name}, cw); err != nil {
		return cmdutil.API(err, "get", cronKind.What(ns, o.Name))
	}
	run := &schedv1.Workflow{
		ObjectMeta: metav1.ObjectMeta{
			Name: names.ManualCronRun(cw.Name, time.Now()), Namespace: ns,
			Annotations:     map[string]string{schedv1.AnnotationManualRun: "true"},
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(cw, cronKind.GVK())},
		},
		Spec: *cw.Spec.WorkflowSpec.DeepCopy(),
	}
	// Asked for by whoever triggers it, not by the CronWorkflow's writer.
	var err error
	if run.Spec.RequestedBy, err = requestedBy(ctx, o.Clients, &run.Spec); err != nil {
		return err
	}
	if err := o.Clients.Create(ctx, run, o.DryRun); err != nil {
		if apierrors.IsAlreadyExists(err) {
			return cmdutil.Errorf(cmdutil.ExitError, "Run the command again in a second: a manual run's name holds the second it was made.",
				"workflow %s already exists: a run of %s was triggered this second", run.Name, o.Name)
		}
		if qe := quota.Refused(ctx, o.Clients.Client, ns, err, time.Now()); qe != nil {
			return qe
		}
		return cmdutil.API(err, "create", what(run.Name))
	}
	run.SetGroupVersionKind(schedv1.GroupVersion.WithKind("Workflow"))
	if !o.Print.IsTable() {
		return o.Print.Print(run, o.Out)
	}
	fmt.Fprintf(o.Out, "workflow.%s/%s created%s: a run of cronworkflow %s, now\n", schedv1.GroupName, run.Name, cmdutil.DryRunSuffix(o.DryRun), o.Name)
	if o.DryRun != "" {
		return nil
	}
	if !o.Watch {
		nsFlag := ""
		if o.Clients.ExplicitNamespace {
			nsFlag = " -n " + ns
		}
		fmt.Fprintf(o.Out, "Watch it with: kubectl sched workflow watch %s%s\n", run.Name, nsFlag)
		return nil
	}
	return o.follow(ctx, o.Clients, o.Out, ns, run.Name)
}

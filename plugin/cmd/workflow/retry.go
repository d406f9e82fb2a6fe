package workflow

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
	"github.com/kubectl-sched/kubectl-sched/plugin/internal/cmdutil"
	"github.com/kubectl-sched/kubectl-sched/plugin/internal/kube"
	"github.com/kubectl-sched/kubectl-sched/plugin/internal/quota"
)

// AnnotationRetriedBy on a workflow names its retries, newest last.
const AnnotationRetriedBy = schedv1.GroupName + "/retried-by"

// RetryOptions for `workflow retry`.
type RetryOptions struct {
	kube.NameOptions
	From   string
	DryRun string
}

func newRetryCommand(c kube.ClientOptions) *cobra.Command {
	o := &RetryOptions{NameOptions: kube.Named(c)}
	cmd := &cobra.Command{
		Use:   "retry NAME [--from STEP]",
		Short: "Run a finished workflow again from its failed step, reusing the outputs before it",
		Long: `Retry creates a new attempt of a finished workflow, named NAME-retry-XXXXX,
with the same spec and spec.retryOf naming NAME: every step that
Succeeded is not run again but keeps its outputs, except the failed step
(or --from STEP) and the steps that depend on it, which run again, as do
the other steps that did not succeed. In a sequence that is every step from
there on; in a DAG a branch that succeeded keeps its outputs wherever it is
listed. Finally steps always run again. The earlier attempt is kept
and annotated with its retries, so both show in 'kubectl sched get wf'.`,
		Example: `  # Retry the nightly workflow from the step that failed, and watch it
  kubectl sched workflow retry nightly
  kubectl sched workflow watch nightly-retry-x7k2p

  # Run everything from the build step again
  kubectl sched workflow retry nightly --from build`,
		Args: cmdutil.NameArg("workflow"),
		RunE: cmdutil.RunE(o),
	}
	cmd.Flags().StringVar(&o.From, "from", "", "The first step to run again; the failed step when empty.")
	cmdutil.AddDryRunFlag(cmd, &o.DryRun, `"client" prints what would be created; "server" has the API server check it.`)
	return cmd
}

// Validate checks the flags.
func (o *RetryOptions) Validate() error { return cmdutil.ValidateDryRun(o.DryRun) }

// Run creates the new attempt.
func (o *RetryOptions) Run(ctx context.Context) error {
	c, ns := o.Clients, o.Clients.Namespace
	old := &schedv1.Workflow{}
	if err := c.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: o.Name}, old); err != nil {
		return cmdutil.API(err, "get", what(o.Name))
	}
	if !old.Status.Phase.Finished() {
		return cmdutil.Errorf(cmdutil.ExitError, fmt.Sprintf("Wait for it ('kubectl sched workflow watch %s'), or stop it first.", o.Name),
			"workflow %s has not finished (phase %s): there is nothing to retry yet", o.Name, orPending(old.Status.Phase))
	}
	from := o.From
	if from == "" {
		for _, s := range old.Status.Steps {
			if s.Phase != schedv1.StepSucceeded {
				from = s.Name
				break
			}
		}
		switch {
		case from == "" && old.Status.Phase == schedv1.WorkflowSucceeded:
			return cmdutil.Errorf(cmdutil.ExitError, "Give --from STEP to run it again from that step.", "workflow %s Succeeded: no step failed", o.Name)
		case from == "":
			// Only a finally step failed.
			return cmdutil.Errorf(cmdutil.ExitError, "Give --from STEP to run it again from that step; its finally steps always run again.",
				"every step of workflow %s succeeded (it ended %s, %s): no step to retry from", o.Name, old.Status.Phase, old.Status.Reason)
		}
	}
	var stepNames []string
	found := false
	for _, s := range old.Spec.Steps {
		stepNames = append(stepNames, s.Name)
		found = found || s.Name == from
	}
	if !found {
		return cmdutil.Usage("Its steps: "+strings.Join(stepNames, ", ")+".", "workflow %s has no step %q", o.Name, from)
	}
	next := &schedv1.Workflow{
		ObjectMeta: metav1.ObjectMeta{Name: generatedName(o.Name + "-retry"), Namespace: ns, Labels: old.Labels},
		Spec:       *old.Spec.DeepCopy(),
	}
	// A new attempt: no one decided on it yet (a step approved before
	// keeps its outputs as a step that succeeded), and it runs at once.
	next.Spec.Cancel, next.Spec.Suspend, next.Spec.Approvals = false, false, nil
	next.Spec.RetryOf = &schedv1.WorkflowRetry{Workflow: o.Name, FromStep: from}
	// This run is asked for by whoever retries, not by the earlier one's
	// requester.
	var err error
	if next.Spec.RequestedBy, err = requestedBy(ctx, c, &next.Spec); err != nil {
		return err
	}
	if err := c.Create(ctx, next, o.DryRun); err != nil {
		if apierrors.IsAlreadyExists(err) {
			return cmdutil.Errorf(cmdutil.ExitError, "Run the command again: the name has a random suffix.", "workflow %s already exists", next.Name)
		}
		if qe := quota.Refused(ctx, c.Client, ns, err, time.Now()); qe != nil {
			return qe
		}
		return cmdutil.API(err, "create", what(next.Name))
	}
	if o.DryRun == "" {
		retries := old.Annotations[AnnotationRetriedBy]
		if retries != "" {
			retries += ","
		}
		patch := client.MergeFrom(old.DeepCopy())
		if old.Annotations == nil {
			old.Annotations = map[string]string{}
		}
		old.Annotations[AnnotationRetriedBy] = retries + next.Name
		if err := c.Client.Patch(ctx, old, patch, client.FieldOwner(kube.FieldManager)); err != nil {
			return cmdutil.API(err, "patch", what(o.Name))
		}
	}
	nsFlag := ""
	if c.ExplicitNamespace {
		nsFlag = " -n " + ns
	}
	fmt.Fprintf(o.Out, "workflow.%s/%s created%s: a retry of %s from step %s\n", schedv1.GroupName, next.Name, cmdutil.DryRunSuffix(o.DryRun), o.Name, from)
	if o.DryRun == "" {
		fmt.Fprintf(o.Out, "Watch it with: kubectl sched workflow watch %s%s\n", next.Name, nsFlag)
	}
	return nil
}

func orPending(p schedv1.WorkflowPhase) string {
	if p == "" {
		return string(schedv1.WorkflowPending)
	}
	return string(p)
}

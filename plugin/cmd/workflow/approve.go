package workflow

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
	"github.com/kubectl-sched/kubectl-sched/plugin/internal/cmdutil"
	"github.com/kubectl-sched/kubectl-sched/plugin/internal/kube"
)

// DecideOptions for `workflow approve` and `workflow deny`.
type DecideOptions struct {
	kube.ClientOptions
	Decision schedv1.Decision

	Name, Step string
	Reason     string
	DryRun     string
}

const decideLong = `%s a step that waits for approval (phase WaitingForApproval, shown as
"Waiting for approval"). %s

The decision is recorded in the workflow's spec.approvals with your user
name as the API server knows it (the command asks it with a
SelfSubjectReview), and the cluster's kubectl-sched-workflow-approvals
admission policy refuses a decision under any other name: who decided is
recorded, not claimed. A decision cannot be changed or taken back. Anyone
who may update the workflow in its namespace may decide, unless the step
names its approvers (approval.approvers: users, groups): then only they
may. Where the cluster forbids approving one's own run, the user who asked
for it (spec.requestedBy) may deny it but not approve it.`

func newApproveCommand(c kube.ClientOptions) *cobra.Command {
	return newDecideCommand(c, schedv1.Approved, "approve",
		"Approve a step that waits for approval: it Succeeds and the steps after it run",
		fmt.Sprintf(decideLong, "Approve", "The step Succeeds, with your user name as its output approvedBy, and the steps that depend on it start."),
		`  # Let the deploy step of workflow release go on
  kubectl sched workflow approve release deploy

  # With a note, as a given user
  kubectl sched workflow approve release deploy --reason "change CHG-1234" --as alice`)
}

func newDenyCommand(c kube.ClientOptions) *cobra.Command {
	return newDecideCommand(c, schedv1.Denied, "deny",
		"Deny a step that waits for approval: it Fails (reason Denied) and the steps after it are skipped",
		fmt.Sprintf(decideLong, "Deny", "The step Fails with reason Denied and your --reason; the steps that depend on it are skipped and the workflow fails (its finally steps still run)."),
		`  # Stop workflow release at its deploy step
  kubectl sched workflow deny release deploy --reason "freeze until Monday"`)
}

func newDecideCommand(c kube.ClientOptions, d schedv1.Decision, verb, short, long, example string) *cobra.Command {
	o := &DecideOptions{ClientOptions: c, Decision: d}
	cmd := &cobra.Command{
		Use:               verb + " NAME STEP [--reason TEXT]",
		Short:             short,
		Long:              long,
		Example:           example,
		Args:              cmdutil.ArgsTaking(2, 2, "NAME STEP"),
		ValidArgsFunction: o.CompleteNames(workflowKind, 1),
		RunE:              cmdutil.RunE(o),
	}
	cmd.Flags().StringVar(&o.Reason, "reason", "", "Why, shown in the step's message (at most 1024 characters).")
	cmdutil.AddDryRunFlag(cmd, &o.DryRun, `"server" has the API server (and its admission policies) check the decision without recording it; "client" only reads the workflow.`)
	return cmd
}

// Complete reads the arguments and builds the clients.
func (o *DecideOptions) Complete(cmd *cobra.Command, args []string) error {
	o.Name, o.Step = args[0], args[1]
	return o.ClientOptions.Complete(cmd, args)
}

// Validate checks the flags.
func (o *DecideOptions) Validate() error {
	if len(o.Reason) > maxReason {
		return cmdutil.Usage("Shorten it.", "--reason has %d characters; at most %d are allowed", len(o.Reason), maxReason)
	}
	return cmdutil.ValidateDryRun(o.DryRun)
}

// maxReason is the CRD's bound on spec.approvals[].reason.
const maxReason = 1024

// Run records the decision, once the step waits for one.
func (o *DecideOptions) Run(ctx context.Context) error {
	c, ns := o.Clients, o.Clients.Namespace
	me, err := whoami(ctx, c)
	if err != nil {
		return err
	}
	user := me.Username
	verb := "approve"
	if o.Decision == schedv1.Denied {
		verb = "deny"
	}
	var wf *schedv1.Workflow
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		wf = &schedv1.Workflow{}
		if err := c.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: o.Name}, wf); err != nil {
			return cmdutil.API(err, "get", what(o.Name))
		}
		if err := o.check(wf, verb, me); err != nil {
			return err
		}
		if o.DryRun == "client" {
			return nil
		}
		// The whole list with the resourceVersion: a merge patch replaces
		// the list, so it must not drop a decision made meanwhile.
		patch := client.MergeFromWithOptions(wf.DeepCopy(), client.MergeFromWithOptimisticLock{})
		wf.Spec.Approvals = append(wf.Spec.Approvals, schedv1.StepDecision{Step: o.Step, Decision: o.Decision, User: user, Reason: o.Reason})
		return c.Client.Patch(ctx, wf, patch, kube.PatchOptions(o.DryRun)...)
	})
	if err != nil {
		return cmdutil.API(err, "patch", what(o.Name))
	}
	fmt.Fprintf(o.Out, "workflow.%s/%s step %s %s by %s%s\n", schedv1.GroupName, o.Name, o.Step, strings.ToLower(string(o.Decision)), user, cmdutil.DryRunSuffix(o.DryRun))
	if o.DryRun == "" {
		fmt.Fprintf(o.Out, "Follow it: kubectl sched workflow watch %s%s\n", o.Name, nsFlag(c))
	}
	return nil
}

// check refuses a decision the workflow cannot take: on a step that does
// not wait for approval, or not yet, or was decided, or a workflow that
// has ended, or by a user the step's approvers do not include.
func (o *DecideOptions) check(wf *schedv1.Workflow, verb string, me authenticationv1.UserInfo) error {
	var gates []string
	var gate *schedv1.StepApproval
	for _, s := range wf.Spec.Steps {
		if s.Approval != nil {
			gates = append(gates, s.Name)
			if s.Name == o.Step {
				gate = s.Approval
			}
		}
	}
	isGate := gate != nil
	listed := "It has no step that waits for approval."
	if len(gates) > 0 {
		listed = "Its steps that wait for approval: " + strings.Join(gates, ", ") + "."
	}
	switch {
	case !slices.ContainsFunc(wf.Spec.Steps, func(s schedv1.WorkflowStep) bool { return s.Name == o.Step }):
		return cmdutil.Usage(listed, "workflow %s has no step %q", o.Name, o.Step)
	case !isGate:
		return cmdutil.Usage(listed, "step %s of workflow %s runs a task; it does not wait for approval", o.Step, o.Name)
	}
	for _, d := range wf.Spec.Approvals {
		if d.Step == o.Step {
			return cmdutil.Errorf(cmdutil.ExitError, "A decision cannot be changed; stop the workflow with 'kubectl sched workflow stop "+o.Name+"' if it must not go on.",
				"step %s of workflow %s was already %s by %s", o.Step, o.Name, strings.ToLower(string(d.Decision)), d.User)
		}
	}
	if wf.Status.Phase.Finished() {
		return cmdutil.Errorf(cmdutil.ExitError, "", "workflow %s already ended (%s): nothing to %s", o.Name, wf.Status.Phase, verb)
	}
	if !gate.MayDecide(me.Username, me.Groups) {
		return cmdutil.Errorf(cmdutil.ExitForbidden, fmt.Sprintf("Ask one of them to run 'kubectl sched workflow %s %s %s'.", verb, o.Name, o.Step),
			"user %q may not %s step %s of workflow %s: only %s may (its approval.approvers)", me.Username, verb, o.Step, o.Name, gate.Approvers.Describe())
	}
	phase := schedv1.StepWaiting
	for _, s := range wf.Status.Steps {
		if s.Name == o.Step {
			phase = s.Phase
		}
	}
	if phase != schedv1.StepWaitingForApproval {
		return cmdutil.Errorf(cmdutil.ExitError, fmt.Sprintf("It waits for approval once the steps before it succeed; 'kubectl sched workflow watch %s' shows when.", o.Name),
			"step %s of workflow %s is not waiting for approval (phase %s)", o.Step, o.Name, phase)
	}
	return nil
}

// whoami is the user the API server authenticates the command as, with
// their groups.
func whoami(ctx context.Context, c *kube.Clients) (authenticationv1.UserInfo, error) {
	r, err := c.Kube.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		return authenticationv1.UserInfo{}, cmdutil.API(err, "create", "selfsubjectreviews.authentication.k8s.io (who you are, which the workflow records)")
	}
	if r.Status.UserInfo.Username == "" {
		return authenticationv1.UserInfo{}, cmdutil.Errorf(cmdutil.ExitError, "Use a kubeconfig with a named user.", "the API server knows no user name for you, and a workflow records who decides on its approvals and who asks for a run that has one")
	}
	return r.Status.UserInfo, nil
}

// requestedBy is what a workflow made from spec records as spec.requestedBy:
// the user the command runs as when spec has an approval step (asked of
// the API server), "" otherwise, so a copied spec never names someone else.
func requestedBy(ctx context.Context, c *kube.Clients, spec *schedv1.WorkflowSpec) (string, error) {
	if !spec.HasApproval() {
		return "", nil
	}
	me, err := whoami(ctx, c)
	return me.Username, err
}

// nsFlag is " -n NS" when -n was given, for the commands printed next.
func nsFlag(c *kube.Clients) string {
	if c.ExplicitNamespace {
		return " -n " + c.Namespace
	}
	return ""
}

package revisions

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubectl-sched/kubectl-sched/api/revision"
	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
	"github.com/kubectl-sched/kubectl-sched/plugin/internal/appwait"
	"github.com/kubectl-sched/kubectl-sched/plugin/internal/cmdutil"
	"github.com/kubectl-sched/kubectl-sched/plugin/internal/kube"
	"github.com/kubectl-sched/kubectl-sched/plugin/internal/printing"
)

// RollbackOptions for `kubectl sched rollback`.
type RollbackOptions struct {
	kube.NameOptions

	ToRevision int64
	DryRun     string
	Wait       bool
	Timeout    time.Duration
}

// NewRollbackCommand returns `kubectl sched rollback`.
func NewRollbackCommand(c kube.ClientOptions) *cobra.Command {
	o := &RollbackOptions{NameOptions: kube.Named(c), Timeout: 5 * time.Minute}
	cmd := &cobra.Command{
		Use:   "rollback NAME",
		Short: "Roll an app back to an earlier revision, as a new revision",
		Long: `Rollback restores what an earlier revision of a UserDeployment ran (see
'kubectl sched history'): by default the revision before the spec's, or
--to-revision N. Like 'kubectl rollout undo', it changes the spec, so the
operator rolls the pods and records the result as a new revision; the
history keeps the revisions in between.

It restores the pods' template: for each service the app and the revision
both have, its image, command, args, env, ports, resources, probes, pod
metadata, security context, service account and image pull secrets; and the
app's config, secret references and placement. Replicas, exposure, ingress,
volumes, state and the app's other settings stay as they are, as do
services added since the revision; services removed since are not added
back. A revision does not hold secret values (a Secret does): they stay.

The change is one server-side apply as field manager kubectl-sched, which
keeps every field kubectl-sched set before; of the fields it changes, what
other managers set (with kubectl edit, say) kubectl-sched first takes over
in the app's managed fields, so the apply can remove what the revision
lacks. With --wait it follows the app until it is Running (exit 0), Degraded
or rolled back by the operator (exit 10), or --timeout passes (exit 12).`,
		Example: `  # Undo the last change to app shop's pods, and wait until it runs
  kubectl sched rollback shop --wait

  # Go back to revision 3, as 'kubectl sched history shop' lists it
  kubectl sched rollback shop --to-revision 3

  # What would change, checked by the API server, without changing it
  kubectl sched rollback shop --dry-run=server`,
		Args:              cmdutil.NameArg(udKind.Singular),
		ValidArgsFunction: o.CompleteNames(udKind, 1),
		RunE:              cmdutil.RunE(o),
	}
	f := cmd.Flags()
	f.Int64Var(&o.ToRevision, "to-revision", 0, "The revision to restore; the one before the spec's when 0.")
	cmdutil.AddDryRunFlag(cmd, &o.DryRun, `"server" has the API server check the change without making it; "client" only reads the app and its revisions.`)
	cmdutil.AddWaitFlags(cmd, &o.Wait, "Follow the app until it is Running (exit 0) or Degraded (exit 10).", &o.Timeout, "")
	return cmd
}

// Validate checks the flags.
func (o *RollbackOptions) Validate() error {
	if err := cmdutil.ValidateDryRun(o.DryRun); err != nil {
		return err
	}
	if err := cmdutil.ValidateWait(o.Wait, o.Timeout, o.DryRun); err != nil {
		return err
	}
	if o.ToRevision < 0 {
		return cmdutil.Usage("Give a revision number that kubectl sched history lists.", "--to-revision must be positive, got %d", o.ToRevision)
	}
	return nil
}

// Run restores the revision and, with --wait, follows the app.
func (o *RollbackOptions) Run(ctx context.Context) error {
	c, ns := o.Clients.Client, o.Clients.Namespace
	h, err := load(ctx, c, ns, o.Name)
	if err != nil {
		return err
	}
	for _, why := range h.ignored {
		fmt.Fprintf(o.ErrOut, "Warning: ignored ControllerRevision %s\n", printing.Line(why))
	}
	target, err := o.target(h)
	if err != nil {
		return err
	}
	ref := udKind.Qualified() + "/" + o.Name
	live := revision.Of(h.ud)
	if revision.Equal(target.template, live) {
		fmt.Fprintf(o.Out, "%s already runs what revision %d ran: nothing to do\n", ref, target.cr.Revision)
		if target.template.SecretHash() != live.SecretHash() {
			fmt.Fprintln(o.Out, "  (only the secrets' values differ, and a revision does not hold them)")
		}
		return o.wait(ctx, h.ud)
	}
	spec, notes := revision.Restore(h.ud.Spec, target.template)
	after := h.ud.DeepCopy()
	after.Spec = spec
	change := revision.Summary(&live, revision.Of(after))

	if o.DryRun != "client" {
		if after, err = o.restore(ctx, h.ud, spec, target.cr.Revision); err != nil {
			return err
		}
	}
	fmt.Fprintf(o.Out, "%s rolled back to revision %d%s: %s\n", ref, target.cr.Revision, cmdutil.DryRunSuffix(o.DryRun), printing.Line(change))
	for _, s := range notes.Kept {
		fmt.Fprintf(o.Out, "  service %s is not in revision %d: left as it is\n", s, target.cr.Revision)
	}
	for _, s := range notes.NotRestored {
		fmt.Fprintf(o.Out, "  service %s of revision %d is no longer in the app: not added back\n", s, target.cr.Revision)
	}
	if target.template.SecretHash() != live.SecretHash() {
		fmt.Fprintln(o.Out, "  the secrets' values stay as they are: a revision does not hold them (kubectl sched deploy --secret sets them)")
	}
	return o.wait(ctx, after)
}

// target is the revision to restore: --to-revision, or the newest before
// the spec's that ran something else.
func (o *RollbackOptions) target(h *appHistory) (*entry, error) {
	hint := fmt.Sprintf("'kubectl sched history %s%s' lists them.", o.Name, nsFlag(o.Clients.ExplicitNamespace, o.Clients.Namespace))
	if o.ToRevision > 0 {
		e := h.find(o.ToRevision)
		if e == nil {
			return nil, cmdutil.Errorf(cmdutil.ExitNotFound, fmt.Sprintf("Its revisions: %s; %s", h.numbers(), hint),
				"userdeployment %q has no revision %d", o.Name, o.ToRevision)
		}
		return e, nil
	}
	live := revision.Of(h.ud)
	before := revision.MaxNumber + 1
	if cur := h.current(); cur != nil {
		before = cur.cr.Revision
	}
	for i := len(h.entries) - 1; i >= 0; i-- {
		if e := &h.entries[i]; e.cr.Revision < before && !revision.Equal(e.template, live) {
			return e, nil
		}
	}
	return nil, cmdutil.Errorf(cmdutil.ExitNotFound, hint,
		"userdeployment %q has no earlier revision to roll back to (its revisions: %s)", o.Name, h.numbers())
}

// restore gives ud spec, revision n restored into it, with one
// server-side apply as kubectl-sched, after taking over what other field
// managers own of the fields it changes (apply.go); it returns the app as
// the API server has it after.
func (o *RollbackOptions) restore(ctx context.Context, ud *schedv1.UserDeployment, spec schedv1.UserDeploymentSpec, n int64) (*schedv1.UserDeployment, error) {
	c := o.Clients.Client
	what := udKind.What(ud.Namespace, ud.Name)
	changed := changedFields(ud.Spec, spec)
	managed, from, err := takeOver(ud.ManagedFields, changed, time.Now())
	if err != nil {
		return nil, err
	}
	changedMeanwhile := func() error {
		return cmdutil.Errorf(cmdutil.ExitError, "Run the rollback again: it starts from the app as it is then.",
			"userdeployment %q changed while it was being rolled back; its spec was not changed", ud.Name)
	}
	if managed != nil {
		fmt.Fprintf(o.ErrOut, "Other field managers set %s: kubectl-sched takes %s over, so that the rollback sets %s to revision %d's.\n",
			joinAnd(from), pronoun(len(from)), pronoun(len(from)), n)
		ud = ud.DeepCopy()
		if o.DryRun == "" {
			// The managed fields alone: no spec changes, no revision.
			patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"managedFields": managed, "resourceVersion": ud.ResourceVersion}})
			if err != nil {
				return nil, err
			}
			u := &unstructured.Unstructured{}
			u.SetGroupVersionKind(schedv1.GroupVersion.WithKind("UserDeployment"))
			u.SetNamespace(ud.Namespace)
			u.SetName(ud.Name)
			if err := c.Patch(ctx, u, client.RawPatch(types.MergePatchType, patch), client.FieldOwner(kube.FieldManager)); err != nil {
				if apierrors.IsConflict(err) {
					return nil, changedMeanwhile()
				}
				return nil, cmdutil.API(err, "patch", what)
			}
			ud.ResourceVersion = u.GetResourceVersion()
		}
		ud.ManagedFields = managed
	}
	body, err := applyBody(ud, spec, changed)
	if err != nil {
		return nil, err
	}
	if err := c.Patch(ctx, body, client.Apply, kube.PatchOptions(o.DryRun, client.ForceOwnership)...); err != nil {
		if apierrors.IsConflict(err) {
			return nil, changedMeanwhile()
		}
		return nil, cmdutil.API(err, "apply", what)
	}
	got := &schedv1.UserDeployment{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(body.Object, got); err != nil {
		return nil, err
	}
	if o.DryRun == "" && !revision.Equal(revision.Of(got), revision.Of(&schedv1.UserDeployment{Spec: spec})) {
		fmt.Fprintf(o.ErrOut, "Warning: the app's template is not revision %d's after the apply: 'kubectl sched history %s --revision %d' shows it, 'kubectl get ud %s -o yaml' the app\n",
			n, ud.Name, n, ud.Name)
	}
	return got, nil
}

func pronoun(n int) string {
	if n == 1 {
		return "it"
	}
	return "them"
}

// wait follows the app with --wait.
func (o *RollbackOptions) wait(ctx context.Context, ud *schedv1.UserDeployment) error {
	if !o.Wait {
		return nil
	}
	return appwait.Wait(ctx, o.Clients.Client, ud, o.Timeout, o.Out, nsFlag(o.Clients.ExplicitNamespace, o.Clients.Namespace))
}

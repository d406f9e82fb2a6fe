// Package tenant implements `kubectl sched tenant create|list|delete`: a
// team's namespace with its tier (the operator keeps its ResourceQuota and
// LimitRange in line with the tier), Pod Security "restricted" enforced,
// and the team's users and groups bound to kubectl-sched-tenant there.
package tenant

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/controller-runtime/pkg/client"

	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
	"github.com/kubectl-sched/kubectl-sched/plugin/internal/cmdutil"
	"github.com/kubectl-sched/kubectl-sched/plugin/internal/kube"
)

// NewCommand returns `kubectl sched tenant`.
func NewCommand(c kube.ClientOptions) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "tenant",
		Short: "Create, list, describe and delete team namespaces with limits by tier",
		Long: `A tenant is a namespace for one team: labelled with its tier, with Pod
Security "restricted" enforced, and its members (--user, --group) bound to
the ClusterRole kubectl-sched-tenant there: every command of the plugin in
that namespace, and nothing else. The operator gives it the ResourceQuota
and LimitRange the tier defines in the ConfigMap kubectl-sched-tiers (free,
team and enterprise as installed) and repairs edits to them; admission
holds the namespace's workloads to the tier's highest priority, node pools
and tolerations, and their ttlAfterFinished to the tier's maximum. Finished
tasks and workflows without a ttlAfterFinished are deleted after the tier's
default: they count against the quota until then. Creating and deleting
tenants takes a cluster admin; a member's 'tenant list' and 'tenant
describe' show their own namespace.`,
		Example: `  # A namespace for team payments, on the team tier
  kubectl sched tenant create payments --tier team --group payments-devs

  # The tenants and how much of their quota they use
  kubectl sched tenant list

  # A tenant's members, limits, and the runs that count against its quota
  kubectl sched tenant describe payments`,
	}
	cmd.AddCommand(newCreateCommand(c), newListCommand(c), newDescribeCommand(c), newDeleteCommand(c))
	return cmd
}

// CreateOptions for `tenant create`.
type CreateOptions struct {
	kube.NameOptions
	Tier          string
	Users, Groups []string
	// OperatorNamespace holds the tiers ConfigMap.
	OperatorNamespace string
	DryRun            string
	// Wait for the namespace to be usable: its tier quota made and
	// counted (wait.go), for at most Timeout.
	Wait    bool
	Timeout time.Duration
}

func newCreateCommand(c kube.ClientOptions) *cobra.Command {
	o := &CreateOptions{NameOptions: kube.Named(c), Wait: true, Timeout: 2 * time.Minute}
	cmd := &cobra.Command{
		Use:   "create NAME --tier TIER [--user USER]... [--group GROUP]...",
		Short: "Create a tenant namespace of a tier, and wait until it is usable",
		Long: `Create (or update) the tenant namespace NAME of tier TIER, bind its
members, --user and --group, to the ClusterRole kubectl-sched-tenant there
(what every command of the plugin needs in the namespace, and nothing else),
then wait until it is usable: the operator has made the tier's
ResourceQuota and the cluster's quota controller counts everything it
limits. Until then the API server refuses creates of the kinds it has not
counted ("status unknown for quota"); right after 'kubectl sched install'
that takes up to a minute, while the quota controller finds the new kinds.

Run it again to change the tier or the members: --user and --group name
every member (the list is replaced); without them the members stay. A tenant
made by an earlier version (its members bound to kubectl-sched-edit only,
which cannot read pods, logs or events) gets the new binding when create is
run again on it, with or without --user.`,
		Example: `  # A namespace for team payments on the free tier, alice its member
  kubectl sched tenant create payments --tier free --user alice

  # Add bob: name every member
  kubectl sched tenant create payments --tier free --user alice --user bob`,
		Args: nameArg,
		RunE: cmdutil.RunE(o),
	}
	f := cmd.Flags()
	f.StringVar(&o.Tier, "tier", "", "The tier: a key of the ConfigMap kubectl-sched-tiers (free, team, enterprise as installed).")
	f.StringArrayVar(&o.Users, "user", nil, "A member: a user who may use every command of the plugin in the namespace (repeatable; with --group, the whole list).")
	f.StringArrayVar(&o.Groups, "group", nil, "A group whose users are members (repeatable).")
	f.StringVar(&o.OperatorNamespace, "operator-namespace", schedv1.DefaultOperatorNamespace, "The namespace kubectl sched install put the operator and its tiers in.")
	cmdutil.AddDryRunFlag(cmd, &o.DryRun, `"server" has the API server check the objects without creating them; "client" sends nothing.`)
	cmdutil.AddWaitFlags(cmd, &o.Wait, "Wait until the namespace is usable (its quota made and counted); --wait=false returns once it is created.", &o.Timeout, "")
	return cmd
}

var nameArg = cmdutil.NameArg("tenant")

// Validate checks the flags.
func (o *CreateOptions) Validate() error {
	if errs := validation.IsDNS1123Label(o.Name); len(errs) > 0 {
		return cmdutil.Usage("A tenant is a namespace: lower-case letters, digits and '-'.", "tenant name %q is not a namespace name: %s", o.Name, strings.Join(errs, "; "))
	}
	if o.Tier == "" {
		return cmdutil.Usage("'kubectl sched tenant create NAME --tier team', say.", "--tier is required")
	}
	if err := cmdutil.ValidateTimeout(o.Timeout); err != nil {
		return err
	}
	return cmdutil.ValidateDryRun(o.DryRun)
}

// Run checks the tier exists, then applies the namespace and the binding.
func (o *CreateOptions) Run(ctx context.Context) error {
	c := o.Clients
	cm := &corev1.ConfigMap{}
	if err := c.Client.Get(ctx, types.NamespacedName{Namespace: o.OperatorNamespace, Name: schedv1.TiersConfigMap}, cm); err != nil {
		if apierrors.IsNotFound(err) {
			return cmdutil.Errorf(cmdutil.ExitNotInstalled, "Run 'kubectl sched install', or give --operator-namespace.",
				"no tiers are defined: ConfigMap %s/%s does not exist", o.OperatorNamespace, schedv1.TiersConfigMap)
		}
		return cmdutil.API(err, "get", fmt.Sprintf("configmaps %q", schedv1.TiersConfigMap))
	}
	tiers := make([]string, 0, len(cm.Data))
	for k := range cm.Data {
		tiers = append(tiers, k)
	}
	slices.Sort(tiers)
	if !slices.Contains(tiers, o.Tier) {
		return cmdutil.Usage("Tiers: "+strings.Join(tiers, ", ")+".", "no tier %q in ConfigMap %s/%s", o.Tier, o.OperatorNamespace, schedv1.TiersConfigMap)
	}
	ns := &corev1.Namespace{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"},
		ObjectMeta: metav1.ObjectMeta{Name: o.Name, Labels: map[string]string{
			schedv1.LabelTier:                    o.Tier,
			"pod-security.kubernetes.io/enforce": "restricted",
			"pod-security.kubernetes.io/warn":    "restricted",
			"app.kubernetes.io/part-of":          "kubectl-sched",
		}},
	}
	if err := c.Apply(ctx, ns, o.DryRun); err != nil {
		return cmdutil.API(err, "create", fmt.Sprintf("namespaces %q", o.Name))
	}
	fmt.Fprintf(o.Out, "namespace/%s applied (tier %s, Pod Security restricted)%s\n", o.Name, o.Tier, cmdutil.DryRunSuffix(o.DryRun))
	if o.DryRun == "server" {
		// The namespace does not exist in a server dry run: nothing to bind in.
		return nil
	}
	if err := o.bindMembers(ctx); err != nil {
		return err
	}
	return o.wait(ctx)
}

// wait waits, unless told not to or in a dry run, until the namespace is
// usable.
func (o *CreateOptions) wait(ctx context.Context) error {
	if !o.Wait || o.DryRun != "" {
		return nil
	}
	return waitUsable(ctx, o.Clients.Client, o.Out, o.Name, o.Tier, o.OperatorNamespace, o.Timeout)
}

// DeleteOptions for `tenant delete`.
type DeleteOptions struct {
	kube.NameOptions
	DryRun string
}

func newDeleteCommand(c kube.ClientOptions) *cobra.Command {
	o := &DeleteOptions{NameOptions: kube.Named(c)}
	cmd := &cobra.Command{
		Use:   "delete NAME",
		Short: "Delete a tenant namespace and everything in it",
		Args:  nameArg,
		RunE:  cmdutil.RunE(o),
	}
	cmdutil.AddDryRunFlag(cmd, &o.DryRun, `"server" has the API server check the delete without doing it; "client" only reads the namespace.`)
	return cmd
}

// Validate checks the flags.
func (o *DeleteOptions) Validate() error { return cmdutil.ValidateDryRun(o.DryRun) }

// Run deletes the namespace, only if it is a tenant's.
func (o *DeleteOptions) Run(ctx context.Context) error {
	c := o.Clients
	ns := &corev1.Namespace{}
	if err := c.Client.Get(ctx, types.NamespacedName{Name: o.Name}, ns); err != nil {
		return cmdutil.API(err, "get", fmt.Sprintf("namespaces %q", o.Name))
	}
	if ns.Labels[schedv1.LabelTier] == "" {
		return cmdutil.Errorf(cmdutil.ExitError, "Delete it with 'kubectl delete namespace "+o.Name+"' if that is what you mean.",
			"namespace %s is not a tenant (it has no %s label); nothing was deleted", o.Name, schedv1.LabelTier)
	}
	if o.DryRun != "client" {
		var opts []client.DeleteOption
		if o.DryRun == "server" {
			opts = append(opts, client.DryRunAll)
		}
		if err := c.Client.Delete(ctx, ns, opts...); err != nil {
			return cmdutil.API(err, "delete", fmt.Sprintf("namespaces %q", o.Name))
		}
	}
	fmt.Fprintf(o.Out, "namespace/%s deleted (tier %s)%s\n", o.Name, ns.Labels[schedv1.LabelTier], cmdutil.DryRunSuffix(o.DryRun))
	return nil
}

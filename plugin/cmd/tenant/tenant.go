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
	"k8s.io/apimachinery/pkg/util/duration"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"sigs.k8s.io/controller-runtime/pkg/client"

	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
	"github.com/kubectl-sched/kubectl-sched/plugin/internal/cmdutil"
	"github.com/kubectl-sched/kubectl-sched/plugin/internal/kube"
	"github.com/kubectl-sched/kubectl-sched/plugin/internal/printing"
)

// NewCommand returns `kubectl sched tenant`.
func NewCommand(flags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "tenant",
		Short: "Create, list and delete team namespaces with limits by tier",
		Long: `A tenant is a namespace for one team: labelled with its tier, with Pod
Security "restricted" enforced, and its members (--user, --group) bound to
the ClusterRole kubectl-sched-tenant there: every command of the plugin in
that namespace, and nothing else. The operator gives it the ResourceQuota
and LimitRange the tier defines in the ConfigMap kubectl-sched-tiers (free,
team and enterprise as installed) and repairs edits to them; admission
holds the namespace's workloads to the tier's highest priority, node pools
and tolerations.
Creating and deleting tenants takes a cluster admin; a member's 'tenant
list' shows their own namespace.`,
		Example: `  # A namespace for team payments, on the team tier
  kubectl sched tenant create payments --tier team --group payments-devs

  # The tenants and how much of their quota they use
  kubectl sched tenant list`,
	}
	cmd.AddCommand(newCreateCommand(flags, streams), newListCommand(flags, streams), newDeleteCommand(flags, streams))
	return cmd
}

// CreateOptions for `tenant create`.
type CreateOptions struct {
	Flags *genericclioptions.ConfigFlags
	genericiooptions.IOStreams
	Name, Tier    string
	Users, Groups []string
	// OperatorNamespace holds the tiers ConfigMap.
	OperatorNamespace string
	DryRun            string

	NewClients kube.Getter
	clients    *kube.Clients
}

func newCreateCommand(flags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *cobra.Command {
	o := &CreateOptions{Flags: flags, IOStreams: streams, NewClients: kube.New}
	cmd := &cobra.Command{
		Use:   "create NAME --tier TIER [--user USER]... [--group GROUP]...",
		Short: "Create a tenant namespace of a tier, or update one",
		Long: `Create (or update) the tenant namespace NAME of tier TIER and bind its
members, --user and --group, to the ClusterRole kubectl-sched-tenant there:
what every command of the plugin needs in the namespace, and nothing else.

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
	f.StringVar(&o.DryRun, "dry-run", "", `"server" has the API server check the objects without creating them; "client" sends nothing.`)
	f.Lookup("dry-run").NoOptDefVal = "client"
	return cmd
}

func nameArg(cmd *cobra.Command, args []string) error {
	if len(args) != 1 {
		return cmdutil.Usage(fmt.Sprintf("See '%s --help'.", cmd.CommandPath()), "%s takes one tenant name, got %d arguments", cmd.CommandPath(), len(args))
	}
	return nil
}

// Complete builds the clients.
func (o *CreateOptions) Complete(_ *cobra.Command, args []string) error {
	o.Name = args[0]
	var err error
	o.clients, err = o.NewClients(o.Flags)
	return err
}

// Validate checks the flags.
func (o *CreateOptions) Validate() error {
	if errs := validation.IsDNS1123Label(o.Name); len(errs) > 0 {
		return cmdutil.Usage("A tenant is a namespace: lower-case letters, digits and '-'.", "tenant name %q is not a namespace name: %s", o.Name, strings.Join(errs, "; "))
	}
	if o.Tier == "" {
		return cmdutil.Usage("'kubectl sched tenant create NAME --tier team', say.", "--tier is required")
	}
	return cmdutil.ValidateDryRun(o.DryRun)
}

// Run checks the tier exists, then applies the namespace and the binding.
func (o *CreateOptions) Run(ctx context.Context) error {
	c := o.clients
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
	return o.bindMembers(ctx)
}

// ListOptions for `tenant list`.
type ListOptions struct {
	Flags *genericclioptions.ConfigFlags
	genericiooptions.IOStreams
	Now        func() time.Time
	NewClients kube.Getter
}

func newListCommand(flags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *cobra.Command {
	o := &ListOptions{Flags: flags, IOStreams: streams, Now: time.Now, NewClients: kube.New}
	return &cobra.Command{
		Use:   "list",
		Short: "List the tenants, their tiers and how much of their quota they use",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := o.NewClients(o.Flags)
			if err != nil {
				return err
			}
			return o.Run(cmd.Context(), c)
		},
	}
}

// Run prints one row per tenant namespace.
func (o *ListOptions) Run(ctx context.Context, c *kube.Clients) error {
	namespaces, err := o.tenantNamespaces(ctx, c)
	if err != nil {
		return err
	}
	if len(namespaces) == 0 {
		fmt.Fprintln(o.ErrOut, "No tenants found.")
		return nil
	}
	w := printing.NewTableWriter(o.Out, printing.GetStyle)
	w.Header("NAME", "TIER", "PODS", "CPU REQUESTS", "MEMORY REQUESTS", "AGE")
	for _, ns := range namespaces {
		q := &corev1.ResourceQuota{}
		pods, cpu, mem := "-", "-", "-"
		if err := c.Client.Get(ctx, types.NamespacedName{Namespace: ns.Name, Name: schedv1.TierObjectName}, q); err == nil {
			pods, cpu, mem = usage(q, corev1.ResourcePods), usage(q, corev1.ResourceRequestsCPU), usage(q, corev1.ResourceRequestsMemory)
		}
		age := duration.HumanDuration(o.Now().Sub(ns.CreationTimestamp.Time))
		w.Row(ns.Name, ns.Labels[schedv1.LabelTier], pods, cpu, mem, age)
	}
	return w.Render()
}

// usage is "used/hard" of one resource of a quota, "-" when it has none.
func usage(q *corev1.ResourceQuota, name corev1.ResourceName) string {
	hard, ok := q.Status.Hard[name]
	if !ok {
		return "-"
	}
	used := q.Status.Used[name]
	return used.String() + "/" + hard.String()
}

// DeleteOptions for `tenant delete`.
type DeleteOptions struct {
	Flags *genericclioptions.ConfigFlags
	genericiooptions.IOStreams
	Name       string
	DryRun     string
	NewClients kube.Getter
}

func newDeleteCommand(flags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *cobra.Command {
	o := &DeleteOptions{Flags: flags, IOStreams: streams, NewClients: kube.New}
	cmd := &cobra.Command{
		Use:   "delete NAME",
		Short: "Delete a tenant namespace and everything in it",
		Args:  nameArg,
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Name = args[0]
			if err := cmdutil.ValidateDryRun(o.DryRun); err != nil {
				return err
			}
			c, err := o.NewClients(o.Flags)
			if err != nil {
				return err
			}
			return o.Run(cmd.Context(), c)
		},
	}
	cmd.Flags().StringVar(&o.DryRun, "dry-run", "", `"server" has the API server check the delete without doing it; "client" only reads the namespace.`)
	cmd.Flags().Lookup("dry-run").NoOptDefVal = "client"
	return cmd
}

// Run deletes the namespace, only if it is a tenant's.
func (o *DeleteOptions) Run(ctx context.Context, c *kube.Clients) error {
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

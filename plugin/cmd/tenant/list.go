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
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/duration"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubectl-sched/kubectl-sched/api/tiers"
	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
	"github.com/kubectl-sched/kubectl-sched/plugin/internal/cmdutil"
	"github.com/kubectl-sched/kubectl-sched/plugin/internal/kube"
	"github.com/kubectl-sched/kubectl-sched/plugin/internal/printing"
	"github.com/kubectl-sched/kubectl-sched/plugin/internal/quota"
)

// ListOptions for `tenant list`.
type ListOptions struct {
	kube.ClientOptions
	Print *printing.Flags
	Now   func() time.Time
}

func newListCommand(c kube.ClientOptions) *cobra.Command {
	o := &ListOptions{ClientOptions: c, Print: printing.NewFlags(), Now: time.Now}
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the tenants, their tiers and how much of their quota they use",
		Long: `List the tenant namespaces with their tier and their use of the tier's quota,
used/limit: AgentTasks, Workflows and apps (finished runs count until their
TTL deletes them), and CPU and memory requests. "?" is a use the cluster's
quota controller has not counted yet, "-" a resource the tier does not limit.
-o wide adds pods, limits, storage and the tier's TTLs; -o json|yaml prints
each tenant's Namespace and ResourceQuota; -o name the namespaces.`,
		Example: `  kubectl sched tenant list
  kubectl sched tenant list -o wide
  kubectl sched tenant list -o name`,
		Args: cobra.NoArgs,
		RunE: cmdutil.RunE(o),
	}
	o.Print.AddFlags(cmd, true)
	return cmd
}

// Validate checks the output format.
func (o *ListOptions) Validate() error {
	return o.Print.Validate("Use -o wide, json, yaml or name.")
}

// tenantRow is a tenant namespace and its tier quota (nil until the
// operator makes it).
type tenantRow struct {
	ns    corev1.Namespace
	quota *corev1.ResourceQuota
}

// Run prints one row per tenant namespace.
func (o *ListOptions) Run(ctx context.Context) error {
	rows, err := o.rows(ctx)
	if err != nil {
		return err
	}
	if len(rows) == 0 {
		fmt.Fprintln(o.ErrOut, "No tenants found.")
		return nil
	}
	if !o.Print.IsTable() {
		return o.printObjects(rows)
	}
	wide := o.Print.IsWide()
	w := printing.NewTableWriter(o.Out, printing.GetStyle)
	if !o.Print.NoHeaders {
		header := []string{"NAME", "TIER", "TASKS", "WORKFLOWS", "APPS", "CPU", "MEMORY", "AGE"}
		if wide {
			header = append(header, "PODS", "CPU LIMITS", "MEMORY LIMITS", "STORAGE", "TTL")
		}
		w.Header(header...)
	}
	for _, r := range rows {
		q := r.quota
		row := []string{r.ns.Name, r.ns.Labels[schedv1.LabelTier],
			usage(q, quota.CountTasks), usage(q, quota.CountWorkflows), usage(q, quota.CountApps),
			usage(q, string(corev1.ResourceRequestsCPU)), usage(q, string(corev1.ResourceRequestsMemory)),
			duration.HumanDuration(o.Now().Sub(r.ns.CreationTimestamp.Time))}
		if wide {
			row = append(row, usage(q, string(corev1.ResourcePods)), usage(q, string(corev1.ResourceLimitsCPU)),
				usage(q, string(corev1.ResourceLimitsMemory)), usage(q, string(corev1.ResourceRequestsStorage)), ttlColumn(q))
		}
		w.Row(row...)
	}
	return w.Render()
}

// rows lists the tenant namespaces, by name, each with its tier quota.
// A member, who may list neither namespaces nor every namespace's quotas,
// gets their own tenant (tenantNamespaces says so on stderr).
func (o *ListOptions) rows(ctx context.Context) ([]tenantRow, error) {
	c := o.Clients.Client
	namespaces, ownOnly, err := o.tenantNamespaces(ctx, o.Clients)
	if err != nil {
		return nil, err
	}
	byNS := map[string]*corev1.ResourceQuota{}
	// One list for every tenant's quota; a tenant's own is the one of its
	// name and tier. A member, who may not list namespaces, may not list
	// every namespace's quotas either: they read their own.
	each := ownOnly
	if !each {
		var quotas corev1.ResourceQuotaList
		switch err := c.List(ctx, &quotas, client.MatchingLabels{schedv1.LabelManagedBy: schedv1.ManagedByValue}); {
		case err == nil:
			for i := range quotas.Items {
				if q := &quotas.Items[i]; q.Name == schedv1.TierObjectName {
					byNS[q.Namespace] = q
				}
			}
		case apierrors.IsForbidden(err):
			each = true
		default:
			return nil, cmdutil.API(err, "list", "resourcequotas")
		}
	}
	for i := 0; each && i < len(namespaces); i++ {
		ns := namespaces[i].Name
		q := &corev1.ResourceQuota{}
		switch err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: schedv1.TierObjectName}, q); {
		case err == nil:
			byNS[ns] = q
		case !apierrors.IsNotFound(err):
			return nil, cmdutil.API(err, "get", fmt.Sprintf("resourcequotas %q in namespace %q", schedv1.TierObjectName, ns))
		}
	}
	rows := make([]tenantRow, 0, len(namespaces))
	for _, ns := range namespaces {
		rows = append(rows, tenantRow{ns: ns, quota: byNS[ns.Name]})
	}
	slices.SortFunc(rows, func(a, b tenantRow) int { return strings.Compare(a.ns.Name, b.ns.Name) })
	return rows, nil
}

// printObjects prints -o json|yaml (each tenant's Namespace and quota)
// and -o name (the namespaces).
func (o *ListOptions) printObjects(rows []tenantRow) error {
	name := o.Print.OutputFormat != nil && *o.Print.OutputFormat == "name"
	list := &unstructured.UnstructuredList{Object: map[string]any{"apiVersion": "v1", "kind": "List"}}
	add := func(obj runtime.Object, apiVersion, kind string) error {
		m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
		if err != nil {
			return err
		}
		u := unstructured.Unstructured{Object: m}
		u.SetAPIVersion(apiVersion)
		u.SetKind(kind)
		list.Items = append(list.Items, u)
		return nil
	}
	for i := range rows {
		if err := add(&rows[i].ns, "v1", "Namespace"); err != nil {
			return err
		}
		if q := rows[i].quota; q != nil && !name {
			if err := add(q, "v1", "ResourceQuota"); err != nil {
				return err
			}
		}
	}
	return o.Print.Print(list, o.Out)
}

// usage is "used/limit" of one resource of a quota: "-" when the quota
// (or the tier) does not limit it, "?" for a use not counted yet.
func usage(q *corev1.ResourceQuota, name string) string {
	if q == nil {
		return "-"
	}
	r := corev1.ResourceName(name)
	hard, ok := q.Spec.Hard[r]
	if !ok {
		return "-"
	}
	used, ok := q.Status.Used[r]
	if !ok {
		return "?/" + hard.String()
	}
	return used.String() + "/" + hard.String()
}

// ttlColumn is the tier's ttlAfterFinished "default/max", "-" for none.
func ttlColumn(q *corev1.ResourceQuota) string {
	if q == nil {
		return "-"
	}
	t := tiers.TTLFromQuota(q, "")
	if t == nil || (t.Default == 0 && t.Max == 0) {
		return "-"
	}
	d, m := "-", "-"
	if t.Default > 0 {
		d = tiers.FormatDuration(t.Default)
	}
	if t.Max > 0 {
		m = tiers.FormatDuration(t.Max)
	}
	return d + "/" + m
}

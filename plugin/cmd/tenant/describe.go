package tenant

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/duration"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubectl-sched/kubectl-sched/api/tiers"
	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
	"github.com/kubectl-sched/kubectl-sched/plugin/internal/cmdutil"
	"github.com/kubectl-sched/kubectl-sched/plugin/internal/kube"
	"github.com/kubectl-sched/kubectl-sched/plugin/internal/printing"
)

// maxRunsShown bounds each kind's rows in Counted: an enterprise tenant
// may hold thousands of finished runs.
const maxRunsShown = 20

// DescribeOptions for `tenant describe`.
type DescribeOptions struct {
	kube.NameOptions
	Now func() time.Time
}

func newDescribeCommand(c kube.ClientOptions) *cobra.Command {
	o := &DescribeOptions{NameOptions: kube.Named(c), Now: time.Now}
	return &cobra.Command{
		Use:   "describe NAME",
		Short: "Show a tenant's members, limits and the objects that count against its quota",
		Long: `Describe a tenant namespace: its tier, its members (the subjects of the
RoleBindings tenant create made), its limits (the tier's ResourceQuota with
what is used, the container defaults and bounds of its LimitRange, the
placement it allows and its ttlAfterFinished default and maximum), the
Workflows, AgentTasks and apps that count against the quota, finished runs
first with when each is deleted, and the namespace's events.`,
		Example: `  kubectl sched tenant describe payments`,
		Args:    nameArg,
		RunE:    cmdutil.RunE(o),
	}
}

// Validate has nothing to check.
func (o *DescribeOptions) Validate() error { return nil }

// Run describes the tenant.
func (o *DescribeOptions) Run(ctx context.Context) error {
	c := o.Clients.Client
	q := &corev1.ResourceQuota{}
	qErr := c.Get(ctx, types.NamespacedName{Namespace: o.Name, Name: schedv1.TierObjectName}, q)
	ns := &corev1.Namespace{}
	nsErr := c.Get(ctx, types.NamespacedName{Name: o.Name}, ns)
	var tier string
	switch {
	case nsErr == nil:
		tier = ns.Labels[schedv1.LabelTier]
	case apierrors.IsForbidden(nsErr) && qErr == nil:
		// A member may read the namespace's quota, not the Namespace.
		tier = q.Labels[schedv1.LabelTier]
	default:
		return cmdutil.API(nsErr, "get", fmt.Sprintf("namespaces %q", o.Name))
	}
	if tier == "" {
		return cmdutil.Errorf(cmdutil.ExitNotFound, "'kubectl sched tenant list' lists the tenants.",
			"namespace %s is not a tenant (it has no %s label)", o.Name, schedv1.LabelTier)
	}
	now := o.Now()
	w := printing.NewDescribeWriter(o.Out)
	w.Field(0, "Name", o.Name)
	w.Field(0, "Tier", tier)
	if nsErr == nil {
		w.Field(0, "Created", printing.Timestamp(ns.CreationTimestamp))
		w.Field(0, "Pod Security", ns.Labels["pod-security.kubernetes.io/enforce"])
	} else {
		w.Line(0, "Namespace:\t%s", readError(nsErr, "namespaces"))
	}
	o.members(ctx, w)

	switch {
	case apierrors.IsNotFound(qErr):
		w.Line(0, "Quota:\t<none: the operator has not applied tier %s yet; see the namespace's events>", tier)
		q = nil
	case qErr != nil:
		w.Line(0, "Quota:\t%s", readError(qErr, "resourcequotas"))
		q = nil
	default:
		quotaTable(w, q)
	}
	o.limitRange(ctx, w)
	if q != nil {
		placement(w, q)
		ttl(w, q)
	}
	o.counted(ctx, w, now)
	o.events(ctx, w)
	return w.Flush()
}

// members lists the subjects of the RoleBindings tenant create made (and
// any other part-of kubectl-sched), with the role each binds.
func (o *DescribeOptions) members(ctx context.Context, w *printing.DescribeWriter) {
	var list rbacv1.RoleBindingList
	if err := o.Clients.Client.List(ctx, &list, client.InNamespace(o.Name), client.MatchingLabels{"app.kubernetes.io/part-of": "kubectl-sched"}); err != nil {
		w.Line(0, "Members:\t%s", readError(err, "rolebindings.rbac.authorization.k8s.io"))
		return
	}
	var rows [][]string
	for _, rb := range list.Items {
		role := rb.RoleRef.Kind + "/" + rb.RoleRef.Name
		for _, s := range rb.Subjects {
			name := s.Name
			if s.Kind == rbacv1.ServiceAccountKind && s.Namespace != "" {
				name = s.Namespace + "/" + s.Name
			}
			rows = append(rows, []string{name, s.Kind, role, rb.Name})
		}
	}
	slices.SortFunc(rows, func(a, b []string) int { return strings.Compare(strings.Join(a, "\x00"), strings.Join(b, "\x00")) })
	w.Table(0, "Members", []string{"Name", "Kind", "Role", "RoleBinding"}, rows)
}

// quotaTable writes the quota's limits and use, sorted by resource.
func quotaTable(w *printing.DescribeWriter, q *corev1.ResourceQuota) {
	var rows [][]string
	for _, r := range slices.Sorted(maps.Keys(q.Spec.Hard)) {
		if r == schedv1.QuotaRecountResource {
			continue
		}
		hard := q.Spec.Hard[r]
		used := "<not counted yet>"
		if u, ok := q.Status.Used[r]; ok {
			used = u.String()
		}
		rows = append(rows, []string{string(r), used, hard.String()})
	}
	w.Table(0, "Quota ("+q.Name+")", []string{"Resource", "Used", "Limit"}, rows)
}

// limitRange writes the container defaults and bounds.
func (o *DescribeOptions) limitRange(ctx context.Context, w *printing.DescribeWriter) {
	lr := &corev1.LimitRange{}
	err := o.Clients.Client.Get(ctx, types.NamespacedName{Namespace: o.Name, Name: schedv1.TierObjectName}, lr)
	switch {
	case apierrors.IsNotFound(err):
		w.Line(0, "Container Limits:\t<none>")
		return
	case err != nil:
		w.Line(0, "Container Limits:\t%s", readError(err, "limitranges"))
		return
	}
	var rows [][]string
	for _, item := range lr.Spec.Limits {
		names := map[corev1.ResourceName]bool{}
		for _, l := range []corev1.ResourceList{item.Default, item.DefaultRequest, item.Max} {
			for r := range l {
				names[r] = true
			}
		}
		for _, r := range slices.Sorted(maps.Keys(names)) {
			get := func(l corev1.ResourceList) string {
				if v, ok := l[r]; ok {
					return v.String()
				}
				return "-"
			}
			rows = append(rows, []string{string(item.Type), string(r), get(item.DefaultRequest), get(item.Default), get(item.Max)})
		}
	}
	w.Table(0, "Container Limits ("+lr.Name+")", []string{"Type", "Resource", "Default Request", "Default Limit", "Max"}, rows)
}

// placement writes what the tier lets workloads ask of the scheduler (the
// annotations the admission policy reads).
func placement(w *printing.DescribeWriter, q *corev1.ResourceQuota) {
	a := q.Annotations
	w.Line(0, "Placement:")
	w.Field(1, "Max Priority", printing.OrNone(a[schedv1.AnnotationTierMaxPriority]))
	w.Field(1, "Node Pools", strings.ReplaceAll(a[schedv1.AnnotationTierNodePools], ",", ", "))
	w.Field(1, "Tolerations", strings.ReplaceAll(a[schedv1.AnnotationTierTolerations], ",", ", "))
	if s := a[schedv1.AnnotationTierMaxTolerationSeconds]; s != "" {
		w.Field(1, "Node Conditions", "node.kubernetes.io/not-ready and unreachable for at most "+s+"s (NoExecute)")
	}
	if c := a[schedv1.AnnotationTierDefaultPriorityClass]; c != "" {
		w.Field(1, "Default Class", c+" (for pods that name none: the cluster's default class is above the tier)")
	}
	if n := a[schedv1.AnnotationTierMaxRevisions]; n != "" {
		w.Line(0, "Apps:")
		w.Field(1, "Max Revisions", n+" (the most kept of an app, whatever its spec.revisionHistoryLimit)")
	}
}

// ttl writes the tier's ttlAfterFinished default and maximum.
func ttl(w *printing.DescribeWriter, q *corev1.ResourceQuota) {
	t := tiers.TTLFromQuota(q, "")
	w.Line(0, "TTL After Finished:")
	d, m := "<none: finished runs without a ttlAfterFinished are kept until deleted>", "<none>"
	if t != nil && t.Default > 0 {
		d = tiers.FormatDuration(t.Default) + " (tasks and workflows whose spec has none; step tasks go with their workflow)"
	}
	if t != nil && t.Max > 0 {
		m = tiers.FormatDuration(t.Max) + " (the most a spec may ask)"
	}
	w.Field(1, "Default", d)
	w.Field(1, "Maximum", m)
}

// countedRun is a row of Counted.
type countedRun struct {
	kind, name, phase string
	finished          *metav1.Time
	expiry            *schedv1.Expiry
	created           time.Time
}

// counted lists what counts against the tier's count/ quotas: workflows,
// tasks (step tasks as a number: they go with their workflow) and apps.
func (o *DescribeOptions) counted(ctx context.Context, w *printing.DescribeWriter, now time.Time) {
	c := o.Clients.Client
	var runs []countedRun
	var problems []string
	steps := 0
	var wfs schedv1.WorkflowList
	if err := c.List(ctx, &wfs, client.InNamespace(o.Name)); err != nil {
		problems = append(problems, "workflows "+readError(err, "workflows."+schedv1.GroupName))
	}
	for _, wf := range wfs.Items {
		runs = append(runs, countedRun{kind: "Workflow", name: wf.Name, phase: string(wf.Status.Phase), finished: wf.Status.CompletionTime, expiry: wf.Status.Expiry, created: wf.CreationTimestamp.Time})
	}
	var tasks schedv1.AgentTaskList
	if err := c.List(ctx, &tasks, client.InNamespace(o.Name)); err != nil {
		problems = append(problems, "agenttasks "+readError(err, "agenttasks."+schedv1.GroupName))
	}
	for _, t := range tasks.Items {
		if ref := metav1.GetControllerOf(&t); ref != nil && ref.Kind == "Workflow" && ref.APIVersion == schedv1.GroupVersion.String() {
			steps++
			continue
		}
		runs = append(runs, countedRun{kind: "AgentTask", name: t.Name, phase: string(t.Status.Phase), finished: t.Status.CompletionTime, expiry: t.Status.Expiry, created: t.CreationTimestamp.Time})
	}
	var apps schedv1.UserDeploymentList
	if err := c.List(ctx, &apps, client.InNamespace(o.Name)); err != nil {
		problems = append(problems, "userdeployments "+readError(err, "userdeployments."+schedv1.GroupName))
	}
	for _, a := range apps.Items {
		runs = append(runs, countedRun{kind: "UserDeployment", name: a.Name, phase: string(a.Status.Phase), created: a.CreationTimestamp.Time})
	}

	// Per kind: those deleted soonest first, then those that stay.
	slices.SortStableFunc(runs, func(a, b countedRun) int {
		if a.kind != b.kind {
			return strings.Compare(order(a.kind), order(b.kind))
		}
		at, bt := deleteAt(a), deleteAt(b)
		switch {
		case !at.IsZero() && !bt.IsZero():
			return at.Compare(bt)
		case !at.IsZero():
			return -1
		case !bt.IsZero():
			return 1
		}
		return a.created.Compare(b.created)
	})
	var rows [][]string
	shown, more := map[string]int{}, map[string]int{}
	for _, r := range runs {
		if shown[r.kind] == maxRunsShown {
			more[r.kind]++
			continue
		}
		shown[r.kind]++
		fin := "-"
		if r.finished != nil {
			fin = duration.HumanDuration(now.Sub(r.finished.Time)) + " ago"
		}
		rows = append(rows, []string{r.kind, r.name, printing.OrDash(r.phase), fin, expires(r, now)})
	}
	w.Table(0, "Counted", []string{"Kind", "Name", "Phase", "Finished", "Deleted"}, rows)
	for _, k := range slices.Sorted(maps.Keys(more)) {
		w.Line(1, "... and %d more %s (kubectl sched get %s -n %s)", more[k], k+"s", strings.ToLower(k)+"s", o.Name)
	}
	switch {
	case steps == 1:
		w.Line(1, "and 1 workflow step task, deleted with its workflow")
	case steps > 1:
		w.Line(1, "and %d workflow step tasks, deleted with their workflows", steps)
	}
	for _, p := range problems {
		w.Line(1, "%s", p)
	}
}

func order(kind string) string {
	return map[string]string{"Workflow": "0", "AgentTask": "1", "UserDeployment": "2"}[kind]
}

func deleteAt(r countedRun) time.Time {
	if r.expiry == nil || r.expiry.DeleteTime == nil {
		return time.Time{}
	}
	return r.expiry.DeleteTime.Time
}

// expires says when a counted object is deleted.
func expires(r countedRun, now time.Time) string {
	e := r.expiry
	switch {
	case r.kind == "UserDeployment":
		return "when deleted"
	case e == nil && r.finished != nil:
		return "never (no TTL)"
	case e == nil:
		return "never (no TTL)"
	case e.DeleteTime == nil:
		return fmt.Sprintf("%s after it finishes (%s)", tiers.FormatDuration(e.TTLAfterFinished.Duration), source(e))
	case !e.DeleteTime.After(now):
		return fmt.Sprintf("now (%s)", source(e))
	}
	return fmt.Sprintf("in %s (%s)", duration.HumanDuration(e.DeleteTime.Sub(now)), source(e))
}

// source is a short Why: "tier default", "tier maximum", "cluster
// default", "its ttlAfterFinished".
func source(e *schedv1.Expiry) string {
	switch e.Source {
	case schedv1.ExpiryFromTierDefault:
		return "tier default"
	case schedv1.ExpiryFromTierMaximum:
		return "tier maximum"
	case schedv1.ExpiryFromInstallDefault:
		return "cluster default"
	}
	return "its ttlAfterFinished"
}

// events writes the Namespace's events: the operator's about the tier
// (UnknownTier, QuotaRecount, QuotaNotCounted). A cluster-scoped object's
// events are in the default namespace.
func (o *DescribeOptions) events(ctx context.Context, w *printing.DescribeWriter) {
	sel := fields.Set{"involvedObject.kind": "Namespace", "involvedObject.name": o.Name}.AsSelector().String()
	list, err := o.Clients.Kube.CoreV1().Events(metav1.NamespaceDefault).List(ctx, metav1.ListOptions{FieldSelector: sel})
	if err != nil {
		w.Line(0, "Events:\t%s", readError(err, "events"))
		return
	}
	w.Events(list.Items)
}

// readError is shown in place of a section the user may not read.
func readError(err error, resource string) string {
	msg, _, _ := strings.Cut(cmdutil.API(err, "list", resource).Error(), "\n")
	return "<" + msg + ">"
}

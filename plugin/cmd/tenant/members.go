package tenant

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
	"github.com/kubectl-sched/kubectl-sched/plugin/internal/cmdutil"
	"github.com/kubectl-sched/kubectl-sched/plugin/internal/kube"
)

// MemberRole is the ClusterRole a tenant's members are bound to in its
// namespace, by a RoleBinding of the same name.
const MemberRole = schedv1.TenantMemberRole

// legacyBinding is the RoleBinding earlier versions of tenant create made,
// to kubectl-sched-edit only, which lets members use the kinds but not read
// their pods, logs or events.
const legacyBinding = "kubectl-sched-edit"

const partOf = "app.kubernetes.io/part-of"

// bindMembers binds the tenant's members to MemberRole. --user and --group
// name them all (a re-run replaces the list); without them the namespace
// keeps the members it has, those of an earlier kubectl-sched-edit binding
// included, so re-running create on a tenant made by an earlier version
// gives its members the whole plugin. That binding is deleted once its
// subjects are bound here.
func (o *CreateOptions) bindMembers(ctx context.Context) error {
	c := o.Clients
	subjects := o.subjects()
	current, err := o.binding(ctx, c, MemberRole)
	if err != nil {
		return err
	}
	legacy, err := o.binding(ctx, c, legacyBinding)
	if err != nil {
		return err
	}
	if legacy != nil && !madeByCreate(legacy) {
		legacy = nil // someone else's binding of that name: not ours to remove
	}
	if len(subjects) == 0 {
		switch {
		case current != nil:
			subjects = current.Subjects
		case legacy != nil:
			subjects = legacy.Subjects
		}
	}
	if len(subjects) == 0 {
		return nil
	}
	rb := &rbacv1.RoleBinding{
		TypeMeta:   metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "RoleBinding"},
		ObjectMeta: metav1.ObjectMeta{Name: MemberRole, Namespace: o.Name, Labels: map[string]string{partOf: "kubectl-sched"}},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: MemberRole},
		Subjects:   subjects,
	}
	if err := c.Apply(ctx, rb, o.DryRun); err != nil {
		return cmdutil.API(err, "patch", fmt.Sprintf("rolebindings.rbac.authorization.k8s.io %q in namespace %q", rb.Name, o.Name))
	}
	fmt.Fprintf(o.Out, "rolebinding.rbac.authorization.k8s.io/%s applied in %s (%d subject(s), ClusterRole %s)%s\n", MemberRole, o.Name, len(subjects), MemberRole, cmdutil.DryRunSuffix(o.DryRun))
	if legacy == nil {
		return nil
	}
	if o.DryRun != "client" {
		// By UID: a binding made again meanwhile is not this one.
		if err := c.Client.Delete(ctx, legacy, client.Preconditions{UID: &legacy.UID}); err != nil && !apierrors.IsNotFound(err) {
			return cmdutil.API(err, "delete", fmt.Sprintf("rolebindings.rbac.authorization.k8s.io %q in namespace %q", legacy.Name, o.Name))
		}
	}
	fmt.Fprintf(o.Out, "rolebinding.rbac.authorization.k8s.io/%s deleted in %s (made by an earlier tenant create; %s replaces it)%s\n", legacyBinding, o.Name, MemberRole, cmdutil.DryRunSuffix(o.DryRun))
	return nil
}

func (o *CreateOptions) subjects() []rbacv1.Subject {
	var subjects []rbacv1.Subject
	for _, u := range o.Users {
		subjects = append(subjects, rbacv1.Subject{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: u})
	}
	for _, g := range o.Groups {
		subjects = append(subjects, rbacv1.Subject{APIGroup: rbacv1.GroupName, Kind: rbacv1.GroupKind, Name: g})
	}
	return subjects
}

// binding reads the RoleBinding name of the tenant's namespace; nil when
// there is none (or no namespace yet).
func (o *CreateOptions) binding(ctx context.Context, c *kube.Clients, name string) (*rbacv1.RoleBinding, error) {
	rb := &rbacv1.RoleBinding{}
	err := c.Client.Get(ctx, types.NamespacedName{Namespace: o.Name, Name: name}, rb)
	switch {
	case apierrors.IsNotFound(err):
		return nil, nil
	case err != nil:
		return nil, cmdutil.API(err, "get", fmt.Sprintf("rolebindings.rbac.authorization.k8s.io %q in namespace %q", name, o.Name))
	}
	return rb, nil
}

// madeByCreate: the binding an earlier tenant create made, by its label
// and role.
func madeByCreate(rb *rbacv1.RoleBinding) bool {
	return rb.Labels[partOf] == "kubectl-sched" && rb.RoleRef.Kind == "ClusterRole" && rb.RoleRef.Name == legacyBinding
}

// tenantNamespaces are the namespaces tenant list shows: every tenant's,
// or, for a user who may not list namespaces (a tenant's member), the
// current namespace alone when it is a tenant's.
func (o *ListOptions) tenantNamespaces(ctx context.Context, c *kube.Clients) (namespaces []corev1.Namespace, ownOnly bool, err error) {
	var list corev1.NamespaceList
	err = c.Client.List(ctx, &list, client.HasLabels{schedv1.LabelTier})
	if err == nil {
		return list.Items, false, nil
	}
	if !apierrors.IsForbidden(err) || c.Namespace == "" {
		return nil, false, cmdutil.API(err, "list", "namespaces")
	}
	ns := &corev1.Namespace{}
	if err := c.Client.Get(ctx, types.NamespacedName{Name: c.Namespace}, ns); err != nil {
		return nil, false, cmdutil.API(err, "get", fmt.Sprintf("namespaces %q", c.Namespace))
	}
	if ns.Labels[schedv1.LabelTier] == "" {
		return nil, false, cmdutil.Errorf(cmdutil.ExitError, "Name a tenant's namespace with -n.",
			"namespace %s is not a tenant (it has no %s label), and you may not list the others", ns.Name, schedv1.LabelTier)
	}
	fmt.Fprintf(o.ErrOut, "You may not list namespaces: showing namespace %s only.\n", ns.Name)
	return []corev1.Namespace{*ns}, true, nil
}

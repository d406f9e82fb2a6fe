package testenv

import (
	"context"
	"fmt"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubectl-sched/kubectl-sched/operator/app"
)

// WaitAllowed waits until the API server's authorizer lets user do attrs: a
// RoleBinding just created takes effect when its informer has seen it.
func WaitAllowed(ctx context.Context, admin client.Client, user string, attrs authorizationv1.ResourceAttributes) error {
	err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		review := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{User: user, ResourceAttributes: &attrs}}
		return admin.Create(ctx, review) == nil && review.Status.Allowed, nil
	})
	if err != nil {
		return fmt.Errorf("%s is still not allowed to %s %s in %q: %w", user, attrs.Verb, attrs.Resource, attrs.Namespace, err)
	}
	return nil
}

// BindUser binds user to clusterRole in ns (a RoleBinding named
// <user>-<clusterRole>), waits until the authorizer allows each of allowed,
// and returns a client that impersonates the user: the tests' namespace
// users, who try attacks on the operator's behalf.
func BindUser(ctx context.Context, admin client.Client, cfg *rest.Config, ns, user, clusterRole string, allowed ...authorizationv1.ResourceAttributes) (client.Client, error) {
	rb := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: user + "-" + clusterRole, Namespace: ns},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: clusterRole},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}},
	}
	if err := admin.Create(ctx, rb); err != nil {
		return nil, err
	}
	for _, attrs := range allowed {
		attrs.Namespace = ns
		if err := WaitAllowed(ctx, admin, user, attrs); err != nil {
			return nil, err
		}
	}
	cfg = rest.CopyConfig(cfg)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user}
	return client.New(cfg, client.Options{Scheme: app.Scheme()})
}

// waitGroupAllowed is WaitAllowed for any member of group.
func waitGroupAllowed(ctx context.Context, admin client.Client, group string, attrs authorizationv1.ResourceAttributes) error {
	err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		review := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
			User: "member-of-" + group, Groups: []string{group}, ResourceAttributes: &attrs}}
		return admin.Create(ctx, review) == nil && review.Status.Allowed, nil
	})
	if err != nil {
		return fmt.Errorf("members of group %s are still not allowed to %s %s in %q: %w", group, attrs.Verb, attrs.Resource, attrs.Namespace, err)
	}
	return nil
}

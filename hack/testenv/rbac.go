package testenv

import (
	"context"
	"fmt"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
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

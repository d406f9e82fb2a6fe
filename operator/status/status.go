// Package status is how every controller writes its objects' status: one
// condition setter (SetCondition), one Writer per controller that writes
// only what changed, paces what may wait and never writes from a cache
// that has not seen its own last write, and the Expectations that guard
// rests on, which a controller also keeps of its other writes and creates
// (kube-controller-manager's ControllerExpectations).
package status

import (
	"context"
	"fmt"
	"reflect"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// SetCondition sets c in conds, stamped with generation: the one the
// status describes (its observedGeneration). c.LastTransitionTime is when
// the condition changes, if it does; zero means now.
func SetCondition(conds *[]metav1.Condition, generation int64, c metav1.Condition) {
	c.ObservedGeneration = generation
	meta.SetStatusCondition(conds, c)
}

// Patch writes obj's status when it differs from before's, and reports
// whether it wrote (Writer.Write is Patch paced and guarded); before is obj as it was read, with its old status. The
// merge patch carries an optimistic lock: a status computed from a stale
// cache is refused with a Conflict instead of overwriting a newer one or
// repeating the last write.
//
// Every controller returns Patch's error from Reconcile, a Conflict too,
// so the workqueue retries with its backoff. Waiting for the newer
// object's event instead could wait forever: a controller may filter that
// event out (the userdeployment controller drops status-only updates), and
// the backoff paces a writer that keeps racing us.
func Patch(ctx context.Context, c client.Client, obj, before client.Object) (bool, error) {
	if equality.Semantic.DeepEqual(of(before), of(obj)) {
		return false, nil
	}
	if err := c.Status().Patch(ctx, obj, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})); err != nil {
		if apierrors.IsConflict(err) {
			return false, fmt.Errorf("status of %s is stale, retrying: %w", obj.GetName(), err)
		}
		return false, err
	}
	return true, nil
}

// of is an API object's Status field.
func of(o client.Object) any {
	return reflect.ValueOf(o).Elem().FieldByName("Status").Interface()
}

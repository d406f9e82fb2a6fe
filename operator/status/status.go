// Package status is what the four controllers share about their objects'
// status: one condition setter and one patch, so every kind writes the
// same way.
package status

import (
	"context"
	"reflect"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// SetCondition sets a condition stamped with generation, the one the
// status describes (its observedGeneration).
func SetCondition(conds *[]metav1.Condition, generation int64, typ string, s metav1.ConditionStatus, reason, msg string) {
	meta.SetStatusCondition(conds, metav1.Condition{Type: typ, Status: s, Reason: reason, Message: msg, ObservedGeneration: generation})
}

// Patch writes obj's status when it differs from before's, and reports
// whether it wrote; before is obj as it was read, with its old status. The
// merge patch carries an optimistic lock: a status computed from a stale
// cache is refused with a Conflict (retried with the workqueue's backoff)
// instead of overwriting a newer one or repeating the last write.
func Patch(ctx context.Context, c client.Client, obj, before client.Object) (bool, error) {
	if equality.Semantic.DeepEqual(of(before), of(obj)) {
		return false, nil
	}
	if err := c.Status().Patch(ctx, obj, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})); err != nil {
		return false, err
	}
	return true, nil
}

// of is an API object's Status field.
func of(o client.Object) any {
	return reflect.ValueOf(o).Elem().FieldByName("Status").Interface()
}

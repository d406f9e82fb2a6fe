package refusal

import (
	"context"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// OnQuotaChange enqueues, when a ResourceQuota changes, the objects of its
// namespace that wait for quota: usage dropping or a raised limit is what
// they wait for, sooner than the workqueue's growing backoff would retry.
func OnQuotaChange(c client.Reader, newList func() client.ObjectList, waiting func(client.Object) bool) handler.EventHandler {
	return handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, quota client.Object) []reconcile.Request {
		list := newList()
		if err := c.List(ctx, list, client.InNamespace(quota.GetNamespace())); err != nil {
			return nil
		}
		var reqs []reconcile.Request
		_ = meta.EachListItem(list, func(o runtime.Object) error {
			if obj, ok := o.(client.Object); ok && waiting(obj) {
				reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(obj)})
			}
			return nil
		})
		return reqs
	})
}

package refusal

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// waitingIndex indexes the objects a full quota refused (IndexWaiting).
const waitingIndex = "refusal.waitingForQuota"

// IndexWaiting indexes obj's kind by whether waiting says an object waits
// for quota, so that a quota's update looks up the few objects waiting in
// its namespace rather than copying every object there.
func IndexWaiting(ctx context.Context, indexer client.FieldIndexer, obj client.Object, waiting func(client.Object) bool) error {
	return indexer.IndexField(ctx, obj, waitingIndex, func(o client.Object) []string {
		if waiting(o) {
			return []string{"true"}
		}
		return nil
	})
}

// OnQuotaChange enqueues, when a ResourceQuota changes, the objects of its
// namespace that wait for quota (IndexWaiting): usage dropping or a raised
// limit is what they wait for, sooner than the workqueue's growing backoff
// would retry. Use it with GivesRoom.
func OnQuotaChange(c client.Reader, newList func() client.ObjectList) handler.EventHandler {
	return handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, quota client.Object) []reconcile.Request {
		list := newList()
		if err := c.List(ctx, list, client.InNamespace(quota.GetNamespace()), client.MatchingFields{waitingIndex: "true"}); err != nil {
			return nil
		}
		var reqs []reconcile.Request
		_ = meta.EachListItem(list, func(o runtime.Object) error {
			if obj, ok := o.(client.Object); ok {
				reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(obj)})
			}
			return nil
		})
		return reqs
	})
}

// GivesRoom passes the ResourceQuota events that can let a refused create
// through: its deletion, and the status updates that give room or count
// anew. The quota controller rewrites status.used whenever something it
// counts comes or goes; an update that only takes room (usage went up)
// cannot cure a refusal, and it wakes nothing. A quota's creation only
// restricts more.
var GivesRoom = predicate.Funcs{
	CreateFunc:  func(event.CreateEvent) bool { return false },
	DeleteFunc:  func(event.DeleteEvent) bool { return true },
	GenericFunc: func(event.GenericEvent) bool { return false },
	UpdateFunc: func(e event.UpdateEvent) bool {
		old, okOld := e.ObjectOld.(*corev1.ResourceQuota)
		cur, okNew := e.ObjectNew.(*corev1.ResourceQuota)
		return !okOld || !okNew || givesRoom(old.Status, cur.Status)
	},
}

// givesRoom reports whether a quota's status went from old to cur in a
// way that can let a refused create through: a limit changed (raised,
// removed, or newly synced from the spec), usage went down or is no
// longer counted, or something is counted for the first time (until then
// the API server refuses its creates as "status unknown for quota").
func givesRoom(old, cur corev1.ResourceQuotaStatus) bool {
	if !equality.Semantic.DeepEqual(old.Hard, cur.Hard) {
		return true
	}
	for r, was := range old.Used {
		now, ok := cur.Used[r]
		if !ok || now.Cmp(was) < 0 {
			return true
		}
	}
	for r := range cur.Used {
		if _, ok := old.Used[r]; !ok {
			return true
		}
	}
	return false
}

package refusal

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"

	"github.com/kubectl-sched/kubectl-sched/operator/watch"
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
	return watch.EnqueueListed(c, newList, func(quota client.Object) ([]client.ListOption, bool) {
		return []client.ListOption{client.InNamespace(quota.GetNamespace()), client.MatchingFields{waitingIndex: "true"}}, true
	}, nil)
}

// GivesRoom passes the ResourceQuota events that can let a refused create
// through: its deletion, and the status updates that give room or count
// anew. The quota controller rewrites status.used whenever something it
// counts comes or goes; an update that only takes room (usage went up)
// cannot cure a refusal, and it wakes nothing. A quota's creation only
// restricts more.
var GivesRoom = watch.Filter[*corev1.ResourceQuota]{
	Update: func(old, cur *corev1.ResourceQuota) bool { return givesRoom(old.Status, cur.Status) },
	Delete: watch.Every[*corev1.ResourceQuota],
}.Predicate()

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

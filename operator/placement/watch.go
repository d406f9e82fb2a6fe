package placement

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
)

// OnCPUSchedulerChange enqueues, when a SchedExt or a node's CPU scheduler
// label changes, the objects that follow that scheduler: those a cache
// index (index, over newList's kind) lists under its name. A SchedExt
// stands for the scheduler it loads, a node for the one its label names;
// on an update both the old and the new object are mapped. It reads the
// cache only, so an admin's change costs no request per tenant object.
func OnCPUSchedulerChange(c client.Reader, newList func() client.ObjectList, index string) handler.EventHandler {
	return handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, o client.Object) []reconcile.Request {
		var name string
		switch obj := o.(type) {
		case *schedv1.SchedExt:
			name = obj.Spec.Scheduler.CPUScheduler()
		case *corev1.Node:
			name = obj.Labels[schedv1.NodeLabelCPUScheduler]
		}
		if name == "" {
			return nil
		}
		list := newList()
		if err := c.List(ctx, list, client.MatchingFields{index: name}); err != nil {
			log.FromContext(ctx).Error(err, "Cannot list the objects that follow a CPU scheduler", "cpuScheduler", name)
			return nil
		}
		var reqs []reconcile.Request
		_ = meta.EachListItem(list, func(item runtime.Object) error {
			if obj, ok := item.(client.Object); ok {
				reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(obj)})
			}
			return nil
		})
		return reqs
	})
}

// CPUSchedulerLabelChanged passes node updates that set, change or remove
// the CPU scheduler label, and nodes created with it.
var CPUSchedulerLabelChanged = predicate.Funcs{
	CreateFunc: func(e event.CreateEvent) bool { return e.Object.GetLabels()[schedv1.NodeLabelCPUScheduler] != "" },
	UpdateFunc: func(e event.UpdateEvent) bool {
		return e.ObjectOld.GetLabels()[schedv1.NodeLabelCPUScheduler] != e.ObjectNew.GetLabels()[schedv1.NodeLabelCPUScheduler]
	},
	DeleteFunc:  func(e event.DeleteEvent) bool { return e.Object.GetLabels()[schedv1.NodeLabelCPUScheduler] != "" },
	GenericFunc: func(event.GenericEvent) bool { return false },
}

// SchedExtOfferChanged passes the SchedExt events that change what a
// CPUSchedulerUnavailable message says of it: created, deleted, its spec
// (the scheduler it loads) or deletion, or its Ready reason.
var SchedExtOfferChanged = predicate.Funcs{
	UpdateFunc: func(e event.UpdateEvent) bool {
		oldScx, ok1 := e.ObjectOld.(*schedv1.SchedExt)
		newScx, ok2 := e.ObjectNew.(*schedv1.SchedExt)
		if !ok1 || !ok2 {
			return true
		}
		return oldScx.Generation != newScx.Generation ||
			oldScx.DeletionTimestamp.IsZero() != newScx.DeletionTimestamp.IsZero() ||
			readyReason(oldScx) != readyReason(newScx)
	},
	GenericFunc: func(event.GenericEvent) bool { return false },
}

func readyReason(s *schedv1.SchedExt) string {
	if c := meta.FindStatusCondition(s.Status.Conditions, schedv1.ConditionReady); c != nil {
		return c.Reason
	}
	return ""
}

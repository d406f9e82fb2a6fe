package placement

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"

	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
	"github.com/kubectl-sched/kubectl-sched/operator/watch"
)

// OnCPUSchedulerChange enqueues, when a SchedExt or a node's CPU scheduler
// label changes, the objects that follow that scheduler: those a cache
// index (index, over newList's kind) lists under its name. A SchedExt
// stands for the scheduler it loads, a node for the one its label names;
// on an update both the old and the new object are mapped. It reads the
// cache only, so an admin's change costs no request per tenant object.
func OnCPUSchedulerChange(c client.Reader, newList func() client.ObjectList, index string) handler.EventHandler {
	return watch.EnqueueListed(c, newList, func(o client.Object) ([]client.ListOption, bool) {
		var name string
		switch obj := o.(type) {
		case *schedv1.SchedExt:
			name = obj.Spec.Scheduler.CPUScheduler()
		case *corev1.Node:
			name = cpuSchedulerLabel(obj)
		}
		return []client.ListOption{client.MatchingFields{index: name}}, name != ""
	}, nil)
}

// CPUSchedulerLabelChanged passes node updates that set, change or remove
// the CPU scheduler label, and nodes created with it.
var CPUSchedulerLabelChanged = watch.Filter[*corev1.Node]{
	Create: func(n *corev1.Node) bool { return cpuSchedulerLabel(n) != "" },
	Update: func(old, cur *corev1.Node) bool { return cpuSchedulerLabel(old) != cpuSchedulerLabel(cur) },
	Delete: func(n *corev1.Node) bool { return cpuSchedulerLabel(n) != "" },
}.Predicate()

func cpuSchedulerLabel(n *corev1.Node) string { return n.Labels[schedv1.NodeLabelCPUScheduler] }

// SchedExtOfferChanged passes the SchedExt events that change what a
// CPUSchedulerUnavailable message says of it: created, deleted, its spec
// (the scheduler it loads) or deletion, or its Ready reason.
var SchedExtOfferChanged = watch.Changed(func(old, cur *schedv1.SchedExt) bool {
	return old.Generation != cur.Generation ||
		old.DeletionTimestamp.IsZero() != cur.DeletionTimestamp.IsZero() ||
		readyReason(old) != readyReason(cur)
})

func readyReason(s *schedv1.SchedExt) string {
	if c := meta.FindStatusCondition(s.Status.Conditions, schedv1.ConditionReady); c != nil {
		return c.Reason
	}
	return ""
}

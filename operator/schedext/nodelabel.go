package schedext

import (
	"context"
	"encoding/json"
	"maps"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/kubectl-sched/kubectl-sched/api/names"
	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
	"github.com/kubectl-sched/kubectl-sched/operator/watch"
)

// podNodeIndex indexes the cached loader pods by "<SchedExt>/<node>": the
// node a pod runs on, or is pinned to before it is scheduled.
const podNodeIndex = "schedext.pods.byNode"

// NodeLabeler keeps schedv1.NodeLabelCPUScheduler on each node equal to
// what the node's kernel reports: the scheduler of the SchedExt that keeps
// the node (Owner, as arbitration decides) while that SchedExt's loader pod
// on it is Ready, its readiness probe being the attach check; no label
// otherwise. The value comes from the pod (its schedv1.LabelCPUScheduler),
// not the SchedExt's spec, so a pod still running the scheduler a spec
// change replaces labels its node with the one actually attached.
//
// It reconciles nodes, not SchedExts, so every way a label can go stale
// (a detach, a selection change, an older SchedExt taking the node, a
// SchedExt deleted, someone editing the label) is one question about one
// node, and the answer does not depend on which event asked it. A deleted
// SchedExt needs no finalizer: its delete event maps to the nodes it
// selected, and when the operator starts every node is reconciled, so a
// label left while the operator was down is removed then.
//
// It writes only that label, with a merge patch naming the node's UID, and
// only when the label is wrong (the admission policy
// kubectl-sched-operator-node-patch refuses any other node change by the
// operator). It records no event: the SchedExt's Attached and NotAttached
// events already say it, and one per node would be noise; the log names
// each change.
type NodeLabeler struct {
	client.Client
	// Namespace is the scheduler namespace, where the loader pods run.
	Namespace string
}

// +kubebuilder:rbac:groups="",resources=nodes,verbs=get;list;watch;patch

// Reconcile sets or removes one node's CPU scheduler label.
func (r *NodeLabeler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	node := &corev1.Node{}
	if err := r.Get(ctx, req.NamespacedName, node); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !node.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, nil
	}
	var all schedv1.SchedExtList
	if err := r.List(ctx, &all, client.UnsafeDisableDeepCopy); err != nil {
		return ctrl.Result{}, err
	}
	owner := Owner(all.Items, node)
	want := ""
	if owner != "" {
		var pods corev1.PodList
		if err := r.List(ctx, &pods, client.InNamespace(r.Namespace), client.MatchingFields{podNodeIndex: owner + "/" + node.Name}); err != nil {
			return ctrl.Result{}, err
		}
		want = AttachedScheduler(pods.Items, names.DaemonSet(owner))
	}
	have, labelled := node.Labels[schedv1.NodeLabelCPUScheduler]
	if (want == "" && !labelled) || (want != "" && have == want) {
		return ctrl.Result{}, nil
	}
	if err := r.Patch(ctx, node, client.RawPatch(types.MergePatchType, labelPatch(node.UID, want))); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	lg := log.FromContext(ctx)
	if want == "" {
		lg.Info("Removed the CPU scheduler label from a node", "node", node.Name, "was", have, "schedExt", owner)
	} else {
		lg.Info("Labelled a node with the CPU scheduler its kernel runs", "node", node.Name, "cpuScheduler", want, "was", have, "schedExt", owner)
	}
	return ctrl.Result{}, nil
}

// labelPatch sets the label to value, or removes it when value is "". The
// UID makes the patch fail on a node recreated under the same name, which
// gets its own reconcile.
func labelPatch(uid types.UID, value string) []byte {
	var v any
	if value != "" {
		v = value
	}
	data, err := json.Marshal(map[string]any{"metadata": map[string]any{
		"uid":    uid,
		"labels": map[string]any{schedv1.NodeLabelCPUScheduler: v},
	}})
	if err != nil {
		// Marshalling strings cannot fail.
		panic(err)
	}
	return data
}

// AttachedScheduler is the scheduler the kernel reports attached, from
// the owner's loader pods on one node (those its DaemonSet, daemonSet,
// controls): the LabelCPUScheduler of its Ready pods, not being deleted,
// when they agree; "" when none is Ready, when a Ready pod's check accepts
// any scheduler (no label), or when they disagree.
func AttachedScheduler(pods []corev1.Pod, daemonSet string) string {
	found := ""
	for i := range pods {
		p := &pods[i]
		ref := metav1.GetControllerOf(p)
		if ref == nil || ref.Kind != "DaemonSet" || ref.Name != daemonSet || !p.DeletionTimestamp.IsZero() || !podReady(p) {
			continue
		}
		v := p.Labels[schedv1.LabelCPUScheduler]
		if v == "" || (found != "" && v != found) {
			return ""
		}
		found = v
	}
	return found
}

// SetupWithManager watches nodes, the loader pods and SchedExts, and maps
// each event to the nodes whose label it may change. It never polls.
func (r *NodeLabeler) SetupWithManager(mgr ctrl.Manager, opts controller.Options) error {
	if err := mgr.GetFieldIndexer().IndexField(context.Background(), &corev1.Pod{}, podNodeIndex, func(o client.Object) []string {
		pod, ok := o.(*corev1.Pod)
		if !ok || pod.Namespace != r.Namespace || pod.Labels[schedv1.LabelSchedExt] == "" {
			return nil
		}
		if node := targetNode(pod); node != "" {
			return []string{pod.Labels[schedv1.LabelSchedExt] + "/" + node}
		}
		return nil
	}); err != nil {
		return err
	}
	podNode := handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []reconcile.Request {
		pod, ok := o.(*corev1.Pod)
		if !ok {
			return nil
		}
		if node := targetNode(pod); node != "" {
			return []reconcile.Request{{NamespacedName: types.NamespacedName{Name: node}}}
		}
		return nil
	})
	return ctrl.NewControllerManagedBy(mgr).
		For(&corev1.Node{}, builder.WithPredicates(nodeLabelInputs)).
		Watches(&corev1.Pod{}, podNode, builder.WithPredicates(loaderPods(r.Namespace), loaderChanged)).
		// Old and new spec are both mapped on an update, so nodes leaving
		// a selection are reconciled as well as those joining it.
		Watches(&schedv1.SchedExt{}, handler.EnqueueRequestsFromMapFunc(r.selectedNodes), builder.WithPredicates(claimChanged)).
		WithOptions(opts).
		Named("schedext-nodes").
		Complete(r)
}

// selectedNodes are the cached nodes a SchedExt selects: those whose
// owner its creation, change or deletion may change.
func (r *NodeLabeler) selectedNodes(ctx context.Context, o client.Object) []reconcile.Request {
	scx, ok := o.(*schedv1.SchedExt)
	if !ok {
		return nil
	}
	var nodes corev1.NodeList
	if err := r.List(ctx, &nodes, client.UnsafeDisableDeepCopy); err != nil {
		log.FromContext(ctx).Error(err, "Cannot list nodes to relabel", "schedExt", scx.Name)
		return nil
	}
	return watch.Requests(&nodes, func(n client.Object) bool { return Selects(scx, n.(*corev1.Node)) })
}

// nodeLabelInputs passes the node events that can change its label: a new
// node, its labels (the CPU scheduler label itself included, so an edit is
// undone) or taints changed, and the cache's periodic resync, which
// re-checks every node. Status heartbeats do not pass.
var nodeLabelInputs = watch.Filter[*corev1.Node]{
	Create: watch.Every[*corev1.Node],
	Update: func(old, cur *corev1.Node) bool {
		return old.ResourceVersion == cur.ResourceVersion ||
			!maps.Equal(old.Labels, cur.Labels) ||
			!equality.Semantic.DeepEqual(old.Spec.Taints, cur.Spec.Taints)
	},
}.Predicate()

// loaderPods passes the events of the loader pods, in the scheduler
// namespace ns and labelled with their SchedExt.
func loaderPods(ns string) predicate.Predicate {
	return predicate.NewPredicateFuncs(func(o client.Object) bool {
		return o.GetNamespace() == ns && o.GetLabels()[schedv1.LabelSchedExt] != ""
	})
}

// loaderChanged passes a loader pod created or deleted, and updates that
// change whether it is Ready, being deleted, its node or its scheduler.
var loaderChanged = watch.Changed(func(old, cur *corev1.Pod) bool {
	return podReady(old) != podReady(cur) ||
		old.DeletionTimestamp.IsZero() != cur.DeletionTimestamp.IsZero() ||
		targetNode(old) != targetNode(cur) ||
		old.Labels[schedv1.LabelCPUScheduler] != cur.Labels[schedv1.LabelCPUScheduler]
})

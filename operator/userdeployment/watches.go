package userdeployment

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
	"github.com/kubectl-sched/kubectl-sched/operator/expiry"
	"github.com/kubectl-sched/kubectl-sched/operator/placement"
	"github.com/kubectl-sched/kubectl-sched/operator/podsecurity"
	"github.com/kubectl-sched/kubectl-sched/operator/podstatus"
	"github.com/kubectl-sched/kubectl-sched/operator/watch"
)

// SetupWithManager watches UserDeployments, everything they own and their
// pods (whose states explain a service that does not become ready). The
// optional APIs are followed while the operator runs (optional.go).
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager, opts controller.Options) error {
	r.writer.Client = r.Client
	if err := r.setupOptionalAPIs(mgr); err != nil {
		return err
	}
	if err := mgr.GetFieldIndexer().IndexField(context.Background(), &schedv1.UserDeployment{}, indexHost, r.hostIndex); err != nil {
		return fmt.Errorf("index apps by host: %w", err)
	}
	if err := mgr.GetFieldIndexer().IndexField(context.Background(), &schedv1.UserDeployment{}, indexCPUScheduler, cpuSchedulerOf); err != nil {
		return fmt.Errorf("index apps by CPU scheduler: %w", err)
	}
	if err := mgr.GetFieldIndexer().IndexField(context.Background(), &autoscalingv2.HorizontalPodAutoscaler{}, indexScaleTarget, scaleTargetOf); err != nil {
		return fmt.Errorf("index autoscalers by target: %w", err)
	}
	appsOfCPUScheduler := placement.OnCPUSchedulerChange(mgr.GetClient(), func() client.ObjectList { return &schedv1.UserDeploymentList{} }, indexCPUScheduler)
	byAppLabel := handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []reconcile.Request {
		return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: o.GetNamespace(), Name: o.GetLabels()[schedv1.LabelUserDeployment]}}}
	})
	b := ctrl.NewControllerManagedBy(mgr).
		// Our own status writes change nothing to do.
		For(&schedv1.UserDeployment{}, builder.WithPredicates(predicate.Or(predicate.GenerationChangedPredicate{}, predicate.LabelChangedPredicate{}, predicate.AnnotationChangedPredicate{}))).
		Owns(&appsv1.Deployment{}).
		Owns(&appsv1.StatefulSet{}).
		Owns(&corev1.Service{}).
		Owns(&corev1.ConfigMap{}).
		Owns(&networkingv1.Ingress{}).
		Owns(&networkingv1.NetworkPolicy{}).
		// A revision deleted or edited out of band is recorded again.
		Owns(&appsv1.ControllerRevision{}).
		Watches(&corev1.Pod{}, byAppLabel, builder.WithPredicates(podCauseChanged)).
		// An autoscaler added or removed changes who sets replicas; its
		// status, rewritten on every sync, changes nothing here.
		Watches(&autoscalingv2.HorizontalPodAutoscaler{}, handler.EnqueueRequestsFromMapFunc(r.appOfScaleTarget),
			builder.WithPredicates(scaleTargetChanged)).
		// A host's holder letting go (deleted, or routing another host)
		// hands it to the next claimant. Both the old and the new object
		// are mapped on an update.
		Watches(&schedv1.UserDeployment{}, handler.EnqueueRequestsFromMapFunc(r.otherClaimants),
			builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		// A namespace's allow-list decides which hosts outside the ingress
		// domain its apps may route.
		Watches(&corev1.Namespace{}, handler.EnqueueRequestsFromMapFunc(r.appsOfNamespace),
			builder.WithPredicates(allowedHostsChanged)).
		// An admin removing a namespace's opt-out stops its privileged
		// services; setting it starts them.
		Watches(&corev1.Namespace{}, podsecurity.OnOptOutChange(mgr.GetClient(),
			func() client.ObjectList { return &schedv1.UserDeploymentList{} },
			func(o client.Object) bool { return len(privilegeAsked(o.(*schedv1.UserDeployment))) > 0 }),
			builder.WithPredicates(podsecurity.OptOutChanged)).
		// Apps that ask for a CPU scheduler: a node losing it has pods to
		// move off (cpuscheduler.go), one gaining it somewhere to move
		// them to, and a SchedExt that loads it changes what the status
		// says of pods waiting for it.
		Watches(&corev1.Node{}, appsOfCPUScheduler, builder.WithPredicates(placement.CPUSchedulerLabelChanged)).
		Watches(&schedv1.SchedExt{}, appsOfCPUScheduler, builder.WithPredicates(placement.SchedExtOfferChanged)).
		// The tier's default PriorityClass and its bound on revisions,
		// which the tenant controller publishes on its quota, reach every
		// app of the namespace.
		Watches(&corev1.ResourceQuota{}, expiry.OnTierChange(mgr.GetClient(), func() client.ObjectList { return &schedv1.UserDeploymentList{} }),
			builder.WithPredicates(tierLimitsChanged))

	// Routes of every namespace: one appearing or going may hold or free
	// an app's host. IngressRoutes are added while Traefik is served.
	var err error
	if r.routes, err = r.newRouteCache(mgr); err != nil {
		return err
	}
	b = b.WatchesRawSource(source.Kind(r.routes, client.Object(&networkingv1.Ingress{}), handler.EnqueueRequestsFromMapFunc(r.appsOfRoute), routeChanged)).
		WatchesRawSource(optionalSource{r})
	return b.
		WithOptions(opts).
		Named("userdeployment").
		Complete(r)
}

// tierLimitsChanged passes a tier quota's creation, and the updates that
// change what an app's objects are built with (tiers.LimitsFromQuota);
// never its status, which changes with every pod.
var tierLimitsChanged = watch.Filter[*corev1.ResourceQuota]{
	Create: isTierQuota,
	Delete: isTierQuota,
	Update: func(o, n *corev1.ResourceQuota) bool {
		return isTierQuota(n) &&
			(o.Labels[schedv1.LabelTier] != n.Labels[schedv1.LabelTier] ||
				o.Annotations[schedv1.AnnotationTierDefaultPriorityClass] != n.Annotations[schedv1.AnnotationTierDefaultPriorityClass] ||
				o.Annotations[schedv1.AnnotationTierMaxRevisions] != n.Annotations[schedv1.AnnotationTierMaxRevisions])
	},
}.Predicate()

func isTierQuota(q *corev1.ResourceQuota) bool {
	return q.Name == schedv1.TierObjectName && q.Labels[schedv1.LabelManagedBy] == schedv1.ManagedByValue
}

// allowedHostsChanged passes a namespace whose allow-list annotation
// changed; a new namespace has no apps yet.
var allowedHostsChanged = watch.Updated(func(o, n *corev1.Namespace) bool {
	return o.Annotations[schedv1.AnnotationAllowedHosts] != n.Annotations[schedv1.AnnotationAllowedHosts]
})

// podCauseChanged passes the pod events that can change an app's status:
// the status reads pods only for why they do not run or what they wait for
// (podstatus.Cause, podstatus.Starting), and takes replica counts from the
// Deployments. A pod's other updates (scheduled, ready, IPs) change
// neither.
var podCauseChanged = watch.Filter[*corev1.Pod]{
	Create: func(p *corev1.Pod) bool { return isAppPod(p) && podCause(p) != "" },
	Update: func(old, cur *corev1.Pod) bool {
		return isAppPod(cur) &&
			((old.DeletionTimestamp != nil) != (cur.DeletionTimestamp != nil) || podCause(old) != podCause(cur))
	},
	Delete: isAppPod,
}.Predicate()

// scaleTargetChanged passes autoscalers created or deleted, and updates
// that point one at another workload.
var scaleTargetChanged = watch.Changed(func(old, cur *autoscalingv2.HorizontalPodAutoscaler) bool {
	return old.Spec.ScaleTargetRef != cur.Spec.ScaleTargetRef
})

func isAppPod(p *corev1.Pod) bool {
	_, ok := p.Labels[schedv1.LabelUserDeployment]
	return ok
}

func podCause(pod *corev1.Pod) string {
	if reason, msg := podstatus.Cause(pod); reason != "" {
		return reason + ": " + msg
	}
	if reason, msg := podstatus.Starting(pod); reason != "" {
		return reason + ": " + msg
	}
	return ""
}

// appOfScaleTarget maps an autoscaler to the app whose workload it scales.
func (r *Reconciler) appOfScaleTarget(ctx context.Context, o client.Object) []reconcile.Request {
	hpa, ok := o.(*autoscalingv2.HorizontalPodAutoscaler)
	if !ok {
		return nil
	}
	key := types.NamespacedName{Namespace: hpa.Namespace, Name: hpa.Spec.ScaleTargetRef.Name}
	var target client.Object
	switch hpa.Spec.ScaleTargetRef.Kind {
	case "Deployment":
		target = &appsv1.Deployment{}
	case "StatefulSet":
		target = &appsv1.StatefulSet{}
	default:
		return nil
	}
	if err := r.Get(ctx, key, target); err != nil {
		return nil // not one of ours: the cache holds only labelled workloads
	}
	if app := target.GetLabels()[schedv1.LabelUserDeployment]; app != "" {
		return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: hpa.Namespace, Name: app}}}
	}
	return nil
}

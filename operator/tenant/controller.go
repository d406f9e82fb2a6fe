package tenant

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
	"github.com/kubectl-sched/kubectl-sched/operator/netpol"
	"github.com/kubectl-sched/kubectl-sched/operator/phase"
	"github.com/kubectl-sched/kubectl-sched/operator/status"
	"github.com/kubectl-sched/kubectl-sched/operator/watch"
)

const fieldOwner = "kubectl-sched-operator"

// Reconciler applies a tenant namespace's tier.
type Reconciler struct {
	client.Client
	Recorder events.EventRecorder
	// Namespace holds the tiers ConfigMap (the operator's own).
	Namespace string
	// PriorityClasses maps placement priorities to PriorityClass names
	// (the operator's settings), to find the classes above a tier's
	// highest priority.
	PriorityClasses map[string]string
	// NetworkPolicies keeps each tenant namespace's NetworkPolicy
	// TenantNetworkPolicyName; off, the controller removes its own.
	NetworkPolicies bool
	// Platform names the ingress and monitoring namespaces that tenant
	// namespaces admit.
	Platform netpol.Platform
	// Serves says whether the operator serves a namespace
	// (--namespace-selector); every namespace when nil. A tier is applied
	// only to a namespace served: the caches hold nothing of the others.
	Serves func(*corev1.Namespace) bool

	// tiers caches the tiers ConfigMap and nothing else: the manager's
	// cache keeps only ConfigMaps labelled as the operator's, a label the
	// tiers ConfigMap, which an admin edits, does not carry.
	tiers cache.Cache
	// recounts paces the requests that the quota controller count a
	// tier quota again (recount.go).
	recounts recounts
	// writes are the applies the cache may not have seen yet.
	writes status.Expectations
}

// +kubebuilder:rbac:groups="",resources=namespaces,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=resourcequotas,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups="",resources=limitranges,verbs=get;list;watch;create;patch
// +kubebuilder:rbac:groups="",resources=configmaps,verbs=get;list;watch
// +kubebuilder:rbac:groups=networking.k8s.io,resources=networkpolicies,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups=scheduling.k8s.io,resources=priorityclasses,verbs=get;list;watch

// Reconcile applies the tier of one namespace. Everything it reads comes
// from caches, and it writes only what differs from them, so a reconcile
// that finds the namespace as its tier wants it makes no request.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	ns := &corev1.Namespace{}
	if err := r.Get(ctx, req.NamespacedName, ns); err != nil {
		if apierrors.IsNotFound(err) {
			r.forget(req.Name)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	tierName := ns.Labels[schedv1.LabelTier]
	if tierName == "" || !ns.DeletionTimestamp.IsZero() || !r.serves(ns) {
		r.forget(ns.Name)
		return ctrl.Result{}, nil
	}
	s := &scope{ns: ns, tierName: tierName}
	return phase.Run(ctx, s, r.readTier, r.applyTier, r.dropPriorityQuota, r.syncNetworkPolicy, r.recountQuota)
}

// scope is what one reconcile of a tenant namespace read and decided,
// passed through its phases in order.
type scope struct {
	ns       *corev1.Namespace
	tierName string
	desired  Desired
	// quota is the tier quota as built, for the recount: an apply fills
	// the object it sends with the server's answer (managed fields,
	// resourceVersion), which a second apply of it must not carry.
	quota *corev1.ResourceQuota
}

// readTier reads the namespace's tier from the tiers ConfigMap and builds
// its objects. A tier that is not there is told in an event, and waits
// for the ConfigMap to change.
func (r *Reconciler) readTier(ctx context.Context, s *scope) (phase.Result, error) {
	cm := &corev1.ConfigMap{}
	err := r.tiers.Get(ctx, types.NamespacedName{Namespace: r.Namespace, Name: schedv1.TiersConfigMap}, cm)
	if apierrors.IsNotFound(err) {
		r.Recorder.Eventf(s.ns, nil, corev1.EventTypeWarning, schedv1.ReasonTiersMissing, "ApplyTier", "no ConfigMap %s/%s defines the tiers; install it (kubectl sched install)", r.Namespace, schedv1.TiersConfigMap)
		return phase.StopFor(0), nil
	}
	if err != nil {
		return phase.Result{}, err
	}
	tiers, bad := ParseTiers(cm)
	tier, ok := tiers[s.tierName]
	if !ok {
		why := fmt.Sprintf("tier %q is not defined in ConfigMap %s/%s; defined: %s", s.tierName, r.Namespace, schedv1.TiersConfigMap, strings.Join(Names(tiers), ", "))
		if err := bad[s.tierName]; err != nil {
			why = fmt.Sprintf("tier %q in ConfigMap %s/%s does not parse: %v", s.tierName, r.Namespace, schedv1.TiersConfigMap, err)
		}
		r.Recorder.Eventf(s.ns, nil, corev1.EventTypeWarning, schedv1.ReasonUnknownTier, "ApplyTier", "%s", why)
		log.FromContext(ctx).Info("Tier not applied", "namespace", s.ns.Name, "reason", why)
		return phase.StopFor(0), nil
	}
	var classes schedulingv1.PriorityClassList
	if err := r.List(ctx, &classes); err != nil {
		return phase.Result{}, err
	}
	s.desired = Objects(s.ns.Name, s.tierName, tier, classes.Items, r.PriorityClasses)
	s.quota = s.desired.Objects[0].(*corev1.ResourceQuota).DeepCopy()
	return phase.Result{}, nil
}

// applyTier applies the tier's objects.
func (r *Reconciler) applyTier(ctx context.Context, s *scope) (phase.Result, error) {
	for _, obj := range s.desired.Objects {
		if err := r.apply(ctx, obj); err != nil {
			return phase.Result{}, fmt.Errorf("apply %T %s of tier %s: %w", obj, obj.GetName(), s.tierName, err)
		}
	}
	return phase.Result{}, nil
}

// dropPriorityQuota deletes the quota on the classes above the tier when
// the tier no longer has one.
func (r *Reconciler) dropPriorityQuota(ctx context.Context, s *scope) (phase.Result, error) {
	if s.desired.PriorityQuota {
		return phase.Result{}, nil
	}
	return phase.Result{}, r.deleteOurs(ctx, &corev1.ResourceQuota{}, s.ns.Name, schedv1.TierPriorityQuotaName)
}

// syncNetworkPolicy applies the tenant's NetworkPolicy, or deletes the
// controller's own when they are off.
func (r *Reconciler) syncNetworkPolicy(ctx context.Context, s *scope) (phase.Result, error) {
	if !r.NetworkPolicies {
		return phase.Result{}, r.deleteOurs(ctx, &networkingv1.NetworkPolicy{}, s.ns.Name, schedv1.TenantNetworkPolicyName)
	}
	if err := r.apply(ctx, NetworkPolicy(s.ns.Name, s.tierName, r.Platform)); err != nil {
		return phase.Result{}, fmt.Errorf("apply NetworkPolicy %s of tier %s: %w", schedv1.TenantNetworkPolicyName, s.tierName, err)
	}
	return phase.Result{}, nil
}

// recountQuota has the tier quota recounted when its usage lags (recount).
func (r *Reconciler) recountQuota(ctx context.Context, s *scope) (phase.Result, error) {
	res, err := r.recount(ctx, s.ns, s.quota)
	return phase.Requeue(res.RequeueAfter), err
}

// forget drops what the controller remembers of namespace ns.
func (r *Reconciler) forget(ns string) {
	r.recounts.forget(ns)
	r.writes.ForgetNamespace(ns)
}

// apply writes obj unless the cache already holds it as desired, or holds
// a version older than the controller's own write of it as desired (a
// reconcile from a cache that has not seen the write yet, another event of
// the same object having come first, such as the quota controller's
// recount after a spec edit, would apply the same again).
func (r *Reconciler) apply(ctx context.Context, obj client.Object) error {
	cached := obj.DeepCopyObject().(client.Object)
	err := r.Get(ctx, client.ObjectKeyFromObject(obj), cached)
	// pending first: it also drops a write the cache has caught up with.
	if err == nil && (pending(&r.writes, obj, cached) || UpToDate(obj, cached)) {
		return nil
	}
	if err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	from := ""
	if err == nil {
		from = cached.GetResourceVersion()
	}
	sent := obj.DeepCopyObject().(client.Object)
	if err := r.Patch(ctx, obj, client.Apply, client.FieldOwner(fieldOwner), client.ForceOwnership); err != nil {
		return err
	}
	r.writes.Wrote(status.KeyOf(sent), from, obj.GetResourceVersion(), sent)
	return nil
}

// pending reports whether cached predates the controller's last write of
// the object and that write was desired as it is now: the write stands,
// and the cache will show it. Once the cache has caught up, the
// expectation goes and the cache decides.
func pending(writes *status.Expectations, desired, cached client.Object) bool {
	sent, unseen := writes.Unseen(status.KeyOf(desired), cached.GetResourceVersion())
	applied, ok := sent.(client.Object)
	return unseen && ok && UpToDate(desired, applied)
}

// deleteOurs deletes the object ns/name of obj's kind if this controller
// made it (it carries the operator's label), and nothing someone else made.
func (r *Reconciler) deleteOurs(ctx context.Context, obj client.Object, ns, name string) error {
	err := r.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, obj)
	if apierrors.IsNotFound(err) || (err == nil && obj.GetLabels()[schedv1.LabelManagedBy] != schedv1.ManagedByValue) {
		return nil
	}
	if err != nil {
		return err
	}
	uid := obj.GetUID()
	return client.IgnoreNotFound(r.Delete(ctx, obj, client.Preconditions{UID: &uid}))
}

// tiersCache puts the tiers cache among the manager's caches, which start
// and sync before the controllers.
type tiersCache struct{ cache.Cache }

func (c tiersCache) GetCache() cache.Cache { return c.Cache }

// SetupWithManager watches tenant namespaces, the objects made for them
// (to repair edits, but not on their status changes), the tiers ConfigMap
// and the PriorityClasses (to follow changes).
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager, opts controller.Options) error {
	if r.recounts.clock == nil {
		r.recounts.clock = clock.RealClock{}
	}
	tiers, err := cache.New(mgr.GetConfig(), cache.Options{
		Scheme: mgr.GetScheme(),
		Mapper: mgr.GetRESTMapper(),
		ByObject: map[client.Object]cache.ByObject{&corev1.ConfigMap{}: {
			Namespaces: map[string]cache.Config{r.Namespace: {}},
			Field:      fields.OneTermEqualSelector("metadata.name", schedv1.TiersConfigMap),
		}},
	})
	if err != nil {
		return err
	}
	if err := mgr.Add(tiersCache{tiers}); err != nil {
		return err
	}
	r.tiers = tiers

	tenant := predicate.NewPredicateFuncs(func(o client.Object) bool { return o.GetLabels()[schedv1.LabelTier] != "" })
	ours := watch.Filter[client.Object]{
		Create: isOurs,
		Delete: isOurs,
		Update: func(old, cur client.Object) bool {
			return (isOurs(old) || isOurs(cur)) && (specOrMetaChanged(old, cur) || countingChanged(old, cur))
		},
	}.Predicate()
	toNamespace := handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []reconcile.Request {
		return []reconcile.Request{{NamespacedName: types.NamespacedName{Name: o.GetNamespace()}}}
	})
	everyTenant := func(ctx context.Context) []reconcile.Request {
		var list corev1.NamespaceList
		if err := r.List(ctx, &list); err != nil {
			return nil
		}
		return watch.Requests(&list, func(o client.Object) bool {
			return o.GetLabels()[schedv1.LabelTier] != "" && r.serves(o.(*corev1.Namespace))
		})
	}
	tiersChanged := handler.TypedEnqueueRequestsFromMapFunc(func(ctx context.Context, _ *corev1.ConfigMap) []reconcile.Request {
		return everyTenant(ctx)
	})
	classesChanged := handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, _ client.Object) []reconcile.Request {
		return everyTenant(ctx)
	})
	// A class's value, or which class is the cluster's default, moves
	// the classes above each tier and the class its pods get by default.
	classValueChanged := watch.Changed(func(o, n *schedulingv1.PriorityClass) bool {
		return o.Value != n.Value || o.GlobalDefault != n.GlobalDefault
	})
	return ctrl.NewControllerManagedBy(mgr).
		For(&corev1.Namespace{}, builder.WithPredicates(tenant, predicate.Or(predicate.GenerationChangedPredicate{}, predicate.LabelChangedPredicate{}))).
		Watches(&corev1.ResourceQuota{}, toNamespace, builder.WithPredicates(ours)).
		Watches(&corev1.LimitRange{}, toNamespace, builder.WithPredicates(ours)).
		Watches(&networkingv1.NetworkPolicy{}, toNamespace, builder.WithPredicates(ours)).
		Watches(&schedulingv1.PriorityClass{}, classesChanged, builder.WithPredicates(classValueChanged)).
		WatchesRawSource(source.Kind(tiers, &corev1.ConfigMap{}, tiersChanged)).
		WithOptions(opts).
		Named("tenant").
		Complete(r)
}

func (r *Reconciler) serves(ns *corev1.Namespace) bool {
	return r.Serves == nil || r.Serves(ns)
}

// isOurs is true for the objects this controller makes.
func isOurs(o client.Object) bool {
	n := o.GetName()
	return (n == schedv1.TierObjectName || n == schedv1.TierPriorityQuotaName || n == schedv1.TenantNetworkPolicyName) && o.GetLabels()[schedv1.LabelManagedBy] == schedv1.ManagedByValue
}

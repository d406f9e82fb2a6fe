package tenant

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
	"github.com/kubectl-sched/kubectl-sched/operator/controlleropts"
)

const fieldOwner = "kubectl-sched-operator"

// Reconciler applies a tenant namespace's tier.
type Reconciler struct {
	client.Client
	// APIReader reads the tiers ConfigMap.
	APIReader client.Reader
	Recorder  events.EventRecorder
	// Namespace holds the tiers ConfigMap (the operator's own).
	Namespace string
}

// +kubebuilder:rbac:groups="",resources=namespaces,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=resourcequotas,verbs=get;list;watch;create;patch
// +kubebuilder:rbac:groups="",resources=limitranges,verbs=get;list;watch;create;patch
// +kubebuilder:rbac:groups="",resources=configmaps,verbs=get;list;watch

// Reconcile applies the tier of one namespace.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	ns := &corev1.Namespace{}
	if err := r.Get(ctx, req.NamespacedName, ns); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	tierName := ns.Labels[schedv1.LabelTier]
	if tierName == "" || !ns.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, nil
	}
	cm := &corev1.ConfigMap{}
	err := r.APIReader.Get(ctx, types.NamespacedName{Namespace: r.Namespace, Name: schedv1.TiersConfigMap}, cm)
	if apierrors.IsNotFound(err) {
		r.Recorder.Eventf(ns, nil, corev1.EventTypeWarning, "TiersMissing", "ApplyTier", "no ConfigMap %s/%s defines the tiers; install it (kubectl sched install)", r.Namespace, schedv1.TiersConfigMap)
		return ctrl.Result{}, nil
	}
	if err != nil {
		return ctrl.Result{}, err
	}
	tiers, bad := ParseTiers(cm)
	tier, ok := tiers[tierName]
	if !ok {
		why := fmt.Sprintf("tier %q is not defined in ConfigMap %s/%s; defined: %s", tierName, r.Namespace, schedv1.TiersConfigMap, strings.Join(Names(tiers), ", "))
		if err := bad[tierName]; err != nil {
			why = fmt.Sprintf("tier %q in ConfigMap %s/%s does not parse: %v", tierName, r.Namespace, schedv1.TiersConfigMap, err)
		}
		r.Recorder.Eventf(ns, nil, corev1.EventTypeWarning, "UnknownTier", "ApplyTier", "%s", why)
		log.FromContext(ctx).Info("Tier not applied", "namespace", ns.Name, "reason", why)
		return ctrl.Result{}, nil
	}
	for _, obj := range Objects(ns.Name, tierName, tier) {
		if err := r.Patch(ctx, obj, client.Apply, client.FieldOwner(fieldOwner), client.ForceOwnership); err != nil {
			return ctrl.Result{}, fmt.Errorf("apply %T of tier %s: %w", obj, tierName, err)
		}
	}
	return ctrl.Result{}, nil
}

// Objects are the ResourceQuota and LimitRange of a namespace of tier.
func Objects(ns, tierName string, tier Tier) []client.Object {
	meta := func() metav1.ObjectMeta {
		return metav1.ObjectMeta{Name: schedv1.TierObjectName, Namespace: ns, Labels: map[string]string{
			schedv1.LabelManagedBy: schedv1.ManagedByValue, schedv1.LabelTier: tierName,
		}}
	}
	objs := []client.Object{&corev1.ResourceQuota{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ResourceQuota"},
		ObjectMeta: meta(),
		Spec:       corev1.ResourceQuotaSpec{Hard: tier.Quota},
	}}
	if l := tier.Limits; l != nil {
		objs = append(objs, &corev1.LimitRange{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "LimitRange"},
			ObjectMeta: meta(),
			Spec: corev1.LimitRangeSpec{Limits: []corev1.LimitRangeItem{{
				Type: corev1.LimitTypeContainer, Default: l.Default, DefaultRequest: l.DefaultRequest, Max: l.Max,
			}}},
		})
	}
	return objs
}

// SetupWithManager watches tenant namespaces, the quota and limits made for
// them (to repair edits), and the tiers ConfigMap (to follow its changes).
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager, maxConcurrent int) error {
	tenant := predicate.NewPredicateFuncs(func(o client.Object) bool { return o.GetLabels()[schedv1.LabelTier] != "" })
	ours := predicate.NewPredicateFuncs(func(o client.Object) bool {
		return o.GetName() == schedv1.TierObjectName && o.GetLabels()[schedv1.LabelManagedBy] == schedv1.ManagedByValue
	})
	toNamespace := handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []reconcile.Request {
		return []reconcile.Request{{NamespacedName: types.NamespacedName{Name: o.GetNamespace()}}}
	})
	tiersChanged := handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, o client.Object) []reconcile.Request {
		if o.GetNamespace() != r.Namespace || o.GetName() != schedv1.TiersConfigMap {
			return nil
		}
		var list corev1.NamespaceList
		if err := r.List(ctx, &list); err != nil {
			return nil
		}
		var out []reconcile.Request
		for _, ns := range list.Items {
			if ns.Labels[schedv1.LabelTier] != "" {
				out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Name: ns.Name}})
			}
		}
		return out
	})
	return ctrl.NewControllerManagedBy(mgr).
		For(&corev1.Namespace{}, builder.WithPredicates(tenant, predicate.Or(predicate.GenerationChangedPredicate{}, predicate.LabelChangedPredicate{}))).
		Watches(&corev1.ResourceQuota{}, toNamespace, builder.WithPredicates(ours)).
		Watches(&corev1.LimitRange{}, toNamespace, builder.WithPredicates(ours)).
		Watches(&corev1.ConfigMap{}, tiersChanged).
		WithOptions(controlleropts.New(maxConcurrent)).
		Named("tenant").
		Complete(r)
}

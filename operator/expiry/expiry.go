// Package expiry decides when the operator deletes a finished AgentTask or
// Workflow: by its spec.ttlAfterFinished; in a namespace of a tier, by the
// tier's default and maximum, which the tenant controller publishes as
// annotations on the tier's ResourceQuota (where admission reads them too);
// and elsewhere, or where the tier has no default, by the install's
// --default-ttl. Finished runs count against the tier's count/ quotas
// until they go, and against etcd and the operator's caches everywhere,
// so a cluster without a default would fill up with history.
package expiry

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"

	"github.com/kubectl-sched/kubectl-sched/api/tiers"
	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
	"github.com/kubectl-sched/kubectl-sched/operator/watch"
)

// Rules are what decides a finished run's expiry besides its spec.
type Rules struct {
	// Tier holds the TTLs of the namespace's tier; nil when it has none.
	Tier *tiers.TTL
	// Default is the install's --default-ttl, for runs whose spec and
	// tier say nothing; 0: none.
	Default time.Duration
}

// Of reads the rules of namespace ns, with the install's default. Its
// tier is nil when the namespace has no tier, or its tier ResourceQuota
// is not there yet or is not the operator's (only the operator may set
// that label; anyone else's quota of the name is never trusted).
func Of(ctx context.Context, r client.Reader, ns string, installDefault time.Duration) (Rules, error) {
	rules := Rules{Default: installDefault}
	n := &corev1.Namespace{}
	if err := r.Get(ctx, types.NamespacedName{Name: ns}, n); err != nil {
		return rules, client.IgnoreNotFound(err)
	}
	name := n.Labels[schedv1.LabelTier]
	if name == "" {
		return rules, nil
	}
	q := &corev1.ResourceQuota{}
	err := r.Get(ctx, types.NamespacedName{Namespace: ns, Name: schedv1.TierObjectName}, q)
	if apierrors.IsNotFound(err) {
		return rules, nil
	}
	if err != nil {
		return rules, err
	}
	rules.Tier = tiers.TTLFromQuota(q, name)
	return rules, nil
}

// ForTask is when task is deleted once finished (completion, nil before),
// or nil when nothing deletes it:
//   - a workflow's step task goes with its workflow;
//   - spec.ttlAfterFinished with cleanup Task deletes it, within the tier's
//     maximum;
//   - with spec.ttlAfterFinished and cleanup Job (the Job goes then, the
//     task is kept) the tier's maximum bounds how long the task is kept;
//     without one, the install's default does, but never before its Job
//     goes;
//   - without a TTL, the tier's default applies, else the install's.
func ForTask(task *schedv1.AgentTask, completion *metav1.Time, r Rules) *schedv1.Expiry {
	if IsStepTask(task) {
		return nil
	}
	spec, tier := task.Spec.TTLAfterFinished, r.Tier
	switch {
	case spec != nil && task.Spec.Cleanup == schedv1.CleanupTask:
		return build(spec.Duration, schedv1.ExpiryFromSpec, completion, tier)
	case spec != nil && tier != nil && tier.Max > 0:
		return build(tier.Max, schedv1.ExpiryFromTierMaximum, completion, tier)
	case spec != nil && r.Default > 0:
		return build(max(r.Default, spec.Duration), schedv1.ExpiryFromInstallDefault, completion, tier)
	case spec != nil:
		return nil
	}
	return byDefault(completion, r)
}

// ForWorkflow is when wf is deleted once finished (completion, nil
// before), with its step tasks, or nil when nothing deletes it: its
// spec.ttlAfterFinished within the tier's maximum, else the tier's
// default, else the install's.
func ForWorkflow(wf *schedv1.Workflow, completion *metav1.Time, r Rules) *schedv1.Expiry {
	if spec := wf.Spec.TTLAfterFinished; spec != nil {
		return build(spec.Duration, schedv1.ExpiryFromSpec, completion, r.Tier)
	}
	return byDefault(completion, r)
}

// byDefault is the expiry of a run whose spec has no TTL: its tier's
// default, or the install's.
func byDefault(completion *metav1.Time, r Rules) *schedv1.Expiry {
	if r.Tier != nil && r.Tier.Default > 0 {
		return build(r.Tier.Default, schedv1.ExpiryFromTierDefault, completion, r.Tier)
	}
	return build(r.Default, schedv1.ExpiryFromInstallDefault, completion, r.Tier)
}

func build(ttl time.Duration, src schedv1.ExpirySource, completion *metav1.Time, tier *tiers.TTL) *schedv1.Expiry {
	if src != schedv1.ExpiryFromSpec && ttl <= 0 {
		return nil // no default (or maximum) says when
	}
	if tier != nil && tier.Max > 0 && ttl > tier.Max {
		// Asked before the tier was tightened (admission refuses it now),
		// or an install default above the tier's maximum.
		ttl, src = tier.Max, schedv1.ExpiryFromTierMaximum
	}
	e := &schedv1.Expiry{TTLAfterFinished: metav1.Duration{Duration: ttl}, Source: src}
	if src == schedv1.ExpiryFromTierDefault || src == schedv1.ExpiryFromTierMaximum {
		e.Tier = tier.Tier
	}
	if completion != nil {
		at := metav1.NewTime(completion.Add(ttl))
		e.DeleteTime = &at
	}
	return e
}

// IsStepTask reports whether a Workflow controls task: such a task is
// deleted with its workflow (by the garbage collector), never on its own.
// An owner reference to a workflow that does not exist gets the task
// deleted by the garbage collector, so claiming one escapes nothing.
func IsStepTask(task *schedv1.AgentTask) bool {
	ref := metav1.GetControllerOf(task)
	return ref != nil && ref.Kind == "Workflow" && ref.APIVersion == schedv1.GroupVersion.String()
}

// QuotaChanged passes the events of a tier ResourceQuota that change the
// TTLs it carries: its creation and deletion, and updates of its TTL
// annotations or tier label. Its status, which changes with every pod,
// never passes.
var QuotaChanged = watch.Filter[*corev1.ResourceQuota]{
	Create: isTierQuota,
	Delete: isTierQuota,
	Update: func(o, n *corev1.ResourceQuota) bool {
		return (isTierQuota(o) || isTierQuota(n)) &&
			(o.Labels[schedv1.LabelTier] != n.Labels[schedv1.LabelTier] ||
				o.Labels[schedv1.LabelManagedBy] != n.Labels[schedv1.LabelManagedBy] ||
				o.Annotations[schedv1.AnnotationTierTTLDefault] != n.Annotations[schedv1.AnnotationTierTTLDefault] ||
				o.Annotations[schedv1.AnnotationTierTTLMax] != n.Annotations[schedv1.AnnotationTierTTLMax])
	},
}.Predicate()

func isTierQuota(q *corev1.ResourceQuota) bool { return q.Name == schedv1.TierObjectName }

// TierLabelChanged passes the Namespace updates that set, change or remove
// its tier.
var TierLabelChanged = watch.Updated(func(o, n *corev1.Namespace) bool {
	return o.Labels[schedv1.LabelTier] != n.Labels[schedv1.LabelTier]
})

// OnTierChange enqueues every object of newList in the namespace of a tier
// quota (QuotaChanged) or in a Namespace (TierLabelChanged): their expiry
// follows the tier.
func OnTierChange(c client.Reader, newList func() client.ObjectList) handler.EventHandler {
	return watch.EnqueueListed(c, newList, watch.InNamespace, nil)
}

package tenant

import (
	"maps"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubectl-sched/kubectl-sched/api/tiers"
	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
	"github.com/kubectl-sched/kubectl-sched/operator/netpol"
)

// Desired is what a namespace of a tier should hold.
type Desired struct {
	// Objects are applied: the tier's ResourceQuota (carrying the
	// placement limits), its LimitRange when the tier has limits, and the
	// ResourceQuota that holds pods of classes above the tier's priority
	// when there are such classes.
	Objects []client.Object
	// PriorityQuota is false when no class is above the tier's priority:
	// the ResourceQuota TierPriorityQuotaName must not exist then (a
	// scope selector cannot be empty).
	PriorityQuota bool
}

// Objects are the objects of a namespace of tier. classes are the
// cluster's PriorityClasses and priorityClasses the operator's mapping of
// placement priorities to them.
func Objects(ns, tierName string, tier Tier, classes []schedulingv1.PriorityClass, priorityClasses map[string]string) Desired {
	meta := func(name string) metav1.ObjectMeta {
		return metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{
			schedv1.LabelManagedBy: schedv1.ManagedByValue, schedv1.LabelTier: tierName,
		}}
	}
	p := tier.Placement
	quota := &corev1.ResourceQuota{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ResourceQuota"},
		ObjectMeta: meta(schedv1.TierObjectName),
		Spec:       corev1.ResourceQuotaSpec{Hard: tier.Quota},
	}
	quota.Annotations = map[string]string{
		schedv1.AnnotationTierMaxPriority:          string(maxPriority(p)),
		schedv1.AnnotationTierNodePools:            strings.Join(p.NodePools, ","),
		schedv1.AnnotationTierTolerations:          strings.Join(p.Tolerations, ","),
		schedv1.AnnotationTierMaxTolerationSeconds: strconv.FormatInt(ptr.Deref(p.MaxTolerationSeconds, DefaultMaxTolerationSeconds), 10),
		schedv1.AnnotationTierTTLDefault:           ttl(tier.TTL.Default),
		schedv1.AnnotationTierTTLMax:               ttl(tier.TTL.Max),
		schedv1.AnnotationTierMaxRevisions:         revisions(tier.Apps.MaxRevisions),
		schedv1.AnnotationTierFileOutputBytes:      fileBytes(tier.Outputs.MaxFileBytes),
	}
	d := Desired{Objects: []client.Object{quota}}
	if l := tier.Limits; l != nil {
		item := corev1.LimitRangeItem{Type: corev1.LimitTypeContainer, Default: l.Default, DefaultRequest: l.DefaultRequest, Max: l.Max}
		defaultLimitRangeItem(&item)
		d.Objects = append(d.Objects, &corev1.LimitRange{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "LimitRange"},
			ObjectMeta: meta(schedv1.TierObjectName),
			Spec:       corev1.LimitRangeSpec{Limits: []corev1.LimitRangeItem{item}},
		})
	}
	above, top := classesAbove(maxPriority(p), classes, priorityClasses)
	quota.Annotations[schedv1.AnnotationTierDefaultPriorityClass] = defaultClass(above, top, classes)
	if len(above) > 0 {
		d.PriorityQuota = true
		d.Objects = append(d.Objects, &corev1.ResourceQuota{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ResourceQuota"},
			ObjectMeta: meta(schedv1.TierPriorityQuotaName),
			Spec: corev1.ResourceQuotaSpec{
				Hard: corev1.ResourceList{corev1.ResourcePods: resource.MustParse("0")},
				ScopeSelector: &corev1.ScopeSelector{MatchExpressions: []corev1.ScopedResourceSelectorRequirement{{
					ScopeName: corev1.ResourceQuotaScopePriorityClass, Operator: corev1.ScopeSelectorOpIn, Values: above,
				}}},
			},
		})
	}
	return d
}

// NetworkPolicy is the tenant namespace's default deny of other tenants
// (netpol.TenantSpec).
func NetworkPolicy(ns, tierName string, p netpol.Platform) *networkingv1.NetworkPolicy {
	return &networkingv1.NetworkPolicy{
		TypeMeta: metav1.TypeMeta{APIVersion: "networking.k8s.io/v1", Kind: "NetworkPolicy"},
		ObjectMeta: metav1.ObjectMeta{Name: schedv1.TenantNetworkPolicyName, Namespace: ns, Labels: map[string]string{
			schedv1.LabelManagedBy: schedv1.ManagedByValue, schedv1.LabelTier: tierName,
		}},
		Spec: netpol.TenantSpec(p),
	}
}

func revisions(n *int32) string {
	if n == nil {
		return ""
	}
	return strconv.Itoa(int(*n))
}

func fileBytes(q *resource.Quantity) string {
	if q == nil {
		return ""
	}
	return strconv.FormatInt(q.Value(), 10)
}

func ttl(d *metav1.Duration) string {
	if d == nil {
		return ""
	}
	return tiers.FormatDuration(d.Duration)
}

func maxPriority(p PlacementLimits) schedv1.Priority {
	if p.MaxPriority == "" {
		return schedv1.PriorityLow
	}
	return p.MaxPriority
}

// ClassesAbove names, sorted, the PriorityClasses whose value is above
// every class the priorities up to max map to (or above 0, the default
// priority, when none of those classes exists): the classes a pod of the
// tier may not use, whether the operator or a user creates it.
func ClassesAbove(max schedv1.Priority, classes []schedulingv1.PriorityClass, priorityClasses map[string]string) []string {
	above, _ := classesAbove(max, classes, priorityClasses)
	return above
}

// defaultClass is the class the operator gives a tier's pods that name
// none, when the cluster's default class (globalDefault) is one of those
// above the tier: the API server would give them that class, and the
// tier's priority quota would refuse every one. They get top, the highest
// class of the tier's own priorities, instead; "" when the default class
// is not above the tier (or there is no default class, or no class of the
// tier's priorities to use).
func defaultClass(above []string, top string, classes []schedulingv1.PriorityClass) string {
	for _, c := range classes {
		if c.GlobalDefault && slices.Contains(above, c.Name) {
			return top
		}
	}
	return ""
}

// classesAbove is ClassesAbove, and the highest class of the priorities up
// to max that exists ("" when none does).
func classesAbove(max schedv1.Priority, classes []schedulingv1.PriorityClass, priorityClasses map[string]string) (above []string, top string) {
	from := slices.Index(schedv1.Priorities, max)
	if from < 0 {
		from = len(schedv1.Priorities) - 1 // Low
	}
	allowed := map[string]bool{}
	for _, level := range schedv1.Priorities[from:] {
		if c := priorityClasses[string(level)]; c != "" {
			allowed[c] = true
		}
	}
	threshold, found := int32(0), false
	for _, c := range classes {
		if allowed[c.Name] && (!found || c.Value > threshold) {
			threshold, found, top = c.Value, true, c.Name
		}
	}
	for _, c := range classes {
		if c.Value > threshold {
			above = append(above, c.Name)
		}
	}
	slices.Sort(above)
	return above, top
}

// defaultLimitRangeItem does what the API server's defaulting does to a
// Container item, so the desired item compares equal to the stored one.
func defaultLimitRangeItem(item *corev1.LimitRangeItem) {
	fill := func(dst *corev1.ResourceList, src corev1.ResourceList) {
		for k, v := range src {
			if *dst == nil {
				*dst = corev1.ResourceList{}
			}
			if _, ok := (*dst)[k]; !ok {
				(*dst)[k] = v.DeepCopy()
			}
		}
	}
	fill(&item.Default, item.Max)
	fill(&item.DefaultRequest, item.Default)
}

// UpToDate reports whether actual (from the cache) already is desired:
// the same spec, and every label and annotation desired with its value.
// Others' labels and annotations do not matter; server-side apply would
// leave them too.
func UpToDate(desired, actual client.Object) bool {
	if !subset(desired.GetLabels(), actual.GetLabels()) || !subset(desired.GetAnnotations(), actual.GetAnnotations()) {
		return false
	}
	switch d := desired.(type) {
	case *corev1.ResourceQuota:
		a, ok := actual.(*corev1.ResourceQuota)
		return ok && equality.Semantic.DeepEqual(d.Spec, a.Spec)
	case *corev1.LimitRange:
		a, ok := actual.(*corev1.LimitRange)
		return ok && equality.Semantic.DeepEqual(d.Spec, a.Spec)
	case *networkingv1.NetworkPolicy:
		a, ok := actual.(*networkingv1.NetworkPolicy)
		return ok && equality.Semantic.DeepEqual(d.Spec, a.Spec)
	}
	return false
}

func subset(want, have map[string]string) bool {
	for k, v := range want {
		if got, ok := have[k]; !ok || got != v {
			return false
		}
	}
	return true
}

// specOrMetaChanged is true when an update changed more than the status:
// a ResourceQuota's status changes with every pod created or deleted in
// its namespace, which is no reason to look at the tier again.
func specOrMetaChanged(old, new client.Object) bool {
	if !maps.Equal(old.GetLabels(), new.GetLabels()) || !maps.Equal(old.GetAnnotations(), new.GetAnnotations()) {
		return true
	}
	switch o := old.(type) {
	case *corev1.ResourceQuota:
		n, ok := new.(*corev1.ResourceQuota)
		return !ok || !equality.Semantic.DeepEqual(o.Spec, n.Spec)
	case *corev1.LimitRange:
		n, ok := new.(*corev1.LimitRange)
		return !ok || !equality.Semantic.DeepEqual(o.Spec, n.Spec)
	case *networkingv1.NetworkPolicy:
		n, ok := new.(*networkingv1.NetworkPolicy)
		return !ok || !equality.Semantic.DeepEqual(o.Spec, n.Spec)
	}
	return true
}

// countingChanged is true when a ResourceQuota status update changes
// whether the quota controller has seen its spec or what it leaves
// uncounted (see recount.go); the usage itself changes with every pod and
// never passes.
func countingChanged(old, new client.Object) bool {
	o, ok1 := old.(*corev1.ResourceQuota)
	n, ok2 := new.(*corev1.ResourceQuota)
	if !ok1 || !ok2 {
		return false
	}
	return tiers.Synced(o) != tiers.Synced(n) || !slices.Equal(tiers.Uncounted(o), tiers.Uncounted(n))
}

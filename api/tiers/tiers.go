// Package tiers reads what a tenant namespace's tier ResourceQuota carries
// (the operator's tenant controller writes it), for the operator and the
// plugin alike: the tier's TTLs and limits, and whether the cluster's quota
// controller counts everything the quota limits.
package tiers

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
)

// TTL is what a namespace's tier says about ttlAfterFinished.
type TTL struct {
	Tier string
	// Default applies to tasks and workflows whose spec has none; 0: none.
	Default time.Duration
	// Max bounds every TTL; 0: none.
	Max time.Duration
}

// TTLFromQuota reads the TTLs a tier's ResourceQuota carries; nil when the
// quota is not the operator's, or is not of tier (a namespace whose tier
// changed a moment ago). tier "" takes the quota's own tier label.
func TTLFromQuota(q *corev1.ResourceQuota, tier string) *TTL {
	if q.Labels[schedv1.LabelManagedBy] != schedv1.ManagedByValue {
		return nil
	}
	if tier == "" {
		tier = q.Labels[schedv1.LabelTier]
	}
	if tier == "" || q.Labels[schedv1.LabelTier] != tier {
		return nil
	}
	return &TTL{
		Tier:    tier,
		Default: parse(q.Annotations[schedv1.AnnotationTierTTLDefault]),
		Max:     parse(q.Annotations[schedv1.AnnotationTierTTLMax]),
	}
}

// Limits is what a namespace's tier says of the objects the operator
// makes for it, from its tier ResourceQuota.
type Limits struct {
	Tier string
	// DefaultPriorityClass is the PriorityClass of the pods the operator
	// makes that name none: the cluster's default class is above the
	// tier, and its priority quota would refuse them. "": none needed.
	DefaultPriorityClass string
	// MaxRevisions bounds the revisions kept of an app; 0: no bound.
	MaxRevisions int
	// FileOutputBytes bounds a task's file outputs, in bytes; 0: the
	// API's own bound (schedv1.MaxFileOutputBytes).
	FileOutputBytes int
}

// LimitsFromQuota reads the limits a tier's ResourceQuota carries; nil
// when the quota is not the operator's, or is not of tier (as
// TTLFromQuota).
func LimitsFromQuota(q *corev1.ResourceQuota, tier string) *Limits {
	t := TTLFromQuota(q, tier)
	if t == nil {
		return nil
	}
	l := &Limits{Tier: t.Tier, DefaultPriorityClass: q.Annotations[schedv1.AnnotationTierDefaultPriorityClass]}
	if n, err := strconv.Atoi(q.Annotations[schedv1.AnnotationTierMaxRevisions]); err == nil && n > 0 {
		l.MaxRevisions = n
	}
	if n, err := strconv.Atoi(q.Annotations[schedv1.AnnotationTierFileOutputBytes]); err == nil && n > 0 {
		l.FileOutputBytes = n
	}
	return l
}

// LimitsOf reads the limits of namespace ns's tier through r (the
// operator's cache); nil when the namespace has no tier, or its tier
// quota is not there yet or not the operator's.
func LimitsOf(ctx context.Context, r client.Reader, ns string) (*Limits, error) {
	n := &corev1.Namespace{}
	if err := r.Get(ctx, types.NamespacedName{Name: ns}, n); err != nil {
		return nil, client.IgnoreNotFound(err)
	}
	tier := n.Labels[schedv1.LabelTier]
	if tier == "" {
		return nil, nil
	}
	q := &corev1.ResourceQuota{}
	if err := r.Get(ctx, types.NamespacedName{Namespace: ns, Name: schedv1.TierObjectName}, q); err != nil {
		return nil, client.IgnoreNotFound(err)
	}
	return LimitsFromQuota(q, tier), nil
}

// HistoryLimit is how many revisions of app the operator keeps: its
// spec.revisionHistoryLimit (or the default), at most the tier's
// MaxRevisions.
func (l *Limits) HistoryLimit(spec *schedv1.UserDeploymentSpec) int {
	n := spec.HistoryLimit()
	if l != nil && l.MaxRevisions > 0 {
		n = min(n, l.MaxRevisions)
	}
	return n
}

func parse(s string) time.Duration {
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return 0
	}
	return d
}

// FormatDuration writes d as a person would: 15m, 24h, 1h30m (Go's String
// writes 24h0m0s). time.ParseDuration and CEL's duration() read it back.
func FormatDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// Why says what set an expiry: "its spec.ttlAfterFinished", "tier free's
// default ttlAfterFinished", "tier free's maximum ttlAfterFinished", "the
// cluster's default ttlAfterFinished".
func Why(e *schedv1.Expiry) string {
	switch e.Source {
	case schedv1.ExpiryFromInstallDefault:
		return "the cluster's default ttlAfterFinished"
	case schedv1.ExpiryFromTierDefault:
		return "tier " + e.Tier + "'s default ttlAfterFinished"
	case schedv1.ExpiryFromTierMaximum:
		return "tier " + e.Tier + "'s maximum ttlAfterFinished"
	}
	return "its spec.ttlAfterFinished"
}

// Synced reports whether the cluster's quota controller has seen q's
// current spec: status.hard is spec.hard.
func Synced(q *corev1.ResourceQuota) bool {
	return q.Status.Hard != nil && equality.Semantic.DeepEqual(q.Spec.Hard, q.Status.Hard)
}

// Uncounted lists, sorted, what q limits that the cluster's quota
// controller has not counted (status.used lacks it). Until it has, the
// API server refuses every create of those kinds in the namespace with
// "status unknown for quota". The operator's recount marker is never
// counted and is left out.
func Uncounted(q *corev1.ResourceQuota) []corev1.ResourceName {
	var out []corev1.ResourceName
	for r := range q.Spec.Hard {
		if r == schedv1.QuotaRecountResource {
			continue
		}
		if _, ok := q.Status.Used[r]; !ok {
			out = append(out, r)
		}
	}
	slices.Sort(out)
	return out
}

// Usable reports whether creates in q's namespace are judged against q:
// the quota controller has seen its spec and counts all it limits.
func Usable(q *corev1.ResourceQuota) bool {
	return Synced(q) && len(Uncounted(q)) == 0
}

package tiers_test

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-sched/kubectl-sched/api/tiers"
	schedv1 "github.com/kubectl-sched/kubectl-sched/api/v1alpha1"
)

func TestFormatDuration(t *testing.T) {
	for d, want := range map[time.Duration]string{
		15 * time.Minute:             "15m",
		24 * time.Hour:               "24h",
		90 * time.Minute:             "1h30m",
		30 * time.Second:             "30s",
		time.Minute + 30*time.Second: "1m30s",
		168 * time.Hour:              "168h",
	} {
		got := tiers.FormatDuration(d)
		if got != want {
			t.Errorf("FormatDuration(%s) = %q, want %q", d, got, want)
		}
		if back, err := time.ParseDuration(got); err != nil || back != d {
			t.Errorf("%q reads back as %s, %v", got, back, err)
		}
	}
}

func quota(hard, statusHard, used corev1.ResourceList) *corev1.ResourceQuota {
	return &corev1.ResourceQuota{Spec: corev1.ResourceQuotaSpec{Hard: hard}, Status: corev1.ResourceQuotaStatus{Hard: statusHard, Used: used}}
}

func list(kv ...string) corev1.ResourceList {
	l := corev1.ResourceList{}
	for i := 0; i < len(kv); i += 2 {
		l[corev1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
	}
	return l
}

func TestCounting(t *testing.T) {
	const tasks = "count/agenttasks.sched.kubectl-sched.dev"
	cases := map[string]struct {
		q         *corev1.ResourceQuota
		synced    bool
		uncounted []corev1.ResourceName
		usable    bool
	}{
		"new, not seen": {q: quota(list("pods", "10", tasks, "20"), nil, nil), uncounted: []corev1.ResourceName{tasks, "pods"}},
		"seen, CRD not counted": {q: quota(list("pods", "10", tasks, "20"), list("pods", "10", tasks, "20"), list("pods", "0")),
			synced: true, uncounted: []corev1.ResourceName{tasks}},
		"counted": {q: quota(list("pods", "10", tasks, "20"), list("pods", "10", tasks, "20"), list("pods", "0", tasks, "0")),
			synced: true, usable: true},
		"spec changed since": {q: quota(list("pods", "20", tasks, "20"), list("pods", "10", tasks, "20"), list("pods", "0", tasks, "0"))},
		"recount marker is never waited for": {
			q:      quota(list("pods", "10", schedv1.QuotaRecountResource, "0"), list("pods", "10", schedv1.QuotaRecountResource, "0"), list("pods", "1")),
			synced: true, usable: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := tiers.Synced(tc.q); got != tc.synced {
				t.Errorf("Synced = %v, want %v", got, tc.synced)
			}
			if diff := cmp.Diff(tc.uncounted, tiers.Uncounted(tc.q)); diff != "" {
				t.Errorf("Uncounted (-want +got):\n%s", diff)
			}
			if got := tiers.Usable(tc.q); got != tc.usable {
				t.Errorf("Usable = %v, want %v", got, tc.usable)
			}
		})
	}
}

func TestTTLFromQuota(t *testing.T) {
	q := func(labels, annotations map[string]string) *corev1.ResourceQuota {
		return &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Labels: labels, Annotations: annotations}}
	}
	ours := map[string]string{schedv1.LabelManagedBy: schedv1.ManagedByValue, schedv1.LabelTier: "free"}
	ttls := map[string]string{schedv1.AnnotationTierTTLDefault: "15m", schedv1.AnnotationTierTTLMax: "24h"}
	cases := map[string]struct {
		q    *corev1.ResourceQuota
		tier string
		want *tiers.TTL
	}{
		"the operator's":       {q: q(ours, ttls), tier: "free", want: &tiers.TTL{Tier: "free", Default: 15 * time.Minute, Max: 24 * time.Hour}},
		"its own tier label":   {q: q(ours, ttls), want: &tiers.TTL{Tier: "free", Default: 15 * time.Minute, Max: 24 * time.Hour}},
		"no TTLs":              {q: q(ours, map[string]string{schedv1.AnnotationTierTTLDefault: ""}), tier: "free", want: &tiers.TTL{Tier: "free"}},
		"garbage is none":      {q: q(ours, map[string]string{schedv1.AnnotationTierTTLDefault: "soon", schedv1.AnnotationTierTTLMax: "-1h"}), tier: "free", want: &tiers.TTL{Tier: "free"}},
		"another tier's quota": {q: q(ours, ttls), tier: "team"},
		"not the operator's":   {q: q(map[string]string{schedv1.LabelTier: "free"}, ttls), tier: "free"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, tiers.TTLFromQuota(tc.q, tc.tier)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}
